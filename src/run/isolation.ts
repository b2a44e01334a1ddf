// A run's isolation: the pool of worktrees attempts work in, the plan's integration ref that
// verified work is committed onto, and landing that ref on the person's branch. The headless
// engine and the in-session plan tool share it; the git and worktree adapters do the I/O.
//
// The person's working tree, index and branch are touched in one place only: `land`, which moves
// them to the integration tip when, and only when, no path it would update has a change of theirs.

import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import { runGit } from '../adapters/git.ts';
import { type Integration, type IntegrationFailure, deleteRef, foremanRefs, integrate, integrationRef, park, readRef } from '../adapters/git-integration.ts';
import { type Landed, type LandingProblem, land, resumeLanding } from '../adapters/git-landing.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import { writeFileAtomic } from '../adapters/plan-store.ts';
import { setupCommandSandbox } from '../adapters/sandbox.ts';
import { type Slot, type WorktreePool, describeProvisionFailure, openPool, symlinkDirectoriesOf, worktreesRoot } from '../adapters/worktree-pool.ts';
import { type Result, assertNever, err, ok } from '../core/failure.ts';
import { type GitFailure, failureOf } from '../core/git-text.ts';
import type { LandMode } from '../core/landing.ts';
import type { Plan } from '../core/plan.ts';
import type { CapturedWork } from '../core/work.ts';
import { ensurePlanId, roundMessage } from './commit.ts';

export interface IsolationOptions {
  repo: string;
  /** Where the landing intent is recorded (`<plan dir>/landing.json`). */
  planPath: string;
  env: NodeJS.ProcessEnv;
  /** Run the setup command in the operating-system sandbox. */
  sandbox: boolean;
  /** The setup command's time limit. */
  setupTimeoutMs: number;
  registry?: ProcessRegistry;
  /** Told after each run of the setup command in a worktree (a new slot, or its setup inputs changed). */
  onSetup?: (run: SetupReport) => void;
}

/** One run of the plan's setup command in a worktree of the pool. */
export interface SetupReport {
  /** The worktree's directory. */
  dir: string;
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
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
    return data.planId === planId && typeof data.commit === 'string' && /^[0-9a-f]{40,64}$/.test(data.commit) ? data.commit : null;
  } catch {
    return null;
  }
}

export function recordLandedBase(planPath: string, planId: string, commit: string): Promise<void> {
  return writeFileAtomic(landedBasePath(planPath), `${JSON.stringify({ planId, commit })}\n`);
}

export class Isolation {
  private readonly slots = new Map<number, Slot>();

  private constructor(
    readonly repo: string,
    readonly planId: string,
    readonly ref: string,
    private current: string,
    readonly pool: WorktreePool,
    private readonly options: IsolationOptions,
  ) {}

  /**
   * The plan's integration ref (made at HEAD when it does not exist) and its worktree pool (with
   * the worktrees a crashed run left, reused). `plan` gets its planId if it has none.
   */
  static async open(plan: Plan, options: IsolationOptions): Promise<Result<Isolation, GitFailure>> {
    const planId = ensurePlanId(plan);
    const repo = await realpath(options.repo);
    const ref = integrationRef(planId);
    let tip = await readRef(repo, ref);
    if (tip === null) {
      const head = await runGit(['rev-parse', '--verify', 'HEAD^{commit}'], { cwd: repo });
      if (!head.ok) return err(failureOf(head.error));
      tip = head.value.trim();
      const made = await runGit(['update-ref', '-m', 'foreman: start the integration of this plan', ref, tip, ''], { cwd: repo });
      if (!made.ok) return err(failureOf(made.error));
    }
    const context = plan.context ?? {};
    const pool = await openPool({
      repo,
      planId,
      root: worktreesRoot(options.env),
      ...(context.setupCommand ? { setupCommand: context.setupCommand } : {}),
      ...(context.setupInputs ? { setupInputs: context.setupInputs } : {}),
      symlinkDirectories: await symlinkDirectoriesOf(repo),
      runSetup: async (dir, command, signal) => {
        const sandbox = options.sandbox ? await setupCommandSandbox(dir, context.setupNetwork, options.env) : undefined;
        const role = { kind: 'setup-command' as const, task: -1, command };
        const run = await recorded(options.registry, role, (onSpawn) => runShell(command, { cwd: dir, timeoutMs: options.setupTimeoutMs, env: options.env, signal, onSpawn, ...(sandbox ? { sandbox } : {}) }));
        options.onSetup?.({ dir, command, exitCode: run.exitCode, timedOut: run.timedOut, durationMs: run.durationMs });
        return run;
      },
    });
    return ok(new Isolation(repo, planId, ref, tip, pool, options));
  }

