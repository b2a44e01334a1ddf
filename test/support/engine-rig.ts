// Rigs that run the engine inside the test process. `EngineRig`, the headless engine: fake
// worktrees, fake workers the test releases one at a time, fake verification and record stages,
// and a fake clock; a step of the engine is waited for by letting pending I/O callbacks run.
// `SessionRig`, the in-session steps: the test plays the lead and its subagents. Nothing is
// spawned and nothing sleeps.

import type { GitFailure } from '../../src/core/git-text.ts';
import type { WorkerRequest } from '../../src/adapters/worker.ts';
import type { RunEventBody } from '../../src/core/events.ts';
import { type Result, type WorkerFailure, type WorkerRun, err, ok } from '../../src/core/failure.ts';
import type { Verification } from '../../src/core/finalize.ts';
import { type Plan, type UsageFigure, emptyUsage } from '../../src/core/plan.ts';
import { parseStatusLine } from '../../src/core/prompt.ts';
import { type Clock, type EngineResult, type GateRun, type RecordRequest, engineConfig, runEngine } from '../../src/run/engine.ts';
import { type EngineEffect, type EngineEvent, type EngineState, type EngineStop, initialState, step } from '../../src/core/engine-step.ts';
import { type SetupFindings, noFindings } from '../../src/core/transition.ts';
import { DEFAULTS, type RunSettings } from '../../src/run/settings.ts';
import { sessionConfig } from '../../src/run/session.ts';
import { StepRun, commitEvents, finalizeEvent, gateVerdictEvents, landedEvents, nextEvents, post, setUpEvent, setupEvents } from '../../src/run/session-driver.ts';

export const PASSED: Verification = { missingCreated: [], unchangedModified: [], outsideChanges: [], acceptance: [] };

/** A worker run that ended with `text` as its final message. */
export const reported = (text: string, costUsd = 0): WorkerRun => ({
  usage: { ...emptyUsage(), costUsd },
  durationMs: 5,
  permissionDenials: [],
  logPath: '',
  outcome: { kind: 'reported', resultText: text, statusLine: parseStatusLine(text) },
});

/** A worker run that did not report. */
export const failedRun = (failure: WorkerFailure): WorkerRun => ({ usage: emptyUsage(), durationMs: 5, permissionDenials: [], logPath: '', outcome: { kind: 'failed', failure } });

export class FakeClock implements Clock {
  time = 0;
  private timers: Array<{ at: number; wake: () => void }> = [];
  now = () => this.time;
  wakeAt = (at: number, wake: () => void) => {
    const timer = { at, wake };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  };
  /** Move time on, firing what is due, in time order. */
  advance(ms: number): void {
    this.time += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.time).sort((a, b) => a.at - b.at)[0];
      if (!due) return;
      this.timers = this.timers.filter((t) => t !== due);
      due.wake();
    }
  }
  get pending(): number {
    return this.timers.length;
  }
}

/** Let every callback that is ready run (the engine's awaits, the fakes' promises). No timers. */
export async function settle(): Promise<void> {
  for (let k = 0; k < 20; k++) await new Promise<void>((resolve) => setImmediate(resolve));
}

interface Running {
  request: WorkerRequest;
  finish: (run: WorkerRun) => void;
}

export interface RigOptions {
  settings?: Partial<RunSettings>;
  /** What verification finds for a task (default: it passes). */
  verify?: (task: number) => Verification;
  /** Making a worktree ready for `task` (default: it works, `/worktrees/<task>`). */
  prepare?: (task: number) => Result<string, string>;
  /** The lane's record (default: a commit named after the round). */
  record?: (tasks: readonly number[], round: number) => Result<string | null, GitFailure>;
  /** The gate's verdict on candidates stacked on what was integrated (needs `settings.gate`; default: passes). */
  gate?: (tasks: readonly number[], integrated: readonly number[]) => boolean | GateRun;
  /** Writing the plan, after it is listed in `saves` (default: done at once). */
  save?: (plan: Plan) => Promise<void>;
}

export class EngineRig {
  readonly clock = new FakeClock();
  readonly controller = new AbortController();
  readonly events: RunEventBody[] = [];
  readonly saves: Plan[] = [];
  readonly running = new Map<number, Running>();
  /** Every worker request, in start order. */
  readonly started: WorkerRequest[] = [];
  /** Worktrees handed out and not released yet, by task. */
  readonly worktrees = new Map<number, string>();
  /** Tasks whose worktree was released, in order. */
  readonly released: number[] = [];
  readonly recorded: RecordRequest[] = [];
  /** The candidates of every gate run, in order. */
  readonly gated: number[][] = [];
  /** Each worktree prepared: the task and the candidates stacked on the tip for it (none: the tip). */
  readonly stacks: Array<[number, number[]]> = [];
  /** Tasks integrated so far, in order. */
  readonly integrated: number[] = [];
  result: EngineResult | null = null;
  failure: unknown = null;
  private readonly done: Promise<void>;

