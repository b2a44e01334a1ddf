// Runs, a projection of the journal: each run summarised (outcome, counts, cost), and the run
// still in progress that `plan status` shows.

import type { RunOutcome, StopReason, TaskOutcome } from './events.ts';
import { accountsWaitWords, clockTime, lastLimits, type LimitState } from '../limits/index.ts';
import { isoSeconds } from '../format.ts';
import { type Plan, statusOf, tallyCostUsd, tallyOf, type TaskStatus, UNKNOWN, type UsageTally } from '../plan/index.ts';
import { attemptRecordsOf } from './attempts.ts';
import { type RunRecord, startOf, timeOf } from './journal.ts';

// ---------------------------------------------------------------------------------------------
// Runs

/**
 * `running` when the run has no run-finished event and its process still holds the lock;
 * `unfinished` when a headless run died; `in-session` for an in-session run (`/foreman:execute`)
 * no step has finished: its lead may be between steps, or its session ended.
 */
export type RunState = RunOutcome | 'running' | 'unfinished' | 'in-session';

export interface RunSummary {
  runId: string;
  startedAt: string;
  finishedAt: string | null;
  goal: string | null;
  outcome: RunState;
  reason: StopReason | null;
  message: string | null;
  durationMs: number;
  /** The run's attempts: measured figures, and how many attempts nothing measured. */
  usage: UsageTally;
  /** The measured cost (a lower bound when `usage.unknown > 0`), or `unknown` when nothing was measured. */
  costUsd: number | typeof UNKNOWN;
  /** True for an in-session run (`plan.ts setup|next|finalize|commit`). */
  inSession: boolean;
  /** Task counts by status at the end of the run (from run-finished), else tallied from the events. */
  counts: Record<string, number>;
  pid: number | null;
  resumed: boolean;
  planPath: string | null;
}

export interface SummaryOptions {
  /** pid of the process holding the plan lock, if any: an unfinished run with that pid is `running`. */
  livePid?: number | null;
  /** Clock for the duration of an unfinished run that is still running. */
  now?: number;
}

export function summarizeRun(run: RunRecord, options: SummaryOptions = {}): RunSummary {
  const start = startOf(run);
  const f = run.finished;
  const live = !f && run.started !== null && options.livePid != null && run.started.pid === options.livePid;
  const inSession = run.started?.mode === 'session';
  const usage = runTally(run);
  const end = f ? timeOf(f.at) : live && options.now !== undefined ? options.now : run.lastMs;
  return {
    runId: run.runId,
    startedAt: isoSeconds(start),
    finishedAt: f ? f.at : null,
    goal: run.started?.goal ?? null,
    outcome: f ? f.outcome : live ? 'running' : inSession ? 'in-session' : 'unfinished',
    reason: f?.reason ?? null,
    message: f?.message ?? null,
    durationMs: f ? f.durationMs : Math.max(0, end - start),
    usage,
    costUsd: tallyCostUsd(usage),
    inSession,
    counts: f ? f.counts : tallyOutcomes(run),
    pid: run.started?.pid ?? null,
    resumed: run.started?.resumed ?? false,
    planPath: run.started?.planPath ?? null,
  };
}

/**
 * What the run's attempts cost. A finished run's own measured total is used when it has one (it
 * is what the run counted against its budget); otherwise the attempts are tallied, the unknown
 * ones counted apart.
 */
export function runTally(run: RunRecord): UsageTally {
  const attempts = attemptRecordsOf(run).filter((a) => a.usage !== null);
  const f = run.finished;
  if (f && f.usage !== UNKNOWN) return { measured: f.usage, measuredCount: Math.max(1, attempts.length), unknown: 0 };
  return tallyOf(attempts.map((a) => a.usage ?? undefined));
}

/** Last known state of each task the run touched. */
export function taskStatesIn(run: RunRecord): Map<number, TaskStatus> {
  const states = new Map<number, TaskStatus>();
  for (const e of run.events) {
    if (e.type === 'task-started') states.set(e.task, 'in_progress');
    else if (e.type === 'task-skipped') states.set(e.task, 'skipped');
    else if (e.type === 'task-finished') states.set(e.task, statusAfter(e.outcome));
  }
  return states;
}

const statusAfter = (outcome: TaskOutcome): TaskStatus =>
  outcome === 'completed' || outcome === 'awaiting_approval' || outcome === 'failed' || outcome === 'blocked' ? outcome : 'pending';

function tallyOutcomes(run: RunRecord): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of taskStatesIn(run).values()) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
}
// ---------------------------------------------------------------------------------------------
// The run in progress (for `plan.ts status`)

