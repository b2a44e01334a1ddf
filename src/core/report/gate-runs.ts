// Gate runs, a projection of a run: each gate-started paired with its gate-finished, and the
// merge queue's figures (runs, time in the gate, culprits, flakes).

import { listIndices } from '../format.ts';
import { type RunRecord, timeOf } from './journal.ts';

// ---------------------------------------------------------------------------------------------
// Gate runs (the merge queue)

/** One run of the gate: `gate-started` paired with the `gate-finished` after it (the baseline has no start). */
export interface GateRunRecord {
  /** The candidates stacked on the integration tip, in order; empty for the baseline (the starting commit alone). */
  tasks: number[];
  startMs: number;
  /** null while the gate is still running (or the run died during it). */
  endMs: number | null;
  /** null while running. */
  passed: boolean | null;
  durationMs: number | null;
  integrated: number[];
  culprit: number | null;
  flake: boolean;
  /** The end of the test command's output when it failed. */
  output: string | null;
}

export interface GateSummary {
  runs: GateRunRecord[];
  /** Time the gate ran, finished runs and the baseline included. */
  totalMs: number;
  passed: number;
  failed: number;
  /** Candidates that failed once and passed when tested again: failures that blamed no task. */
  flakes: number[];
  /** Candidates that failed on their own twice: their attempts failed. */
  culprits: number[];
  /** Tasks the gate let integrate. */
  integrated: number[];
  /** Whether the starting commit passed the gate (null when the run did not test it). */
  baseline: boolean | null;
}

/** A gate run as its start says it: nothing known yet of how it ends. */
const started = (tasks: readonly number[], startMs: number): GateRunRecord => ({
  tasks: [...tasks],
  startMs,
  endMs: null,
  passed: null,
  durationMs: null,
  integrated: [],
  culprit: null,
  flake: false,
  output: null,
});

/** The run's gate runs, in order. The gate has one lane, so each start pairs with the next finish. */
export function gateRunsOf(run: RunRecord): GateRunRecord[] {
  const out: GateRunRecord[] = [];
  let open: GateRunRecord | null = null;
  for (const e of run.events) {
    if (e.type === 'gate-started') {
      open = started(e.tasks, timeOf(e.at));
      out.push(open);
    } else if (e.type === 'gate-finished') {
      const end = timeOf(e.at);
      let record = open;
      if (record === null) {
        // The baseline (no gate-started), or a journal that lost the start.
        record = started(e.tasks, end - e.durationMs);
        out.push(record);
      }
      open = null;
      Object.assign(record, {
        endMs: end,
        passed: e.passed,
        durationMs: e.durationMs,
        integrated: [...e.integrated],
        culprit: e.culprit,
        flake: e.flake,
        output: e.output ?? null,
      });
    } else if (e.type === 'run-finished' && open !== null) {
      // Stopped before a verdict (Ctrl-C): the run ends with it.
      open = null;
    }
  }
  return out;
}

/** What the gate did in the run; null when the run had no gate. */
export function gateSummaryOf(run: RunRecord, now?: number): GateSummary | null {
  const runs = gateRunsOf(run);
  if (runs.length === 0) return null;
  const unique = (xs: number[]) => [...new Set(xs)];
  const baseline = runs.find((r) => r.tasks.length === 0);
  return {
    runs,
    totalMs: runs.reduce((n, r) => n + (r.durationMs ?? Math.max(0, (now ?? run.lastMs) - r.startMs)), 0),
    passed: runs.filter((r) => r.passed === true).length,
    failed: runs.filter((r) => r.passed === false).length,
    flakes: runs.filter((r) => r.flake).flatMap((r) => r.tasks),
    culprits: unique(runs.flatMap((r) => (r.culprit === null ? [] : [r.culprit]))),
    integrated: unique(runs.flatMap((r) => r.integrated)),
    baseline: baseline === undefined ? null : baseline.passed,
  };
}

/** `task 3`, `tasks 0, 1, 2`, or `the starting commit` (the baseline). */
export const gateRunName = (tasks: readonly number[]): string =>
  tasks.length === 0 ? 'baseline' : `${tasks.length === 1 ? 'task' : 'tasks'} ${listIndices([...tasks])}`;
