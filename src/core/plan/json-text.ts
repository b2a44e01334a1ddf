// Where a JSON text stops being JSON, as a person finds it in an editor: a line and a column.
// V8 says a character position in some of its messages, nothing in others ("Unexpected token
// '}', "…" is not valid JSON"), and words both differently from one Node version to the next, so
// the place is found here, by reading the text as JSON's grammar (RFC 8259) does. Pure.

/** `not valid JSON at line 3, column 5: Expected double-quoted property name`, for `JSON.parse(text)`'s error. */
export function describeJsonError(text: string, error: Error): string {
  const offset = jsonErrorOffset(text);
  if (offset < 0) return `not valid JSON: ${jsonReason(error.message)}`;
  const { line, column } = lineAndColumn(text, offset);
  return `not valid JSON at line ${line}, column ${column}: ${jsonReason(error.message)}`;
}

/** V8's reason without its position or its quote of the text (which may span lines). */
function jsonReason(message: string): string {
  const reason = message
    .replace(/ at position \d+.*$/s, '')
    .replace(/ in JSON$/, '')
    .replace(/, (\.\.\.)?".*" is not valid JSON$/s, '')
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .trim();
  return reason === '' ? 'not JSON' : reason;
}

/** 1-based line and column of the character at `offset` (the end of the text: one past its last character). */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

/** The offset of the first character that is not JSON (the text's length when it ends too soon); -1 when the text is JSON. */
export function jsonErrorOffset(text: string): number {
  let at = 0;
  const fail = (): never => {
    throw new SyntaxAt(at);
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  const literal = (word: string) => {
    for (const c of word) {
      if (text[at] !== c) fail();
      at++;
    }
  };
  const digits = () => {
    const start = at;
    while (at < text.length && text[at]! >= '0' && text[at]! <= '9') at++;
    if (at === start) fail();
  };
  const number = () => {
    if (text[at] === '-') at++;
    if (text[at] === '0') at++;
    else digits();
    if (text[at] === '.') {
      at++;
      digits();
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at++;
      if (text[at] === '+' || text[at] === '-') at++;
      digits();
    }
  };
  const string = () => {
    at++;
    for (;;) {
      if (at >= text.length) fail();
      const c = text.charCodeAt(at);
      if (c === 0x22) break;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        at++;
        const escaped = text[at];
        if (escaped === 'u') {
          for (let k = 0; k < 4; k++) {
            at++;
            if (!/[0-9a-fA-F]/.test(text[at] ?? '')) fail();
          }
        } else if (escaped === undefined || !'"\\/bfnrt'.includes(escaped)) fail();
      }
      at++;
    }
    at++;
  };
  const members = (close: string, member: () => void) => {
    at++;
    space();
    if (text[at] === close) {
      at++;
      return;
    }
    for (;;) {
      member();
      space();
      if (text[at] === ',') {
        at++;
        space();
        continue;
      }
      if (text[at] !== close) fail();
      at++;
      return;
    }
  };
  const value = (): void => {
    space();
    const c = text[at];
    if (c === '{') {
      members('}', () => {
        if (text[at] !== '"') fail();
        string();
        space();
        if (text[at] !== ':') fail();
        at++;
        value();
      });
    } else if (c === '[') members(']', value);
    else if (c === '"') string();
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) number();
    else if (c === 't') literal('true');
    else if (c === 'f') literal('false');
    else if (c === 'n') literal('null');
    else fail();
  };
  try {
    value();
    space();
    if (at < text.length) fail();
    return -1;
  } catch (caught) {
    if (caught instanceof SyntaxAt) return Math.min(caught.offset, text.length);
    throw caught;
  }
}

class SyntaxAt {
  constructor(readonly offset: number) {}
}

/** A JSON object read from a file whose shape is not checked yet: its fields, each `unknown`. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
