// Workspaces on this machine: a slot of the plan's worktree pool (adapters/git/worktree-pool.ts),
// provisioned with the plan's setup command, or (`adopt`, in a session) the worktree Claude Code
// made for a subagent. Only this file knows a workspace's directory: the worker runs there with
// permission rules anchored at its real path, its work is captured there, its checks run there.

import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkSandbox,
  type Commands,
  describeProvisionFailure,
  logFailedChecks,
  openPool,
  regularFilesIn,
  sandboxRefusal,
  setupCommandSandbox,
  symlinkDirectoriesOf,
  withForemanLine,
  type WorktreePool,
  worktreesRoot,
  writeWorkerExcludes,
} from '../../adapters/index.ts';
import {
  type CapturedWork,
  err,
  excludesFileEnv,
  explicitPermissions,
  type GitFailure,
  ok,
  type Plan,
  type Result,
  taskAt,
  type TimeLimit,
  type Verification,
  workerLogPath,
  workerPermissions,
  type WorkerPermissions,
  type WorkerRun,
} from '../../core/index.ts';
import { LIMIT_FLAGS } from '../settings.ts';
import type { CheckRun, CheckUse, WorkerJob, Workers, Workspace, WorkspaceRequest, Workspaces } from './workspace.ts';
import { localWork, verifyTask, type WorkPlace } from './verify.ts';

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
  /** It failed, and its output shows the sandbox refused its network: what to tell the person (core/sandbox/sandbox-words.ts). */
  sandboxRefusal?: string;
}

/** The gate process's pool: its own, so it never takes a slot from the steps running beside it. */
export const gatePoolId = (planId: string): string => `${planId}-gate`;

/** How a run uses its workspaces: what it gives every one of them. */
export interface WorkspaceUse {
  /** Run the setup command, the checks and the workers in the operating-system sandbox. */
  sandbox: boolean;
  /** The setup command's time limit: --check-timeout's, or in the gate process (`role: 'gate'`) --gate-timeout's. */
  setupTimeoutMs: number;
  /** Told after each run of the setup command in a worktree (a new slot, or its setup inputs changed). */
  onSetup?: (run: WorktreeSetup) => void;
  /** The acceptance checks' time limit (--check-timeout). */
  checkTimeoutMs: number;
  /** A change outside a task's declared files fails its attempt (`--strict-scope`). */
  strictScope: boolean;
  /** Where the workers' logs are (the plan's folder): a failed check's whole output is added to its attempt's; null: not logged. */
  logDir: string | null;
  /** A worker's refused writes are marked as files the repository has or not, at the attempt's start (--widen adds only those it has). */
  markTracked: boolean;
  /** The gate process's pool (`gatePoolId`) and limit, apart from the steps running beside it. */
  role?: 'run' | 'gate';
}

/** What the local workspaces are opened with: the run's adapters and the repository. */
export interface LocalPlace {
  /** The repository's top (real path). */
  repo: string;
  planId: string;
  env: NodeJS.ProcessEnv;
  /** Runs the setup command and the checks. */
  commands: Commands;
  workers: Workers;
  /** Keeps an attempt's whole work (declared and undeclared) on a ref of foreman's when part of it is set aside (the integration's). */
  keepAside: (plan: Plan, task: number, work: CapturedWork) => Promise<Result<{ commit: string; ref: string }, GitFailure>>;
  /** Whether a commit is known to exist (the integration made it): a workspace made at it needs no git lookup. */
  knows: (commit: string) => boolean;
}

