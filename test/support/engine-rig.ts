// A rig that runs the headless engine inside the test process: fake worktrees, fake workers the
// test releases one at a time, fake verification and record stages, and a fake clock. Nothing is spawned
// and nothing sleeps; a step of the engine is waited for by letting pending I/O callbacks run.

import type { GitFailure } from '../../src/core/git-text.ts';
import type { WorkerRequest } from '../../src/adapters/worker.ts';
import type { RunEventBody } from '../../src/core/events.ts';
import { type Result, type WorkerFailure, type WorkerRun, err, ok } from '../../src/core/failure.ts';
import type { Verification } from '../../src/core/finalize.ts';
import { type Plan, emptyUsage } from '../../src/core/plan.ts';
import { parseStatusLine } from '../../src/core/prompt.ts';
import { type Clock, type EngineResult, type GateRun, type RecordRequest, runEngine } from '../../src/run/engine.ts';
import { DEFAULTS, type RunSettings } from '../../src/run/settings.ts';

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
      plan,
      settings,
      {
        prepare: async (task) => {
          if (this.worktrees.has(task)) throw new Error(`task ${task} was given a second worktree before releasing the first`);
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
            request.signal?.addEventListener('abort', () => resolve(failedRun({ reason: 'interrupted' })), { once: true });
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
        },
        emit: (event) => this.events.push(event),
        clock: this.clock,
      },
      this.controller.signal,
      '/nowhere/.design',
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
