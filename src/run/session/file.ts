// The in-session run between steps. A Claude Code session runs a plan through the plan tool's
// steps (`setup`, `next`, `finalize`, `commit`), each a separate process; what the headless
// engine keeps in memory — the step function's state — is kept here, in the session file
// `.design/prompts/session.json`, with what only a session needs besides: when and at which
// commit `next` handed each task out, the gate process under way, the run's journal id.
//
// The state's plan is not kept: each step reads plan.json afresh (an edit made between steps is
// what the next step works with), and the step function's derived fields (overlaps, priority)
// are computed from it. A session file of the previous version (before the step function ran
// the session: `verified`, `started`, `gate.queue`) is read into the same state.
//
// Its shape is schemas/session.schema.json: the file is read through the guards of
// file-schema.ts (the schema's validator, generated), each value taken as the guard typed it. A
// damaged attempt record is dropped alone; a file whose own fields are not of their types is
// read as none, as one that is not JSON.

import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../adapters/index.ts';
import { attemptOf, attemptToJson, workOf } from './attempt-record.ts';
import {
  type Attempt,
  attemptsOf,
  type Baseline,
  computeOverlaps,
  depsOf,
  emptyGateQueue,
  type EngineConfig,
  type EngineState,
  type GateQueue,
  initialState,
  type Limiter,
  longestRemainingPath,
  overlapSets,
  type Plan,
  statusOf,
  taskAt,
  UNKNOWN,
} from '../../core/index.ts';
import { promptsDirFor } from '../archive.ts';
import { type EngineJson, isEarlierVerified, isSessionFile, type LimiterJson, type SessionFileJson } from './file-schema.ts';
import { defaultSession, type HandedOut, type Session, sessionConfig, type SessionGate, type SessionSandbox } from './session-state.ts';

export const sessionPathFor = (planPath: string): string => join(promptsDirFor(planPath), 'session.json');
export const promptPathFor = (planPath: string, index: number): string => join(promptsDirFor(planPath), `task-${index}.md`);

// ---------------------------------------------------------------------------------------------
// The step function's state, to JSON and back

function queueToJson(queue: GateQueue): object {
  return { ...queue, aloneFailures: [...queue.aloneFailures.entries()] };
}

/** The merge queue read back; its empty segments left out. */
function queueFromJson(queue: EngineJson['gate'] = {}): GateQueue {
  return {
    ...emptyGateQueue(),
    waiting: queue.waiting ?? [],
    segments: (queue.segments ?? []).filter((segment) => segment.length > 0),
    red: queue.red ?? null,
    aloneFailures: new Map(queue.aloneFailures ?? []),
  };
}

/** The step function's state as JSON, without its plan and what is derived from it. */
export function engineToJson(state: EngineState): object {
  // `retryFrom` is a headless run's only (a session's subagents start from the branch).
  const { plan: _plan, overlaps: _overlaps, priority: _priority, attempts, admitted, unlanded, widened, gate, retryFrom: _retryFrom, ...rest } = state;
  return {
    ...rest,
    attempts: [...attempts.values()].map(attemptToJson),
    admitted: admitted === null ? null : [...admitted],
    unlanded: [...unlanded],
    widened: [...widened],
    gate: queueToJson(gate),
  };
}

/**
 * The baseline of a session file from before the step function kept it: the session's own word
 * (`gate.baseline`: `running` while its gate process tested the starting commit, or until it
 * started; `none` with no gate, or when nothing needed it).
 */
function earlierBaseline(gate: SessionFileJson['gate']): Baseline {
  switch (gate?.baseline) {
    case 'passed':
      return 'passed';
    case 'failed':
      return 'failed';
    case 'running':
      return gate?.current?.tasks.length === 0 ? 'testing' : 'due';
    default:
      return 'none';
  }
}

