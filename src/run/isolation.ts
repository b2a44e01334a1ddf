// A run's isolation: the pool of worktrees attempts work in, the plan's integration ref that
// verified work is committed onto, and landing that ref on the person's branch. The headless
// engine and the in-session plan tool share it; the git and worktree adapters do the I/O.
//
// The person's working tree, index and branch are touched in one place only: `land`, which moves
// them to the integration tip when, and only when, no path it would update has a change of theirs.

import { readFile, readdir, realpath, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { withForemanLine } from '../adapters/checks.ts';
import type { Commands } from '../adapters/commands.ts';
import { type Integration, type IntegrationFailure, Integrator, parkedTrailers, parkedWork } from '../adapters/git/integrate.ts';
import {
  type ParkKind,
  commitOf,
  commonGitDir,
  deletePlanRefs,
  dropParked,
  integrationRef,
  isAncestor,
  moveRef,
  parkedFolders,
  parkedTasks,
  readRef,
  resolveCommit,
  startIntegrationRef,
} from '../adapters/git/refs.ts';
import { type Landed, type LandingProblem, land, resumeLanding } from '../adapters/git/land.ts';
import { workDiff } from '../adapters/git/parked-change.ts';
import { processAlive } from '../adapters/processes.ts';
import { writeFileAtomic } from '../adapters/plan-store.ts';
import { checkSandbox, sandboxRefusal, setupCommandSandbox } from '../adapters/sandbox.ts';
import { type Slot, type WorktreePool, describeProvisionFailure, openPool, symlinkDirectoriesOf, worktreesRoot } from '../adapters/git/worktree-pool.ts';
import { type Result, assertNever, err, ok } from '../core/failure.ts';
import { type GitFailure, type TrailerList, describeGitFailure, failureOf, isObjectId } from '../core/git-text.ts';
import type { LandMode } from '../core/landing.ts';
import type { Plan } from '../core/plan.ts';
import { type TimeLimit, describeTimeLimitHit } from '../core/time-limit.ts';
import type { HeldCandidate } from '../core/engine/admission.ts';
import type { AttemptStart, GateRequest, GateRun, RecordRequest } from '../core/engine/effects.ts';
import type { CapturedWork } from '../core/work.ts';
import { ensurePlanId, roundMessage, stackOfTrailer, stackTrailer } from './commit.ts';
import { LIMIT_FLAGS } from './settings.ts';

export interface IsolationOptions {
  repo: string;
  /** Where the landing intent is recorded (`<plan dir>/landing.json`). */
  planPath: string;
  env: NodeJS.ProcessEnv;
  /** Run the setup command in the operating-system sandbox. */
  sandbox: boolean;
  /** The setup command's time limit: --check-timeout's, or in the gate process (`role: 'gate'`) --gate-timeout's. */
  setupTimeoutMs: number;
  /** Runs the setup command in a worktree and the gate. */
  commands: Commands;
  /** Told after each run of the setup command in a worktree (a new slot, or its setup inputs changed). */
  onSetup?: (run: WorktreeSetup) => void;
  /**
   * `gate`: for the in-session gate process only (`plan gate --serve`), which runs beside the plan
   * tool's steps: a pool of its own, the integration ref only read (never made), and nothing a
   * live step may hold (a ref lock) cleared.
   */
  role?: 'run' | 'gate';
}

/** The gate process's pool: its own, so it never takes a slot from the steps running beside it. */
export const gatePoolId = (planId: string): string => `${planId}-gate`;

/** One run of the plan's setup command in a worktree of the pool. */
export interface WorktreeSetup {
  /** The worktree's directory. */
  dir: string;
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  /** The limit it ran under, named when it was hit. */
  timeLimit: TimeLimit;
  durationMs: number;
  /** Why its sandbox was made without npm's own settings (`SetupSandbox`). */
  npmUnread?: string;
  /** It failed, and its output shows the sandbox refused its network: what to tell the person (core/sandbox-words.ts). */
  sandboxRefusal?: string;
}

/** Where a landing is recorded while it runs, next to the plan. */
export const landingIntentPath = (planPath: string): string => join(planPath, '..', 'landing.json');

/** Where a --no-commit run records which integration commit the person's files hold. */
const landedBasePath = (planPath: string): string => join(planPath, '..', 'landed.json');

/** The integration commit an earlier --no-commit landing of this plan left in the person's files, or null. */
export async function landedBase(planPath: string, planId: string): Promise<string | null> {
  const text = await readFile(landedBasePath(planPath), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const data = JSON.parse(text) as { planId?: unknown; commit?: unknown };
    return data.planId === planId && typeof data.commit === 'string' && isObjectId(data.commit) ? data.commit : null;
  } catch {
    return null;
  }
}

export function recordLandedBase(planPath: string, planId: string, commit: string): Promise<void> {
  return writeFileAtomic(landedBasePath(planPath), `${JSON.stringify({ planId, commit })}\n`);
}

export class Isolation {
  private readonly slots = new Map<number, Slot>();
  /** A re-check's start, where it is not its slot's commit. */
  private readonly bases = new Map<number, string>();
  /** Integrations, stacks and parked work: its tree builder's git processes last as long as this process. */
  private readonly integrator: Integrator;

  private constructor(
    readonly repo: string,
    readonly planId: string,
    readonly ref: string,
    private current: string,
    readonly pool: WorktreePool,
    private readonly options: IsolationOptions,
  ) {
    this.integrator = new Integrator(repo);
  }

  /**
   * The plan's integration ref (made at HEAD when it does not exist) and its worktree pool (with
   * the worktrees a crashed run left, reused). `plan` gets its planId if it has none.
   */
  static async open(plan: Plan, options: IsolationOptions): Promise<Result<Isolation, GitFailure>> {
    const planId = ensurePlanId(plan);
    const repo = await realpath(options.repo);
    const ref = integrationRef(planId);
    const gateOnly = options.role === 'gate';
    if (!gateOnly) await clearLeftovers(repo, planId);
    const found = await readRef(repo, ref);
    if (!found.ok) return found;
    let tip = found.value;
    if (tip === null && gateOnly) return err({ step: 'rev-parse', exitCode: 1, stderr: `the plan's integration ref ${ref} does not exist` });
    if (tip === null) {
      const started = await startIntegrationRef(repo, ref);
      if (!started.ok) return started;
      tip = started.value;
    }
    const context = plan.context ?? {};
    // The gate process is given one limit, the gate's, and uses it for its worktree's setup too.
    const setupLimit: TimeLimit = { ms: options.setupTimeoutMs, flag: gateOnly ? LIMIT_FLAGS.gate : LIMIT_FLAGS.check };
    const pool = await openPool({
      repo,
      planId: gateOnly ? gatePoolId(planId) : planId,
      root: worktreesRoot(options.env),
      ...(context.setupCommand ? { setupCommand: context.setupCommand } : {}),
      ...(context.setupInputs ? { setupInputs: context.setupInputs } : {}),
      symlinkDirectories: await symlinkDirectoriesOf(repo),
      runSetup: async (dir, command, signal) => {
        const sandbox = options.sandbox ? await setupCommandSandbox(dir, repo, context.setupNetwork, options.env) : undefined;
        const run = await options.commands.run(command, {
          cwd: dir,
          timeoutMs: setupLimit.ms,
          role: { kind: 'setup-command', task: -1, command },
          signal,
          ...(sandbox ? { sandbox } : {}),
        });
        const refusal = run.exitCode === 0 && !run.timedOut ? null : sandboxRefusal(run.output, sandbox, 'context.setupNetwork');
        options.onSetup?.({
          dir,
          command,
          exitCode: run.exitCode,
          timedOut: run.timedOut,
          timeLimit: setupLimit,
          durationMs: run.durationMs,
          ...(sandbox?.npmUnread ? { npmUnread: sandbox.npmUnread } : {}),
          ...(refusal !== null ? { sandboxRefusal: refusal } : {}),
        });
        return {
          ...run,
          timeLimit: setupLimit,
          output: sandbox?.npmUnread ? withForemanLine(run.output, sandbox.npmUnread) : run.output,
          ...(refusal !== null ? { note: refusal } : {}),
        };
      },
    });
    return ok(new Isolation(repo, planId, ref, tip, pool, options));
  }

  /** The integration tip: what new attempts start from. */
  get tip(): string {
    return this.current;
  }

  /** A worktree at the integration tip for an attempt of `task`, ready to work in; or why not. */
  async prepare(task: number, signal?: AbortSignal, stack: ReadonlyArray<{ task: number; work: CapturedWork }> = []): Promise<Result<string, string>> {
    // Speculative: the candidates' work stacked in order on the tip, as the gate will stack them
    // beneath this task's own candidate (a commit no ref holds; the attempt's base).
    const base = await this.stacked(stack);
    if (!base.ok) return err(base.error);
    const acquired = await this.pool.acquire(base.value, signal);
    if (!acquired.ok) return err(describeProvisionFailure(acquired.error));
    this.slots.set(task, acquired.value);
    return ok(acquired.value.dir);
  }

  /**
   * A worktree for a re-check of `task`: at `commit` (an attempt's whole work, kept on its
   * set-aside ref), the attempt's start being that commit's parent: capture reads the work as
   * what the "worker" committed since.
   */
  async prepareRecheck(task: number, commit: string, signal?: AbortSignal): Promise<Result<string, string>> {
    const parent = await commitOf(this.repo, `${commit}^`);
    if (!parent.ok)
      return err(
        `the work task ${task}'s last attempt set aside (commit ${commit.slice(0, 12)}) cannot be read: ${describeGitFailure(failureOf(parent.error))}`,
      );
    return this.acquireAt(task, commit, parent.value, signal);
  }

  /**
   * A worktree for `task` holding earlier work, with that work's diff for the worker's prompt:
   * `commit`, a commit foreman kept, the attempt starting at `base`, where that work started; or
   * `work`, a blamed candidate's, committed on the integration tip as it is now (what the gate
   * tested it on), the attempt starting at the tip. A candidate's work that no longer goes on the
   * tip (another change reached its files) is not put back: the attempt starts at the tip, with
   * no work so far.
   */
  async prepareFrom(task: number, from: AttemptStart, signal?: AbortSignal): Promise<Result<{ dir: string; workSoFar?: string }, string>> {
    const base = 'work' in from ? this.current : from.base;
    const start = 'work' in from ? await this.stacked([{ task, work: from.work }]) : ok(from.commit);
    if (!start.ok) return this.acquireAt(task, base, base, signal).then((dir) => (dir.ok ? ok({ dir: dir.value }) : dir));
    const diff = await workDiff(this.repo, base, start.value);
    if (!diff.ok) return err(`task ${task}'s earlier work (commit ${start.value.slice(0, 12)}) cannot be read: ${describeGitFailure(diff.error)}`);
    const dir = await this.acquireAt(task, start.value, base, signal);
    return dir.ok ? ok({ dir: dir.value, workSoFar: diff.value }) : dir;
  }

  /** A worktree for `task` at `commit`, its attempt starting at `base`: capture reads its work as what changed since. */
  private async acquireAt(task: number, commit: string, base: string, signal?: AbortSignal): Promise<Result<string, string>> {
    const acquired = await this.pool.acquire(commit, signal);
    if (!acquired.ok) return err(describeProvisionFailure(acquired.error));
    this.slots.set(task, acquired.value);
    this.bases.set(task, base);
    return ok(acquired.value.dir);
  }

  /** `task`'s worktree, what provisioning put in it (never the worker's change), and the commit the attempt started from. */
  workspaceOf(task: number): { dir: string; kept: string[]; base: string } | null {
    const slot = this.slots.get(task);
    return slot === undefined ? null : { dir: slot.dir, kept: slot.kept, base: this.bases.get(task) ?? slot.commit };
  }

  release(task: number): void {
    const slot = this.slots.get(task);
    this.bases.delete(task);
    if (slot === undefined) return;
    this.slots.delete(task);
    this.pool.release(slot);
  }

  /**
   * Integrate verified work onto the ref (one commit, trailers naming every task) and park work
   * awaiting approval on refs of its own. The integration commit, or null when nothing changed.
   */
  async record(plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>> {
    const parking: Array<[ParkKind, ReadonlyArray<{ task: number; work: CapturedWork; stack?: readonly number[] }>]> = [
      ['awaiting', request.park],
      ['candidate', request.hold ?? []],
    ];
    for (const [kind, items] of parking) {
      for (const item of items) {
        const { message } = roundMessage(plan, request.round, [item.task]);
        // A candidate says what it was built on: a resumed run gates it on the same stack, or drops it.
        const made = await this.park(item.task, item.work, message, kind, kind === 'candidate' ? [stackTrailer(item.stack ?? [])] : undefined);
        if (!made.ok) return made;
      }
    }
    let commit: string | null = null;
    if (request.integrate.length > 0) {
      const integrated = await this.integrateWork(plan, request.round, request.integrate);
      if (!integrated.ok) return integrated;
      commit = integrated.value;
    }
    // Candidates that integrated, or broke the build, leave the merge queue.
    for (const task of request.drop) await dropParked(this.repo, this.planId, task, 'candidate');
    return ok(commit);
  }

  /** Parks `work` of `task` on its own ref (`Integrator.park`), with this run's integrator. */
  park(task: number, work: CapturedWork, message: string, kind: ParkKind, trailers?: TrailerList): Promise<Result<string, GitFailure>> {
    return this.integrator.park(this.planId, task, work, message, kind, trailers);
  }

  /**
   * Candidates an earlier run held for the merge queue, for tasks still in progress, with the
   * stack each was built on: they rejoin it first (`admitHeld`). One an earlier foreman held names
   * no stack: built on the tip when its base is in the integration ref's history; else on
   * candidates nothing names, and it is dropped (it runs again).
   */
  async heldCandidates(plan: Plan, inProgress: (task: number) => boolean): Promise<Result<HeldCandidate[], GitFailure>> {
    const held: HeldCandidate[] = [];
    const parked = await parkedTasks(this.repo, this.planId, 'candidate');
    if (!parked.ok) return parked;
    for (const task of parked.value) {
      const planned = plan.tasks[task];
      const found = planned !== undefined && inProgress(task) ? await parkedWork(this.repo, this.planId, task, 'candidate') : ok(null);
      if (!found.ok) return found;
      const stack = found.value === null ? null : await this.heldStack(task, found.value);
      if (stack !== null && !stack.ok) return stack;
      if (planned === undefined || found.value === null || stack === null || stack.value === null) {
        await dropParked(this.repo, this.planId, task, 'candidate');
        continue;
      }
      held.push({ task, work: found.value, result: planned.result ?? 'completed', stack: stack.value });
    }
    return ok(held);
  }

  /** The stack a held candidate names (its trailer); one an earlier foreman held names none: the tip when its base is in the integration ref's history, else null. */
  private async heldStack(task: number, work: CapturedWork): Promise<Result<number[] | null, GitFailure>> {
    const trailers = await parkedTrailers(this.repo, this.planId, task, 'candidate');
    if (!trailers.ok) return trailers;
    return ok(stackOfTrailer(trailers.value) ?? ((await isAncestor(this.repo, work.base, this.current)) ? [] : null));
  }

  /** `stack`'s works committed in order on the integration tip, or `onto` (itself when empty); the ref does not move. */
  private async stacked(stack: ReadonlyArray<{ task: number; work: CapturedWork }>, onto = this.current): Promise<Result<string, string>> {
    // A candidate that changed nothing has nothing to stack.
    const changing = stack.filter((item) => item.work.entries.length > 0);
    if (changing.length === 0) return ok(onto);
    const tasks = changing.map((item) => item.task);
    const made = await this.integrator.integrate(null, onto, {
      tasks,
      message: `foreman: candidates ${tasks.join(', ')} stacked`,
      trailers: [],
      works: changing.map((item) => item.work),
    });
    return made.ok ? made : err(describeGitFailure(integrationFailure(made.error)));
  }

  /**
   * The gate: `command` in a worktree of the candidates stacked, in order, on the integration tip
   * (the tip itself when there are none: the baseline). The ref does not move. `passed` is null
   * when `signal` stopped it first (its process group is ended).
   */
  async runGate(plan: Plan, request: GateRequest, gate: { command: string; timeoutMs: number; sandbox: boolean }, signal?: AbortSignal): Promise<GateRun> {
    const started = Date.now();
    // The same stack a speculative worktree is built on; work that cannot even be stacked
    // (another change reached its files) fails like a red test.
    const stacked = await this.stacked(request.works);
    if (!stacked.ok) return { passed: false, output: stacked.error, durationMs: Date.now() - started };
    const acquired = await this.pool.acquire(stacked.value, signal);
    if (!acquired.ok)
      return {
        passed: acquired.error.kind === 'interrupted' ? null : false,
        output: describeProvisionFailure(acquired.error),
        durationMs: Date.now() - started,
      };
    const dir = acquired.value.dir;
    try {
      const sandbox = gate.sandbox ? checkSandbox(dir, plan, this.repo) : undefined;
      // Headless and in-session alike (`plan setup --gate-timeout`), --gate-timeout sets it.
      const timeLimit: TimeLimit = { ms: gate.timeoutMs, flag: LIMIT_FLAGS.gate };
      const run = await this.options.commands.run(gate.command, {
        cwd: dir,
        timeoutMs: timeLimit.ms,
        role: { kind: 'gate', task: -1, command: gate.command },
        ...(signal ? { signal } : {}),
        ...(sandbox ? { sandbox } : {}),
      });
      if (run.aborted) return { passed: null, output: run.output, durationMs: run.durationMs };
      const passed = run.exitCode === 0 && !run.timedOut;
      // The first line says how it ended: what shows the output keeps it (`clipMiddle`).
      const ended = run.timedOut ? describeTimeLimitHit(gate.command, timeLimit) : `\`${gate.command}\` exited ${run.exitCode ?? 'without a code'}`;
      // The gate runs in the checks' sandbox: `context.checkNetwork` allows its hosts.
      const refusal = passed ? null : sandboxRefusal(run.output, sandbox, 'context.checkNetwork');
      const how = refusal === null ? ended : `${ended} (${refusal})`;
      return { passed, output: passed ? run.output : `${how}:\n${run.output}`, durationMs: Date.now() - started };
    } finally {
      this.pool.release(acquired.value);
    }
  }

  /** Commit `items` onto the integration tip. */
  async integrateWork(plan: Plan, round: number, items: ReadonlyArray<{ task: number; work: CapturedWork }>): Promise<Result<string | null, GitFailure>> {
    const tasks = items.map((item) => item.task);
    const { message, trailers } = roundMessage(plan, round, tasks);
    const integration: Integration = { tasks, message, trailers, works: items.map((item) => item.work) };
    const integrated = await this.integrator.integrate(this.ref, this.current, integration);
    if (!integrated.ok) return err(integrationFailure(integrated.error));
    const changed = integrated.value !== this.current;
    this.current = integrated.value;
    this.pool.remember(integrated.value);
    return ok(changed ? integrated.value : null);
  }

  /** Land the integration tip on the person's branch (or, `worktree` mode, in their files only). */
  land(options: { branch: string | null; mode: LandMode; base?: string }): Promise<Result<Landed, LandingProblem>> {
    return land({
      repo: this.repo,
      to: this.current,
      branch: options.branch,
      mode: options.mode,
      intentPath: landingIntentPath(this.options.planPath),
      ...(options.base ? { base: options.base } : {}),
    });
  }

  /** The integration tip moves on to HEAD when HEAD holds all of it (the person committed on top). */
  async followHead(): Promise<void> {
    const commit = await resolveCommit(this.repo);
    if (commit === null || commit === this.current) return;
    if (!(await isAncestor(this.repo, this.current, commit))) return;
    const moved = await moveRef(this.repo, this.ref, commit, this.current, 'foreman: follow the branch');
    if (moved.ok) this.current = commit;
  }

  /** Remove every worktree of the plan. */
  removeWorktrees(): Promise<void> {
    return this.pool.remove();
  }

  /** Remove the plan's refs (integration and parked work): only once everything on them has landed. */
  removeRefs(): Promise<Result<void, GitFailure>> {
    return deletePlanRefs(this.repo, this.planId);
  }
}

/**
 * What a killed run can leave in the git directory: a lock on the plan's refs (a killed
 * `update-ref`), which would fail every later integration, and temporary index files of
 * processes that are gone. The plan's lock is held, so no other run writes these refs.
 */
async function clearLeftovers(repo: string, planId: string): Promise<void> {
  const common = await commonGitDir(repo);
  if (common === null) return;
  const gitDir = resolve(repo, common);
  await rm(join(gitDir, `${integrationRef(planId)}.lock`), { force: true });
  for (const folder of parkedFolders(planId)) {
    const dir = join(gitDir, folder);
    for (const name of await readdir(dir).catch(() => [] as string[])) if (name.endsWith('.lock')) await rm(join(dir, name), { force: true });
  }
  for (const name of await readdir(gitDir).catch(() => [] as string[])) {
    const pid = /^foreman-index-(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await rm(join(gitDir, name), { force: true });
  }
}

/** A landing a crash cut short, completed (or left, with the problem) before anything else runs. */
export const completeLanding = (repo: string, planPath: string) => resumeLanding(repo, landingIntentPath(planPath));

function integrationFailure(failure: IntegrationFailure): GitFailure {
  switch (failure.kind) {
    case 'git-failed':
      return failure.failure;
    case 'moved':
      return {
        step: 'update-ref',
        exitCode: 1,
        stderr: `the integration ref moved while foreman was writing it (expected ${failure.expected ?? 'none'}, found ${failure.actual ?? 'none'}): another foreman run on the same plan?`,
      };
    case 'conflict':
      return { step: 'integrate', exitCode: 1, stderr: `the integration tip changed ${failure.paths.join(', ')} after the attempt started` };
    default:
      return assertNever(failure, 'integration failure');
  }
}
