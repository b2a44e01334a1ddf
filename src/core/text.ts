// Clipping text for messages, prompts and reports. Pure.
//
// Which end to keep matters: a command's output (npm, a compiler, a test runner) usually ends
// with the error after pages of warnings, so failure reasons keep the end; a summary keeps its
// beginning.

const MARK = '…';

/** The first `max` characters of `text`, with `…` appended when something was cut. */
export function clipHead(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, Math.max(0, max))}${MARK}` : text;
}

/** The last `max` characters of `text`, with `…` prepended when something was cut. */
export function clipTail(text: string, max: number): string {
  return text.length > max ? `${MARK}${text.slice(text.length - Math.max(0, max))}` : text;
}

/**
 * At most `max` characters of `text`: its first line (up to a third of the room) and as much of
 * its end as fits, joined by `…`. For a failure reason: what failed stays, and so does the error.
 */
export function clipMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const newline = text.indexOf('\n');
  const third = Math.floor(max / 3);
  if (newline === -1 || newline > third) {
    // No short first line: keep a third of the beginning and the rest from the end.
    return `${text.slice(0, third)}${MARK}${text.slice(text.length - Math.max(0, max - third - MARK.length))}`;
  }
  const firstLine = text.slice(0, newline + 1);
  return `${firstLine}${clipTail(text.slice(newline + 1), Math.max(0, max - firstLine.length - MARK.length))}`;
}