/** The limiter read back; `fresh` (a new run's) for what is missing (a session file from before it kept one, or that field). */
export function limiterFromJson(limiter: LimiterJson | undefined, fresh: Limiter): Limiter {
  if (limiter === undefined) return fresh;
  return {
    working: limiter.working ?? fresh.working,
    holdUntil: limiter.holdUntil ?? 0,
    ownHold: limiter.ownHold === true,
    kind: limiter.kind ?? null,
    resetAt: limiter.resetAt ?? null,
    unreachable: limiter.unreachable ?? null,
    strikes: limiter.strikes ?? 0,
    refusedSince: limiter.refusedSince ?? null,
    served: limiter.served ?? 0,
    patience: limiter.patience ?? 1,
    refusedAt: limiter.refusedAt ?? null,
    refusals: limiter.refusals ?? 0,
    round: { through: limiter.round?.through ?? 0, refused: limiter.round?.refused ?? 0 },
  };
}

/** Whether `task`, as a session file names it, is a task of `plan` in progress: one it names that is not in the plan (edited since) is not. */
function inProgress(plan: Plan, task: number): boolean {
  const planned = plan.tasks[task];
  return planned !== undefined && statusOf(planned) === 'in_progress';
}

/**
 * The step function's state as a session file kept it, with `plan` (read afresh) put in and the
 * derived fields computed from it. Attempts whose task is no longer in progress in the plan (an
 * edit by hand, `plan skip`), or whose record is not whole for its stage, are let go. `session`:
 * the rest of the file, where an earlier version kept the baseline.
 */
export function engineFromJson(value: EngineJson | null, plan: Plan, config: EngineConfig, session: SessionFileJson = {}): EngineState | null {
  if (value === null) return null;
  const attempts = new Map(
    value.attempts
      .map(attemptOf)
      .filter((a): a is Attempt => a !== null && inProgress(plan, a.task))
      .map((a): [number, Attempt] => [a.task, a]),
  );
  const base = initialState(plan, config, value.now ?? Date.now());
  const queue = queueFromJson(value.gate);
  // A candidate whose task was let go leaves the queue; a batch it was in is tested anew.
  const candidate = (t: number) => attempts.get(t)?.stage === 'queued' || attempts.get(t)?.stage === 'gating';
  const queued = [...queue.segments.flat(), ...queue.waiting];
  const gate = queued.every(candidate) ? queue : { ...emptyGateQueue(), waiting: [...new Set(queued)].filter(candidate) };
  // Their attempts wait in the queue again: nothing is under test for it.
  if (gate !== queue)
    for (const t of gate.waiting) {
      const attempt = attempts.get(t);
      if (attempt?.stage === 'gating') attempts.set(t, { ...attempt, stage: 'queued' });
    }
  return {
    ...base,
    attempts,
    limiter: limiterFromJson(value.limiter, base.limiter),
    admitted: value.admitted ? new Set(value.admitted) : null,
    round: value.round ?? 0,
    usage: value.usage ?? UNKNOWN,
    unlanded: new Set(value.unlanded ?? []),
    widened: new Set(Array.isArray(value.widened) ? value.widened : []),
    baseline: value.baseline ?? earlierBaseline(session.gate),
    aborted: value.aborted === true,
    timing: value.timing ?? base.timing,
    recordingSince: value.recordingSince ?? null,
    gate,
    stop: value.stop ?? null,
    finished: value.finished === true,
  };
}

/**
 * The step function's state of a session file of the previous version, which kept the session's
 * own lists: tasks handed out (`started`), verified and not integrated (`verified`), the merge
 * queue and the gate run under way (`gate`).
 */
function engineFromEarlierSession(data: SessionFileJson, plan: Plan, config: EngineConfig): EngineState {
  const base = initialState(plan, config, Date.now());
  const attempts = new Map<number, Attempt>();
  const number = (task: number) => attemptsOf(taskAt(plan.tasks, task)) + 1;
  // Its merge queue's candidates are left out: it kept their work on their refs only, which the
  // next `setup` reads (they rejoin the queue there); a candidate without its work cannot be gated
  // nor integrated. A verified entry not whole is dropped.
  for (const entry of data.verified ?? []) {
    if (!isEarlierVerified(entry) || !inProgress(plan, entry.task) || attempts.has(entry.task)) continue;
    attempts.set(entry.task, {
      task: entry.task,
      number: number(entry.task),
      stage: 'verified',
      decision: { kind: 'completed', result: entry.result },
      work: workOf(entry.work),
      verifiedBy: { kind: 'earlier-run', held: false },
    });
  }
  for (const task of Object.keys(data.started ?? {}).map(Number))
    if (Number.isInteger(task) && inProgress(plan, task) && !attempts.has(task)) attempts.set(task, { task, number: number(task), stage: 'running' });
  return { ...base, attempts, round: data.round ?? 0, usage: UNKNOWN, baseline: config.gate === null ? 'none' : earlierBaseline(data.gate) };
}

