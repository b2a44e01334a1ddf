// An attempt as the session file keeps it (run/session/file.ts): one JSON record, its `stage` saying
// what else it holds, in the fields every version wrote — `run`, `sessionId`, `cancelled`, the
// limit flags, `decision`, `work`, `candidate` (held for the merge queue, when in the lane) and
// `held` (on its candidate ref). A record is read back only whole, as the stage it names has it:
// a damaged one (a verified attempt without its decision or its work, a worker's run that is not
// one) is dropped, and its task runs again after `setup`; nothing reads it later and throws.

import type { Attempt, VerifiedBy } from '../core/engine/attempt.ts';
import { type PermissionDenial, type ReportedStatus, type StatusLine, type WorkerFailure, type WorkerRun, assertNever } from '../core/failure.ts';
import type { PassingDecision } from '../core/finalize.ts';
import { isObjectId } from '../core/git-text.ts';
import type { Usage } from '../core/plan.ts';
import type { CapturedWork } from '../core/work.ts';
import { isRecord } from '../core/json-text.ts';

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
  if (!isRecord(value) || !isInteger(value.task) || !isInteger(value.number)) return null;
  const stack = value.stack === undefined ? null : taskList(value.stack);
  if (stack === null && value.stack !== undefined) return null;
  const common = { task: value.task, number: value.number, ...(stack !== null ? { stack } : {}) };
  const run = value.run === undefined ? undefined : workerRunOf(value.run);
  if (run === null) return null;
  // Why a worker or its checks were told to stop: only while they run.
  const cancelled = typeof value.cancelled === 'string' ? { cancelled: value.cancelled } : {};
  const running = value.stage === 'running' || value.stage === 'verifying';
  if (running && value.cancelled !== undefined && typeof value.cancelled !== 'string') return null;
  switch (value.stage) {
    case 'running':
      return {
        ...common,
        stage: 'running',
        ...(run !== undefined ? { run } : {}),
        ...cancelled,
        ...(value.progressed === true ? { progressed: true } : {}),
        ...(value.stopping === true ? { stopping: true } : {}),
        ...(value.refused === true ? { refused: true } : {}),
        ...(value.recheck === true ? { recheck: true } : {}),
      };
    case 'paused':
      return run !== undefined && typeof value.sessionId === 'string' ? { ...common, stage: 'paused', run, sessionId: value.sessionId } : null;
    case 'verifying':
      return run !== undefined ? { ...common, stage: 'verifying', run, ...cancelled } : null;
    case 'verified':
    case 'recording':
    case 'queued':
    case 'gating':
      return verifiedOf(value, common, run);
    default:
      return null;
  }
}

/** A verified attempt (verified, in the lane, or a candidate of the merge queue) read back: its decision and its work it always has. */
function verifiedOf(value: Record<string, unknown>, common: Pick<Attempt, 'task' | 'number' | 'stack'>, run: WorkerRun | undefined): Attempt | null {
  const decision = passingDecisionOf(value.decision);
  const work = workOf(value.work);
  if (decision === null || work === null) return null;
  const verified = {
    ...common,
    work,
    verifiedBy:
      run !== undefined
        ? { kind: 'this-run' as const, run }
        : { kind: 'earlier-run' as const, held: value.held === true, ...(value.approved === true ? { approved: true as const } : {}) },
  };
  if (value.stage === 'verified') return { ...verified, stage: 'verified', decision };
  // In the lane, held for the merge queue, or under the gate: a candidate's work completed.
  if (decision.kind === 'awaiting_approval')
    return value.stage === 'recording' && value.candidate !== true ? { ...verified, stage: 'recording', purpose: 'park', decision } : null;
  switch (value.stage) {
    case 'recording':
      return { ...verified, stage: 'recording', purpose: value.candidate === true ? 'hold' : 'integrate', decision };
    case 'queued':
      return { ...verified, stage: 'queued', decision };
    case 'gating':
      return { ...verified, stage: 'gating', decision };
    default:
      return null;
  }
}

/** A captured work read back, or null when it is not one. */
export function workOf(value: unknown): CapturedWork | null {
  const work = value as { base?: unknown; entries?: unknown } | null;
  if (!work || typeof work !== 'object' || typeof work.base !== 'string' || !isObjectId(work.base) || !Array.isArray(work.entries)) return null;
  const entries = work.entries.filter((entry: unknown) => {
    const e = entry as { path?: unknown; mode?: unknown; object?: unknown; deleted?: unknown } | null;
    if (!e || typeof e.path !== 'string') return false;
    return e.deleted === true || (typeof e.mode === 'string' && isObjectId(e.object));
  });
  return entries.length === work.entries.length ? { base: work.base, entries: entries as CapturedWork['entries'] } : null;
}