export interface RunningTask {
  index: number;
  subject: string;
  attempt: number;
  model: string | null;
  startedAt: string;
  elapsedMs: number;
  /** With hosts: where it works, `build1:2` (the host and its slot); null without. */
  place: string | null;
}

export interface UnfinishedRun {
  runId: string;
  startedAt: string;
  pid: number | null;
  /** task-started without a task-finished yet. */
  running: RunningTask[];
  /**
   * What a rate or usage limit holds the run back for, as its last `limit` event says it at `now`
   * ("rate-limited: 2 of 8 workers until 14:05:07", "waiting for the usage limit to reset at
   * 22:00"), or null.
   */
  waiting: string | null;
  /** True for an in-session run: its lead works between the plan tool's steps, holding no lock. */
  inSession: boolean;
  /** What this run's finished attempts cost, from the journal. */
  runCost: UsageTally;
  /**
   * Cost the plan does not show yet: attempts that completed but wait for their round's commit
   * (the plan records a completed task's usage when the commit lands; other outcomes at once).
   */
  unrecordedCost: UsageTally;
}

/** The latest run, when it has no run-finished event (still running, or it died). */
export function unfinishedRun(runs: readonly RunRecord[], plan: Plan | null, now: number): UnfinishedRun | null {
  const run = runs[runs.length - 1];
  if (!run || run.finished) return null;
  const attempts = attemptRecordsOf(run);
  const waitsForCommit = (i: number) => {
    const task = plan?.tasks[i];
    return task === undefined || statusOf(task) === 'in_progress';
  };
  const unrecorded = attempts.filter((a) => a.outcome === 'completed' && waitsForCommit(a.task));
  return {
    runId: run.runId,
    startedAt: isoSeconds(startOf(run)),
    pid: run.started?.pid ?? null,
    inSession: run.started?.mode === 'session',
    running: attempts
      .filter((a) => a.outcome === null)
      .map((a) => ({
        index: a.task,
        subject: a.subject,
        attempt: a.attempt,
        model: a.model,
        startedAt: isoSeconds(a.startMs),
        elapsedMs: Math.max(0, now - a.startMs),
        place: a.host === null ? null : `${a.host}:${a.slot}`,
      })),
    waiting: limitNow(run, now),
    runCost: tallyOf(attempts.map((a) => a.usage ?? undefined)),
    unrecordedCost: tallyOf(unrecorded.map((a) => a.usage ?? undefined)),
  };
}

/** What the run's last `limit` events (each account's) say hold it back at `now`, or null; a run that drains waits for nothing. */
function limitNow(run: RunRecord, now: number): string | null {
  const limits = new Map<string, LimitState>();
  for (const event of run.events) {
    if (event.type === 'draining') limits.clear();
    else if (event.type === 'limit') lastLimits(limits, event);
  }
  return accountsWaitWords(limits, now);
}

/** A run that stopped to wait for something outside it (`run-finished` with exit 75): what, and when to run it again. */
export interface StoppedRun {
  runId: string;
  finishedAt: string;
  /** `limited`: a rate or usage limit; `api-unreachable`: the API out of reach; `hosts-down`: every host down. */
  reason: Extract<StopReason, 'limited' | 'api-unreachable' | 'hosts-down'>;
  /** The run's own last words. */
  message: string;
  /** For a limit: running again after this goes on (ISO); null for the API out of reach. */
  resumeAfter: string | null;
  /** When to run the same command again, in words: "after 06:33", "now (the limit has lifted)", "when the API answers". */
  runAgain: string;
}

/** The latest run, when it stopped for a limit or the API out of reach and no run came after it; else null. */
export function stoppedRun(runs: readonly RunRecord[], now: number): StoppedRun | null {
  const f = runs[runs.length - 1]?.finished;
  if (f === undefined || f === null || (f.reason !== 'limited' && f.reason !== 'api-unreachable' && f.reason !== 'hosts-down')) return null;
  const resumeAfter = f.reason === 'limited' ? (f.resumeAfter ?? null) : null;
  const after = resumeAfter === null ? null : Date.parse(resumeAfter);
  const runAgain =
    f.reason === 'api-unreachable'
      ? 'when the API answers'
      : f.reason === 'hosts-down'
        ? 'once a host is back'
        : after === null || after <= now
          ? 'now (the limit has lifted)'
          : `after ${clockTime(after, now)}`;
  return { runId: f.runId, finishedAt: f.at, reason: f.reason, message: f.message, resumeAfter, runAgain };
}
