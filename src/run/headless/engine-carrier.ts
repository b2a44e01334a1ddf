// How the headless engine (run/headless/engine.ts) carries out the step function's effects: with what is
// passed in (`EngineAdapters`: the run's adapters, or a test's fakes).

import {
  type EffectCarrier,
  type EffectOf,
  type EngineEvent,
  type EngineState,
  err,
  gatedEvent,
  type GateRequest,
  type GateRun,
  type GitFailure,
  Lane,
  modelOf,
  ok,
  type Plan,
  recheckRun,
  recordedEvent,
  type RecordRequest,
  type Result,
  resumePrompt,
  type RunEventBody,
  taskAt,
  verifiedEvent,
  workerFinishedEvent,
  workerPrompt,
  workerRefusedEvent,
  workerServedEvent,
  workspaceFailedEvent,
} from '../../core/index.ts';
import type { Clock } from '../adapters.ts';
import type { Integration } from '../integration.ts';
import type { RunSettings } from '../settings.ts';
import type { WorkerJob, Workspace, Workspaces } from '../workspace/index.ts';
import type { Inbox } from './engine-inbox.ts';

/** The plan's integration as the engine uses it: in the lane, one at a time, but `startOf`. */
export interface EngineIntegration {
  /** Where an attempt starts (run/integration.ts `startOf`). */
  startOf: Integration['startOf'];
  /**
   * Record what the step function decided: work awaiting approval parked and candidates of the
   * merge queue held on refs of their own, verified work integrated onto the integration ref (one
   * commit), the refs of candidates leaving the queue dropped. The integration commit, or null
   * when it integrated nothing (no work to integrate, or work that changes nothing).
   */
  record(plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>>;
  /** Run the gate on these candidates stacked on the integration tip (none: on the tip itself, the baseline); `passed` null when stopped first. */
  gate(plan: Plan, request: GateRequest, signal: AbortSignal): Promise<GateRun>;
}

/**
 * What the engine carries its effects out with, passed in: the headless run binds them to its
 * adapters (run/adapters.ts), the plan's integration and its workspaces; a test gives fakes.
 */
export interface EngineAdapters {
  /** Where each attempt works. */
  workspaces: Workspaces;
  integration: EngineIntegration;
  save(plan: Plan): Promise<void>;
  emit(event: RunEventBody): void;
  /** Back-offs' wake-ups, and the time each event carries. */
  clock: Pick<Clock, 'now' | 'wakeAt'>;
}

/**
 * Plan writes behind the step loop, as a database commits a group: the loop asks for a write
 * after a step and goes on with the next event; asks made while a write runs are served together
 * by one more write, of the newest plan (a state's plan is a snapshot no later step changes).
 * Each ask resolves once a plan at least as new as its own is on disk. A write takes several ms
 * (two fsyncs): awaited inline, it held every other event back for as long.
 */
export function planWrites(save: (plan: Plan) => Promise<void>): (plan: Plan) => Promise<void> {
  const writes = new Lane();
  let next: { plan: Plan; written: Promise<void> } | null = null;
  return (plan) => {
    if (next !== null) {
      next.plan = plan;
      return next.written;
    }
    const ask = { plan, written: Promise.resolve() };
    ask.written = writes.run(() => {
      // From here a newer plan waits for the write after this one.
      next = null;
      return save(ask.plan);
    });
    next = ask;
    return ask.written;
  };
}

type StartWorker = EffectOf<'start-worker'>;

/** An attempt's workspace made ready, and the diff of the earlier work it holds (for its prompt). */
type PreparedWorkspace = { workspace: Workspace; workSoFar?: string };

const none: readonly EngineEvent[] = [];

/**
 * The step function's effects carried out on the engine's adapters. What they lead to is posted to
 * the inbox as it comes: workers and checks run in parallel, the lane's jobs one at a time. It keeps
 * what the attempts under way hold (their workers' stops, their workspaces) and the one back-off timer.
 */
export class HeadlessCarrier implements EffectCarrier {
  /** What must be serialized: recording (foreman's refs move) and the gate's runs (which test what the integration ref holds). */
  private readonly serialized = new Lane();
  /** Each running worker's stop: its worker and checks end with it. */
  private readonly workers = new Map<number, AbortController>();
  /** Each running worker's `stopIfIdle`: the limiter stops one the API has served nothing yet. */
  private readonly idle = new Map<number, AbortController>();
  /** Each running, paused or verifying attempt's workspace. */
  private readonly workspaces = new Map<number, Workspace>();
  /** The one timer, for the earliest back-off. */
  private wakeUp: { at: number; cancel: () => void } | null = null;
  private readonly write: (plan: Plan) => Promise<void>;
  /** The plan of the last step that changed it, on disk: a worker starts, and the run ends, only after. */
  private written: Promise<void> = Promise.resolve();

