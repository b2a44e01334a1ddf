// What an in-session step reports (run/session/session.ts: `plan setup | next | finalize | commit`, their
// JSON in schemas/<step>.schema.json), built from the step function's state after the step and
// the events the step emitted. Pure: the steps read and write; these only word what they saw.

import { tasksIn } from './attempt.ts';
import { claimingFiles, gateOpen, waitingToLand } from './queries.ts';
import type { Baseline, EngineState } from './state.ts';
import type { RunEventBody } from '../report/index.ts';
import { assertNever } from '../result.ts';
import { setAsideSummary } from '../attempt/index.ts';
import { clipMiddle, listIndices } from '../format.ts';
import type { GateFinished } from './gate.ts';
import { type BreakerDecision, type Plan, readySet, stall as planStall, statusOf, taskAt, type TaskStatus } from '../plan/index.ts';
import { holding } from '../limits/index.ts';

/** Something a step says besides its result (its output's `notices`). */
export type Notice = { level: 'info' | 'warning'; message: string };

/** Reasons and outputs handed to the lead are clipped, keeping the first line (what failed) and the end (where commands print their error): its context should not grow with logs. */
export const clipForLead = (text: string, max = 1500): string => clipMiddle(text, max);

/** A notice as a step's output has it: its level and message (a journal's notice, a kinded one, without the rest). */
export const noticeOf = (notice: Notice): Notice => ({ level: notice.level, message: notice.message });
export const warning = (message: string): Notice => ({ level: 'warning', message });

export interface TaskRef {
  index: number;
  subject: string;
}
export interface SkipRef extends TaskRef {
  rootCause: number;
}

/** What became of integrating: the integration commit (null when nothing changed) and the tasks it recorded. */
export interface CommitOutcome {
  commit: string | null;
  tasks: number[];
}

/** Every task of the plan is completed. */
export const isComplete = (plan: Plan): boolean => plan.tasks.every((t) => statusOf(t) === 'completed');

/** Events of one type among a step's. */
const ofType = <T extends RunEventBody['type']>(events: readonly RunEventBody[], type: T): Array<Extract<RunEventBody, { type: T }>> =>
  events.filter((e): e is Extract<RunEventBody, { type: T }> => e.type === type);

/** The integration a step's events tell: the tasks integrated and the last integration commit. */
export function integratedBy(events: readonly RunEventBody[]): CommitOutcome {
  const rounds = ofType(events, 'round-committed');
  return { commit: rounds.findLast((r) => r.commit !== null)?.commit ?? null, tasks: rounds.flatMap((r) => r.tasks).sort((a, b) => a - b) };
}

/** The tasks a step's events skipped, with the task whose failure skipped each. */
export const skippedBy = (events: readonly RunEventBody[]): SkipRef[] =>
  ofType(events, 'task-skipped').map((s) => ({ index: s.task, subject: s.subject, rootCause: s.rootCause }));

// ---------------------------------------------------------------------------------------------
// The merge queue (setup, commit)

/** The gate's check of the starting commit as a step reports it: `none` (no gate, or nothing needed it), `running` until it passed, `passed`, `failed`. */
export type BaselineState = 'none' | 'running' | 'passed' | 'failed';

/** The step function's baseline as a step reports it. */
export function baselineState(baseline: Baseline): BaselineState {
  switch (baseline) {
    case 'none':
    case 'passed':
    case 'failed':
      return baseline;
    case 'due':
    case 'testing':
      return 'running';
    default:
      return assertNever(baseline, 'baseline');
  }
}

/** One gate run as a step reports it: its journal record without the output. */
export type GateRunReport = Omit<GateFinished, 'type' | 'output'>;

/** The merge queue as a step reports it. */
export interface GateReport {
  /** `running`: a gate run goes on in the background; call `plan commit` again for its result. */
  state: 'off' | 'idle' | 'running';
  command: string | null;
  /** The gate on the starting commit: `running` until it has passed; `failed` refuses the run. */
  baseline: BaselineState;
  /** The candidates under test now, stacked in order on the integration tip (empty for the baseline). */
  testing: number[];
  /** Candidates waiting for a gate run after it. */
  waiting: number[];
  /** Gate runs this step saw finish. */
  runs: GateRunReport[];
  /** Culprits found by this step: back to pending with the gate's output (retry), or failed. */
  blamed: Array<TaskRef & { outcome: 'retry' | 'failed'; reason: string }>;
  /** Candidates whose gate failure did not repeat: a flaky test, which blamed nobody. */
  flakes: number[];
  /** What the gate said when the baseline failed. */
  output?: string;
  /** When the baseline failed: what it failed on, the plan's integration ref and its tip then (HEAD, unless integrated work has not landed). */
  failedOn?: { ref: string; tip: string };
  notices: string[];
}