function passingDecisionOf(value: unknown): PassingDecision | null {
  if (!isRecord(value) || typeof value.result !== 'string') return null;
  if (value.kind === 'completed') return { kind: 'completed', result: value.result };
  if (value.kind === 'awaiting_approval') return { kind: 'awaiting_approval', result: value.result };
  return null;
}

/** A worker's run read back, or null when it is not one. */
function workerRunOf(value: unknown): WorkerRun | null {
  if (!isRecord(value) || !isNumber(value.durationMs) || typeof value.logPath !== 'string' || !Array.isArray(value.permissionDenials)) return null;
  const usage = usageOf(value.usage);
  const outcome = outcomeOf(value.outcome);
  const permissionDenials = value.permissionDenials.map(permissionDenialOf);
  if (usage === null || outcome === null || !permissionDenials.every((denial) => denial !== null)) return null;
  if (![value.sessionId, value.waitedMs].every((field, k) => field === undefined || typeof field === (k === 0 ? 'string' : 'number'))) return null;
  return {
    ...(typeof value.sessionId === 'string' ? { sessionId: value.sessionId } : {}),
    ...(value.unmeasured === true ? { unmeasured: true } : {}),
    ...(value.recheck === true ? { recheck: true } : {}),
    usage,
    durationMs: value.durationMs,
    permissionDenials,
    logPath: value.logPath,
    ...(value.progressed === true ? { progressed: true } : {}),
    ...(isNumber(value.waitedMs) ? { waitedMs: value.waitedMs } : {}),
    outcome,
  };
}

function usageOf(value: unknown): Usage | null {
  if (!isRecord(value)) return null;
  const { costUsd, inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens } = value;
  return isNumber(costUsd) && isNumber(inputTokens) && isNumber(outputTokens) && isNumber(cacheReadTokens) && isNumber(cacheCreationTokens)
    ? { costUsd, inputTokens, outputTokens, cacheReadTokens, cacheCreationTokens }
    : null;
}

function permissionDenialOf(value: unknown): PermissionDenial | null {
  if (!isRecord(value) || typeof value.tool !== 'string') return null;
  return {
    tool: value.tool,
    ...(value.input !== undefined ? { input: value.input } : {}),
    ...(typeof value.path === 'string' ? { path: value.path } : {}),
    ...(typeof value.tracked === 'boolean' ? { tracked: value.tracked } : {}),
  };
}

const STATUSES: ReadonlySet<unknown> = new Set<ReportedStatus>(['COMPLETED', 'FAILED', 'BLOCKED']);
const isStatus = (value: unknown): value is ReportedStatus => STATUSES.has(value);

function outcomeOf(value: unknown): WorkerRun['outcome'] | null {
  if (!isRecord(value)) return null;
  if (value.kind === 'failed') return isWorkerFailure(value.failure) ? { kind: 'failed', failure: value.failure } : null;
  if (value.kind !== 'reported' || typeof value.resultText !== 'string') return null;
  const line = value.statusLine;
  if (line === null) return { kind: 'reported', resultText: value.resultText, statusLine: null };
  if (!isRecord(line) || !isStatus(line.status) || typeof line.text !== 'string') return null;
  const statusLine: StatusLine = { status: line.status, text: line.text };
  return { kind: 'reported', resultText: value.resultText, statusLine };
}

/** Each worker failure's fields and their types (`?`: it may be absent). */
const FAILURE_SHAPES: Record<WorkerFailure['reason'], Record<string, string>> = {
  'agent-missing': { bin: 'string', message: 'string' },
  'not-authenticated': { message: 'string' },
  'rate-limited': { message: 'string', retryAfterMs: 'number?', resetAt: 'number?' },
  overloaded: { message: 'string', retryAfterMs: 'number?' },
  'api-unreachable': { message: 'string' },
  interrupted: {},
  'timed-out': { timeoutMs: 'number' },
  'max-turns': { message: 'string' },
  'max-budget': { message: 'string' },
  'api-error': { message: 'string', status: 'number?' },
  'no-result': { exitCode: 'number?', signal: 'string?', stderrTail: 'string' },
  'garbage-output': { sample: 'string' },
  'no-worktree': { message: 'string', retryAfterMs: 'number' },
};
const FAILURE_FIELDS = new Map<string, Record<string, string>>(Object.entries(FAILURE_SHAPES));

function isWorkerFailure(value: unknown): value is WorkerFailure {
  if (!isRecord(value) || typeof value.reason !== 'string') return false;
  const fields = FAILURE_FIELDS.get(value.reason);
  return (
    fields !== undefined &&
    Object.entries(fields).every(([field, type]) => typeof value[field] === type.replace('?', '') || (type.endsWith('?') && value[field] === undefined))
  );
}

const isInteger = (value: unknown): value is number => Number.isInteger(value);
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
/** A list of task indices, or null. */
export const taskList = (value: unknown): number[] | null => (Array.isArray(value) && value.every((t) => Number.isInteger(t) && t >= 0) ? value : null);