  constructor(plan: Plan, options: RigOptions = {}) {
    const settings: RunSettings = {
      repo: '/nowhere',
      planPath: '/nowhere/.design/plan.json',
      claudeBin: 'claude',
      concurrency: DEFAULTS.concurrency,
      taskTimeoutMs: DEFAULTS.taskTimeoutMs,
      maxAttempts: DEFAULTS.maxAttempts,
      permissionMode: DEFAULTS.permissionMode,
      // An explicit list: the rules need no real repository path.
      allowedTools: ['Read'],
      schedule: DEFAULTS.schedule,
      checkTimeoutMs: DEFAULTS.checkTimeoutMs,
      commit: true,
      land: DEFAULTS.land,
      gate: null,
      backoffMs: 1000,
      maxRequeues: DEFAULTS.maxRequeues,
      ...options.settings,
    };
    this.done = runEngine(
      initialState(plan, engineConfig(settings, '/nowhere/.design'), this.clock.now()),
      settings,
      {
        prepare: async (task, _signal, stack) => {
          if (this.worktrees.has(task)) throw new Error(`task ${task} was given a second worktree before releasing the first`);
          this.stacks.push([task, (stack ?? []).map((item) => item.task)]);
          const prepared = options.prepare?.(task) ?? ok(`/worktrees/${task}`);
          if (prepared.ok) this.worktrees.set(task, prepared.value);
          return prepared;
        },
        release: (task) => {
          this.worktrees.delete(task);
          this.released.push(task);
        },
        runWorker: (request) =>
          new Promise<WorkerRun>((resolve) => {
            this.started.push(request);
            this.running.set(request.taskIndex, { request, finish: resolve });
            request.signal?.addEventListener(
              'abort',
              () => {
                // Stopped: it runs no more (an interrupt, or its speculation was cancelled).
                if (this.running.get(request.taskIndex)?.request === request) this.running.delete(request.taskIndex);
                resolve(failedRun({ reason: 'interrupted' }));
              },
              { once: true },
            );
          }),
        verify: async (_plan, task) => options.verify?.(task) ?? PASSED,
        gate: async (_plan, request) => {
          this.gated.push([...request.tasks]);
          const verdict = options.gate?.(request.tasks, this.integrated) ?? true;
          return typeof verdict === 'boolean' ? { passed: verdict, output: verdict ? '' : 'FAIL test/use.test.js: greet is not a function', durationMs: 3 } : verdict;
        },
        record: async (_plan, request) => {
          this.recorded.push(request);
          this.integrated.push(...request.integrate.map((item) => item.task));
          return options.record?.(request.tasks, request.round) ?? ok(`commit-${request.round}`);
        },
        save: async (saved) => {
          this.saves.push(saved);
          await options.save?.(saved);
        },
        emit: (event) => this.events.push(event),
        clock: this.clock,
      },
      this.controller.signal,
    ).then(
      (result) => {
        this.result = result;
      },
      (error: unknown) => {
        this.failure = error;
      },
    );
  }

  /** Tasks whose worker runs now, ascending. */
  get runningTasks(): number[] {
    return [...this.running.keys()].sort((a, b) => a - b);
  }

  /** The worker of `task` ends with `run` (a status line, or a failure); the engine reacts. */
  async finish(task: number, run: WorkerRun | string): Promise<void> {
    const worker = this.running.get(task);
    if (!worker) throw new Error(`task ${task} is not running (running: ${this.runningTasks.join(', ') || 'none'})`);
    this.running.delete(task);
    worker.finish(typeof run === 'string' ? reported(run) : run);
    await settle();
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await settle();
  }

  async interrupt(): Promise<void> {
    this.controller.abort();
    await settle();
  }

  async ended(): Promise<EngineResult> {
    await settle();
    if (this.failure !== null) throw this.failure;
    if (this.result === null) throw new Error(`the engine has not finished (running: ${this.runningTasks.join(', ') || 'none'}, timers: ${this.clock.pending})`);
    await this.done;
    return this.result;
  }

  outcomes(): Array<[number, string]> {
    return this.events.flatMap((e) => (e.type === 'task-finished' ? [[e.task, e.outcome] as [number, string]] : []));
  }
}

export const gitFailure = (step: string, stderr: string): Result<never, GitFailure> => err({ step, exitCode: 1, stderr });

// ---------------------------------------------------------------------------------------------
// The in-session steps, in-process

export interface SessionRigOptions {
  concurrency?: number;
  maxAttempts?: number;
  /** A gate with this verdict on candidates stacked on what was integrated (default: no gate). */
  gate?: (tasks: readonly number[], integrated: readonly number[]) => boolean;
  gateBatch?: number;
  /** The gate's verdict on the starting commit (default: it passes). */
  baseline?: boolean;
  /** What verification finds for a task's subagent worktree (default: it passes). */
  verify?: (task: number) => Verification;
  /** The lane's record (default: a commit named after the round). */
  record?: (tasks: readonly number[], round: number) => Result<string | null, GitFailure>;
}

