// How an in-session step talks to the step function: the events each step posts (one definition,
// used by the plan tool's steps in run/session/session.ts and by the in-process session rig of the tests),
// and the step's carrier of the step function's effects (`StepRun`, through the one loop of
// core/engine/driver.ts), with what the step gives it (`StepEffects`). Nothing here reads the
// session file or runs git: the step's effects do.

import {
  drive,
  type EffectCarrier,
  type EffectOf,
  emptyUsage,
  type EngineEffect,
  type EngineEvent,
  type EngineState,
  type EngineStop,
  EventQueue,
  gatedEvent,
  type GateRun,
  type GitFailure,
  parseStatusLine,
  type Plan,
  readLimitText,
  recordedEvent,
  type RecordRequest,
  type Result,
  type RunEventBody,
  type SetupFindings,
  type UsageFigure,
  type Verification,
  verifiedEvent,
  workerFinishedEvent,
  type WorkerRun,
} from '../../core/index.ts';

/**
 * What a step carries out itself of the step function's effects (StepRun carries out the rest):
 * each step gives every one, those it never meets as `unmetEffects` has them.
 */
export interface StepEffects {
  /** Hands the task out (no events), or, for a re-check, prepares its worktree and says the "worker" finished. */
  startWorker(effect: EffectOf<'start-worker'>, state: EngineState): Promise<EngineEvent[] | undefined>;
  verify(task: number, state: EngineState): Promise<Verification>;
  /** Done with the task's worktree; returns warnings for its `task-finished` event. */
  release(task: number): Promise<string[]>;
  record(state: EngineState, request: RecordRequest): Promise<Result<string | null, GitFailure>>;
  gate(tasks: number[], state: EngineState): Promise<void>;
}

/** An effect a step never meets (the step function asks for it only at another step's events): meeting it is a bug. */
const cannot = (type: EngineEffect['type']) => (): never => {
  throw new Error(`an in-session step cannot carry out ${type} here`);
};

/** The step's effects for a step that meets none of them: each a bug if met. */
export const unmetEffects: StepEffects = {
  startWorker: cannot('start-worker'),
  verify: cannot('verify'),
  release: cannot('release-workspace'),
  record: cannot('record'),
  gate: cannot('gate'),
};

const none: readonly EngineEvent[] = [];

/**
 * What a notice the step function emitted is about, told by the event it answered, never by its
 * words: `integration-failed`, verified work that could not integrate (its answer to a
 * `recorded` event carrying a failure); `other`, anything else it said.
 */
export type NoticeKind = 'integration-failed' | 'other';

/** A notice the step function emitted, with its kind (which stays here: the journal and the outputs keep level and message). */
export type KindedNotice = Extract<RunEventBody, { type: 'notice' }> & { kind: NoticeKind };

/** One step's dealings with the step function: the events it emitted, how the run finished (when it did). */
export class StepRun implements EffectCarrier {
  readonly events: RunEventBody[] = [];
  /** When each event was emitted (ms), for the journal: a step can take a while (verification). */
  readonly times: number[] = [];
  finished: RunEnd | null = null;
  /** The notices among the events, with what each is about. */
  private readonly kinded: KindedNotice[] = [];
  /** Warnings from removing a subagent's worktree, for its `task-finished` event. */
  private readonly cleanup = new Map<number, string[]>();

  constructor(
    private readonly writePlan: (plan: Plan) => Promise<void>,
    private readonly effects: StepEffects,
    private readonly now: () => number = Date.now,
  ) {}

  readonly save: EffectCarrier['save'] = async (_effect, state) => {
    await this.writePlan(state.plan);
    return none;
  };

  readonly emit: EffectCarrier['emit'] = (effect, _state, answering) => {
    const event = effect.event;
    if (event.type === 'notice')
      this.kinded.push({ ...event, kind: answering.type === 'recorded' && answering.failure !== null ? 'integration-failed' : 'other' });
    const extra = event.type === 'task-finished' ? this.cleanup.get(event.task) : undefined;
    this.events.push(extra && extra.length > 0 && event.type === 'task-finished' ? { ...event, warnings: [...(event.warnings ?? []), ...extra] } : event);
    this.times.push(this.now());
    return none;
  };

  readonly startWorker: EffectCarrier['startWorker'] = async (effect, state) => (await this.effects.startWorker(effect, state)) ?? none;

  readonly verify: EffectCarrier['verify'] = async (effect, state) => [verifiedEvent(effect.task, await this.effects.verify(effect.task, state), this.now())];

  readonly releaseWorkspace: EffectCarrier['releaseWorkspace'] = async (effect) => {
    this.cleanup.set(effect.task, await this.effects.release(effect.task));
    return none;
  };

  readonly record: EffectCarrier['record'] = async (effect, state) => {
    const { type: _type, ...request } = effect;
    const recorded = await this.effects.record(state, request);
    return [recordedEvent(effect.tasks, recorded, this.now())];
  };

  readonly gate: EffectCarrier['gate'] = async (effect, state) => {
    await this.effects.gate(effect.tasks, state);
    return none;
  };

  // A session's workers are never stopped by it, nothing wakes it (the lead comes back), and nothing is speculative.
  readonly wake: EffectCarrier['wake'] = () => none;
  readonly abortWorkers: EffectCarrier['abortWorkers'] = () => none;
  readonly cancelWorker: EffectCarrier['cancelWorker'] = () => none;
  readonly stopWorker: EffectCarrier['stopWorker'] = () => none;

  readonly finish: EffectCarrier['finish'] = (effect) => {
    this.finished = { ...effect.stop, usage: effect.usage };
    return none;
  };

