// Plain-text tables for terminal output.

import { clipHead } from '../core/format.ts';


export function table(headers: string[], rows: string[][], opts: { maxWidth?: number; flex?: number } = {}): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const flex = opts.flex ?? -1;
  if (opts.maxWidth && flex >= 0) {
    const total = widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
    const over = total - opts.maxWidth;
    if (over > 0) widths[flex] = Math.max(headers[flex]!.length, widths[flex]! - over);
  }
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? clipHead(c, widths[i]!) : clipHead(c, widths[i]!).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '─'.repeat(w))), ...rows.map(line)].join('\n');
}
