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

import { isObjectId } from '../../core/git-text.ts';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../adapters/plan-store.ts';
import { SANDBOX_MODES, type SandboxDecision, type SandboxMode } from '../../adapters/sandbox.ts';
import { attemptOf, attemptToJson, taskList, workOf } from '../attempt-record.ts';
import { initialState } from '../../core/engine/admission.ts';
import type { Attempt } from '../../core/engine/attempt.ts';
import type { Baseline, EngineConfig, EngineState, EngineStop } from '../../core/engine/state.ts';
import { type GateQueue, emptyGateQueue } from '../../core/gate.ts';
import type { Limiter, LimitKind } from '../../core/limiter.ts';
import { depsOf, longestRemainingPath } from '../../core/graph.ts';
import { computeOverlaps, overlapSets } from '../../core/overlap.ts';
import { type Plan, UNKNOWN, type UsageFigure, attemptsOf, statusOf } from '../../core/plan.ts';
import { promptsDirFor } from '../archive.ts';
import { DEFAULTS } from '../settings.ts';
import { isRecord } from '../../core/json-text.ts';

export const sessionPathFor = (planPath: string): string => join(promptsDirFor(planPath), 'session.json');
export const promptPathFor = (planPath: string, index: number): string => join(promptsDirFor(planPath), `task-${index}.md`);

/** The session's sandbox: the mode asked for and whether commands run in it (or why not). */
export type SessionSandbox = { mode: SandboxMode } & SandboxDecision;

/** The gate a session uses: the plan's test command (or `--gate CMD`), its batch size and time limit. */
export interface SessionGateConfig {
  command: string;
  batchSize: number;
  timeoutMs: number;
}

/** The gate process started in the background: its id, what it tests and on which integration tip. */
export interface GateRunRecord {
  id: string;
  /** Candidates stacked in order on `tip`; empty for the baseline. */
  tasks: number[];
  tip: string;
  startedAt: string;
}

/** The merge queue's process side (its queue and its baseline are the step function's): the command, the run under way. */
export interface SessionGate {
  config: SessionGateConfig | null;
  current: GateRunRecord | null;
}

/** A task `next` handed out: when, and the commit HEAD was at (its subagent's worktree starts there). */
export interface HandedOut {
  at: string;
  base: string;
}

/** What the lead's session remembers between steps. */
export interface Session {
  concurrency: number;
  maxAttempts: number;
  checkTimeoutMs: number;
  /** The branch checked out at setup (`refs/heads/…`), where integrated work lands; null on a detached HEAD. */
  branch: string | null;
  /** When the session's run started. */
  startedAt: string;
  /** The run's id in the journal; null until a step starts a run. */
  runId: string | null;
  /** True once a step wrote the run's run-finished event: the next task handed out starts a new run. */
  runFinished: boolean;
  /** By task index: the tasks handed out and not finalized yet. */
  handedOut: Record<string, HandedOut>;
  gate: SessionGate;
  /** The sandbox mode `setup` was given and what it found. Null in a session file of an earlier version. */
  sandbox: SessionSandbox | null;
  /** `setup --strict-scope`: a change outside a task's declared files fails its attempt (else it is set aside). */
  strictScope: boolean;
  /** The step function's state (its plan is read from plan.json at each step); null before setup. */
  engine: EngineState | null;
}

export const noSessionGate = (): SessionGate => ({ config: null, current: null });

export const defaultSession = (): Session => ({
  concurrency: DEFAULTS.concurrency,
  maxAttempts: DEFAULTS.maxAttempts,
  checkTimeoutMs: DEFAULTS.checkTimeoutMs,
  branch: null,
  startedAt: new Date().toISOString(),
  runId: null,
  runFinished: false,
  handedOut: {},
  gate: noSessionGate(),
  sandbox: null,
  strictScope: false,
  engine: null,
});