  /** An event the step itself tells (not the step function): journaled with the others, stamped now. */
  note(event: RunEventBody): void {
    this.events.push(event);
    this.times.push(this.now());
  }

  /** The notices of one kind the step function emitted in this step. */
  notices(kind: NoticeKind): KindedNotice[] {
    return this.kinded.filter((n) => n.kind === kind);
  }

  /** Events of one type this step emitted. */
  of<T extends RunEventBody['type']>(type: T): Array<Extract<RunEventBody, { type: T }>> {
    return this.events.filter((e): e is Extract<RunEventBody, { type: T }> => e.type === type);
  }
}

/** How a run ended, as the step function said it. */
export type RunEnd = EngineStop & { usage: UsageFigure };

/** How the run ended: in this step, or (a state that finished earlier) before it; null while it goes on. */
export function runEnd(state: EngineState, run: StepRun): RunEnd | null {
  if (run.finished !== null) return run.finished;
  return state.finished && state.stop !== null ? { ...state.stop, usage: state.usage } : null;
}

/**
 * A Task subagent's final text, seen as a worker run that reported: its duration is the plan
 * tool's (from `next` to now); its usage and permission denials are not known here. Without a
 * status line, Claude Code's words for a limit that refused it ("You've hit your limit · resets
 * 10pm (America/New_York)", "API Error: Request rejected (429) · …", a 529) make it a rate limit
 * (with the reset read against `now`), or overload: the task is handed back, no attempt spent.
 */
export function subagentRun(output: string, durationMs: number, now: number, denied: readonly string[] = []): WorkerRun {
  const run = {
    unmeasured: true as const,
    usage: emptyUsage(),
    durationMs,
    // What the worker hook refused it (an undeclared write), as a headless worker's denials say it.
    permissionDenials: denied.map((path) => ({ tool: 'Write', input: { file_path: path }, path })),
    logPath: '',
  };
  const line = output.split('\n')[0]!.trim();
  if (WORKTREE_NOT_MADE.test(output)) return { ...run, outcome: { kind: 'failed', failure: { reason: 'no-worktree', message: line, retryAfterMs: 0 } } };
  const statusLine = parseStatusLine(output);
  const limit = statusLine === null ? readLimitText(output, now) : null;
  if (limit !== null)
    return {
      ...run,
      outcome: { kind: 'failed', failure: { reason: 'rate-limited', message: line, ...(limit.resetAt !== undefined ? { resetAt: limit.resetAt } : {}) } },
    };
  if (statusLine === null && OVERLOADED.test(output)) return { ...run, outcome: { kind: 'failed', failure: { reason: 'overloaded', message: line } } };
  return { ...run, outcome: { kind: 'reported', resultText: output, statusLine } };
}

/** Claude Code's words for the API's 529 (2.1.330: `API Error: 529 …`; an Agent call's `… (error type server_error, HTTP 529, …)`). */
const OVERLOADED = /API Error: 529\b|HTTP 529\b|overloaded_error/i;

/**
 * How Claude Code's Agent call begins its result when it could not make the subagent's worktree
 * (2.1.330), which the execute skill has the lead pass on as the task's output.
 */
export const WORKTREE_NOT_MADE = /^Failed to create worktree\b/;

// ---------------------------------------------------------------------------------------------
// What each step posts

/** `setup`, after the findings (posted with `step`, before the run starts): what is on the branch, and integrate what an earlier session verified. */
export const setupEvents = (unlanded: readonly number[], now: number): EngineEvent[] => [
  { type: 'landed', unlanded, now },
  { type: 'integrate', now },
];

/** `setup`'s first event: what it found in the repository. */
export const setUpEvent = (findings: SetupFindings, now: number): EngineEvent => ({ type: 'set-up', findings, now });

/** `next`: what is on the branch now, then hand out what may start. */
export const nextEvents = (unlanded: readonly number[], concurrency: number | undefined, now: number): EngineEvent[] => [
  { type: 'landed', unlanded, now },
  { type: 'hand-out', ...(concurrency !== undefined ? { concurrency } : {}), now },
];

/** `finalize`, per result: the subagent reported. */
export const finalizeEvent = (task: number, output: string, durationMs: number, now: number, denied: readonly string[] = []): EngineEvent =>
  workerFinishedEvent(task, subagentRun(output, durationMs, now, denied), now);

/** `commit`: integrate what is verified (with a gate: hold it as candidates). */
export const commitEvents = (now: number): EngineEvent[] => [{ type: 'integrate', now }];

/** A gate run's verdict (`commit`, `setup`): then integrate what it passed. */
export const gateVerdictEvents = (tasks: readonly number[], verdict: GateRun, now: number): EngineEvent[] => [
  gatedEvent(tasks, verdict, now),
  { type: 'integrate', now },
];

/** `setup`, to the run an earlier session left under way: that session ended (its last step at `lastStepAt`, when known). */
export const sessionEndedEvents = (lastStepAt: number | null, now: number): EngineEvent[] => [{ type: 'session-ended', lastStepAt, now }];

/** Landing moved the branch (or could not): which integrated tasks are still not on it. */
export const landedEvents = (unlanded: readonly number[], now: number): EngineEvent[] => [{ type: 'landed', unlanded, now }];

/**
 * Post `events` to the step function through the one loop, one at a time, `run` carrying out each
 * step's effects in order and what they lead to posted after them. Returns the state it ends in.
 */
export const post = async (state: EngineState, events: readonly EngineEvent[], run: StepRun): Promise<EngineState> =>
  (await drive(state, new EventQueue(events), run)).state;
