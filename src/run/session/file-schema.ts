// The session file's shape as schemas/session.schema.json says it, and the guards that check it
// with the schema's validator (compiled ahead of time: src/run/session/session-schema.generated.ts). The
// reading code (file.ts, attempt-record.ts) takes its values from what a guard passed, typed, and
// never assumes a field's type. A field absent is read as its default: earlier versions wrote
// fewer. Where a version wrote a flag as `false`, only `true` sets it.

import type { Attempt, Baseline, CapturedWork, EngineStop, Limiter, PassingDecision, Timing, UsageFigure, WorkerRun } from '../../core/index.ts';
import { validateAttempt, validateEarlierVerified, validateSessionFile } from './session-schema.generated.ts';
import type { GateRunRecord, HandedOut, SessionGateConfig, SessionSandbox } from './session-state.ts';

/** The session file: its own fields, and the earlier version's (`round`, `started`, `bases`, `verified`). */
export interface SessionFileJson {
  version?: number;
  concurrency?: number;
  maxAttempts?: number;
  checkTimeoutMs?: number;
  branch?: string | null;
  startedAt?: string;
  runId?: string | null;
  runFinished?: boolean;
  handedOut?: Record<string, HandedOut>;
  /** `baseline`: the session's word for it in versions before the step function kept it. */
  gate?: { config?: SessionGateConfig | null; current?: GateRunRecord | null; baseline?: string };
  sandbox?: SessionSandbox | null;
  strictScope?: boolean;
  engine?: EngineJson | null;
  round?: number;
  started?: Record<string, string>;
  bases?: Record<string, string>;
  /** Each checked on its own (`isEarlierVerified`). */
  verified?: unknown[];
}

/** The step function's state without its plan and what is derived from it. */
export interface EngineJson {
  now?: number;
  limiter?: LimiterJson;
  round?: number;
  usage?: UsageFigure;
  baseline?: Baseline;
  aborted?: boolean;
  timing?: Timing;
  recordingSince?: number | null;
  stop?: EngineStop | null;
  finished?: boolean;
  /** `{}`: a version that wrote the set as it was (nothing kept). */
  widened?: number[] | Record<string, never>;
  /** Each checked on its own (`isAttemptRecord`). */
  attempts: unknown[];
  admitted?: number[] | null;
  unlanded?: number[];
  gate?: { waiting?: number[]; segments?: number[][]; red?: number[] | null; aloneFailures?: Array<[number, number]> };
}

/** The limiter, each field absent in a version before it kept it. */
export type LimiterJson = Partial<Omit<Limiter, 'round'>> & { round?: Partial<Limiter['round']> };

/** A worker's run, its flags as booleans. */
export type WorkerRunJson = Omit<WorkerRun, 'unmeasured' | 'recheck' | 'progressed'> & { unmeasured?: boolean; recheck?: boolean; progressed?: boolean };

type CompletedDecision = Extract<PassingDecision, { kind: 'completed' }>;

/** What every attempt record may hold: `run` (its worker's), `held` and `approved` (verified by an earlier run), `candidate` (in the lane). */
interface RecordIn<Stage extends Attempt['stage']> {
  task: number;
  number: number;
  stage: Stage;
  stack?: number[];
  run?: WorkerRunJson;
  held?: boolean;
  approved?: boolean;
  candidate?: boolean;
}

/** An attempt record whole for its stage. */
export type AttemptRecord =
  | (RecordIn<'running'> & { cancelled?: string; progressed?: boolean; stopping?: boolean; refused?: boolean; recheck?: boolean })
  | (RecordIn<'paused'> & { run: WorkerRunJson; sessionId: string })
  | (RecordIn<'verifying'> & { run: WorkerRunJson; cancelled?: string })
  | (RecordIn<'verified'> & { decision: PassingDecision; work: CapturedWork })
  | (RecordIn<'queued' | 'gating'> & { decision: CompletedDecision; work: CapturedWork })
  | (RecordIn<'recording'> & { work: CapturedWork } & ({ candidate: true; decision: CompletedDecision } | { candidate?: false; decision: PassingDecision }));

/** The earlier version's verified task. */
export interface EarlierVerified {
  task: number;
  result: string;
  work: CapturedWork;
}

export const isSessionFile = (value: unknown): value is SessionFileJson => validateSessionFile(value) === true;
export const isAttemptRecord = (value: unknown): value is AttemptRecord => validateAttempt(value) === true;
export const isEarlierVerified = (value: unknown): value is EarlierVerified => validateEarlierVerified(value) === true;