/** The step function's configuration for a session. */
export const sessionConfig = (
  session: Pick<Session, 'concurrency' | 'maxAttempts' | 'gate'> & Partial<Pick<Session, 'strictScope'>>,
  planPath: string,
): EngineConfig => ({
  concurrency: session.concurrency,
  maxAttempts: session.maxAttempts,
  schedule: 'continuous',
  backoffMs: DEFAULTS.backoffMs,
  // A session waits for no limit: its lead is told the reset time and comes back after it.
  limitWaitMs: 0,
  logDir: promptsDirFor(planPath),
  ...(session.strictScope === true ? { strictScope: true } : {}),
  gate: session.gate.config === null ? null : { batchSize: session.gate.config.batchSize, command: session.gate.config.command },
  // A subagent's worktree starts from HEAD: nothing can be built on candidates in a session.
  speculate: 0,
  driver: 'session',
});

// ---------------------------------------------------------------------------------------------
// The step function's state, to JSON and back

const int = (v: unknown, min: number, fallback: number) => (Number.isInteger(v) && (v as number) >= min ? (v as number) : fallback);

function queueToJson(queue: GateQueue): object {
  return { ...queue, aloneFailures: [...queue.aloneFailures.entries()] };
}

function queueFromJson(value: unknown): GateQueue {
  const q = (value ?? {}) as { waiting?: unknown; segments?: unknown; red?: unknown; aloneFailures?: unknown };
  const segments = Array.isArray(q.segments) ? q.segments.map(taskList).filter((s): s is number[] => s !== null && s.length > 0) : [];
  const pairs: Array<[number, number]> = Array.isArray(q.aloneFailures)
    ? (q.aloneFailures as unknown[]).filter(
        (p): p is [number, number] => Array.isArray(p) && p.length === 2 && Number.isInteger(p[0]) && Number.isInteger(p[1]),
      )
    : [];
  return { ...emptyGateQueue(), waiting: taskList(q.waiting) ?? [], segments, red: taskList(q.red), aloneFailures: new Map(pairs) };
}

/** The step function's state as JSON, without its plan and what is derived from it. */
export function engineToJson(state: EngineState): object {
  const { plan: _plan, overlaps: _overlaps, priority: _priority, attempts, admitted, unlanded, widened, gate, ...rest } = state;
  return {
    ...rest,
    attempts: [...attempts.values()].map(attemptToJson),
    admitted: admitted === null ? null : [...admitted],
    unlanded: [...unlanded],
    widened: [...widened],
    gate: queueToJson(gate),
  };
}

const BASELINES = new Set<string>(['none', 'due', 'testing', 'passed', 'failed'] satisfies Baseline[]);

/**
 * The baseline of a session file from before the step function kept it: the session's own word
 * (`gate.baseline`: `running` while its gate process tested the starting commit, or until it
 * started; `none` with no gate, or when nothing needed it).
 */
function earlierBaseline(data: Record<string, unknown>): Baseline {
  const gate = (data.gate ?? {}) as { baseline?: unknown; current?: { tasks?: unknown } | null };
  switch (gate.baseline) {
    case 'passed':
    case 'failed':
      return gate.baseline;
    case 'running':
      return taskList(gate.current?.tasks)?.length === 0 ? 'testing' : 'due';
    default:
      return 'none';
  }
}

const LIMIT_KINDS = new Set<string>(['rate-limit', 'overloaded', 'usage-limit', 'api-unreachable'] satisfies LimitKind[]);

/** The limiter read back; `fresh` (a new run's) for what is missing or damaged (a session file from before it kept one). */
export function limiterFromJson(value: unknown, fresh: Limiter): Limiter {
  const v = value as Partial<Record<keyof Limiter, unknown>> | null;
  if (!v || typeof v !== 'object') return fresh;
  const num = (x: unknown, min: number, fallback: number) => (typeof x === 'number' && Number.isFinite(x) && x >= min ? x : fallback);
  const round = (v.round ?? {}) as { through?: unknown; refused?: unknown };
  return {
    working: int(v.working, 1, fresh.working),
    holdUntil: num(v.holdUntil, 0, 0),
    ownHold: v.ownHold === true,
    kind: typeof v.kind === 'string' && LIMIT_KINDS.has(v.kind) ? (v.kind as LimitKind) : null,
    resetAt: typeof v.resetAt === 'number' ? v.resetAt : null,
    unreachable: typeof v.unreachable === 'string' ? v.unreachable : null,
    strikes: int(v.strikes, 0, 0),
    refusedSince: typeof v.refusedSince === 'number' ? v.refusedSince : null,
    served: int(v.served, 0, 0),
    patience: int(v.patience, 1, 1),
    refusedAt: Number.isInteger(v.refusedAt) ? (v.refusedAt as number) : null,
    refusals: int(v.refusals, 0, 0),
    round: { through: int(round.through, 0, 0), refused: int(round.refused, 0, 0) },
  };
}