  constructor(
    private readonly inbox: Pick<Inbox, 'post' | 'fail'>,
    private readonly settings: RunSettings,
    private readonly adapters: EngineAdapters,
    /** Ctrl-C: workers stop now. */
    private readonly interrupt: AbortSignal,
  ) {
    this.write = planWrites(adapters.save);
  }

  readonly save: EffectCarrier['save'] = (_effect, current) => {
    this.written = this.write(current.plan);
    // A write that fails stops the run, as an adapter's bug does.
    this.written.catch((error: unknown) => this.inbox.fail(error));
    return none;
  };

  readonly emit: EffectCarrier['emit'] = (effect) => {
    this.adapters.emit(effect.event);
    return none;
  };

  readonly startWorker: EffectCarrier['startWorker'] = (effect, current) => {
    const controller = new AbortController();
    this.workers.set(effect.task, controller);
    this.idle.set(effect.task, new AbortController());
    if (this.interrupt.aborted) controller.abort();
    // Its workspace is made ready while the plan that says it started is written; a resumed attempt kept its own.
    const saved = this.written;
    const kept = this.workspaces.get(effect.task);
    const ready: Promise<Result<PreparedWorkspace, string>> =
      effect.resume !== undefined
        ? Promise.resolve(kept !== undefined ? ok({ workspace: kept }) : err(`task ${effect.task}'s paused attempt has no workspace to resume in`))
        : makeWorkspace(effect, this.adapters, controller.signal);
    this.later(
      ready.then((prepared) => this.runAttempt(effect, current, prepared, saved, controller.signal)),
      (event) => event,
    );
    return none;
  };

  readonly verify: EffectCarrier['verify'] = (effect, current) => {
    const controller = this.workers.get(effect.task) ?? new AbortController();
    if (this.interrupt.aborted) controller.abort();
    const workspace = this.workspaces.get(effect.task);
    if (workspace === undefined) throw new Error(`engine: task ${effect.task} has no workspace to verify in`);
    this.later(workspace.verify(current.plan, effect.task, controller.signal), (verification) =>
      verifiedEvent(effect.task, verification, this.adapters.clock.now()),
    );
    return none;
  };

  readonly releaseWorkspace: EffectCarrier['releaseWorkspace'] = (effect) => {
    this.workers.delete(effect.task);
    this.idle.delete(effect.task);
    this.workspaces.get(effect.task)?.release();
    this.workspaces.delete(effect.task);
    return none;
  };

  readonly record: EffectCarrier['record'] = (effect, current) => {
    const { type: _type, ...request } = effect;
    this.later(
      this.serialized.run(() => this.adapters.integration.record(current.plan, request)),
      (recorded) => recordedEvent(effect.tasks, recorded, this.adapters.clock.now()),
    );
    return none;
  };

  readonly gate: EffectCarrier['gate'] = (effect, current) => {
    const { type: _type, ...request } = effect;
    this.later(
      this.serialized.run(() => this.adapters.integration.gate(current.plan, request, this.interrupt)),
      (run) => gatedEvent(effect.tasks, run, this.adapters.clock.now()),
    );
    return none;
  };

  readonly wake: EffectCarrier['wake'] = (effect) => {
    // One timer, for the earliest back-off; the tick it sends asks again for any later one.
    if (this.wakeUp !== null && this.wakeUp.at <= effect.at) return none;
    this.wakeUp?.cancel();
    const clock = this.adapters.clock;
    this.wakeUp = {
      at: effect.at,
      cancel: clock.wakeAt(effect.at, () => {
        this.wakeUp = null;
        this.inbox.post({ type: 'tick', now: clock.now() });
      }),
    };
    return none;
  };

  readonly abortWorkers: EffectCarrier['abortWorkers'] = () => {
    for (const controller of this.workers.values()) controller.abort();
    return none;
  };

  readonly cancelWorker: EffectCarrier['cancelWorker'] = (effect) => {
    // Its worker and checks stop; the event they end with concludes the cancelled attempt.
    this.workers.get(effect.task)?.abort();
    return none;
  };

  readonly stopWorker: EffectCarrier['stopWorker'] = (effect) => {
    // Ended if the API has still served it nothing (the adapter looks); its event follows as usual.
    this.idle.get(effect.task)?.abort();
    return none;
  };

  // The run ends once the plan that says so is on disk.
  readonly finish: EffectCarrier['finish'] = async () => {
    await this.written;
    return none;
  };

  /** The run is over: no back-off wakes it again. */
  stopWaking(): void {
    this.wakeUp?.cancel();
  }

  /** Runs `work`, posting its event; a rejection is a bug and stops the engine. */
  private later<T>(work: Promise<T>, toEvent: (value: T) => EngineEvent): void {
    work.then(
      (value) => this.inbox.post(toEvent(value)),
      (error: unknown) => this.inbox.fail(error),
    );
  }

