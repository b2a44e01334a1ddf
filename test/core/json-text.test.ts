// Where a JSON text stops being JSON: the place V8 names (when it names one) as a line and column.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeJsonError, jsonErrorOffset, lineAndColumn } from '../../src/core/plan/json-text.ts';

const parseError = (text: string): Error => {
  try {
    JSON.parse(text);
  } catch (e) {
    return e as Error;
  }
  throw new Error(`valid JSON: ${text}`);
};

describe('describeJsonError', () => {
  it.each([
    ['{\n  "goal": "x",\n  tasks: []\n}', 'not valid JSON at line 3, column 3: Expected double-quoted property name'],
    ['{ "a": tru }', "not valid JSON at line 1, column 11: Unexpected token ' '"],
    ['{\n  "a": [1,\n    2,,]\n}', "not valid JSON at line 3, column 7: Unexpected token ','"],
    ['{ "a": 1 }\nx', 'not valid JSON at line 2, column 1: Unexpected non-whitespace character after JSON'],
    ['{\n  "a": 1,\n', 'not valid JSON at line 3, column 1: Expected double-quoted property name'],
    ['', 'not valid JSON at line 1, column 1: Unexpected end of JSON input'],
    ['{"a": "b\nc"}', 'not valid JSON at line 1, column 9: Bad control character in string literal'],
  ])('%j → %s', (text, line) => {
    expect(describeJsonError(text, parseError(text))).toBe(line);
  });

  it('is one line, whatever V8 quotes of the text', () => {
    const text = `{\n${'  "k": "v",\n'.repeat(20)}  "last": 'x'\n}`;
    const said = describeJsonError(text, parseError(text));
    expect(said).toBe("not valid JSON at line 22, column 11: Unexpected token '''");
    expect(said).not.toContain('\n');
  });
});

describe('jsonErrorOffset', () => {
  it('finds no error in JSON', () => {
    fc.assert(fc.property(fc.json(), (text) => jsonErrorOffset(text) === -1));
  });

  it('finds the error where V8 says it is, in a text JSON.parse refuses', () => {
    const nearJson = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', ':', 'x', '\n', '\u0001', '\\', '-', '.', 'e', '0'))
      .map(([text, at, insert]) => {
        const k = text.length === 0 ? 0 : at % (text.length + 1);
        return text.slice(0, k) + insert + text.slice(k + (insert === '' ? 1 : 0));
      });
    fc.assert(
      fc.property(nearJson, (text) => {
        let said: string | null = null;
        try {
          JSON.parse(text);
        } catch (e) {
          said = (e as Error).message;
        }
        const offset = jsonErrorOffset(text);
        if (said === null) return offset === -1;
        if (offset < 0) return false;
        const position = / at position (\d+)/.exec(said)?.[1];
        if (position !== undefined) return offset === Number(position);
        if (said.startsWith('Unexpected end of JSON input')) return offset === text.length;
        // "Unexpected token 'x', …": the character it names is the one found.
        const token = /^Unexpected token '(.)'/su.exec(said)?.[1];
        return token === undefined || text[offset] === token;
      }),
      { numRuns: 2000 },
    );
  });
});

describe('lineAndColumn', () => {
  it('counts lines from 1 and columns from 1, the end of the text included', () => {
    expect(lineAndColumn('ab\ncd', 0)).toEqual({ line: 1, column: 1 });
    expect(lineAndColumn('ab\ncd', 3)).toEqual({ line: 2, column: 1 });
    expect(lineAndColumn('ab\ncd', 5)).toEqual({ line: 2, column: 3 });
    expect(lineAndColumn('ab\r\ncd', 4)).toEqual({ line: 2, column: 1 });
  });
});