/** The plan's worktree pool, with the worktrees a crashed run left reused. */
export async function openLocalWorkspaces(plan: Plan, place: LocalPlace, use: WorkspaceUse): Promise<LocalWorkspaces> {
  const context = plan.context ?? {};
  const gateOnly = use.role === 'gate';
  // The gate process is given one limit, the gate's, and uses it for its worktree's setup too.
  const setupLimit: TimeLimit = { ms: use.setupTimeoutMs, flag: gateOnly ? LIMIT_FLAGS.gate : LIMIT_FLAGS.check };
  const pool = await openPool({
    repo: place.repo,
    planId: gateOnly ? gatePoolId(place.planId) : place.planId,
    root: worktreesRoot(place.env),
    ...(context.setupCommand ? { setupCommand: context.setupCommand } : {}),
    ...(context.setupInputs ? { setupInputs: context.setupInputs } : {}),
    symlinkDirectories: await symlinkDirectoriesOf(place.repo),
    knows: place.knows,
    runSetup: async (dir, command, signal) => {
      const sandbox = use.sandbox ? await setupCommandSandbox(dir, place.repo, context.setupNetwork, place.env) : undefined;
      const run = await place.commands.run(command, {
        cwd: dir,
        timeoutMs: setupLimit.ms,
        role: { kind: 'setup-command', task: -1, command },
        signal,
        ...(sandbox ? { sandbox } : {}),
      });
      const refusal = run.exitCode === 0 && !run.timedOut ? null : sandboxRefusal(run.output, sandbox, 'context.setupNetwork');
      use.onSetup?.({
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
  return new LocalWorkspaces(pool, plan, place, use);
}

export class LocalWorkspaces implements Workspaces {
  /** The workers' git commands leave out the sandbox's placeholder files: an excludes file beside the pool, written at the first worker. */
  private workerEnv: Promise<NodeJS.ProcessEnv> | null = null;

  constructor(
    readonly pool: WorktreePool,
    private readonly plan: Plan,
    readonly place: LocalPlace,
    private readonly use: WorkspaceUse,
  ) {}

  /** A worker's refused writes are marked as files the repository has or not (`WorkspaceUse.markTracked`). */
  get marksTracked(): boolean {
    return this.use.markTracked;
  }

  async make(request: WorkspaceRequest): Promise<Result<LocalWorkspace, string>> {
    const acquired = await this.pool.acquire(request.commit, request.signal);
    if (!acquired.ok) return err(describeProvisionFailure(acquired.error));
    const slot = acquired.value;
    return ok(new LocalWorkspace(this, slot.dir, request.base ?? slot.commit, slot.kept, () => this.pool.release(slot)));
  }

  /** A subagent's worktree (Claude Code made it; it removes it): `kept` is what its provisioning put there. */
  adopt(dir: string, base: string, kept: readonly string[]): LocalWorkspace {
    return new LocalWorkspace(this, dir, base, kept, () => {});
  }

  remove(): Promise<void> {
    return this.pool.remove();
  }

  /** The checks' sandbox in `dir`: writes there and in their own TMPDIR, the plan's check hosts. */
  checkSandbox(dir: string) {
    return this.use.sandbox ? checkSandbox(dir, this.plan, this.place.repo) : undefined;
  }

  async runWorker(dir: string, base: string, job: WorkerJob): Promise<WorkerRun> {
    const { plan, allowedTools, ...request } = job;
    // The CLI matches edit rules against real paths: a rule through a symlink matches nothing.
    const tools = permissionsFor(plan, job.taskIndex, allowedTools ? dir : await realpath(dir), allowedTools);
    this.workerEnv ??= writeWorkerExcludes(this.place.repo, join(this.pool.dir, 'git-excludes'), this.place.env).then((excludes) => ({
      ...this.place.env,
      ...excludesFileEnv(this.place.env, excludes),
    }));
    const run = await this.place.workers.run({
      ...request,
      cwd: dir,
      allowedTools: tools.allow,
      deniedTools: tools.deny,
      env: await this.workerEnv,
      rulesOf: this.place.repo,
      ...(this.use.sandbox ? { sandbox: { allowedDomains: plan.context?.checkNetwork ?? [] } } : {}),
    });
    return this.use.markTracked ? withTrackedDenials(run, dir, base) : run;
  }

  verify(dir: string, base: string, kept: readonly string[], plan: Plan, task: number, signal?: AbortSignal): Promise<Verification> {
    return this.verifyWork(localWork(dir), (command, use) => this.runCheck(dir, command, use), { base, kept, plan, task, ...(signal ? { signal } : {}) });
  }

  /** Verifies an attempt's work where `work` is (here, or a host's slot), its checks run by `runCheck` there: the run's settings, its log and its ref for what was set aside are here. */
  async verifyWork(
    work: WorkPlace,
    runCheck: (command: string, use: CheckUse) => Promise<CheckRun>,
    attempt: { base: string; kept: readonly string[]; plan: Plan; task: number; signal?: AbortSignal },
  ): Promise<Verification> {
    const { base, kept, plan, task, signal } = attempt;
    const verification = await verifyTask(taskAt(plan.tasks, task), {
      work,
      kept,
      base,
      checkTimeoutMs: this.use.checkTimeoutMs,
      ...(signal ? { signal } : {}),
      runCheck,
      task,
      ...(this.use.strictScope ? { strictScope: true } : {}),
      keepAside: (work) => this.place.keepAside(plan, task, work),
    });
    // The reason keeps the end of a failed check's output; the worker's log gets all of it.
    if (verification.ok && this.use.logDir !== null) await logFailedChecks(workerLogPath(this.use.logDir, task), verification.value.acceptance);
    return verification;
  }

  async runCheck(dir: string, command: string, use: CheckUse): Promise<CheckRun> {
    const sandbox = this.checkSandbox(dir);
    const run = await this.place.commands.run(command, {
      cwd: dir,
      timeoutMs: use.timeoutMs,
      role: use.role,
      ...(use.signal ? { signal: use.signal } : {}),
      ...(sandbox ? { sandbox } : {}),
    });
    const passed = run.exitCode === 0 && !run.timedOut;
    // The checks (and the gate) run in the checks' sandbox: `context.checkNetwork` allows their hosts.
    return { ...run, sandboxRefusal: passed ? null : sandboxRefusal(run.output, sandbox, 'context.checkNetwork') };
  }
}

/** A local workspace: a worktree, the commit its attempt started from, and what provisioning put there (never the worker's change). */
export class LocalWorkspace implements Workspace {
  constructor(
    private readonly workspaces: LocalWorkspaces,
    readonly dir: string,
    readonly base: string,
    readonly kept: readonly string[],
    readonly release: () => void,
  ) {}

  runWorker(job: WorkerJob): Promise<WorkerRun> {
    return this.workspaces.runWorker(this.dir, this.base, job);
  }

  verify(plan: Plan, task: number, signal?: AbortSignal): Promise<Verification> {
    return this.workspaces.verify(this.dir, this.base, this.kept, plan, task, signal);
  }

  runCheck(command: string, use: CheckUse): Promise<CheckRun> {
    return this.workspaces.runCheck(this.dir, command, use);
  }
}

/**
 * A worker's permission rules: the explicit `--allowed-tools` list when given, else read anywhere,
 * edit exactly the task's declared files, run exactly the commands it is judged by.
 * `root` is the workspace's real path (rules are anchored there).
 */
export function permissionsFor(plan: Plan, index: number, root: string, allowedTools: string[] | undefined): WorkerPermissions {
  if (allowedTools) return explicitPermissions(allowedTools);
  const permissions = workerPermissions(plan, index, root);
  // Plan validation and execute's setup refuse what no rule can express, so this is a bug.
  if (!permissions.ok) throw new Error(`no exact permission rules for ${permissions.error.join('; ')}`);
  return permissions.value;
}

/** `run` with each refused write marked as a file the repository has at `base` (or not). */
export async function withTrackedDenials(run: WorkerRun, dir: string, base: string): Promise<WorkerRun> {
  const paths = run.permissionDenials.flatMap((denial) => (denial.path !== undefined ? [denial.path] : []));
  if (paths.length === 0) return run;
  const tracked = (await regularFilesIn(dir, base, paths)) ?? new Set<string>();
  return {
    ...run,
    permissionDenials: run.permissionDenials.map((denial) => (denial.path === undefined ? denial : { ...denial, tracked: tracked.has(denial.path) })),
  };
}
