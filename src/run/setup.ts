// Setting up a run (headless or the /execute skill's `plan.ts setup`): resume detection and
// reconciliation, cleanup of interrupted work, the dirty-tree guard, path safety and blocking
// assumptions. Mutates the plan it is given; the caller saves it.

import { lstat, realpath } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import type { Git, RepositoryOperation } from '../adapters/git.ts';
import { checkSandbox } from '../adapters/sandbox.ts';
import type { GitFailure } from '../core/git-text.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { Skip } from '../core/graph.ts';
import { cascade, depsOf, depths } from '../core/graph.ts';
import { applyCascade } from '../core/finalize.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import { type Result, err, ok } from '../core/failure.ts';
import { clipTail } from '../core/format.ts';
import { type Plan, readsOf, statusOf, writesInFlight, writesOf } from '../core/plan.ts';
import { type CommitOutcome, type VerifiedAttempt, ensurePlanId, reconcileWithHistory, recordVerified } from './commit.ts';
import { spotCheck } from './verify.ts';
import { sharedTree } from './workspace.ts';

export interface AssumptionResult {
  task: number;
  claim: string;
  verify: string;
  severity: 'blocking' | 'warning';
  passed: boolean;
  output: string;
}

export interface SetupReport {
  goal: string;
  taskCount: number;
  maxDepth: number;
  resumed: boolean;
  /** Tasks whose round commit landed though plan.json had not recorded it. */
  recovered: number[];
  /** Tasks found `in_progress` (interrupted): cleaned up and back to pending. */
  reset: number[];
  /** Completed tasks whose created files are gone: back to pending. */
  reverted: number[];
  /** Approved tasks whose work was committed now. */
  /** Verified work an earlier run left uncommitted, committed now. */
  committed: CommitOutcome;
  assumptions: AssumptionResult[];
  blocked: number[];
  skipped: Skip[];
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
  /** Paths dirty before anything ran (a person's unrelated work): never touched, never reported. */
  baselineDirty: string[];
}

export type SetupProblem =
  /** A person's uncommitted changes are in the way. */
  | { kind: 'dirty'; files: string[] }
  /** Declared paths that resolve outside the repository (or into .git) through a symlink, or name a directory as a file. */
  | { kind: 'unsafe-paths'; problems: string[] }
  /** Declared paths git ignores: foreman could neither verify nor commit them, and a restore would destroy them. */
  | { kind: 'ignored-paths'; paths: IgnoredPath[] }
  /** The repository is in the middle of a merge, rebase, cherry-pick, revert or bisect. */
  | { kind: 'repository-busy'; operation: RepositoryOperation }
  /** `repo` is a subdirectory of its repository: plan paths are relative to the top. */
  | { kind: 'not-top'; dir: string; top: string }
  /** A git step of the setup failed (nothing is left staged). */
  | { kind: 'git-failed'; doing: string; failure: GitFailure };

/** A declared path that git ignores, the task declaring it and the rule. */
export interface IgnoredPath {
  task: number;
  path: string;
  /** `source:line:pattern`, as `git check-ignore -v` names it. */
  rule: string;
}

export interface SetupOptions {
  repo: string;
  git: Git;
  commit: boolean;
  checkTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Where assumption checks are recorded while they run, so a run after a crash ends them. */
  registry?: ProcessRegistry;
  /** Attempts an earlier session verified, waiting to be recorded: recorded now, not reset. */
  verified?: readonly VerifiedAttempt[];
  /** Run assumption checks in the operating-system sandbox (writes: the repository and their own TMPDIR). */
  sandbox?: boolean;
}

