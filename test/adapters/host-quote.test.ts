// The remote command line's quoting: every word reaches the host's shell as itself.

import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { shellLine, shellWord } from '../../src/adapters/host/quote.ts';

/** What sh makes of `line`'s words, one a line of NUL-separated output. */
const wordsOf = (line: string): string[] => {
  const ended = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  return ended.stdout.split('\0').slice(0, -1);
};

test('any words, quoted, are read back by sh as those words', () => {
  // A NUL cannot be in an argument at all.
  const word = fc.string({ unit: 'binary' }).map((text) => text.replaceAll('\0', ''));
  fc.assert(
    fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (words) => {
      expect(wordsOf(shellLine(words))).toEqual(words);
    }),
    { numRuns: 200 },
  );
});

test('a plain word stays as it is; anything else is single-quoted', () => {
  expect(shellWord('/srv/foreman-work')).toBe('/srv/foreman-work');
  expect(shellWord('')).toBe("''");
  expect(shellWord("it's $(here)")).toBe("'it'\\''s $(here)'");
});