/** The session's gate as the report needs it: its command (none: no gate), and the run going on in the background. */
export interface GateInSession {
  config: { command: string } | null;
  current: { tasks: readonly number[] } | null;
}

/** The gate's part of a step's output: from the session's gate, the state after the step and what the step emitted. */
export function gateReport(gate: GateInSession, state: EngineState, events: readonly RunEventBody[], extra: Partial<GateReport> = {}): GateReport {
  const testing = gate.current?.tasks ?? [];
  const finished = ofType(events, 'gate-finished');
  const blamed = finished.flatMap((g) => {
    if (g.culprit === null) return [];
    const ended = ofType(events, 'task-finished').find((e) => e.task === g.culprit && (e.outcome === 'retry' || e.outcome === 'failed'));
    return ended
      ? [{ index: g.culprit, subject: ended.subject, outcome: ended.outcome as 'retry' | 'failed', reason: clipForLead(ended.reason ?? '', 600) }]
      : [];
  });
  return {
    state: gate.config === null ? 'off' : gate.current !== null ? 'running' : 'idle',
    command: gate.config?.command ?? null,
    baseline: gate.config === null ? 'none' : baselineState(state.baseline),
    testing: [...testing],
    waiting: tasksIn(state, new Set(['queued'])).filter((t) => !testing.includes(t)),
    runs: finished.map(({ type: _type, output: _output, ...report }) => report),
    blamed,
    flakes: finished.filter((g) => g.flake).map((g) => taskAt(g.tasks, 0)),
    notices: [],
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------
// next

export type NextStall = 'none' | 'running' | 'deadlock' | 'awaiting_approval' | 'landing' | 'gate' | 'limit' | 'done';

/**
 * Why `next` handed nothing out, as the plan stands after it (`none` when it handed something
 * out), and the tasks that explain it: with `deadlock` the pending tasks that can never start,
 * with `awaiting_approval` the tasks awaiting approval, with `landing` the ready tasks whose blockers' work is
 * integrated and not on the branch yet.
 */
export function nextStall(state: EngineState, step: { handedOut: number; running: readonly number[]; now: number }): { stall: NextStall; stuck: number[] } {
  if (step.handedOut > 0) return { stall: 'none', stuck: [] };
  const ready = readySet(state.plan.tasks);
  const stalled = planStall(state.plan.tasks, new Set(step.running));
  const awaitingApproval = [...claimingFiles({ plan: state.plan, attempts: new Map() })];
  // Nothing starts before the gate has passed the starting commit: `plan commit` waits for it.
  if (!gateOpen(state)) return { stall: 'gate', stuck: [] };
  if (step.running.length > 0) return { stall: 'running', stuck: [] };
  // A usage limit holds the hand-outs until it resets.
  if (holding(state.limiter, step.now) && ready.length > 0) return { stall: 'limit', stuck: [] };
  if (stalled.kind === 'deadlock') return { stall: 'deadlock', stuck: stalled.pending };
  if (stalled.kind === 'awaiting_approval') return { stall: 'awaiting_approval', stuck: stalled.awaitingApproval };
  // Ready tasks held back only by work awaiting approval that overlaps them.
  if (ready.length > 0 && awaitingApproval.length > 0) return { stall: 'awaiting_approval', stuck: awaitingApproval };
  // Ready tasks whose blockers' work waits to land: `plan commit` lands it once nothing blocks.
  const landing = waitingToLand(state);
  if (landing.length > 0) return { stall: 'landing', stuck: landing };
  // Nothing else left, and work waits for a person: the run is not done until they decide.
  const undecided = state.plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [i] : []));
  if (ready.length === 0 && undecided.length > 0) return { stall: 'awaiting_approval', stuck: undecided };
  return { stall: ready.length === 0 ? 'done' : 'none', stuck: [] };
}

