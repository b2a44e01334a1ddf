// One attempt of one task, from its start until the plan records how it ended: a union by stage
// (the stages are drawn in step.ts), each shape holding exactly what the attempt has in that stage;
// and the groups of stages the step function asks about (`tasksIn`).

import type { CapturedWork, Decision, PassingDecision, WorkerRun } from '../attempt/index.ts';
import type { Place } from '../hosts/index.ts';

export type AttemptStage = Attempt['stage'];

/**
 * One attempt of one task, from its start until the plan records how it ended: one shape per
 * stage, each holding exactly what the attempt has in it.
 */
export type Attempt = RunningAttempt | PausedAttempt | VerifyingAttempt | VerifiedAttempt | RecordingAttempt | QueuedAttempt | GatingAttempt;

/** What an attempt has in every stage. */
interface AttemptIn<Stage extends string> {
  readonly task: number;
  /** 1 for a task's first attempt. */
  readonly number: number;
  readonly stage: Stage;
  /**
   * Speculative: the candidates of the merge queue, in queue order, its worktree was built on
   * (on top of the integration tip); each is ahead of it in the queue. Absent: built on the tip.
   */
  readonly stack?: readonly number[];
  /** With hosts: the host and slot it works on, from its start (kept, to say where it ran). */
  readonly place?: Place;
}

/** Its worker runs in a worktree of its own (or the worktree is being made ready). */
export interface RunningAttempt extends AttemptIn<'running'> {
  /** A resumed attempt's: what its workers did before a limit paused it (absent: it started afresh). */
  readonly run?: WorkerRun;
  /** Why it was cancelled: a candidate of its stack left the queue. It ends as soon as its worker stops. */
  readonly cancelled?: string;
  /** The API served its worker a response: it has done something, and a limit never costs it that. */
  readonly progressed?: true;
  /** Its worker was asked to stop: a limit refused it before it had done anything. */
  readonly stopping?: true;
  /** The API refused its worker, and has served it nothing since. */
  readonly refused?: true;
  /** No worker: it re-checks the work its task's last attempt set aside (core/attempt/widen.ts). */
  readonly recheck?: true;
  /** Why it is lost: its host went down. It ends as soon as its worker stops, no attempt spent. */
  readonly lost?: string;
}

/**
 * Its worker was ended by a limit after it had done something: its worktree and its conversation
 * are kept, and it resumes (`--resume`) when the limiter lets it.
 */
export interface PausedAttempt extends AttemptIn<'paused'> {
  /** What its workers did so far. */
  readonly run: WorkerRun;
  /** The conversation its next worker goes on with. */
  readonly sessionId: string;
}

/** Its worker finished: its work is captured, spot-checked and its acceptance checks run, in its worktree. */
export interface VerifyingAttempt extends AttemptIn<'verifying'> {
  /** What its workers did. */
  readonly run: WorkerRun;
  /** Why it was cancelled: a candidate of its stack left the queue. It ends as soon as its checks stop. */
  readonly cancelled?: string;
  /** Why it is lost: its host went down. It ends as soon as its checks stop, no attempt spent. */
  readonly lost?: string;
}

/**
 * Who verified an attempt's work: this run's worker (what it did, counted in this run), or an
 * earlier run (its worker's cost counted there); `held`, that run held it on its candidate ref;
 * `approved`, a person approved it after it awaited approval (its attempt was counted then).
 */
export type VerifiedBy = { kind: 'this-run'; run: WorkerRun } | { kind: 'earlier-run'; held: boolean; approved?: true };

type CompletedDecision = Extract<Decision, { kind: 'completed' }>;

/** What verified work has, from `verified` until the plan records it. */
interface VerifiedIn<Stage extends string> extends AttemptIn<Stage> {
  readonly decision: PassingDecision;
  /** What the worker left in its declared files: what is integrated. */
  readonly work: CapturedWork;
  readonly verifiedBy: VerifiedBy;
}

/** Verified, waiting for the lane to record it. It claims its files, and its dependants wait for it. */
export interface VerifiedAttempt extends VerifiedIn<'verified'> {}

/**
 * In the lane: `integrate` (onto the integration ref: the tip is about to move), `park` (work
 * awaiting approval, on a ref of its own) or `hold` (a candidate for the merge queue, on its ref).
 */
export type RecordingAttempt =
  | (VerifiedIn<'recording'> & { readonly purpose: 'integrate' | 'hold'; readonly decision: CompletedDecision })
  | (VerifiedIn<'recording'> & { readonly purpose: 'park'; readonly decision: Extract<Decision, { kind: 'awaiting_approval' }> });

/** A candidate in the merge queue, held on its ref until the gate passes it. */
export interface QueuedAttempt extends VerifiedIn<'queued'> {
  readonly decision: CompletedDecision;
}

/** A candidate under the gate (in the lane), with the candidates ahead of it. */
export interface GatingAttempt extends VerifiedIn<'gating'> {
  readonly decision: CompletedDecision;
}

/**
 * The stages in which an attempt holds a worker slot and has work in flight: until its outcome is
 * settled, nothing that depends on it (the breaker, say) is known.
 */
export const IN_FLIGHT: ReadonlySet<AttemptStage> = new Set(['running', 'verifying']);

/** Verified attempts not integrated yet: they claim their files, and their dependants wait for them. */
export const WAITING_TO_LAND: ReadonlySet<AttemptStage> = new Set(['verified', 'recording', 'queued', 'gating']);

/** Attempts whose worker a limit ended after it had done something: they keep their worktree and files, and resume. */
export const PAUSED: ReadonlySet<AttemptStage> = new Set(['paused']);

/** Tasks whose attempt is in one of `stages`, ascending. */
export function tasksIn(state: { readonly attempts: ReadonlyMap<number, Attempt> }, stages: ReadonlySet<AttemptStage>): number[] {
  return [...state.attempts.values()]
    .filter((a) => stages.has(a.stage))
    .map((a) => a.task)
    .sort((a, b) => a - b);
}
