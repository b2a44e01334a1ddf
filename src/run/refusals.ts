// What refuses a run before it changes anything, the same for a headless run, `plan setup`, the
// dry run, `plan check` and `plan probe`: a folder that is not the top, a merge or the like in
// progress, an index a live git holds, declared paths that are unsafe, contradict the last commit
// or are ignored; and the warnings a run's start says first (the plan lint's among them).

import { type Stats, lstatSync, realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { type Git, ownLayout, type RepositoryOperation } from '../adapters/index.ts';
import {
  commandHint,
  type GitFailure,
  isDirPath,
  lintPlan,
  type Notice,
  ok,
  type Plan,
  type PlanWarningKind,
  readsOf,
  type Result,
  shellWord,
  statusOf,
  warningNotices,
  writesOf,
} from '../core/index.ts';

export type SetupProblem =
  /** Declared paths that resolve outside the repository (or into .git) through a symlink, name a directory as a file, or lie under a file of the last commit. */
  | { kind: 'unsafe-paths'; problems: string[] }
  /** Declared paths git ignores: foreman could neither verify nor commit them, and a restore would destroy them. */
  | { kind: 'ignored-paths'; paths: IgnoredPath[] }
  /** The repository is in the middle of a merge, rebase, cherry-pick, revert or bisect. */
  | { kind: 'repository-busy'; operation: RepositoryOperation }
  /** `repo` is a subdirectory of its repository: plan paths are relative to the top. */
  | { kind: 'not-top'; dir: string; top: string }
  /** The repository has no commit yet: every worktree, check and landing starts from the last commit. */
  | { kind: 'no-commit'; repo: string }
  /** A live git process holds `.git/index.lock`: a commit or a landing would fail. */
  | { kind: 'index-locked' }
  /** A git step of the setup failed (nothing is left staged). */
  | { kind: 'git-failed'; doing: string; failure: GitFailure }
  /** The worktree for the assumption checks could not be made ready (the setup command failed). */
  | { kind: 'setup-failed'; reason: string };

/** A declared path that git ignores, the task declaring it and the rule. */
export interface IgnoredPath {
  task: number;
  path: string;
  /** `source:line:pattern`, as `git check-ignore -v` names it. */
  rule: string;
}

/** Declared paths that lead outside the repository through a symlink somewhere along them. */
export async function unsafePaths(plan: Plan, repo: string): Promise<string[]> {
  const root = await realpath(repo);
  // Synchronous and remembered: thousands of declared paths share their folders, and one awaited
  // lstat after another cost a large plan a second of waiting at every check and start.
  const stats = new Map<string, Stats | null>();
  const statOf = (path: string): Stats | null => {
    if (!stats.has(path)) stats.set(path, lstatOrNull(path));
    return stats.get(path) ?? null;
  };
  const reals = new Map<string, string>();
  const realOf = (path: string): string => {
    if (!reals.has(path)) reals.set(path, realpathOr(path));
    return reals.get(path) ?? path;
  };
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
        if (statOf(probe)) break;
        const up = dirname(probe);
        if (up === probe) break;
        probe = up;
      }
      const real = realOf(probe);
      const rel = relative(root, real);
      const lexical = relative(repo, probe);
      if (rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) {
        problems.push(`tasks[${i}]: "${p}" resolves outside the repository (through a symlink to ${real})`);
      } else if (rel === '.git' || rel.startsWith(`.git${sep}`)) {
        problems.push(`tasks[${i}]: "${p}" resolves into .git/ through a symlink`);
      } else if (!isDirPath(p) && probe === join(repo, p) && statOf(probe)?.isDirectory()) {
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

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** The real path of `path`, or `path` itself when it cannot be resolved. */
function realpathOr(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

/**
 * Declared paths of the tasks still to run that the last commit, where every worker starts,
 * contradicts: a bare path it holds as a directory, or a path under one of its files. `committed`:
 * the files of that commit (`Git.committedFiles`).
 */
export function committedContradictions(plan: Plan, committed: ReadonlySet<string>): string[] {
  const directories = new Set<string>();
  for (const file of committed) for (let cut = file.indexOf('/'); cut > 0; cut = file.indexOf('/', cut + 1)) directories.add(file.slice(0, cut));
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) === 'completed') continue;
    for (const p of [...writesOf(task), ...readsOf(task)]) {
      if (seen.has(p)) continue;
      seen.add(p);
      const key = isDirPath(p) ? p.slice(0, -1) : p;
      const file = [...key.matchAll(/\//g)].map((slash) => key.slice(0, slash.index)).find((above) => committed.has(above));
      if (file !== undefined) problems.push(`tasks[${i}]: "${p}" cannot exist: "${file}" is a file in the last commit`);
      else if (!isDirPath(p) && directories.has(p))
        problems.push(`tasks[${i}]: "${p}" is a directory in the last commit; declare it as "${p}/" to mean everything under it`);
      else if (isDirPath(p) && committed.has(key)) problems.push(`tasks[${i}]: "${p}" is a file in the last commit; declare it as "${key}"`);
    }
  }
  return problems;
}

/**
 * Paths that tasks still to run (not completed) will write and that git ignores. A plan may not
 * declare them: an ignored file is never committed, so a failed attempt's restore could only
 * delete it, and it may well be the person's own (`.env`).
 */
export async function ignoredDeclaredPaths(plan: Plan, git: Git): Promise<Result<IgnoredPath[], GitFailure>> {
  const owners = new Map<string, number>();
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) === 'completed') continue;
    for (const p of writesOf(task)) if (!owners.has(p)) owners.set(p, i);
  }
  if (owners.size === 0) return ok([]);
  const ignored = await git.ignoredPaths([...owners.keys()]);
  if (!ignored.ok) return ignored;
  return ok(
    ignored.value.map(({ path, rule }) => ({ task: owners.get(path) ?? owners.get(`${path}/`) ?? -1, path: owners.has(path) ? path : `${path}/`, rule })),
  );
}