/** Declared paths that lead outside the repository through a symlink somewhere along them. */
export async function unsafePaths(plan: Plan, repo: string): Promise<string[]> {
  const root = await realpath(repo);
  const problems: string[] = [];
  const seen = new Set<string>();
  const written = new Set(plan.tasks.flatMap((t) => writesOf(t)));
  for (const [i, task] of plan.tasks.entries()) {
    for (const p of [...writesOf(task), ...readsOf(task)]) {
      if (seen.has(p)) continue;
      seen.add(p);
      // Resolve the deepest part of the path that exists; it must stay inside the repository.
      let probe = join(repo, isDirPath(p) ? p.slice(0, -1) : p);
      for (;;) {
        const st = await lstat(probe).catch(() => null);
        if (st) break;
        const up = dirname(probe);
        if (up === probe) break;
        probe = up;
      }
      const real = await realpath(probe).catch(() => probe);
      const rel = relative(root, real);
      const lexical = relative(repo, probe);
      if (rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) {
        problems.push(`tasks[${i}]: "${p}" resolves outside the repository (through a symlink to ${real})`);
      } else if (rel === '.git' || rel.startsWith(`.git${sep}`)) {
        problems.push(`tasks[${i}]: "${p}" resolves into .git/ through a symlink`);
      } else if (!isDirPath(p) && probe === join(repo, p) && (await lstat(probe).catch(() => null))?.isDirectory()) {
        // A bare path names one file; git would read it as the whole directory.
        problems.push(`tasks[${i}]: "${p}" is a directory; declare it as "${p}/" to mean everything under it`);
      } else if (rel !== lexical && written.has(p)) {
        // A link inside the repository: git refuses paths beyond one, a worker would write
        // through it to a file no task declared, and a restore must not follow it.
        problems.push(`tasks[${i}]: "${p}" is or goes through a symlink (to ${rel || '.'}); declare the real path instead`);
      }
    }
  }
  return problems;
}

/**
 * Paths that tasks still to run (not completed) will write and that git ignores. A plan may not
 * declare them: an ignored file is never committed, so a failed attempt's restore could only
 * delete it, and it may well be the person's own (`.env`).
 */
export async function ignoredDeclaredPaths(plan: Plan, git: Git): Promise<IgnoredPath[]> {
  const owners = new Map<string, number>();
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) === 'completed') continue;
    for (const p of writesOf(task)) if (!owners.has(p)) owners.set(p, i);
  }
  if (owners.size === 0) return [];
  const ignored = await git.ignoredPaths([...owners.keys()]);
  return ignored.map(({ path, rule }) => ({ task: owners.get(path) ?? owners.get(`${path}/`) ?? -1, path: owners.has(path) ? path : `${path}/`, rule }));
}

/** One line per ignored path, for every command that refuses them. */
export const describeIgnored = (ignored: IgnoredPath): string =>
  `tasks[${ignored.task}]: "${ignored.path}" is ignored by git (${ignored.rule}): foreman can neither verify nor commit it, and restoring it would delete it; remove it from the plan or from the ignore rule`;

/** Why setup cannot work in `repo`: not the top of its repository, or busy with a merge or the like. */
export async function repositoryProblem(repo: string, git: Git): Promise<SetupProblem | null> {
  const top = await git.root();
  const [dirReal, topReal] = await Promise.all([realpath(repo), realpath(top)]);
  if (dirReal !== topReal) return { kind: 'not-top', dir: repo, top };
  const operation = await git.operationInProgress();
  return operation ? { kind: 'repository-busy', operation } : null;
}

