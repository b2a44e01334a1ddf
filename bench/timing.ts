// Timing helpers and table printing for the benchmarks.

import { performance } from 'node:perf_hooks';

export interface Timing {
  medianMs: number;
  minMs: number;
  runs: number;
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The q-quantile (0..1) by nearest rank. */
export const quantile = (xs: readonly number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
};

/**
 * Time `fn` synchronously: one warm-up call, then at least `minRuns` runs and at most `maxRuns`,
 * stopping once `budgetMs` is spent. A function slower than a quarter of the budget is timed 3 times,
 * the warm-up included (2 times when it takes over twice the budget). `setup` runs before each call, outside the timing.
 */
export function timeSync<S>(fn: (s: S) => unknown, o: { setup: () => S; minRuns?: number; maxRuns?: number; budgetMs?: number }): Timing {
  const minRuns = o.minRuns ?? 5;
  const maxRuns = o.maxRuns ?? 50;
  const budget = o.budgetMs ?? 1000;
  const w = o.setup();
  const w0 = performance.now();
  let sink: unknown = fn(w);
  const warmup = performance.now() - w0;
  const times: number[] = [];
  // A call slower than a quarter of the budget is past JIT warm-up effects: count it, and stop at 3 (or 2).
  const slow = warmup > budget / 4;
  if (slow) times.push(warmup);
  const least = slow ? Math.min(minRuns, warmup > 2 * budget ? 2 : 3) : minRuns;
  const t0 = performance.now();
  while (times.length < least || (times.length < maxRuns && performance.now() - t0 < budget)) {
    const s = o.setup();
    const a = performance.now();
    sink = fn(s);
    times.push(performance.now() - a);
  }
  if (sink === Symbol.for('never')) console.log(sink); // keep the result alive
  return { medianMs: median(times), minMs: Math.min(...times), runs: times.length };
}

/** Format milliseconds with sensible precision: 0.012, 1.23, 45.6, 1234. */
export function ms(x: number): string {
  if (x < 0.1) return x.toFixed(3);
  if (x < 10) return x.toFixed(2);
  if (x < 100) return x.toFixed(1);
  return x.toFixed(0);
}

/** A Markdown table, columns padded so it also reads well in a terminal. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], align: readonly ('l' | 'r')[] = []): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const cell = (s: string, c: number) => (align[c] === 'l' ? s.padEnd(widths[c]!) : s.padStart(widths[c]!));
  const line = (r: readonly string[]) => `| ${r.map((s, c) => cell(s, c)).join(' | ')} |`;
  const rule = `|${widths.map((w, c) => (align[c] === 'l' ? `${'-'.repeat(w + 1)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Progress on stderr, so stdout holds only the figures. */
export const progress = (t: string): void => {
  process.stderr.write(`  … ${t}\n`);
};
