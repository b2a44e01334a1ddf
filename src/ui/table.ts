// Plain-text tables for terminal output.

/** Width-aware truncation with an ellipsis. */
export const truncate = (s: string, width: number): string =>
  width <= 0 ? '' : s.length <= width ? s : width === 1 ? '…' : `${s.slice(0, width - 1)}…`;

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
      .map((c, i) => (i === cells.length - 1 ? truncate(c, widths[i]!) : truncate(c, widths[i]!).padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '─'.repeat(w))), ...rows.map(line)].join('\n');
}