export async function setupRun(plan: Plan, options: SetupOptions): Promise<Result<SetupReport, SetupProblem>> {
  // Everything that can refuse the run comes before anything that changes the repository.
  const busy = await repositoryProblem(options.repo, options.git);
  if (busy) return err(busy);
  const unsafe = await unsafePaths(plan, options.repo);
  if (unsafe.length > 0) return err({ kind: 'unsafe-paths', problems: unsafe });
  const ignored = await ignoredDeclaredPaths(plan, options.git);
  if (ignored.length > 0) return err({ kind: 'ignored-paths', paths: ignored });

  const resumed = plan.tasks.some((t) => statusOf(t) !== 'pending');
  const notices: SetupReport['notices'] = [];
  if ((await options.git.currentBranch()) === null) {
    const head = await options.git.headCommit();
    notices.push({
      level: 'warning',
      message: `HEAD is detached at ${head?.slice(0, 12) ?? '(no commit)'}: foreman's commits go on the detached HEAD, on no branch; to keep them, create a branch afterwards (git switch -c <name>)`,
    });
  }
  ensurePlanId(plan);

  const recovered = await reconcileWithHistory(options.git, plan);
  if (recovered.length > 0) {
    notices.push({ level: 'info', message: `tasks ${recovered.join(', ')}: their round commit had landed; recorded as completed` });
  }

  // Interrupted attempts: only the task's declared files are restored; nothing else is touched.
  const reset: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'in_progress' || options.verified?.some((attempt) => attempt.task === i)) continue;
    const restored = await options.git.restore(writesOf(task));
    if (!restored.ok) return err({ kind: 'git-failed', doing: `restore the files of task ${i}, which an earlier run left in progress`, failure: restored.error });
    task.status = 'pending';
    reset.push(i);
  }
  if (reset.length > 0) notices.push({ level: 'info', message: `tasks ${reset.join(', ')} were interrupted: their files were restored and they will run again` });

  const reverted: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'completed') continue;
    const { missingCreated } = await spotCheck({ ...task, metadata: { ...task.metadata, files: { create: task.metadata.files.create, modify: [] } } }, sharedTree(options.repo, options.git));
    if (missingCreated.length === 0) continue;
    task.status = 'pending';
    task.result = `was completed, but its created files are missing: ${missingCreated.join(', ')}`;
    delete task.commit;
    reverted.push(i);
    notices.push({ level: 'warning', message: `task ${i} (${task.subject}) was completed but ${missingCreated.join(', ')} no longer exist; it will run again` });
  }

  // Verified work not committed yet — what an earlier session verified, approved gated work, or
  // work whose commit failed or that a `--no-commit` run left — is committed before anything else runs.
  let committed: CommitOutcome = { commit: null, tasks: [] };
  if (options.commit) {
    const recorded = await recordVerified(options.git, plan, options.verified ?? [], 0);
    if (!recorded.ok) return err({ kind: 'git-failed', doing: `commit the verified work of tasks ${recorded.error.tasks.join(', ')}`, failure: recorded.error.failure });
    committed = recorded.value;
  }

  const problem = await dirtyFiles(plan, options.git);
  if (problem.length > 0) return err({ kind: 'dirty', files: problem });
  const baselineDirty = await options.git.diffNames();

  const assumptions = await checkAssumptions(plan, options);
  const blocked: number[] = [];
  for (const a of assumptions) {
    if (a.passed) continue;
    if (a.severity === 'warning') {
      notices.push({ level: 'warning', message: `task ${a.task}: assumption not confirmed (${a.claim}): \`${a.verify}\`` });
      continue;
    }
    const task = plan.tasks[a.task]!;
    if (statusOf(task) !== 'blocked') blocked.push(a.task);
    task.status = 'blocked';
    task.result = `BLOCKED: assumption failed (${a.claim}): \`${a.verify}\`${a.output.trim() ? `: ${clipTail(a.output.trim(), 1000)}` : ''}`;
  }
  const skipped = cascade(plan.tasks).length > 0 ? applyCascade(plan).skips : [];

  return ok({
    goal: plan.goal,
    taskCount: plan.tasks.length,
    maxDepth: Math.max(...depths(depsOf(plan.tasks))),
    resumed,
    recovered,
    reset,
    reverted,
    committed,
    assumptions,
    blocked,
    skipped,
    notices,
    baselineDirty,
  });
}

/**
 * Files the plan will still write that have uncommitted changes no task of this plan made.
 * Called after interrupted tasks were reset, so what remains legitimately dirty is work awaiting
 * approval and completed work of a `--no-commit` run.
 */
export async function dirtyFiles(plan: Plan, git: Git): Promise<string[]> {
  const ours = writesInFlight(plan, -1);
  const planned = plan.tasks.flatMap((t) => (statusOf(t) === 'pending' ? writesOf(t) : []));
  if (planned.length === 0) return [];
  const changed = await git.changedPaths([...new Set(planned)]);
  return [...changed.keys()].filter((p) => !coveredBy(p, ours)).sort();
}

async function checkAssumptions(plan: Plan, options: SetupOptions): Promise<AssumptionResult[]> {
  const results: AssumptionResult[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'pending') continue;
    for (const a of task.agent?.assumptions ?? []) {
      const role = { kind: 'assumption-check' as const, task: i, command: a.verify };
      const run = await recorded(options.registry, role, (onSpawn) => runShell(a.verify, { cwd: options.repo, timeoutMs: options.checkTimeoutMs, env: options.env, signal: options.signal, onSpawn, ...(options.sandbox ? { sandbox: checkSandbox(options.repo, plan) } : {}) }));
      results.push({ task: i, claim: a.claim, verify: a.verify, severity: a.severity, passed: run.exitCode === 0 && !run.timedOut, output: run.output });
    }
  }
  return results;
}