/**
 * The plan tool's in-session steps (`setup`, `next`, `finalize`, `commit`) as run/lead.ts posts
 * them to the step function — the same events (run/session-driver.ts) and the same carrier — with
 * the session file, git and the gate process replaced by fakes: the test plays the lead and its
 * subagents, one step at a time. Landing on the person's branch succeeds unless `blockLanding`.
 */
export class SessionRig {
  state: EngineState;
  readonly events: RunEventBody[] = [];
  readonly saves: Plan[] = [];
  /** Tasks handed out by each `next`, in order. */
  readonly handedOut: number[][] = [];
  /** Tasks handed out and not reported on yet, with their attempt. */
  readonly subagents = new Map<number, number>();
  readonly recorded: Array<Omit<Extract<EngineEffect, { type: 'record' }>, 'type'>> = [];
  readonly integrated: number[] = [];
  /** The candidates of every gate run, in order. */
  readonly gated: number[][] = [];
  /** Integrated work not on the person's branch yet. */
  readonly unlanded = new Set<number>();
  blockLanding = false;
  finished: (EngineStop & { usage: UsageFigure }) | null = null;
  private time = 0;
  private readonly pendingGates: number[][] = [];

  constructor(
    plan: Plan,
    private readonly options: SessionRigOptions = {},
  ) {
    const gate = options.gate === undefined ? null : { command: 'npm test', batchSize: options.gateBatch ?? DEFAULTS.gateBatch, timeoutMs: DEFAULTS.checkTimeoutMs };
    this.state = initialState(plan, sessionConfig({ concurrency: options.concurrency ?? DEFAULTS.concurrency, maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts, gate: { config: gate, current: null } }, '/nowhere/.design/plan.json'), 0);
  }

  private readonly now = () => ++this.time;

  private run(): StepRun {
    return new StepRun(
      {
        save: async (plan) => {
          this.saves.push(plan);
        },
        startWorker: async (effect) => {
          this.subagents.set(effect.task, effect.attempt);
          this.handedOut.at(-1)?.push(effect.task);
        },
        verify: async (task) => this.options.verify?.(task) ?? PASSED,
        release: async () => [],
        record: async (_state, request) => {
          this.recorded.push(request);
          const recorded = this.options.record?.(request.tasks, request.round) ?? ok(`commit-${request.round}`);
          if (recorded.ok) {
            for (const item of request.integrate) {
              this.integrated.push(item.task);
              this.unlanded.add(item.task);
            }
          }
          return recorded;
        },
        gate: async (tasks) => {
          this.gated.push([...tasks]);
          this.pendingGates.push([...tasks]);
        },
      },
      this.now,
    );
  }

  private async drive(events: EngineEvent[]): Promise<StepRun> {
    const run = this.run();
    this.state = await post(this.state, events, run);
    this.events.push(...run.events);
    this.finished ??= run.finished;
    return run;
  }

  /** `setup`: what it found, then integrate what an earlier session verified; the gate runs on the starting commit. */
  async setup(findings: SetupFindings = noFindings()): Promise<void> {
    const setUp = step(this.state, setUpEvent(findings, this.now()));
    this.state = setUp.state;
    for (const effect of setUp.effects) if (effect.type === 'emit') this.events.push(effect.event);
    await this.drive(setupEvents([...this.unlanded], this.now()));
    await this.runGates();
  }

  /** `next`: the tasks handed out. */
  async next(concurrency?: number): Promise<number[]> {
    this.handedOut.push([]);
    await this.drive(nextEvents([...this.unlanded], concurrency, this.now()));
    return this.handedOut.at(-1)!;
  }

  /** `finalize` with each subagent's final text. */
  async finalize(results: ReadonlyArray<readonly [number, string]>): Promise<void> {
    for (const [task, output] of results) {
      if (!this.subagents.delete(task)) throw new Error(`task ${task} was not handed out (out: ${[...this.subagents.keys()].join(', ') || 'none'})`);
      await this.drive([finalizeEvent(task, output, 1, this.now())]);
    }
  }

  /** `commit`: integrate (with a gate, run it on what it asks for until it asks for nothing), then land. */
  async commit(): Promise<void> {
    await this.drive(commitEvents(this.now()));
    await this.runGates();
    if (!this.blockLanding) this.unlanded.clear();
    await this.drive(landedEvents([...this.unlanded], this.now()));
  }

  /** The gate's verdicts on what the step function asked it to test (the starting commit: `baseline`), until it asks for nothing. */
  private async runGates(): Promise<void> {
    for (let stack = this.pendingGates.shift(); stack !== undefined; stack = this.pendingGates.shift()) {
      const passed = stack.length === 0 ? (this.options.baseline ?? true) : this.options.gate!(stack, this.integrated);
      await this.drive(gateVerdictEvents(stack, { passed, output: passed ? '' : `FAIL: ${stack.length === 0 ? 'the starting commit' : `tasks ${stack.join(', ')}`}`, durationMs: 1 }, this.now()));
    }
  }

  outcomes(): Array<[number, string]> {
    return this.events.flatMap((e) => (e.type === 'task-finished' ? [[e.task, e.outcome] as [number, string]] : []));
  }
}
