// Setting up a run (headless or the /execute skill's `plan.ts setup`): refusals (a busy
// repository, unsafe or ignored paths), the plan's isolation (integration ref, worktrees), a
// landing a crash cut short, resume detection, and what the run must know before it starts: work
// the integration ref holds, interrupted attempts, approved work (held on a candidate ref: the step
// function integrates it, after the gate when there is one), missing files and blocking assumptions
// (checked in a worktree of the integration tip). Task states are not changed here, nor the
// integration ref moved: the findings go to the step function (`set-up` event).

import { type Stats, lstatSync, realpathSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Commands } from '../adapters/commands.ts';
import type { Git, RepositoryOperation } from '../adapters/git/repository.ts';
import { dropParked, filesIn, integrationRef, parkedTasks } from '../adapters/git/refs.ts';
import { openReview } from '../core/review.ts';
import { parkedWork } from '../adapters/git/integrate.ts';
import { checkSandbox, ownSandboxNotice, sandboxRefusal } from '../adapters/sandbox.ts';
import type { RunEventBody } from '../core/events.ts';
import type { GitFailure } from '../core/git-text.ts';
import { depsOf, depths } from '../core/graph.ts';
import { type SetupFindings, commitAfter, noFindings, statusAfter } from '../core/transition.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import { type Result, err, ok } from '../core/failure.ts';
import { clipMiddle, clipTail } from '../core/format.ts';
import { describeTimeLimitHit } from '../core/time-limit.ts';
import { type Plan, type TaskStatus, readsOf, statusOf, writesOf } from '../core/plan.ts';
import { ownLayout } from '../adapters/layout.ts';
import { commandHint, shellWord } from '../core/command-hint.ts';
import { type PlanWarningKind, lintPlan, warningNotices } from '../core/plan-lint.ts';
import { ensurePlanId, integratedFindings, stackTrailer } from './commit.ts';
import { type Isolation, completeLanding } from './isolation.ts';
import { type HeldCandidate, admitHeld } from '../core/engine/admission.ts';
import { landingNotice } from './lifecycle.ts';
import { LIMIT_FLAGS } from './settings.ts';

export interface AssumptionResult {
  task: number;
  claim: string;
  verify: string;
  severity: 'blocking' | 'warning';
  passed: boolean;
  /** What it printed; when it ran out of time, after a first line saying so (`describeTimeLimitHit`). */
  output: string;
}

/** An assumption check as the journal tells it (the run's start says each, headless and in-session). */
export const assumptionCheckedEvent = (a: AssumptionResult): RunEventBody => ({
  type: 'assumption-checked',
  task: a.task,
  claim: a.claim,
  severity: a.severity,
  passed: a.passed,
  output: a.output,
});

export interface SetupReport {
  goal: string;
  taskCount: number;
  maxDepth: number;
  resumed: boolean;
  /** What the step function applies before the run starts (`set-up`): the lists below come from it. */
  findings: SetupFindings;
  /** Tasks whose integration commit landed though plan.json had not recorded it. */
  recovered: number[];
  /** Tasks found `in_progress` (interrupted): cleaned up and back to pending. */
  reset: number[];
  /** Completed tasks whose created files are gone: back to pending. */
  reverted: number[];
  assumptions: AssumptionResult[];
  blocked: number[];
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
  /** The plan's worktrees and integration ref. */
  isolation: Isolation;
  /**
   * Verified work an earlier run held for the merge queue, and approved work setup held now: it
   * rejoins the queue first (without a gate, it integrates at the step function's first record).
   */
  held: HeldCandidate[];
}

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

