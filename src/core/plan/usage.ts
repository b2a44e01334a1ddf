// What workers cost: the measured usage of an attempt, `unknown` where nothing measured it, and
// the tallies summed over attempts, tasks and runs, with the words that state them.

import { formatCost, plural } from '../format.ts';

/** What a finished worker cost, as measured (a headless worker's result event); summed over attempts. */
export interface Usage {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

/**
 * What an attempt, a task or a run is recorded with: measured figures, or `'unknown'` when
 * nothing measured them (a Task subagent of the in-session path: Claude Code does not hand its
 * cost to the plan tool). Unknown absorbs: anything plus unknown is unknown, so a figure that
 * reads as a number always is one.
 */
export type UsageFigure = Usage | 'unknown';
export const UNKNOWN = 'unknown' as const;

export const emptyUsage = (): Usage => ({
  costUsd: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
});

export function addUsage(a: Usage, b: Usage): Usage;
export function addUsage(a: UsageFigure, b: UsageFigure): UsageFigure;
export function addUsage(a: UsageFigure, b: UsageFigure): UsageFigure {
  if (a === UNKNOWN || b === UNKNOWN) return UNKNOWN;
  return {
    costUsd: a.costUsd + b.costUsd,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheCreationTokens: a.cacheCreationTokens + b.cacheCreationTokens,
  };
}

/**
 * A total over many figures (attempts, tasks, runs) for display: the sum of the measured ones
 * and how many were unknown. With `unknown > 0` the measured sum is a lower bound ("at least");
 * with nothing measured it is no figure at all ("unknown").
 */
export interface UsageTally {
  measured: Usage;
  /** How many figures were measured. */
  measuredCount: number;
  /** How many figures were unknown. */
  unknown: number;
}

export const emptyTally = (): UsageTally => ({ measured: emptyUsage(), measuredCount: 0, unknown: 0 });

/** Adds one figure to a tally (`undefined`, a figure never recorded, adds nothing). */
export function tallyAdd(tally: UsageTally, figure: UsageFigure | undefined): UsageTally {
  if (figure === undefined) return tally;
  if (figure === UNKNOWN) return { ...tally, unknown: tally.unknown + 1 };
  return { measured: addUsage(tally.measured, figure), measuredCount: tally.measuredCount + 1, unknown: tally.unknown };
}

export const tallyOf = (figures: Iterable<UsageFigure | undefined>): UsageTally => {
  let t = emptyTally();
  for (const f of figures) t = tallyAdd(t, f);
  return t;
};

export const mergeTallies = (a: UsageTally, b: UsageTally): UsageTally => ({
  measured: addUsage(a.measured, b.measured),
  measuredCount: a.measuredCount + b.measuredCount,
  unknown: a.unknown + b.unknown,
});

/** The cost a tally can state as a number: the measured sum when nothing in it is unknown. */
export const tallyCostUsd = (tally: UsageTally): number | typeof UNKNOWN => (tally.unknown > 0 && tally.measuredCount === 0 ? UNKNOWN : tally.measured.costUsd);

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