// ---------------------------------------------------------------------------------------------
// The session file

function sandboxOf(sandbox: SessionSandbox | null | undefined): SessionSandbox | null {
  if (sandbox === undefined || sandbox === null) return null;
  return sandbox.sandboxed ? { mode: sandbox.mode, sandboxed: true } : { mode: sandbox.mode, sandboxed: false, unavailable: sandbox.unavailable };
}

function gateOf(gate: SessionFileJson['gate']): SessionGate {
  const config = gate?.config ?? null;
  const current = gate?.current ?? null;
  return {
    config: config === null ? null : { command: config.command, batchSize: config.batchSize, timeoutMs: config.timeoutMs },
    current: current === null ? null : { id: current.id, tasks: current.tasks, tip: current.tip, startedAt: current.startedAt },
  };
}

/** The handed-out tasks: this version's `handedOut`, or an earlier one's `started` and `bases`; each at a time that reads. */
function handedOutOf(data: SessionFileJson): Record<string, HandedOut> {
  const out: Record<string, HandedOut> = {};
  const valid = (at: string) => Number.isFinite(Date.parse(at));
  if (data.handedOut !== undefined) {
    for (const [task, { at, base, parked }] of Object.entries(data.handedOut))
      if (valid(at)) out[task] = { at, base, ...(parked !== undefined ? { parked } : {}) };
    return out;
  }
  const bases = data.bases ?? {};
  for (const [task, at] of Object.entries(data.started ?? {})) {
    const base = bases[task];
    if (valid(at) && base !== undefined) out[task] = { at, base };
  }
  return out;
}

/**
 * The session file, with the step function's state for `plan` — or the defaults when there is
 * none (a lead that skipped `setup`) or it is not a session file (not JSON, or a field not of its
 * type: schemas/session.schema.json). A file of an earlier version is read too; an attempt record
 * not whole for its stage is dropped alone.
 */
export async function readSession(planPath: string, plan: Plan): Promise<Session> {
  const base = defaultSession();
  let data: unknown;
  try {
    data = JSON.parse(await readFile(sessionPathFor(planPath), 'utf8'));
  } catch {
    return base;
  }
  if (!isSessionFile(data)) return base;
  const session: Session = {
    concurrency: data.concurrency ?? base.concurrency,
    maxAttempts: data.maxAttempts ?? base.maxAttempts,
    checkTimeoutMs: data.checkTimeoutMs ?? base.checkTimeoutMs,
    branch: data.branch ?? null,
    startedAt: data.startedAt ?? base.startedAt,
    runId: data.runId ?? null,
    runFinished: data.runFinished === true,
    handedOut: handedOutOf(data),
    gate: gateOf(data.gate),
    sandbox: sandboxOf(data.sandbox),
    strictScope: data.strictScope === true,
    engine: null,
  };
  const config = sessionConfig(session, planPath);
  session.engine = data.engine !== undefined ? engineFromJson(data.engine, plan, config, data) : engineFromEarlierSession(data, plan, config);
  return session;
}

export async function writeSession(planPath: string, session: Session): Promise<void> {
  await mkdir(promptsDirFor(planPath), { recursive: true });
  const { engine, ...rest } = session;
  await writeFileAtomic(
    sessionPathFor(planPath),
    `${JSON.stringify({ version: 2, ...rest, engine: engine === null ? null : engineToJson(engine) }, null, 2)}\n`,
  );
}

/** The step function's state with the plan as the step read it: the state's derived fields follow it. */
export function withPlan(state: EngineState, plan: Plan): EngineState {
  return { ...state, plan, overlaps: overlapSets(computeOverlaps(plan.tasks)), priority: longestRemainingPath(depsOf(plan.tasks)) };
}
