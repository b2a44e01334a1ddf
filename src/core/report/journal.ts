// The journal's runs, the ground every projection stands on: its events grouped by run id, and
// the times they carry.

import type { RunEvent } from './events.ts';

/** The journal event of one type. */
export type EventOf<T extends RunEvent['type']> = Extract<RunEvent, { type: T }>;

export interface RunRecord {
  runId: string;
  /** The run's events in journal order. */
  events: RunEvent[];
  started: EventOf<'run-started'> | null;
  finished: EventOf<'run-finished'> | null;
  /** Time of the first and last event (ms since the epoch). */
  firstMs: number;
  lastMs: number;
}

/** An event's time (ms since the epoch); 0 for one that does not parse. */
export const timeOf = (at: string): number => {
  const t = Date.parse(at);
  return Number.isFinite(t) ? t : 0;
};

/** Events grouped by runId, runs ordered by their first event. */
export function groupRuns(events: readonly RunEvent[]): RunRecord[] {
  const byId = new Map<string, RunRecord>();
  for (const e of events) {
    let run = byId.get(e.runId);
    const t = timeOf(e.at);
    if (!run) {
      run = { runId: e.runId, events: [], started: null, finished: null, firstMs: t, lastMs: t };
      byId.set(e.runId, run);
    }
    run.events.push(e);
    run.firstMs = Math.min(run.firstMs, t);
    run.lastMs = Math.max(run.lastMs, t);
    if (e.type === 'run-started' && !run.started) run.started = e;
    if (e.type === 'run-finished') run.finished = e;
  }
  return [...byId.values()].sort((a, b) => startOf(a) - startOf(b));
}

/** When a run started: its run-started event, else its first event. */
export const startOf = (run: RunRecord): number => (run.started ? timeOf(run.started.at) : run.firstMs);