/** The plan lint's warnings against the files of the repository's last commit (those of one kind, when given), as a run's start says them. */
export function planWarningNotices(plan: Plan, planPath: string, committed: ReadonlySet<string>, kind?: PlanWarningKind): string[] {
  const { warnings } = lintPlan(plan, committed);
  return warningNotices(
    warnings.filter((warning) => kind === undefined || warning.kind === kind),
    commandHint('plan', `check --plan ${shellWord(planPath)}`, ownLayout()),
  );
}

/** One line per ignored path, for every command that refuses them. */
export const describeIgnored = (ignored: IgnoredPath): string =>
  `tasks[${ignored.task}]: "${ignored.path}" is ignored by git (${ignored.rule}): foreman can neither verify nor commit it, and restoring it would delete it; remove it from the plan or from the ignore rule`;

/** Why setup cannot work in `repo`: not the top of its repository, or busy with a merge or the like. */
export async function repositoryProblem(repo: string, git: Git): Promise<SetupProblem | null> {
  const top = await git.root();
  if (!top.ok) return { kind: 'git-failed', doing: 'find the top of the repository', failure: top.error };
  const [dirReal, topReal] = await Promise.all([realpath(repo), realpath(top.value)]);
  if (dirReal !== topReal) return { kind: 'not-top', dir: repo, top: top.value };
  const operation = await git.operationInProgress();
  if (!operation.ok) return { kind: 'git-failed', doing: 'look for a merge, rebase or the like in progress', failure: operation.error };
  return operation.value ? { kind: 'repository-busy', operation: operation.value } : null;
}

/**
 * Why the plan cannot run on this repository as its last commit and its files stand: it has no
 * commit, or a declared path leads outside it, names a directory as a file (in the working tree
 * or in the last commit), lies under a file of the last commit, or is ignored. What
 * `plan check` refuses inside a repository; every run refuses it too (`refusalBeforeWork`).
 * `committed`: the files of the last commit (`Git.committedFiles`), which the caller's lint reads too.
 */
