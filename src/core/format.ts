// The one place text, costs, durations and timestamps are clipped and spelled, for the live view,
// the plain log, worker logs, reports, commit trailers and `plan.ts status`. Pure.
//
// Clipping: every clip returns at most `max` characters, its mark included. Which end to keep
// matters: a command's output (npm, a compiler, a test runner) usually ends with the error after
// pages of warnings, so failure reasons keep the end; a summary keeps its beginning.

const MARK = '…';

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/** The first `count` UTF-16 units of `text`, one fewer if that would split a surrogate pair. */
function headOf(text: string, count: number): string {
  const end = Math.max(0, count);
  return end > 0 && end < text.length && isHighSurrogate(text.charCodeAt(end - 1)) ? text.slice(0, end - 1) : text.slice(0, end);
}

/** The last `count` UTF-16 units of `text`, one fewer if that would split a surrogate pair. */
function tailOf(text: string, count: number): string {
  if (count <= 0) return '';
  const start = Math.max(0, text.length - count);
  return start > 0 && isLowSurrogate(text.charCodeAt(start)) ? text.slice(start + 1) : text.slice(start);
}

/** At most `max` characters of `text`: its beginning, ending in `mark` when something was cut. */
export function clipHead(text: string, max: number, mark = MARK): string {
  if (text.length <= max) return text;
  if (max <= mark.length) return mark.slice(0, Math.max(0, max));
  return `${headOf(text, max - mark.length)}${mark}`;
}

/** At most `max` characters of `text`: its end, after `mark` when something was cut. */
export function clipTail(text: string, max: number, mark = MARK): string {
  if (text.length <= max) return text;
  if (max <= mark.length) return mark.slice(0, Math.max(0, max));
  return `${mark}${tailOf(text, max - mark.length)}`;
}

/**
 * At most `max` characters of `text`: its first line (up to a third of the room) and as much of
 * its end as fits, joined by `…`. For a failure reason: what failed stays, and so does the error.
 */
export function clipMiddle(text: string, max: number): string {
  if (text.length <= max || max <= MARK.length) return clipHead(text, max);
  const newline = text.indexOf('\n');
  const third = Math.floor(max / 3);
  if (newline === -1 || newline > third) {
    // No short first line: keep a third of the beginning and the rest from the end.
    return `${headOf(text, third)}${MARK}${tailOf(text, max - third - MARK.length)}`;
  }
  const firstLine = text.slice(0, newline + 1);
  return `${firstLine}${clipTail(text.slice(newline + 1), max - firstLine.length)}`;
}

/**
 * `text` as lines of at most `width` characters (code points), broken at spaces; a word longer
 * than a line is cut across lines. Whitespace runs become one space.
 */
export function wrapWords(text: string, width: number): string[] {
  const room = Math.max(1, width);
  const lines: string[] = [];
  let line: string[] = [];
  for (const word of text.split(/\s+/).filter(Boolean)) {
    let chars = [...word];
    if (line.length > 0 && line.length + 1 + chars.length <= room) {
      line.push(' ', ...chars);
      continue;
    }
    if (line.length > 0) lines.push(line.join(''));
    while (chars.length > room) {
      lines.push(chars.slice(0, room).join(''));
      chars = chars.slice(room);
    }
    line = chars;
  }
  if (line.length > 0 || lines.length === 0) lines.push(line.join(''));
  return lines;
}

/** Collapse whitespace (newlines included) to single spaces and clip to `max` characters. */
export function oneLine(text: string, max = 400): string {
  return clipHead(text.replace(/\s+/g, ' ').trim(), max);
}

/** `850ms`, `42s`, `3m07s`, `2h05m`. Negative or non-finite inputs count as 0. */
export function formatDuration(ms: number): string {
  const total = Number.isFinite(ms) && ms > 0 ? ms : 0;
  if (total < 1000) return `${Math.round(total)}ms`;
  const seconds = Math.floor(total / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h${String(minutes % 60).padStart(2, '0')}m`;
}

/** Like formatDuration but without milliseconds (`0s` for under a second): for elapsed clocks. */
export const formatElapsed = (ms: number): string => (ms < 1000 ? '0s' : formatDuration(ms));

/** Seconds to a tenth: `12.3s`, for worker logs. */
export const formatSeconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

/** `mm:ss.s` since the start of something (`01:02.3`; minutes keep growing past 99), for log lines. */
export function formatClock(ms: number): string {
  const tenths = Math.round(Math.max(0, Number.isFinite(ms) ? ms : 0) / 100);
  const minutes = Math.floor(tenths / 600);
  return `${String(minutes).padStart(2, '0')}:${((tenths - minutes * 600) / 10).toFixed(1).padStart(4, '0')}`;
}

/** `$0.42`; amounts under a cent but above zero print as `<$0.01`. */
export function formatCost(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '$0.00';
  if (usd < 0.005) return '<$0.01';
  return `$${usd.toFixed(2)}`;
}

/** `$0.42`, and amounts under a cent to four places (`$0.0002`): for worker logs and the run's closing summary. */
export function formatCostExact(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '$0.00';
  return `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

/** `12,345` */
export const formatCount = (count: number): string => Math.round(count).toLocaleString('en-US');

/** An ISO timestamp without milliseconds: `2026-11-22T01:02:03Z`. */
export const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A UTC timestamp for names (archived plans, run ids): `20261122T010203Z`. */
export const compactTimestamp = (at: Date = new Date()): string =>
  at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');

/** Text for one cell of a Markdown table (or a Markdown line): one line, `|` escaped. */
export const markdownCell = (text: string): string =>
  text
    .replace(/[\r\n]+/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();

/** `1`, `1 and 3`, `1, 3 and 4` */
export function listIndices(indices: readonly number[]): string {
  if (indices.length <= 1) return indices.join('');
  return `${indices.slice(0, -1).join(', ')} and ${indices[indices.length - 1]}`;
}

export const plural = (count: number, one: string, many = `${one}s`): string => `${count} ${count === 1 ? one : many}`;

/** `task 1`, `tasks 1 and 3`: tasks named in a sentence. */
export const namedTasks = (tasks: readonly number[]): string => `${tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(tasks)}`;

/** `a`, `a and b`, `a, b and c`; past `shown` items, the first ones and how many more: `a, b, c and 2 more`. */
export function listSome(items: readonly string[], shown = 3): string {
  if (items.length <= shown) return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
  return `${items.slice(0, shown).join(', ')} and ${items.length - shown} more`;
}
