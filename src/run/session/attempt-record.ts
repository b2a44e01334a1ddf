// An attempt as the session file keeps it (run/session/file.ts): one JSON record, its `stage` saying
// what else it holds, in the fields every version wrote — `run`, `sessionId`, `cancelled`, the
// limit flags, `decision`, `work`, `candidate` (held for the merge queue, when in the lane) and
// `held` (on its candidate ref). A record is read back only whole, as the stage it names has it
// (schemas/session.schema.json, `#/definitions/attempt`): a damaged one (a verified attempt
// without its decision or its work, a worker's run that is not one, a field not of its type) is
// dropped, and its task runs again after `setup`; nothing reads it later and throws.

import {
  assertNever,
  type Attempt,
  type CapturedWork,
  type PassingDecision,
  type PermissionDenial,
  type Usage,
  type VerifiedBy,
  type WorkerRun,
} from '../../core/index.ts';
import { type AttemptRecord, isAttemptRecord, type WorkerRunJson } from './file-schema.ts';

/** The attempt as the session file keeps it. */
export function attemptToJson(attempt: Attempt): object {
  const common = { task: attempt.task, number: attempt.number, stage: attempt.stage, ...(attempt.stack !== undefined ? { stack: attempt.stack } : {}) };
  switch (attempt.stage) {
    case 'running':
      return {
        ...common,
        ...(attempt.run !== undefined ? { run: attempt.run } : {}),
        ...(attempt.cancelled !== undefined ? { cancelled: attempt.cancelled } : {}),
        ...(attempt.progressed ? { progressed: true } : {}),
        ...(attempt.stopping ? { stopping: true } : {}),
        ...(attempt.refused ? { refused: true } : {}),
        ...(attempt.recheck ? { recheck: true } : {}),
      };
    case 'paused':
      // Paused only once its worker had done something.
      return { ...common, run: attempt.run, progressed: true, sessionId: attempt.sessionId };
    case 'verifying':
      return { ...common, run: attempt.run, ...(attempt.cancelled !== undefined ? { cancelled: attempt.cancelled } : {}) };
    case 'verified':
    case 'queued':
    case 'gating':
      return { ...common, ...verifiedToJson(attempt.verifiedBy, attempt.stage !== 'verified'), decision: attempt.decision, work: attempt.work };
    case 'recording':
      return { ...common, ...verifiedToJson(attempt.verifiedBy, false), decision: attempt.decision, work: attempt.work, candidate: attempt.purpose === 'hold' };
    default:
      return assertNever(attempt, 'attempt');
  }
}

/** Who verified it, in the record's words: its worker's `run` (this run's), `held` once it is on its candidate ref, `approved` when a person approved it. */
const verifiedToJson = (by: VerifiedBy, candidate: boolean): object => ({
  ...(by.kind === 'this-run' ? { run: by.run } : {}),
  ...(candidate || (by.kind === 'earlier-run' && by.held) ? { held: true } : {}),
  ...(by.kind === 'earlier-run' && by.approved === true ? { approved: true } : {}),
});

/** An attempt read back, or null when the record is not whole for its stage. */
export function attemptOf(value: unknown): Attempt | null {
  if (!isAttemptRecord(value)) return null;
  const common = { task: value.task, number: value.number, ...(value.stack !== undefined ? { stack: value.stack } : {}) };
  switch (value.stage) {
    case 'running':
      return {
        ...common,
        stage: 'running',
        ...(value.run !== undefined ? { run: workerRunOf(value.run) } : {}),
        // Why a worker or its checks were told to stop: only while they run.
        ...(value.cancelled !== undefined ? { cancelled: value.cancelled } : {}),
        ...(value.progressed === true ? { progressed: true } : {}),
        ...(value.stopping === true ? { stopping: true } : {}),
        ...(value.refused === true ? { refused: true } : {}),
        ...(value.recheck === true ? { recheck: true } : {}),
      };
    case 'paused':
      return { ...common, stage: 'paused', run: workerRunOf(value.run), sessionId: value.sessionId };
    case 'verifying':
      return { ...common, stage: 'verifying', run: workerRunOf(value.run), ...(value.cancelled !== undefined ? { cancelled: value.cancelled } : {}) };
    case 'verified':
    case 'recording':
    case 'queued':
    case 'gating':
      return verifiedOf(value, common);
    default:
      return assertNever(value, 'attempt record');
  }
}