  /** The integration tip: what new attempts start from. */
  get tip(): string {
    return this.current;
  }

  /** A worktree at the integration tip for an attempt of `task`, ready to work in; or why not. */
  async prepare(task: number, signal?: AbortSignal): Promise<Result<string, string>> {
    const acquired = await this.pool.acquire(this.current, signal);
    if (!acquired.ok) return err(describeProvisionFailure(acquired.error));
    this.slots.set(task, acquired.value);
    return ok(acquired.value.dir);
  }

  /** What provisioning put in `task`'s worktree (never the worker's change), and the commit the attempt started from. */
  workspaceOf(task: number): { kept: string[]; base: string } | null {
    const slot = this.slots.get(task);
    return slot === undefined ? null : { kept: slot.kept, base: slot.commit };
  }

  release(task: number): void {
    const slot = this.slots.get(task);
    if (slot === undefined) return;
    this.slots.delete(task);
    this.pool.release(slot);
  }

  /**
   * Integrate verified work onto the ref (one commit, trailers naming every task) and park work
   * awaiting approval on refs of its own. The integration commit, or null when nothing changed.
   */
  async record(plan: Plan, request: { tasks: readonly number[]; round: number; integrate: ReadonlyArray<{ task: number; work: CapturedWork }>; park: ReadonlyArray<{ task: number; work: CapturedWork }> }): Promise<Result<string | null, GitFailure>> {
    for (const parked of request.park) {
      const { message } = roundMessage(plan, request.round, [parked.task]);
      const made = await park(this.repo, this.planId, parked.task, parked.work, message);
      if (!made.ok) return made;
    }
    if (request.integrate.length === 0) return ok(null);
    return this.integrateWork(plan, request.round, request.integrate);
  }

  /** Commit `items` onto the integration tip. */
  async integrateWork(plan: Plan, round: number, items: ReadonlyArray<{ task: number; work: CapturedWork }>): Promise<Result<string | null, GitFailure>> {
    const tasks = items.map((item) => item.task);
    const { message, trailers } = roundMessage(plan, round, tasks);
    const integration: Integration = { tasks, message, trailers, works: items.map((item) => item.work) };
    const integrated = await integrate(this.repo, this.ref, this.current, integration);
    if (!integrated.ok) return err(integrationFailure(integrated.error));
    const changed = integrated.value !== this.current;
    this.current = integrated.value;
    return ok(changed ? integrated.value : null);
  }

  /** Land the integration tip on the person's branch (or, `worktree` mode, in their files only). */
  land(options: { branch: string | null; mode: LandMode; base?: string }): Promise<Result<Landed, LandingProblem>> {
    return land({ repo: this.repo, to: this.current, branch: options.branch, mode: options.mode, intentPath: landingIntentPath(this.options.planPath), ...(options.base ? { base: options.base } : {}) });
  }

  /** The integration tip moves on to HEAD when HEAD holds all of it (the person committed on top). */
  async followHead(): Promise<void> {
    const head = await runGit(['rev-parse', '--verify', 'HEAD^{commit}'], { cwd: this.repo });
    if (!head.ok) return;
    const commit = head.value.trim();
    if (commit === this.current) return;
    const ancestor = await runGit(['merge-base', '--is-ancestor', this.current, commit], { cwd: this.repo });
    if (!ancestor.ok) return;
    const moved = await runGit(['update-ref', '-m', 'foreman: follow the branch', this.ref, commit, this.current], { cwd: this.repo });
    if (moved.ok) this.current = commit;
  }

  /** Remove every worktree of the plan. */
  removeWorktrees(): Promise<void> {
    return this.pool.remove();
  }

  /** Remove the plan's refs (integration and parked work): only once everything on them has landed. */
  async removeRefs(): Promise<void> {
    for (const ref of await foremanRefs(this.repo, this.planId)) await deleteRef(this.repo, ref);
  }
}

/** A landing a crash cut short, completed (or left, with the problem) before anything else runs. */
export const completeLanding = (repo: string, planPath: string) => resumeLanding(repo, landingIntentPath(planPath));

function integrationFailure(failure: IntegrationFailure): GitFailure {
  switch (failure.kind) {
    case 'git-failed':
      return failure.failure;
    case 'moved':
      return { step: 'update-ref', exitCode: 1, stderr: `the integration ref moved while foreman was writing it (expected ${failure.expected ?? 'none'}, found ${failure.actual ?? 'none'}): another foreman run on the same plan?` };
    case 'conflict':
      return { step: 'integrate', exitCode: 1, stderr: `the integration tip changed ${failure.paths.join(', ')} after the attempt started` };
    default:
      return assertNever(failure, 'integration failure');
  }
}