export async function planRepositoryProblem(plan: Plan, repo: string, git: Git, committed: ReadonlySet<string>): Promise<SetupProblem | null> {
  if ((await git.headCommit()) === null) return { kind: 'no-commit', repo };
  const unsafe = await unsafePaths(plan, repo);
  if (unsafe.length > 0) return { kind: 'unsafe-paths', problems: unsafe };
  const contradicted = committedContradictions(plan, committed);
  if (contradicted.length > 0) return { kind: 'unsafe-paths', problems: contradicted };
  const ignored = await ignoredDeclaredPaths(plan, git);
  if (!ignored.ok) return { kind: 'git-failed', doing: 'ask git which declared paths it ignores', failure: ignored.error };
  if (ignored.value.length > 0) return { kind: 'ignored-paths', paths: ignored.value };
  return null;
}

/**
 * Everything that refuses a run before it changes anything, in the order a run meets them: a
 * folder that is not the top, a merge or the like in progress, an index a live git holds, then
 * `planRepositoryProblem`. A headless run and `plan setup` ask it first (`setupRun`), `execute
 * --dry-run` asks the same with `look` (a stale index lock is left where it is: the run removes
 * it). `staleIndexLock`: the run removed one (or, looking, would). `committed`: the files of the
 * last commit, listed once for `planRepositoryProblem` and the caller (the plan lint reads them too).
 */
export async function refusalBeforeWork(
  plan: Plan,
  options: { repo: string; git: Git; look?: boolean },
): Promise<{ problem: SetupProblem | null; staleIndexLock: boolean; committed: ReadonlySet<string> }> {
  const committed = await options.git.committedFiles();
  const refused = (problem: SetupProblem) => ({ problem, staleIndexLock: false, committed });
  const busy = await repositoryProblem(options.repo, options.git);
  if (busy) return refused(busy);
  const indexLock = await options.git.clearStaleIndexLock(2000, options.look === true);
  if (!indexLock.ok) return refused({ kind: 'git-failed', doing: 'look for a stale .git/index.lock', failure: indexLock.error });
  if (indexLock.value === 'held') return refused({ kind: 'index-locked' });
  const problem = await planRepositoryProblem(plan, options.repo, options.git, committed);
  return { problem, staleIndexLock: problem === null && indexLock.value !== 'none', committed };
}

/** The notice of a stale index lock the run removed. */
export const STALE_INDEX_LOCK_NOTICE = 'removed a stale .git/index.lock left by a git process that was killed';

/**
 * The warnings a run's start says first, in this order: the stale index lock it removed, the plan
 * lint's warnings not fixed nor accepted (headless and in-session), the detached HEAD finished work
 * will land on (`detachedAt`; null on a branch), the person's deny rules foreman's own sandboxed
 * commands cannot hold (`unheldRules`; null when none, or unsandboxed).
 */
export function startWarnings(
  plan: Plan,
  planPath: string,
  found: { committed: ReadonlySet<string>; staleIndexLock: boolean; detachedAt: string | null; unheldRules: string | null },
): Notice[] {
  const notices: Notice[] = [];
  if (found.staleIndexLock) notices.push({ level: 'warning', message: STALE_INDEX_LOCK_NOTICE });
  for (const message of planWarningNotices(plan, planPath, found.committed)) notices.push({ level: 'warning', message });
  if (found.detachedAt !== null) {
    notices.push({
      level: 'warning',
      message: `HEAD is detached at ${found.detachedAt.slice(0, 12)}: finished work lands on the detached HEAD, on no branch; to keep it, create a branch afterwards (git switch -c <name>)`,
    });
  }
  if (found.unheldRules !== null) notices.push({ level: 'warning', message: found.unheldRules });
  return notices;
}
