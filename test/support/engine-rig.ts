// Rigs that run the engine inside the test process. `EngineRig`, the headless engine: fake
// worktrees, fake workers the test releases one at a time, fake verification and record stages,
// and a fake clock; a step of the engine is waited for by letting pending I/O callbacks run.
// `SessionRig`, the in-session steps themselves (run/session/session.ts) with fake I/O: the test plays the
// lead and its subagents. Nothing is spawned and nothing sleeps.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Git } from '../../src/adapters/git/repository.ts';
import { serializePlan } from '../../src/adapters/store/plan-file.ts';
import type { GitFailure } from '../../src/core/integration/git-text.ts';
import type { WorkerJob, Workspace } from '../../src/run/workspace/workspace.ts';
import type { RunEvent, RunEventBody } from '../../src/core/report/events.ts';
import { err, ok, type Result } from '../../src/core/result.ts';
import type { WorkerFailure, WorkerRun } from '../../src/core/attempt/worker-run.ts';
import { ensurePlanId, type Plan, statusOf, type Task } from '../../src/core/plan/plan.ts';
import type { CheckedWork, Verification } from '../../src/core/attempt/finalize.ts';
import type { Refusal } from '../../src/core/limits/limiter.ts';
import { emptyUsage, type UsageFigure } from '../../src/core/plan/usage.ts';
import { passingCheck } from '../../src/core/engine/simulation.ts';
import { parseStatusLine } from '../../src/core/attempt/prompt.ts';
import type { AttemptStart, GateRun, RecordRequest } from '../../src/core/engine/effects.ts';
import type { Clock } from '../../src/run/adapters.ts';
import { engineConfig, type EngineResult, runEngine } from '../../src/run/headless/engine.ts';
import { type HeldCandidate, initialState } from '../../src/core/engine/admission.ts';
import { depsOf, depths } from '../../src/core/plan/graph.ts';
import { noFindings, type SetupFindings } from '../../src/core/attempt/transition.ts';
import { DEFAULTS, type RunSettings } from '../../src/run/settings.ts';
import type { CommitProblem, CommitStepOutput } from '../../src/run/session/commit-step.ts';
import type { FinalizeOutput } from '../../src/run/session/finalize-step.ts';
import type { SessionContext } from '../../src/run/session/skeleton.ts';
import type { NextOutput } from '../../src/run/session/next-step.ts';
import type { SetupOutput, SetupSettings } from '../../src/run/session/setup-step.ts';
import { sessionCommit, sessionFinalize, sessionNext, sessionSetup } from '../../src/run/session/session.ts';
import type { GateState } from '../../src/run/session/gate-process.ts';
import type { SessionIo, SessionPlaces } from '../../src/run/session/io.ts';
import type { Integration } from '../../src/run/integration.ts';
import { sessionPathFor } from '../../src/run/session/file.ts';
import { isAttemptRecord, isSessionFile } from '../../src/run/session/file-schema.ts';
import { validateAttempt, validateSessionFile } from '../../src/run/session/session-schema.generated.ts';

/**
 * What verification finds of `task`'s work when its worker did the task (core/engine/simulation.ts
 * `passingCheck`: its declared files written, on `base`), with `found` besides.
 */
/** What a generated validator found wrong with the last value it refused. */
const errorsOf = (validate: { (data: unknown): boolean; errors?: unknown }): string => JSON.stringify(validate.errors);

export const passed = (task: Task, found: Partial<CheckedWork> = {}, base?: string): Verification => ok({ ...passingCheck(task, base), ...found });

/** A worker run that ended with `text` as its final message. */
export const reported = (text: string, costUsd = 0): WorkerRun => ({
  usage: { ...emptyUsage(), costUsd },
  durationMs: 5,
  permissionDenials: [],
  logPath: '',
  outcome: { kind: 'reported', resultText: text, statusLine: parseStatusLine(text) },
});

