// Small, pure formatters shared by the live view, the plain log, reports and `plan.ts status`.

import { UNKNOWN, type UsageFigure, type UsageTally } from './plan.ts';

/** `850ms`, `42s`, `3m07s`, `2h05m`. Negative or non-finite inputs count as 0. */
export function formatDuration(ms: number): string {
  const t = Number.isFinite(ms) && ms > 0 ? ms : 0;
  if (t < 1000) return `${Math.round(t)}ms`;
  const s = Math.floor(t / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return `${h}h${String(m % 60).padStart(2, '0')}m`;
}

/** Like formatDuration but without milliseconds (`0s` for under a second): for elapsed clocks. */
export const formatElapsed = (ms: number): string => (ms < 1000 ? '0s' : formatDuration(ms));

/** `$0.42`; amounts under a cent but above zero print as `<$0.01`. */
export function formatCost(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '$0.00';
  if (usd < 0.005) return '<$0.01';
  return `$${usd.toFixed(2)}`;
}

/** A recorded figure's cost: `$0.42`, or `unknown` when nothing measured it. */
export const formatCostFigure = (figure: UsageFigure): string => (figure === UNKNOWN ? UNKNOWN : formatCost(figure.costUsd));

/**
 * A total's cost, never a zero that is not a measurement: `$1.20` when every figure was
 * measured, `unknown` when none was, else `at least $1.20 (2 attempts unknown)` (`unit` names
 * what was counted).
 */
export function formatCostTally(tally: UsageTally, unit = 'attempt'): string {
  if (tally.unknown === 0) return formatCost(tally.measured.costUsd);
  if (tally.measuredCount === 0) return UNKNOWN;
  return `at least ${formatCost(tally.measured.costUsd)} (${plural(tally.unknown, unit)} unknown)`;
}

/** `12,345` */
export const formatCount = (n: number): string => Math.round(n).toLocaleString('en-US');

/** An ISO timestamp without milliseconds: `2026-11-22T01:02:03Z`. */
export const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Collapse whitespace (newlines included) to single spaces and clip to `max` characters. */
export function oneLine(s: string, max = 400): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `1`, `1 and 3`, `1, 3 and 4` */
export function listIndices(xs: readonly number[]): string {
  if (xs.length <= 1) return xs.join('');
  return `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
}

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
