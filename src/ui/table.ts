// Plain-text tables for terminal output.

import { clipHead, clipTail } from '../core/index.ts';

/** A column a table too wide for the terminal may narrow, and how. */
export interface Shrinkable {
  column: number;
  /** Narrowest it gets (never below its header). Default: its header's width. */
  min?: number;
  /** What a cut cell keeps: its start (a subject, a goal) or its end (a path: the file's name). Default `start`. */
  keep?: 'start' | 'end';
}

/**
 * Columns two spaces apart, a rule under the headers. Wider than `maxWidth`, the `shrink` columns
 * narrow in the order given, each down to its minimum before the next one gives up anything.
 */
export function table(headers: string[], rows: string[][], opts: { maxWidth?: number; shrink?: Shrinkable[] } = {}): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const keep = new Map<number, 'start' | 'end'>();
  let over = widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1) - (opts.maxWidth ?? Number.POSITIVE_INFINITY);
  for (const { column, min, keep: kept } of opts.shrink ?? []) {
    keep.set(column, kept ?? 'start');
    if (over <= 0) continue;
    const floor = Math.max(headers[column]!.length, min ?? 0);
    const given = Math.min(over, Math.max(0, widths[column]! - floor));
    widths[column] = widths[column]! - given;
    over -= given;
  }
  const clip = (cell: string, column: number) => (keep.get(column) === 'end' ? clipTail(cell, widths[column]!) : clipHead(cell, widths[column]!));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? clip(c, i) : clip(c, i).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '─'.repeat(w))), ...rows.map(line)].join('\n');
}