export interface SetupOptions {
  repo: string;
  planPath: string;
  git: Git;
  /** Opens the plan's isolation, once the plan is known to be safe to run. */
  openIsolation: () => Promise<Result<Isolation, GitFailure>>;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  /** Runs the assumption checks. */
  commands: Commands;
  /** Tasks an earlier session verified, waiting to be recorded: left in progress for the caller. */
  verified?: readonly number[];
  /** Run assumption checks in the operating-system sandbox (writes: the repository and their own TMPDIR). */
  sandbox?: boolean;
  /**
   * Writes the plan once setup gave it its id, after the refusals and before anything is made
   * under that id (a refused run leaves the plan file as it was); none when the caller wrote it.
   */
  savePlan?: (plan: Plan) => Promise<void>;
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
 * last commit, as for `planRepositoryProblem`.
 */
export async function refusalBeforeWork(
  plan: Plan,
  options: { repo: string; git: Git; look?: boolean },
  committed: ReadonlySet<string>,
): Promise<{ problem: SetupProblem | null; staleIndexLock: boolean }> {
  const refused = (problem: SetupProblem) => ({ problem, staleIndexLock: false });
  const busy = await repositoryProblem(options.repo, options.git);
  if (busy) return refused(busy);
  const indexLock = await options.git.clearStaleIndexLock(2000, options.look === true);
  if (!indexLock.ok) return refused({ kind: 'git-failed', doing: 'look for a stale .git/index.lock', failure: indexLock.error });
  if (indexLock.value === 'held') return refused({ kind: 'index-locked' });
  const problem = await planRepositoryProblem(plan, options.repo, options.git, committed);
  return { problem, staleIndexLock: problem === null && indexLock.value !== 'none' };
}

/** The notice of a stale index lock the run removed. */
export const STALE_INDEX_LOCK_NOTICE = 'removed a stale .git/index.lock left by a git process that was killed';

/**
 * The warning of uncommitted changes in the working tree (the plan's own folder and subagent
 * worktrees aside), which workers will not see: said as a run starts, and by its dry run.
 */
export async function uncommittedChangesNotice(repo: string, planPath: string, git: Git): Promise<Result<string | null, GitFailure>> {
  // The plan's own files (plan.json, its lock) and subagent worktrees of a session are not the person's edits.
  const planDir = relative(repo, dirname(planPath)).split(sep).join('/');
  const notTheirs = ['.claude/worktrees/', ...(planDir === '' || planDir.startsWith('..') ? [] : [`${planDir}/`])];
  const changed = await git.diffNames();
  if (!changed.ok) return changed;
  const dirty = changed.value.filter((p) => !coveredBy(p, notTheirs));
  if (dirty.length === 0) return ok(null);
  return ok(
    `you have ${dirty.length === 1 ? 'an uncommitted change' : `${dirty.length} uncommitted changes`} (${clipTail(dirty.join(', '), 200)}): workers start from the last commit and will not see ${dirty.length === 1 ? 'it' : 'them'}; foreman never touches ${dirty.length === 1 ? 'it' : 'them'}; if a task changes ${dirty.length === 1 ? 'that file' : 'one of those files'}, its work waits on the integration ref and nothing lands on your branch until you commit, stash or drop your change`,
  );
}

export async function setupRun(plan: Plan, options: SetupOptions): Promise<Result<SetupReport, SetupProblem>> {
  // Everything that can refuse the run comes before anything that changes the repository.
  // Listed once: the refusals and the lint both read the last commit's files.
  const committed = await options.git.committedFiles();
  const refusal = await refusalBeforeWork(plan, options, committed);
  if (refusal.problem !== null) return err(refusal.problem);

  const resumed = plan.tasks.some((t) => statusOf(t) !== 'pending');
  const notices: SetupReport['notices'] = [];
  if (refusal.staleIndexLock) notices.push({ level: 'warning', message: STALE_INDEX_LOCK_NOTICE });
  // The plan lint's warnings not fixed nor accepted, said once as the run starts (headless and in-session).
  for (const message of planWarningNotices(plan, options.planPath, committed)) notices.push({ level: 'warning', message });
  if ((await options.git.currentBranch()) === null) {
    const head = await options.git.headCommit();
    notices.push({
      level: 'warning',
      message: `HEAD is detached at ${head?.slice(0, 12) ?? '(no commit)'}: finished work lands on the detached HEAD, on no branch; to keep it, create a branch afterwards (git switch -c <name>)`,
    });
  }
  // The person's deny rules foreman's own sandboxed commands cannot hold are said once, here.
  const unheld = options.sandbox ? await ownSandboxNotice(options.repo) : null;
  if (unheld !== null) notices.push({ level: 'warning', message: unheld });
  // The plan's id names its refs and worktrees: written before anything is made under it, so a
  // run killed at once leaves nothing a later run (with the same id) cannot find and clean up.
  if (typeof plan.planId !== 'string' || plan.planId === '') {
    ensurePlanId(plan);
    await options.savePlan?.(plan);
  }
  const findings = noFindings();
  const statusNow = (index: number) => statusAfter(plan, index, findings);

  // A landing a crash cut short is finished before anything else looks at the person's branch.
  const resumedLanding = await completeLanding(options.repo, options.planPath);
  const resumedNotice =
    resumedLanding === null
      ? null
      : landingNotice(resumedLanding, { ref: integrationRef(plan.planId as string), layout: ownLayout(), where: null, resumed: true });
  if (resumedNotice !== null) notices.push({ level: resumedNotice.level, message: resumedNotice.message });

  const opened = await options.openIsolation();
  if (!opened.ok) return err({ kind: 'git-failed', doing: "set up the plan's integration ref", failure: opened.error });
  const isolation = opened.value;
  // Work the person committed on top of everything integrated becomes the new starting point.
  await isolation.followHead();

  const integrated = await integratedFindings(options.git, plan, [isolation.ref, 'HEAD']);
  if (!integrated.ok) return err({ kind: 'git-failed', doing: "read the integration ref's history", failure: integrated.error });
  Object.assign(findings, integrated.value);
  const recovered = findings.recovered.map((r) => r.task);
  if (recovered.length > 0) {
    notices.push({ level: 'info', message: `tasks ${recovered.join(', ')}: their work had been integrated; recorded as completed` });
  }

  // Approved work is held on a candidate ref, as verified work the merge queue waits for: the step
  // function integrates it (after the gate, when there is one), as all verified work.
  const approved = await holdApproved(plan, isolation, findings);
  if (!approved.ok) return err({ kind: 'git-failed', doing: 'hold approved work as a candidate', failure: approved.error });
  // Candidates held for the merge queue stay in progress: their verified work is on refs of their own.
  const heldEarlier = await isolation.heldCandidates(plan, (task) => statusNow(task) === 'in_progress');
  if (!heldEarlier.ok) return err({ kind: 'git-failed', doing: 'read the candidates an earlier run held for the gate', failure: heldEarlier.error });
  const heldNow = heldEarlier.value.map((candidate) => (findings.approved.includes(candidate.task) ? { ...candidate, approved: true as const } : candidate));
  const admitted = admitHeld(plan, heldNow, (task) => statusNow(task) === 'completed');
  const held = admitted.kept;
  for (const task of admitted.dropped) await dropParked(isolation.repo, isolation.planId, task, 'candidate');
  if (admitted.dropped.length > 0)
    notices.push({
      level: 'info',
      message: `tasks ${admitted.dropped.join(', ')}: their held work was built on candidates that are gone, or on a stack the merge queue cannot give it again; they run again`,
    });
  if (held.length > 0)
    notices.push({
      level: 'info',
      message: `tasks ${held.map((h) => h.task).join(', ')}: their verified work waits in the merge queue, as an earlier run left it`,
    });
  // Interrupted attempts: their work never left their worktrees, which are reset before reuse.
  const reset = plan.tasks.flatMap((_, i) => (statusNow(i) === 'in_progress' && !options.verified?.includes(i) && !held.some((h) => h.task === i) ? [i] : []));
  findings.interrupted.push(...reset);
  if (reset.length > 0) notices.push({ level: 'info', message: `tasks ${reset.join(', ')} were interrupted: they will run again` });

  const rejected = await dropRejected(plan, isolation, findings);
  if (!rejected.ok) return err({ kind: 'git-failed', doing: 'list the work parked for approval', failure: rejected.error });

  const reverted: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusNow(i) !== 'completed' || task.metadata.files.create.length === 0) continue;
    const missingCreated = await missingIn(options.repo, isolation.tip, task.metadata.files.create);
    if (missingCreated.length === 0) continue;
    findings.reverted.push({ task: i, missing: missingCreated });
    reverted.push(i);
    notices.push({
      level: 'warning',
      message: `task ${i} (${task.subject}) was completed but ${missingCreated.join(', ')} no longer exist; it will run again`,
    });
  }

  const uncommitted = await uncommittedChangesNotice(options.repo, options.planPath, options.git);
  if (!uncommitted.ok) return err({ kind: 'git-failed', doing: 'list your uncommitted changes', failure: uncommitted.error });
  if (uncommitted.value !== null) notices.push({ level: 'warning', message: uncommitted.value });

  const checked = await checkAssumptions(plan, options, isolation, statusNow);
  if (!checked.ok) return err({ kind: 'setup-failed', reason: checked.error });
  const assumptions = checked.value;
  const blocked: number[] = [];
  for (const a of assumptions) {
    if (a.passed) continue;
    if (a.severity === 'warning') {
      notices.push({ level: 'warning', message: `task ${a.task}: assumption not confirmed (${a.claim}): \`${a.verify}\`` });
      continue;
    }
    if (statusNow(a.task) !== 'blocked') blocked.push(a.task);
    // The middle goes: the first line may say it timed out, the end is where the error is.
    const result = `BLOCKED: assumption failed (${a.claim}): \`${a.verify}\`${a.output.trim() ? `: ${clipMiddle(a.output.trim(), 1000)}` : ''}`;
    const earlier = findings.blocked.find((b) => b.task === a.task);
    if (earlier) earlier.result = result;
    else findings.blocked.push({ task: a.task, result });
  }

  return ok({
    goal: plan.goal,
    taskCount: plan.tasks.length,
    maxDepth: Math.max(...depths(depsOf(plan.tasks))),
    resumed,
    findings,
    recovered,
    reset,
    reverted,
    assumptions,
    blocked,
    notices,
    isolation,
    held,
  });
}