/** Ready tasks that did not start because they overlap a task under way (at most `listed` of them), with the tasks they overlap. */
export function overlapping(state: EngineState, listed: number): Array<TaskRef & { overlapsWith: number[] }> {
  const busy = new Set([...state.attempts.keys(), ...claimingFiles(state)]);
  return readySet(state.plan.tasks)
    .map((i) => ({
      index: i,
      subject: taskAt(state.plan.tasks, i).subject,
      overlapsWith: [...state.overlaps[i]!].filter((j) => busy.has(j)).sort((a, b) => a - b),
    }))
    .filter((w) => w.overlapsWith.length > 0)
    .slice(0, listed);
}

// ---------------------------------------------------------------------------------------------
// finalize

/** A task that goes back to pending for another attempt, as `finalize` reports it. */
export type RetryRef = TaskRef & { attempt: number; reason: string };

/** The tasks whose attempt ended in a retry: the attempt the next `next` starts, and why (its end). */
export const retriesOf = (results: ReadonlyArray<TaskRef & { outcome: string; attempt: number; reason?: string }>): RetryRef[] =>
  results
    .filter((r) => r.outcome === 'retry')
    .map((r) => ({ index: r.index, subject: r.subject, attempt: r.attempt + 1, reason: clipForLead(r.reason ?? '', 300) }));

/** The tasks whose attempt, in a step's events, set files aside. */
export const setAsideBy = (events: readonly RunEventBody[]): number[] =>
  ofType(events, 'task-finished').flatMap((e) => (e.setAside !== undefined ? [e.task] : []));

/**
 * What the plan's attempts set aside, one notice a task, with the commands that read it back: what
 * `plan commit` says when it finished the plan (the lead shows it, as a headless run's Summary does).
 */
export const setAsideNotices = (plan: Plan): Notice[] =>
  plan.tasks.flatMap((task, index) =>
    task.setAside === undefined
      ? []
      : [{ level: 'info' as const, message: `task ${index} (${task.subject}), attempt ${task.setAside.attempt}: ${setAsideSummary(task.setAside)}` }],
  );

/** The circuit breaker as `finalize` reports it: as it tripped in the step, else where it stands (the pending tasks, those the step skipped). */
export function breakerReport(events: readonly RunEventBody[], totalTasks: number, pending: number): BreakerDecision {
  const tripped = ofType(events, 'breaker')[0];
  return tripped
    ? { trip: true, totalTasks, pendingCount: tripped.pendingCount, wouldBeSkipped: tripped.wouldBeSkipped }
    : { trip: false, totalTasks, pendingCount: pending, wouldBeSkipped: skippedBy(events).length };
}

/** What a `finalize` round came to, for its one-line summary. */
export interface RoundFigures {
  /** The round just finalized (from 1). */
  round: number;
  /** The outcome of each result the step settled (those it ignored left out). */
  settled: ReadonlyArray<{ outcome: string }>;
  retries: number;
  skipped: number;
  /** Tasks whose attempt this round changed files outside its declared files, set aside (its result's `warnings` name them). */
  setAside: readonly number[];
  tripped: boolean;
  counts: Record<TaskStatus, number>;
  /** Verified work not integrated yet: it counts as completed here, since `commit` integrates it next. */
  verifiedWaiting: number;
  totalTasks: number;
}

/** One line for the lead to show: the round's progress. */
export function roundSummary(figures: RoundFigures): string {
  const done = figures.settled.filter((r) => r.outcome === 'completed' || r.outcome === 'awaiting_approval').length;
  const tail = [
    figures.retries > 0 ? `${figures.retries} to retry` : '',
    figures.skipped > 0 ? `${figures.skipped} skipped` : '',
    figures.setAside.length > 0
      ? `${figures.setAside.length === 1 ? `task ${figures.setAside[0]}` : `tasks ${listIndices(figures.setAside)}`} changed files outside ${figures.setAside.length === 1 ? 'its' : 'their'} declared files, set aside (${figures.setAside.length === 1 ? 'its' : 'their'} warnings name them and how to read them back)`
      : '',
    figures.tripped ? 'circuit breaker tripped' : '',
  ].filter(Boolean);
  const overall = `${figures.counts.completed + figures.verifiedWaiting}/${figures.totalTasks} overall`;
  return `Round ${figures.round}: ${done}/${figures.settled.length} tasks completed (${overall})${tail.length > 0 ? `; ${tail.join(', ')}` : ''}`;
}