  /**
   * An attempt in the workspace made ready for it: its worker runs once the plan that says it
   * started is on disk (`saved`); a re-check runs no worker. The event its end brings.
   */
  private async runAttempt(
    effect: StartWorker,
    current: EngineState,
    prepared: Result<PreparedWorkspace, string>,
    saved: Promise<void>,
    stop: AbortSignal,
  ): Promise<EngineEvent> {
    const clock = this.adapters.clock;
    if (!prepared.ok) return workspaceFailedEvent(effect.task, prepared.error, clock.now());
    const { workspace, workSoFar } = prepared.value;
    this.workspaces.set(effect.task, workspace);
    // No worker: the work its last attempt set aside is verified as this attempt's.
    if (effect.recheck !== undefined) return workerFinishedEvent(effect.task, recheckRun(effect.logPath), clock.now());
    // A crash once the worker runs leaves the task in progress on disk, and a resume cleans up after it.
    await saved;
    const stopIfIdle = this.idle.get(effect.task)?.signal ?? new AbortController().signal;
    const job = workerJob(
      effect,
      current,
      this.settings,
      { workSoFar, stop, stopIfIdle },
      { inbox: this.inbox, clock, emit: (event) => this.adapters.emit(event) },
    );
    const run = await workspace.runWorker(job);
    return workerFinishedEvent(effect.task, run, clock.now());
  }
}

/** The workspace of an attempt, where the integration says it starts, and the diff of the earlier work it holds (for its prompt). */
async function makeWorkspace(
  effect: StartWorker,
  adapters: Pick<EngineAdapters, 'integration' | 'workspaces'>,
  stop: AbortSignal,
): Promise<Result<PreparedWorkspace, string>> {
  const start = await adapters.integration.startOf({
    task: effect.task,
    stack: effect.stack ?? [],
    ...(effect.recheck !== undefined ? { recheck: effect.recheck } : {}),
    ...(effect.from !== undefined ? { from: effect.from } : {}),
  });
  if (!start.ok) return start;
  const { workSoFar, ...at } = start.value;
  const made = await adapters.workspaces.make({ task: effect.task, ...at, signal: stop, ...(effect.place !== undefined ? { place: effect.place } : {}) });
  return made.ok ? ok({ workspace: made.value, ...(workSoFar !== undefined ? { workSoFar } : {}) }) : made;
}

/**
 * What an attempt's worker is given: its prompt (a resumed worker's says why it stopped), its
 * limits, and where what it reports goes (refusals and the API's first answer to the inbox, its
 * activity to the run's events).
 */
function workerJob(
  effect: StartWorker,
  current: EngineState,
  settings: RunSettings,
  attempt: { workSoFar: string | undefined; stop: AbortSignal; stopIfIdle: AbortSignal },
  engine: { inbox: Pick<Inbox, 'post'>; clock: Pick<Clock, 'now'>; emit: EngineAdapters['emit'] },
): WorkerJob {
  const task = taskAt(current.plan.tasks, effect.task);
  // A resumed worker has what the attempt's earlier workers left of --task-timeout (their waits on limits not counted).
  const resumed = effect.resume !== undefined ? current.attempts.get(effect.task) : undefined;
  const before = resumed?.stage === 'running' ? resumed.run : undefined;
  const worked = before === undefined ? 0 : Math.max(0, before.durationMs - (before.waitedMs ?? 0));
  const { inbox, clock, emit } = engine;
  return {
    taskIndex: effect.task,
    attempt: effect.attempt,
    prompt:
      effect.resume !== undefined
        ? resumePrompt(effect.resume.reason)
        : workerPrompt(current.plan, effect.task, {
            maxAttempts: settings.maxAttempts,
            ...(attempt.workSoFar !== undefined ? { workSoFar: attempt.workSoFar } : {}),
          }),
    ...(effect.resume !== undefined ? { resume: effect.resume.sessionId } : {}),
    onRefused: (refusal, progressed) => inbox.post(workerRefusedEvent(effect.task, refusal, progressed, clock.now())),
    onServed: () => inbox.post(workerServedEvent(effect.task, clock.now())),
    stopIfIdle: attempt.stopIfIdle,
    model: modelOf(task),
    plan: current.plan,
    claudeBin: settings.claudeBin,
    permissionMode: settings.permissionMode,
    allowedTools: settings.allowedTools,
    maxBudgetUsd: task.agent?.maxBudgetUsd ?? settings.taskBudgetUsd,
    timeoutMs: Math.max(1, settings.taskTimeoutMs - worked),
    logPath: effect.logPath,
    signal: attempt.stop,
    onActivity: (activity) => emit({ type: 'task-activity', task: effect.task, text: activity.text, costUsd: activity.costUsd }),
  };
}