/** A verified attempt (verified, in the lane, or a candidate of the merge queue) read back: its decision and its work it always has. */
function verifiedOf(
  record: Extract<AttemptRecord, { stage: 'verified' | 'recording' | 'queued' | 'gating' }>,
  common: Pick<Attempt, 'task' | 'number' | 'stack'>,
): Attempt {
  const verifiedBy: VerifiedBy =
    record.run !== undefined
      ? { kind: 'this-run', run: workerRunOf(record.run) }
      : record.approved === true
        ? { kind: 'earlier-run', held: record.held === true, approved: true }
        : { kind: 'earlier-run', held: record.held === true };
  const verified = { ...common, work: workOf(record.work), verifiedBy };
  switch (record.stage) {
    case 'verified':
      return { ...verified, stage: 'verified', decision: decisionOf(record.decision) };
    case 'queued':
      return { ...verified, stage: 'queued', decision: completed(record.decision.result) };
    case 'gating':
      return { ...verified, stage: 'gating', decision: completed(record.decision.result) };
    case 'recording':
      // In the lane: held for the merge queue (a candidate's work completed), integrated, or parked awaiting approval.
      if (record.candidate === true) return { ...verified, stage: 'recording', purpose: 'hold', decision: completed(record.decision.result) };
      return record.decision.kind === 'awaiting_approval'
        ? { ...verified, stage: 'recording', purpose: 'park', decision: { kind: 'awaiting_approval', result: record.decision.result } }
        : { ...verified, stage: 'recording', purpose: 'integrate', decision: completed(record.decision.result) };
    default:
      return assertNever(record, 'verified attempt record');
  }
}

/** A captured work read back: its fields, as the schema passed them. */
export const workOf = (work: CapturedWork): CapturedWork => ({ base: work.base, entries: work.entries });

const completed = (result: string): Extract<PassingDecision, { kind: 'completed' }> => ({ kind: 'completed', result });

/** A passing decision read back: its kind and its result. */
const decisionOf = (decision: PassingDecision): PassingDecision =>
  decision.kind === 'completed' ? completed(decision.result) : { kind: 'awaiting_approval', result: decision.result };

/** A worker's run read back: the fields a run has, its flags only when set. */
function workerRunOf(run: WorkerRunJson): WorkerRun {
  return {
    ...(run.sessionId !== undefined ? { sessionId: run.sessionId } : {}),
    ...(run.unmeasured === true ? { unmeasured: true } : {}),
    ...(run.recheck === true ? { recheck: true } : {}),
    usage: usageOf(run.usage),
    durationMs: run.durationMs,
    permissionDenials: run.permissionDenials.map(permissionDenialOf),
    logPath: run.logPath,
    ...(run.progressed === true ? { progressed: true } : {}),
    ...(run.waitedMs !== undefined ? { waitedMs: run.waitedMs } : {}),
    outcome: outcomeOf(run.outcome),
  };
}

const usageOf = ({ costUsd, inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens }: Usage): Usage => ({
  costUsd,
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheCreationTokens,
});

const permissionDenialOf = (denial: PermissionDenial): PermissionDenial => ({
  tool: denial.tool,
  ...(denial.input !== undefined ? { input: denial.input } : {}),
  ...(denial.path !== undefined ? { path: denial.path } : {}),
  ...(denial.tracked !== undefined ? { tracked: denial.tracked } : {}),
});

function outcomeOf(outcome: WorkerRun['outcome']): WorkerRun['outcome'] {
  if (outcome.kind === 'failed') return { kind: 'failed', failure: outcome.failure };
  const line = outcome.statusLine;
  return { kind: 'reported', resultText: outcome.resultText, statusLine: line === null ? null : { status: line.status, text: line.text } };
}