/**
 * The step function's state as a session file kept it, with `plan` (read afresh) put in and the
 * derived fields computed from it. Attempts whose task is no longer in progress in the plan (an
 * edit by hand, `plan skip`) are let go. `session`: the rest of the file, where an earlier version
 * kept the baseline.
 */
export function engineFromJson(value: unknown, plan: Plan, config: EngineConfig, session: Record<string, unknown> = {}): EngineState | null {
  const v = value as Record<string, unknown> | null;
  if (!v || typeof v !== 'object' || !Array.isArray(v.attempts)) return null;
  const inProgress = (task: number) => plan.tasks[task] !== undefined && statusOf(plan.tasks[task]!) === 'in_progress';
  const attempts = new Map(
    v.attempts
      .map(attemptOf)
      .filter((a): a is Attempt => a !== null && inProgress(a.task))
      .map((a) => [a.task, a] as const),
  );
  const timing = v.timing as EngineState['timing'] | undefined;
  const usage = v.usage === UNKNOWN || (v.usage && typeof v.usage === 'object') ? (v.usage as UsageFigure) : UNKNOWN;
  const stop = v.stop && typeof v.stop === 'object' && typeof (v.stop as EngineStop).reason === 'string' ? (v.stop as EngineStop) : null;
  const base = initialState(plan, config, typeof v.now === 'number' ? v.now : Date.now());
  const queue = queueFromJson(v.gate);
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
    limiter: limiterFromJson(v.limiter, base.limiter),
    admitted: taskList(v.admitted) === null ? null : new Set(taskList(v.admitted)),
    round: int(v.round, 0, 0),
    usage,
    unlanded: new Set(taskList(v.unlanded) ?? []),
    widened: new Set(taskList(v.widened) ?? []),
    baseline: typeof v.baseline === 'string' && BASELINES.has(v.baseline) ? (v.baseline as Baseline) : earlierBaseline(session),
    aborted: v.aborted === true,
    timing: timing && typeof timing.workers === 'number' ? timing : base.timing,
    recordingSince: typeof v.recordingSince === 'number' ? v.recordingSince : null,
    gate,
    stop,
    finished: v.finished === true,
  };
}

/**
 * The step function's state of a session file of the previous version, which kept the session's
 * own lists: tasks handed out (`started`), verified and not integrated (`verified`), the merge
 * queue and the gate run under way (`gate`).
 */
function engineFromEarlierSession(data: Record<string, unknown>, plan: Plan, config: EngineConfig): EngineState {
  const base = initialState(plan, config, Date.now());
  const inProgress = (task: number) => plan.tasks[task] !== undefined && statusOf(plan.tasks[task]!) === 'in_progress';
  const attempts = new Map<number, Attempt>();
  const number = (task: number) => attemptsOf(plan.tasks[task]!) + 1;
  // Its merge queue's candidates are left out: it kept their work on their refs only, which the
  // next `setup` reads (they rejoin the queue there); a candidate without its work cannot be gated
  // nor integrated.
  for (const entry of Array.isArray(data.verified) ? data.verified : []) {
    const v = entry as { task?: unknown; result?: unknown; work?: unknown } | null;
    const work = workOf(v?.work);
    if (!v || !Number.isInteger(v.task) || typeof v.result !== 'string' || work === null || !inProgress(v.task as number) || attempts.has(v.task as number))
      continue;
    attempts.set(v.task as number, {
      task: v.task as number,
      number: number(v.task as number),
      stage: 'verified',
      decision: { kind: 'completed', result: v.result },
      work,
      verifiedBy: { kind: 'earlier-run', held: false },
    });
  }
  const started = data.started && typeof data.started === 'object' ? Object.keys(data.started as object).map(Number) : [];
  for (const task of started)
    if (Number.isInteger(task) && inProgress(task) && !attempts.has(task)) attempts.set(task, { task, number: number(task), stage: 'running' });
  return { ...base, attempts, round: int(data.round, 0, 0), usage: UNKNOWN, baseline: config.gate === null ? 'none' : earlierBaseline(data) };
}