/** Which of `paths` (files, or `dir/`) `commit` does not have. */
async function missingIn(repo: string, commit: string, paths: readonly string[]): Promise<string[]> {
  const present =
    (await filesIn(
      repo,
      commit,
      paths.map((p) => (isDirPath(p) ? p.slice(0, -1) : p)),
    )) ?? [];
  return paths.filter((p) => !present.some((file) => coveredBy(file, [p])));
}

/**
 * Approved tasks whose work is parked and not integrated yet become candidates: their work moves
 * to a candidate ref (before anything says so: a crash leaves it there, for the next setup to find
 * as held) and they are in progress again, with the result they reported, until the step function
 * integrates them (with a gate, once it passed them).
 */
async function holdApproved(plan: Plan, isolation: Isolation, findings: SetupFindings): Promise<Result<void, GitFailure>> {
  for (const i of plan.tasks.keys()) {
    if (statusAfter(plan, i, findings) !== 'completed' || commitAfter(plan, i, findings) !== undefined) continue;
    const work = await parkedWork(isolation.repo, isolation.planId, i);
    if (!work.ok) return work;
    if (work.value === null) continue;
    // Built on the tip, as its stack says: the next setup finds it held whatever the tip's history.
    const held = await isolation.park(i, work.value, `foreman: task ${i} approved, waiting to be integrated`, 'candidate', [stackTrailer([])]);
    if (!held.ok) return held;
    await dropParked(isolation.repo, isolation.planId, i);
    findings.approved.push(i);
  }
  return ok(undefined);
}