/** A worker run that did not report. */
export const failedRun = (failure: WorkerFailure): WorkerRun => ({
  usage: emptyUsage(),
  durationMs: 5,
  permissionDenials: [],
  logPath: '',
  outcome: { kind: 'failed', failure },
});

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
  /** A wait moves time on at once. */
  sleep = async (ms: number) => this.advance(ms);
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
  request: WorkerJob & { cwd: string };
  finish: (run: WorkerRun) => void;
  /** The API served it a response (`serve`): the limiter may no longer stop it. */
  served: boolean;
  /** The last refusal it met (`refuse`): what it ends with when the limiter stops it. */
  refusal?: Refusal;
}

export interface RigOptions {
  settings?: Partial<RunSettings>;
  /** What verification finds for a task (default: it passes, `passed`). */
  verify?: (task: number, plan: Plan) => Verification;
  /** Making a worktree ready for `task` (default: it works, `/worktrees/<task>`). */
  prepare?: (task: number) => Result<string, string>;
  /** Making a re-check's worktree ready (default: it works, `/worktrees/<task>`). */
  prepareRecheck?: (task: number) => Result<string, string>;
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
  readonly started: Array<WorkerJob & { cwd: string }> = [];
  /** Worktrees handed out and not released yet, by task. */
  readonly worktrees = new Map<number, string>();
  /** Tasks whose worktree was released, in order. */
  readonly released: number[] = [];
  readonly recorded: RecordRequest[] = [];
  /** The candidates of every gate run, in order. */
  readonly gated: number[][] = [];
  /** Each worktree prepared: the task and the candidates stacked on the tip for it (none: the tip). */
  readonly stacks: Array<[number, number[]]> = [];
  /** Each re-check's task and the commit it was made at, in order. */
  readonly rechecks: Array<[number, string]> = [];
  /** Attempts started from earlier work: the task and where (`AttemptStart`). */
  readonly starts: Array<[number, AttemptStart]> = [];
  /** Tasks whose next workspace is a re-check's. */
  private readonly rechecking = new Set<number>();
  /** Tasks integrated so far, in order. */
  readonly integrated: number[] = [];
  /** With hosts: where each attempt's workspace was made (`host:slot`), in order. */
  readonly placed: Array<[number, string]> = [];
  /** Tells the engine of a host's fault, as a host's workspaces do. */
  private hostFaultListener: ((host: string, reason: string) => void) | null = null;
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
      limitWaitMs: DEFAULTS.limitWaitMs,
      ...options.settings,
    };
    this.done = runEngine(
      initialState(plan, engineConfig(settings, '/nowhere/.design'), this.clock.now()),
      settings,
      {
        workspaces: {
          make: async (request) => {
            const { task } = request;
            if (request.place !== undefined) this.placed.push([task, `${request.place.host}:${request.place.slot}`]);
            if (this.worktrees.has(task)) throw new Error(`task ${task} was given a second worktree before releasing the first`);
            const prepared = (this.rechecking.delete(task) ? options.prepareRecheck?.(task) : options.prepare?.(task)) ?? ok(`/worktrees/${task}`);
            if (!prepared.ok) return prepared;
            const dir = prepared.value;
            this.worktrees.set(task, dir);
            return ok({
              base: request.base ?? request.commit,
              runWorker: (job) => this.runWorker({ ...job, cwd: dir }),
              verify: async (current, verified) => options.verify?.(verified, current) ?? passed(current.tasks[verified]!),
              runCheck: () => Promise.reject(new Error('the engine runs no check in a workspace itself')),
              release: () => {
                this.worktrees.delete(task);
                this.released.push(task);
              },
            });
          },
          remove: async () => undefined,
          onHostFault: (listener) => {
            this.hostFaultListener = listener;
          },
        },
        integration: {
          startOf: async (start) => {
            if (start.recheck !== undefined) {
              this.rechecks.push([start.task, start.recheck]);
              this.rechecking.add(start.task);
              return ok({ commit: start.recheck, base: `${start.recheck}^` });
            }
            const from = start.from;
            if (from !== undefined) {
              this.starts.push([start.task, from]);
              const workSoFar = 'work' in from ? `diff of ${from.work.entries.length} files` : `diff ${from.base}..${from.commit}`;
              return ok({ commit: 'work' in from ? 'stacked' : from.commit, base: 'work' in from ? 'tip' : from.base, workSoFar });
            }
            this.stacks.push([start.task, start.stack.map((item) => item.task)]);
            return ok({ commit: 'tip' });
          },
          gate: async (_plan, request) => {
            this.gated.push([...request.tasks]);
            const verdict = options.gate?.(request.tasks, this.integrated) ?? true;
            return typeof verdict === 'boolean'
              ? { passed: verdict, output: verdict ? '' : 'FAIL test/use.test.js: greet is not a function', durationMs: 3 }
              : verdict;
          },
          record: async (_plan, request) => {
            this.recorded.push(request);
            this.integrated.push(...request.integrate.map((item) => item.task));
            return options.record?.(request.tasks, request.round) ?? ok(`commit-${request.round}`);
          },
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

  /** A fake worker: it runs until the test finishes it (or the limiter, or a stop, ends it). */
  private runWorker(request: WorkerJob & { cwd: string }): Promise<WorkerRun> {
    return new Promise<WorkerRun>((resolve) => {
      this.started.push(request);
      const worker: Running = { request, finish: resolve, served: false };
      this.running.set(request.taskIndex, worker);
      // As the worker adapter does: stopped by the limiter only while it has been served nothing.
      request.stopIfIdle?.addEventListener(
        'abort',
        () => {
          if (worker.served || this.running.get(request.taskIndex) !== worker) return;
          this.running.delete(request.taskIndex);
          const unreachable = worker.refusal?.kind === 'api-unreachable';
          resolve({
            ...failedRun(
              unreachable
                ? {
                    reason: 'api-unreachable',
                    message: 'its requests got no answer (the connection failed: refused, reset, a name that does not resolve, TLS, or a timeout)',
                  }
                : { reason: 'rate-limited', message: 'API Error: Request rejected (429)' },
            ),
            ...(request.resume !== undefined ? { sessionId: request.resume } : {}),
          });
        },
        { once: true },
      );
      request.signal?.addEventListener(
        'abort',
        () => {
          // Stopped: it runs no more (an interrupt, or its speculation was cancelled).
          if (this.running.get(request.taskIndex)?.request === request) this.running.delete(request.taskIndex);
          resolve(failedRun({ reason: 'interrupted' }));
        },
        { once: true },
      );
    });
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

  /** The API refuses `task`'s worker while it runs (its CLI will retry): the engine hears of it. */
  async refuse(task: number, refusal: Refusal): Promise<void> {
    const worker = this.running.get(task);
    if (!worker) throw new Error(`task ${task} is not running (running: ${this.runningTasks.join(', ') || 'none'})`);
    worker.refusal = refusal;
    worker.request.onRefused?.(refusal, worker.served);
    await settle();
  }

  /** The API serves `task`'s worker a response. */
  async serve(task: number, times = 1): Promise<void> {
    const worker = this.running.get(task);
    if (!worker) throw new Error(`task ${task} is not running (running: ${this.runningTasks.join(', ') || 'none'})`);
    for (let k = 0; k < times; k++) {
      worker.served = true;
      worker.request.onServed?.();
    }
    await settle();
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await settle();
  }

  /** A host's own failure, told by its workspaces (its channel down, git failing there). */
  async hostFault(host: string, reason: string): Promise<void> {
    if (this.hostFaultListener === null) throw new Error('the engine did not listen for host faults');
    this.hostFaultListener(host, reason);
    await settle();
  }

  async interrupt(): Promise<void> {
    this.controller.abort();
    await settle();
  }

  async ended(): Promise<EngineResult> {
    await settle();
    if (this.failure !== null) throw this.failure;
    if (this.result === null)
      throw new Error(`the engine has not finished (running: ${this.runningTasks.join(', ') || 'none'}, timers: ${this.clock.pending})`);
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
  /** What verification finds for a task's subagent worktree (default: it passes, `passed`). */
  verify?: (task: number, plan: Plan) => Verification;
  /** What a re-check of a task's set-aside work finds (default: as `verify`). */
  recheck?: (task: number, plan: Plan) => Verification;
  /** The lane's record (default: a commit named after the round). */
  record?: (tasks: readonly number[], round: number) => Result<string | null, GitFailure>;
  /**
   * What befalls the gate process a step starts, by the launch's number (from 0): it cannot be
   * started, it is killed before it has a result, or it writes its result and exits just after a
   * step read that it runs (default: none of these, it runs).
   */
  gateTrouble?: (launch: number, tasks: readonly number[]) => 'not-started' | 'killed' | 'tip-moved' | 'finished-after-read' | null;
}

/** A commit id of the rig's fake repository. */
const commitId = (n: number): string => n.toString(16).padStart(40, '0');

/**
 * The plan tool's in-session steps — run/session/session.ts's `sessionSetup`, `sessionNext`, `sessionFinalize` and
 * `sessionCommit` themselves — with their I/O (run/session/io.ts) replaced by fakes: the repository
 * (what setup finds, the integration ref, HEAD, landing), the subagents' worktrees and their
 * verification, the gate process (its verdicts are there as soon as it starts), the journal and
 * the clock. The plan, the session file and the prompts are files in a scratch directory. The
 * test plays the lead and its subagents, one step at a time; landing on the person's branch
 * succeeds unless `blockLanding`.
 */
export class SessionRig {
  readonly dir: string;
  readonly planPath: string;
  /** The run's journal. */
  readonly events: RunEvent[] = [];
  /** Tasks handed out by each `next`, in order. */
  readonly handedOut: number[][] = [];
  /** Tasks handed out and not reported on yet, with their attempt. */
  readonly subagents = new Map<number, number>();
  readonly recorded: RecordRequest[] = [];
  readonly integrated: number[] = [];
  /** The candidates of every gate run (none: the starting commit), in order. */
  readonly gated: number[][] = [];
  /** Integrated work not on the person's branch yet. */
  readonly unlanded = new Set<number>();
  blockLanding = false;
  /** Each re-check's task and the commit it was made at, in order. */
  readonly rechecks: Array<[number, string]> = [];
  /** The undeclared writes the worker hook refused, by `<task>-<attempt>`. */
  readonly deniedWrites = new Map<string, string[]>();
  /** Where a step moved the finished plan, or null. */
  archived: string | null = null;
  private time = Date.parse('2026-01-01T00:00:00.000Z');
  private commits = 1;
  private tip = commitId(1);
  private head = commitId(1);
  private gateRun: GateState | null = null;
  /** What the gate process writes just after the next read (`finished-after-read`). */
  private gateResultAfterRead: GateState | null = null;
  private gateLaunches = 0;
  private findings: SetupFindings = noFindings();
  private held: HeldCandidate[] = [];

  constructor(
    plan: Plan,
    private readonly options: SessionRigOptions = {},
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'foreman-session-rig-'));
    onTestFinished(() => rmSync(this.dir, { recursive: true, force: true }));
    this.planPath = join(this.dir, '.design/plan.json');
    mkdirSync(dirname(this.planPath), { recursive: true });
    writeFileSync(this.planPath, serializePlan(plan));
  }

  /** The plan as the steps left it (once archived, as it went to history). */
  get plan(): Plan {
    return JSON.parse(readFileSync(this.archived ?? this.planPath, 'utf8')) as Plan;
  }

  /** The plan, and the run's usage as the session file keeps it (once archived, as the run's end said it). */
  get state(): { plan: Plan; usage: UsageFigure } {
    const session = this.archived === null ? (JSON.parse(readFileSync(sessionPathFor(this.planPath), 'utf8')) as { engine: { usage: UsageFigure } }) : null;
    return { plan: this.plan, usage: session?.engine.usage ?? this.finished!.usage };
  }

  /** How the run ended, as the journal says, or null while it goes on. */
  get finished(): Extract<RunEvent, { type: 'run-finished' }> | null {
    return this.events.findLast((e): e is Extract<RunEvent, { type: 'run-finished' }> => e.type === 'run-finished') ?? null;
  }

  /** The plan's integration ref: its tip moves with each integration, and lands on HEAD unless `blockLanding`. */
  private readonly places: SessionPlaces = this.fakePlaces();

  private fakePlaces(): SessionPlaces {
    const rig = this;
    const unused = (what: string) => () => Promise.reject(new Error(`a session step does not ${what}`));
    /** A workspace whose verification finds what `found` says. */
    const workspace = (base: string, found: (plan: Plan, task: number) => Verification): Workspace => ({
      base,
      runWorker: unused('run a worker'),
      verify: async (plan, task) => found(plan, task),
      runCheck: unused('run a check in a workspace itself'),
      release: () => undefined,
    });
    const integration: Integration = {
      repo: '/nowhere',
      planId: 'rig',
      ref: 'refs/foreman/rig',
      get tip() {
        return rig.tip;
      },
      knows: (commit) => commit === rig.tip,
      startOf: async (start) => {
        if (start.recheck !== undefined) rig.rechecks.push([start.task, start.recheck]);
        return ok(start.recheck !== undefined ? { commit: start.recheck, base: rig.tip } : { commit: rig.tip });
      },
      followHead: async () => undefined,
      record: async (_plan, request) => {
        rig.recorded.push(request);
        const recorded = rig.options.record?.(request.tasks, request.round) ?? ok(`commit-${request.round}`);
        if (recorded.ok && request.integrate.length > 0) {
          for (const item of request.integrate) {
            rig.integrated.push(item.task);
            rig.unlanded.add(item.task);
          }
          rig.tip = commitId(++rig.commits);
        }
        return recorded;
      },
      keepAside: unused('keep work aside itself'),
      holdApproved: unused('hold approved work (setup does)'),
      park: unused('park work itself'),
      heldCandidates: unused('read held candidates (setup does)'),
      gate: unused('run the gate (the gate process does)'),
      land: async () => {
        if (rig.blockLanding) return err({ kind: 'local-changes', paths: [{ path: 'notes.txt', why: 'modified' }] });
        const paths = [...rig.unlanded].map((task) => `task-${task}.txt`);
        const from = rig.head;
        rig.unlanded.clear();
        rig.head = rig.tip;
        return ok({ from, to: rig.tip, paths, upToDate: paths.length === 0 });
      },
      removeRefs: async () => ok(undefined),
    };
    return {
      integration,
      workspaces: {
        // A re-check's (its work read from `base`), or a task's that changes nothing, at the tip.
        make: async (request) =>
          ok(
            workspace(request.base ?? request.commit, (plan, task) =>
              request.base !== undefined
                ? (rig.options.recheck?.(task, plan) ?? rig.options.verify?.(task, plan) ?? passed(plan.tasks[task]!, {}, rig.tip))
                : (rig.options.verify?.(task, plan) ?? passed(plan.tasks[task]!, {}, rig.tip)),
            ),
          ),
        remove: async () => undefined,
      },
      subagent: async (_dir, base) =>
        ok(workspace(base ?? rig.head, (plan, task) => rig.options.verify?.(task, plan) ?? passed(plan.tasks[task]!, {}, base ?? rig.head))),
    };
  }

  /** The rig's I/O; the rest (processes, plan.json) is the real one, on files in the scratch directory. */
  private readonly io: Partial<SessionIo> & Pick<SessionIo, 'sandbox'> = {
    clock: { now: () => (this.time += 1), wakeAt: () => () => undefined, sleep: async () => undefined },
    journal: {
      append: (events) => void this.events.push(...events),
      lastSeen: async (runId) => {
        const last = this.events.filter((e) => e.runId === runId).reduce((latest, e) => Math.max(latest, Date.parse(e.at)), 0);
        return last > 0 ? last : null;
      },
      close: async () => undefined,
    },
    repository: {
      setUp: async (plan, options) => {
        // As setupRun: the plan's id given and written once nothing refuses the session.
        if (typeof plan.planId !== 'string' || plan.planId === '') {
          ensurePlanId(plan);
          await options.savePlan?.(plan);
        }
        const findings = this.findings;
        return ok({
          goal: plan.goal,
          taskCount: plan.tasks.length,
          maxDepth: Math.max(...depths(depsOf(plan.tasks))),
          resumed: plan.tasks.some((t) => statusOf(t) !== 'pending'),
          findings,
          recovered: findings.recovered.map((r) => r.task),
          reset: findings.interrupted,
          reverted: findings.reverted.map((r) => r.task),
          assumptions: [],
          blocked: findings.blocked.map((b) => b.task),
          notices: [],
          places: this.places,
          held: this.held,
        });
      },
      open: async () => ok(this.places),
      head: async () => this.head,
      branch: async () => 'main',
      unlanded: async () => [...this.unlanded],
      parked: async () => ok(null),
      diff: async () => ok(''),
    },
    subagents: { find: async (worktree) => ok(worktree), remove: async () => null },
    gate: {
      launch: async (_launch, run) => {
        const trouble = this.options.gateTrouble?.(this.gateLaunches++, run.tasks) ?? null;
        if (trouble === 'not-started') return err('spawn /bin/sh EAGAIN');
        this.gated.push([...run.tasks]);
        if (trouble === 'killed') {
          // Running, as its state file says, and its process gone (`alive` is false).
          this.gateRun = { id: run.id, state: 'running', pid: 0, tasks: [...run.tasks] };
          return ok(undefined);
        }
        if (trouble === 'tip-moved') {
          // Work integrated while it started (a person's `plan approve`): the gate process tested nothing, as it says.
          const from = this.tip;
          this.tip = commitId(++this.commits);
          const output = `the integration tip moved from ${from.slice(0, 12)} to ${this.tip.slice(0, 12)}`;
          this.gateRun = { id: run.id, state: 'finished', pid: 0, tasks: [...run.tasks], passed: false, stale: true, output, durationMs: 1 };
          return ok(undefined);
        }
        const passed = run.tasks.length === 0 ? (this.options.baseline ?? true) : this.options.gate!(run.tasks, this.integrated);
        const output = passed ? '' : `FAIL: ${run.tasks.length === 0 ? 'the starting commit' : `tasks ${run.tasks.join(', ')}`}`;
        const finished: GateState = { id: run.id, state: 'finished', pid: 0, tasks: [...run.tasks], passed, stale: false, output, durationMs: 1 };
        if (trouble === 'finished-after-read') {
          // The first read finds it running; by the time `alive` is asked, it has written its result and exited.
          this.gateRun = { id: run.id, state: 'running', pid: 0, tasks: [...run.tasks] };
          this.gateResultAfterRead = finished;
        } else this.gateRun = finished;
        return ok(undefined);
      },
      read: async () => {
        const read = this.gateRun;
        if (this.gateResultAfterRead !== null) [this.gateRun, this.gateResultAfterRead] = [this.gateResultAfterRead, null];
        return read;
      },
      alive: () => false,
      end: async () => {
        this.gateRun = null;
        return [];
      },
    },
    handOut: {
      publish: async () => undefined,
      withdraw: async () => undefined,
      removeStale: async () => undefined,
      deniedWrites: async (task, attempt) => this.deniedWrites.get(`${task}-${attempt}`) ?? [],
      bound: async () => true,
    },
    sandbox: async () => ({ mode: 'off', sandboxed: false, unavailable: null }),
  };

  /**
   * The session file the last step wrote, held to its schema: one the next step would read as
   * none, or an attempt record it would drop, is a bug of the step that wrote it.
   */
  private checkSessionFile(): void {
    if (!existsSync(sessionPathFor(this.planPath))) return;
    const data: unknown = JSON.parse(readFileSync(sessionPathFor(this.planPath), 'utf8'));
    if (!isSessionFile(data)) throw new Error(`a step wrote a session file its schema refuses: ${errorsOf(validateSessionFile)}`);
    for (const attempt of data.engine?.attempts ?? [])
      if (!isAttemptRecord(attempt)) throw new Error(`a step wrote an attempt record its schema refuses: ${errorsOf(validateAttempt)}`);
  }

  /** A step's context: the plan as the file has it now, and the rig's I/O. */
  private context(): { plan: Plan; ctx: SessionContext } {
    this.checkSessionFile();
    const text = readFileSync(this.planPath, 'utf8');
    return { plan: JSON.parse(text) as Plan, ctx: { repo: this.dir, planPath: this.planPath, git: new Git(this.dir), env: {}, planText: text, io: this.io } };
  }

  /**
   * `setup`, finding `findings` in the repository and `held` candidates on their refs (approved
   * work among them): then what is held or an earlier session verified integrates (with a gate: is
   * tested first), and the gate runs on the starting commit.
   */
  async setup(findings: SetupFindings = noFindings(), held: HeldCandidate[] = []): Promise<SetupOutput> {
    this.findings = findings;
    this.held = held;
    const { plan, ctx } = this.context();
    const gate = this.options.gate === undefined ? { noGate: true } : { gate: 'npm test', gateBatch: this.options.gateBatch ?? DEFAULTS.gateBatch };
    const settings: SetupSettings = {
      concurrency: this.options.concurrency ?? DEFAULTS.concurrency,
      maxAttempts: this.options.maxAttempts ?? DEFAULTS.maxAttempts,
      sandbox: await this.io.sandbox(),
      ...gate,
    };
    const set = await sessionSetup(plan, ctx, settings);
    if (!set.ok) throw new Error(`setup refused: ${set.error.kind}`);
    this.archived = set.value.archived;
    return set.value;
  }

  /** `next`: what it answered. */
  async nextStep(concurrency?: number): Promise<NextOutput> {
    const { plan, ctx } = this.context();
    const next = await sessionNext(plan, ctx, concurrency !== undefined ? { concurrency } : {});
    this.handedOut.push(next.tasks.map((t) => t.index));
    for (const task of next.tasks) this.subagents.set(task.index, task.attempt);
    return next;
  }

  /** `next`: the tasks handed out. */
  async next(concurrency?: number): Promise<number[]> {
    return (await this.nextStep(concurrency)).tasks.map((t) => t.index);
  }

  /** `finalize` with each subagent's final text. */
  async finalize(results: ReadonlyArray<readonly [number, string]>): Promise<FinalizeOutput> {
    for (const [task] of results) {
      if (!this.subagents.delete(task)) throw new Error(`task ${task} was not handed out (out: ${[...this.subagents.keys()].join(', ') || 'none'})`);
    }
    const { plan, ctx } = this.context();
    const finalized = await sessionFinalize(
      plan,
      ctx,
      // Each subagent's worktree, as the lead reports it (the rig's subagents are fake: io.subagents finds any).
      results.map(([task, output]) => ({ task, output, worktree: `/subagents/${task}` })),
    );
    if (!finalized.ok) throw new Error(`finalize refused: ${finalized.error.kind}`);
    return finalized.value;
  }

  /** `commit`: integrate (with a gate, its runs until it asks for none), then land. */
  async commit(): Promise<Result<CommitStepOutput, CommitProblem>> {
    const { plan, ctx } = this.context();
    const committed = await sessionCommit(plan, ctx);
    if (committed.ok) this.archived = committed.value.archived;
    return committed;
  }

  outcomes(): Array<[number, string]> {
    return this.events.flatMap((e) => (e.type === 'task-finished' ? [[e.task, e.outcome] as [number, string]] : []));
  }
}