// ---------------------------------------------------------------------------------------------
// The session file

function sandboxOf(value: unknown): SessionSandbox | null {
  const v = value as { mode?: unknown; sandboxed?: unknown; unavailable?: unknown } | null;
  if (!v || typeof v !== 'object' || !(SANDBOX_MODES as readonly unknown[]).includes(v.mode)) return null;
  if (v.sandboxed === true) return { mode: v.mode as SandboxMode, sandboxed: true };
  return v.sandboxed === false && (v.unavailable === null || typeof v.unavailable === 'string')
    ? { mode: v.mode as SandboxMode, sandboxed: false, unavailable: v.unavailable }
    : null;
}

function gateOf(value: unknown): SessionGate {
  if (!isRecord(value)) return noSessionGate();
  const c = isRecord(value.config) ? value.config : {};
  const positive = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1;
  const config: SessionGateConfig | null =
    typeof c.command === 'string' && c.command.trim() !== '' && positive(c.batchSize) && positive(c.timeoutMs)
      ? { command: c.command, batchSize: c.batchSize, timeoutMs: c.timeoutMs }
      : null;
  const r = isRecord(value.current) ? value.current : {};
  const tasks = taskList(r.tasks);
  const current: GateRunRecord | null =
    typeof r.id === 'string' && /^[\w-]+$/.test(r.id) && tasks !== null && isObjectId(r.tip) && typeof r.startedAt === 'string'
      ? { id: r.id, tasks, tip: r.tip, startedAt: r.startedAt }
      : null;
  return { config, current };
}

/** The handed-out tasks: this version's `handedOut`, or an earlier one's `started` and `bases`. */
function handedOutOf(data: Record<string, unknown>): Record<string, HandedOut> {
  const out: Record<string, HandedOut> = {};
  const valid = (at: unknown): at is string => typeof at === 'string' && Number.isFinite(Date.parse(at));
  const handed = data.handedOut as Record<string, { at?: unknown; base?: unknown }> | undefined;
  if (handed && typeof handed === 'object') {
    for (const [task, h] of Object.entries(handed)) if (h && valid(h.at) && isObjectId(h.base)) out[task] = { at: h.at, base: h.base };
    return out;
  }
  const started = (data.started ?? {}) as Record<string, unknown>;
  const bases = (data.bases ?? {}) as Record<string, unknown>;
  for (const [task, at] of Object.entries(started)) {
    const base = bases[task];
    if (valid(at) && isObjectId(base)) out[task] = { at, base };
  }
  return out;
}

/**
 * The session file, with the step function's state for `plan` — or the defaults when there is
 * none (a lead that skipped `setup`) or it is damaged. A file of the previous version is read too.
 */
export async function readSession(planPath: string, plan: Plan): Promise<Session> {
  const base = defaultSession();
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(await readFile(sessionPathFor(planPath), 'utf8')) as Record<string, unknown>;
  } catch {
    return base;
  }
  const session: Session = {
    concurrency: int(data.concurrency, 1, base.concurrency),
    maxAttempts: int(data.maxAttempts, 1, base.maxAttempts),
    checkTimeoutMs: int(data.checkTimeoutMs, 1, base.checkTimeoutMs),
    branch: typeof data.branch === 'string' && data.branch.startsWith('refs/heads/') ? data.branch : null,
    startedAt: typeof data.startedAt === 'string' ? data.startedAt : base.startedAt,
    runId: typeof data.runId === 'string' ? data.runId : null,
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