/**
 * Parked work of tasks neither awaiting approval nor approved (rejected, or put back since):
 * dropped, it never lands. A task in a review round keeps its parked work until the revision parks.
 */
async function dropRejected(plan: Plan, isolation: Isolation, findings: SetupFindings): Promise<Result<void, GitFailure>> {
  // One listing of the parked refs, not one lookup per task.
  const parked = await parkedTasks(isolation.repo, isolation.planId, 'awaiting');
  if (!parked.ok) return parked;
  for (const i of parked.value) {
    const status = i < plan.tasks.length ? statusAfter(plan, i, findings) : undefined;
    if (status === 'awaiting_approval' || (status === 'completed' && commitAfter(plan, i, findings) === undefined)) continue;
    if ((status === 'pending' || status === 'in_progress') && openReview(plan.tasks[i]!) !== null) continue;
    await dropParked(isolation.repo, isolation.planId, i);
  }
  return ok(undefined);
}

/** The pending tasks' assumption checks, run in one worktree of the integration tip (made ready like any other). */
async function checkAssumptions(
  plan: Plan,
  options: SetupOptions,
  isolation: Isolation,
  statusNow: (index: number) => TaskStatus,
): Promise<Result<AssumptionResult[], string>> {
  const checks = plan.tasks.flatMap((task, i) =>
    statusNow(i) === 'pending' ? (task.agent?.assumptions ?? []).map((assumption) => ({ task: i, assumption })) : [],
  );
  if (checks.length === 0) return ok([]);
  // Task number -1: no task's attempt, just the setup's own use of a worktree.
  const prepared = await isolation.prepare(-1, options.signal);
  if (!prepared.ok) return err(prepared.error);
  const dir = prepared.value;
  // Headless and in-session alike (`plan setup`), --check-timeout sets it.
  const timeLimit = { ms: options.checkTimeoutMs, flag: LIMIT_FLAGS.check };
  try {
    const results: AssumptionResult[] = [];
    for (const { task, assumption: a } of checks) {
      const sandbox = options.sandbox ? checkSandbox(dir, plan, isolation.repo) : undefined;
      const run = await options.commands.run(a.verify, {
        cwd: dir,
        timeoutMs: timeLimit.ms,
        role: { kind: 'assumption-check', task, command: a.verify },
        ...(options.signal ? { signal: options.signal } : {}),
        ...(sandbox ? { sandbox } : {}),
      });
      const passed = run.exitCode === 0 && !run.timedOut;
      const refusal = passed ? null : sandboxRefusal(run.output, sandbox, 'context.checkNetwork');
      // Said first, where the live view, the step's JSON and the task's result each keep it.
      const said = run.timedOut ? describeTimeLimitHit(a.verify, timeLimit) : refusal;
      const output = said === null ? run.output : `${said}${run.output.trim() ? `:\n${run.output}` : ''}`;
      results.push({ task, claim: a.claim, verify: a.verify, severity: a.severity, passed, output });
    }
    return ok(results);
  } finally {
    isolation.release(-1);
  }
}
