// What the plan tool does with a plan's isolation between runs: land its integration ref now
// (`plan land`, and `plan approve` after integrating the approved work), remove its worktrees
// (`plan clean`), and say where they stand (`plan status`). A run's end does the same landing
// (src/run/lifecycle.ts); these share its pieces: the intent and landed-base files next to the plan,
// `land`/`resumeLanding`, and the refs of src/adapters/git/refs.ts.

import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  countCommits,
  deletePlanRefs,
  deleteRef,
  foremanRefs,
  headBranchRef,
  integrationRef,
  parkedPrefix,
  parkedTasks,
  readRef,
  resolveCommit,
  startIntegrationRef,
  topLevel,
} from '../adapters/git/refs.ts';
import { type IntegrationFailure, integrate, parkedWork } from '../adapters/git/integrate.ts';
import { type Landed, land } from '../adapters/git/land.ts';
import { ownLayout } from '../adapters/layout.ts';
import { readPlanFile } from '../adapters/plan-file.ts';
import { diskUsage, poolDir, removePlanWorktrees, worktreesRoot } from '../adapters/git/pool-slots.ts';
import { type Result, assertNever, err, ok } from '../core/failure.ts';
import { commandHint } from '../core/command-hint.ts';
import { type GitFailure, describeGitFailure } from '../core/git-text.ts';
import { type LandMode, type LandingProblem, describeLandingProblem } from '../core/landing.ts';
import { listIndices } from '../core/format.ts';
import { type Plan, statusOf } from '../core/plan.ts';
import type { CapturedWork } from '../core/work.ts';
import { parsePlan } from '../core/validate.ts';
import { roundMessage } from './commit.ts';
import { completeLanding, landedBase, landingIntentPath, recordLandedBase } from '../adapters/landing-files.ts';
import { endGateProcess } from './session/gate-process.ts';
import { retirePlan } from './lifecycle.ts';

/** The top of the git repository holding `planPath`'s directory (real path), or null when it is in none. */
export async function repositoryOf(planPath: string): Promise<string | null> {
  const dir = dirname(planPath);
  if ((await stat(dir).catch(() => null))?.isDirectory() !== true) return null;
  const top = await topLevel(dir);
  if (top === null) return null;
  return realpath(top).catch(() => null);
}

/**
 * Where a plan ran: its landing intent and landed base live next to this path. An archived plan
 * (`<dir>/history/<stamp>-plan.json`) ran as `<dir>/plan.json`.
 */
export const runPathOf = (planPath: string): string => (basename(dirname(planPath)) === 'history' ? join(dirname(dirname(planPath)), 'plan.json') : planPath);

/** Every task completed: what a run ends with before it archives the plan. */
export const planFinished = (plan: Plan): boolean => plan.tasks.length > 0 && plan.tasks.every((task) => statusOf(task) === 'completed');

/** How many commits `ref` holds that HEAD does not (all of its commits on an unborn branch), or null when git cannot say. */
export async function commitsNotOnHead(repo: string, ref: string): Promise<number | null> {
  return countCommits(repo, (await resolveCommit(repo)) !== null ? `HEAD..${ref}` : ref);
}

/** A plan whose integration ref can be landed. */
export interface LandTarget {
  /** The file the plan was read from (the live plan, or an archived one). */
  planPath: string;
  /** Where it ran (`runPathOf`). */
  runPath: string;
  plan: Plan;
  planId: string;
  ref: string;
  archived: boolean;
}

async function readValidPlan(file: string): Promise<Plan | null> {
  const read = await readPlanFile(file);
  if (!read.ok) return null;
  const parsed = parsePlan(read.value.text);
  return parsed.ok ? parsed.value : null;
}

const planIdOf = (plan: Plan): string | null => (typeof plan.planId === 'string' && plan.planId !== '' ? plan.planId : null);

/** The archived plans next to `runPath` (`<dir>/history/*-plan.json`), newest first. */
export async function archivedPlans(runPath: string): Promise<Array<{ path: string; plan: Plan }>> {
  const dir = join(dirname(runPath), 'history');
  const names = await readdir(dir).catch(() => [] as string[]);
  const found: Array<{ path: string; plan: Plan; ms: number }> = [];
  for (const name of names.filter((n) => n.endsWith('-plan.json'))) {
    const file = join(dir, name);
    const plan = await readValidPlan(file);
    if (plan === null) continue;
    found.push({ path: file, plan, ms: (await stat(file).catch(() => null))?.mtimeMs ?? 0 });
  }
  // The timestamp in the name first (`-2` suffixes of the same second by modification time).
  const stamp = (file: string) => basename(file).slice(0, 16);
  return found
    .sort((a, b) => (stamp(a.path) === stamp(b.path) ? b.ms - a.ms : stamp(a.path) < stamp(b.path) ? 1 : -1))
    .map(({ path, plan }) => ({ path, plan }));
}

export type TargetProblem =
  | { kind: 'no-plan'; planPath: string }
  | { kind: 'invalid-plan'; planPath: string }
  | { kind: 'no-plan-id'; planPath: string }
  | { kind: 'no-ref'; planPath: string; ref: string }
  /** git could not say whether the ref exists. */
  | { kind: 'git-failed'; ref: string; failure: GitFailure };

export function describeTargetProblem(problem: TargetProblem): string {
  switch (problem.kind) {
    case 'no-plan':
      return `no plan at ${problem.planPath} and no archived plan with integrated work to land`;
    case 'invalid-plan':
      return `${problem.planPath} is not a valid plan (\`${commandHint('plan', 'check', ownLayout())}\` says why)`;
    case 'no-plan-id':
      return `${problem.planPath} has no planId: it has never run, so nothing was integrated to land`;
    case 'no-ref':
      return `nothing to land: ${problem.ref} does not exist (the plan's work has landed and its ref was removed, or nothing was integrated yet)`;
    case 'git-failed':
      return `could not read ${problem.ref}: ${describeGitFailure(problem.failure)}`;
    default:
      return assertNever(problem, 'target problem');
  }
}

/**
 * The plan to land: the one at `planPath` when it has an integration ref; otherwise, unless the
 * person named the file (`explicit`), the newest archived plan whose ref is still there (a
 * finished plan whose landing was blocked).
 */
export async function findLandTarget(repo: string, planPath: string, explicit: boolean): Promise<Result<LandTarget, TargetProblem>> {
  const runPath = runPathOf(planPath);
  const archived = runPath !== planPath;
  const exists = (await stat(planPath).catch(() => null)) !== null;
  let problem: TargetProblem = { kind: 'no-plan', planPath };
  if (exists) {
    const plan = await readValidPlan(planPath);
    const planId = plan === null ? null : planIdOf(plan);
    if (plan === null) problem = { kind: 'invalid-plan', planPath };
    else if (planId === null) problem = { kind: 'no-plan-id', planPath };
    else {
      const ref = integrationRef(planId);
      const tip = await readRef(repo, ref);
      if (!tip.ok) return err({ kind: 'git-failed', ref, failure: tip.error });
      if (tip.value === null) problem = { kind: 'no-ref', planPath, ref };
      else return ok({ planPath, runPath, plan, planId, ref, archived });
    }
  }
  if (explicit || archived) return err(problem);
  for (const candidate of await archivedPlans(runPath)) {
    const planId = planIdOf(candidate.plan);
    if (planId === null) continue;
    const ref = integrationRef(planId);
    const tip = await readRef(repo, ref);
    if (!tip.ok) return err({ kind: 'git-failed', ref, failure: tip.error });
    if (tip.value !== null) return ok({ planPath: candidate.path, runPath, plan: candidate.plan, planId, ref, archived: true });
  }
  return err(problem);
}

export interface LandReport {
  /** A landing a crash cut short, completed first. */
  resumed: Landed | null;
  mode: LandMode;
  /** The branch landed on (`main`), or null for a detached HEAD. */
  branch: string | null;
  landed: Landed;
  /** The plan was finished: its refs were deleted and its worktrees removed. */
  cleanedUp: boolean;
  /** Where a finished live plan was archived, or null. */
  archivedTo: string | null;
  /** A finished plan that landed and could not be finished (git could not remove its refs): what to say; it stays. */
  unfinished: string | null;
}

export interface LandBlocked {
  problem: LandingProblem;
  /** `describeLandingProblem`'s lines: what blocks it, and how to land by hand. */
  lines: string[];
  resumed: Landed | null;
}

/**
 * Lands `target`'s integration tip on the current branch (commit mode) or in the person's files
 * (`worktree`, from what an earlier --no-commit landing left), as a run's end does; an interrupted
 * landing is completed first. A finished plan that landed loses its refs and worktrees, and a
 * live one is archived, as at the end of a run. The caller holds the plan lock.
 */
export async function landTarget(
  repo: string,
  target: LandTarget,
  options: { mode: LandMode; env: NodeJS.ProcessEnv },
): Promise<Result<LandReport, LandBlocked>> {
  const resumedLanding = await completeLanding(repo, target.runPath);
  if (resumedLanding !== null && !resumedLanding.ok)
    return err({ problem: resumedLanding.error, lines: describeLandingProblem(resumedLanding.error, target.ref, ownLayout()), resumed: null });
  const resumed = resumedLanding?.value ?? null;
  const found = await readRef(repo, target.ref);
  const tip = found.ok ? found.value : null;
  if (tip === null) {
    const failure = found.ok ? { step: 'rev-parse', exitCode: 1, stderr: `${target.ref} disappeared` } : found.error;
    const problem: LandingProblem = { kind: 'git-failed', failure };
    return err({ problem, lines: describeLandingProblem(problem, target.ref, ownLayout()), resumed });
  }
  const branch = await headBranchRef(repo);
  const base = options.mode === 'worktree' ? await landedBase(target.runPath, target.planId) : null;
  const landed = await land({ repo, to: tip, branch, mode: options.mode, intentPath: landingIntentPath(target.runPath), ...(base === null ? {} : { base }) });
  if (!landed.ok) return err({ problem: landed.error, lines: describeLandingProblem(landed.error, target.ref, ownLayout()), resumed });
  if (options.mode === 'worktree') await recordLandedBase(target.runPath, target.planId, landed.value.to);
  let cleanedUp = false;
  let archivedTo: string | null = null;
  let unfinished: string | null = null;
  if (planFinished(target.plan)) {
    // Nothing of this command wrote the plan: what it read is what it moves.
    await removePlanWorktrees(repo, worktreesRoot(options.env), target.planId);
    const retired = await retirePlan(
      target.plan,
      { removeRefs: () => deletePlanRefs(repo, target.planId) },
      // A gate process of a session on this plan goes too; an archived plan's is long gone (and the
      // one running now, if any, is another plan's).
      {
        planPath: target.planPath,
        save: async () => null,
        archived: target.archived,
        ...(target.archived ? {} : { endGate: () => endGateProcess(target.planPath) }),
      },
    );
    cleanedUp = retired.refsKept === undefined;
    archivedTo = retired.archived;
    if (retired.refsKept !== undefined) unfinished = retired.notice?.message ?? null;
  }
  return ok({ resumed, mode: options.mode, branch: branch?.replace(/^refs\/heads\//, '') ?? null, landed: landed.value, cleanedUp, archivedTo, unfinished });
}

/**
 * Integrates the work parked for `tasks` (approved) onto the plan's integration ref, made at HEAD
 * when it does not exist yet: one commit for all of them, so either all of it integrates or none
 * does. The commit (null when the work changed nothing) and the tasks whose work was parked, or
 * null when none of them has work parked. The parked refs are left for the caller to drop once the
 * plan records the commit.
 */
export async function integrateParked(
  repo: string,
  plan: Plan,
  tasks: readonly number[],
): Promise<Result<{ commit: string | null; tasks: number[] } | null, IntegrationFailure>> {
  const planId = planIdOf(plan);
  if (planId === null) return ok(null);
  const parked: Array<{ task: number; work: CapturedWork }> = [];
  for (const task of tasks) {
    const work = await parkedWork(repo, planId, task);
    if (!work.ok) return err({ kind: 'git-failed', failure: work.error });
    if (work.value !== null) parked.push({ task, work: work.value });
  }
  if (parked.length === 0) return ok(null);
  const ref = integrationRef(planId);
  const found = await readRef(repo, ref);
  if (!found.ok) return err({ kind: 'git-failed', failure: found.error });
  let tip = found.value;
  if (tip === null) {
    const started = await startIntegrationRef(repo, ref);
    if (!started.ok) {
      // Another process made the ref meanwhile, or HEAD has no commit.
      const actual = await readRef(repo, ref);
      if (!actual.ok) return err({ kind: 'git-failed', failure: actual.error });
      return err(actual.value !== null ? { kind: 'moved', expected: null, actual: actual.value } : { kind: 'git-failed', failure: started.error });
    }
    tip = started.value;
  }
  const integratedTasks = parked.map((p) => p.task);
  const { message, trailers } = roundMessage(plan, 0, integratedTasks);
  const integrated = await integrate(repo, ref, tip, { tasks: integratedTasks, message, trailers, works: parked.map((p) => p.work) });
  if (!integrated.ok) return integrated;
  return ok({ commit: integrated.value === tip ? null : integrated.value, tasks: integratedTasks });
}

/** One line for an integration of the approved work of `tasks` that failed. */
export function describeIntegrationFailure(failure: IntegrationFailure, tasks: readonly number[]): string {
  switch (failure.kind) {
    case 'conflict': {
      const layout = ownLayout();
      const numbers = tasks.join(' ');
      if (tasks.length === 1)
        return `task ${numbers}'s approved work changes ${failure.paths.join(', ')}, which integrated work changed after its attempt started: reject it (\`${commandHint('plan', `reject ${numbers} --reason …`, layout)}\`) and retry the task (\`${commandHint('plan', `retry ${numbers}`, layout)}\`)`;
      return `the approved work of tasks ${listIndices(tasks)} changes ${failure.paths.join(', ')}, which integrated work changed after their attempts started or more than one of them changes: approve them one at a time to find which, then reject it (\`${commandHint('plan', 'reject N --reason …', layout)}\`) and retry it (\`${commandHint('plan', 'retry N', layout)}\`)`;
    }
    case 'moved':
      return `the integration ref moved while foreman was writing it (expected ${failure.expected ?? 'none'}, found ${failure.actual ?? 'none'}): is another foreman process working on this plan?`;
    case 'git-failed':
      return describeGitFailure(failure.failure);
    default:
      return assertNever(failure, 'integration failure');
  }
}

/** The plan's worktrees and refs as they stand: for `plan status`. */
export interface IsolationStatus {
  worktrees: { count: number; bytes: number; dir: string };
  /** The integration ref, or null when it does not exist. */
  ref: { name: string; commit: string; notLanded: number | null } | null;
  /** Tasks whose work is parked awaiting approval. */
  parked: number[];
}

/**
 * Where `plan`'s worktrees and integration ref stand, or null when the plan never ran (no planId)
 * or is in no repository; or why git could not say.
 */
export async function isolationStatus(planPath: string, plan: Plan, env: NodeJS.ProcessEnv): Promise<Result<IsolationStatus | null, GitFailure>> {
  const planId = planIdOf(plan);
  if (planId === null) return ok(null);
  const repo = await repositoryOf(planPath);
  if (repo === null) return ok(null);
  const dir = poolDir(worktreesRoot(env), repo, planId);
  const count = await slotCount(dir);
  const bytes = count === 0 ? 0 : await diskUsage(dir);
  const name = integrationRef(planId);
  const commit = await readRef(repo, name);
  if (!commit.ok) return commit;
  const parked = await parkedTasks(repo, planId, 'awaiting');
  if (!parked.ok) return parked;
  const ref = commit.value === null ? null : { name, commit: commit.value, notLanded: await commitsNotOnHead(repo, name) };
  return ok({ worktrees: { count, bytes, dir }, ref, parked: parked.value });
}

/** What `plan clean` did for one plan. */
export interface CleanedPlan {
  planId: string;
  /** The plan file (live or archived). */
  planPath: string;
  archived: boolean;
  worktrees: number;
  bytes: number;
  dir: string;
  /** Refs deleted: an archived plan's, everything on them landed. */
  deletedRefs: string[];
  /** Refs kept because they hold work not on the branch: the integration ref (with how many commits, null when git cannot count them) or parked work awaiting approval. */
  keptRefs: Array<{ ref: string; kind: 'integration' | 'awaiting'; commits: number | null }>;
}

async function slotCount(dir: string): Promise<number> {
  const names = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return names.filter((entry) => entry.isDirectory() && /^slot-(0|[1-9][0-9]*)$/.test(entry.name)).length;
}

/** Removes one plan's pool; for an archived plan, also its refs once all their work is on HEAD. Or why git could not list or delete them. */
async function cleanOne(repo: string, root: string, planPath: string, planId: string, archived: boolean): Promise<Result<CleanedPlan, GitFailure>> {
  const dir = poolDir(root, repo, planId);
  const worktrees = await slotCount(dir);
  const bytes = await diskUsage(dir);
  await removePlanWorktrees(repo, root, planId);
  const deletedRefs: string[] = [];
  const keptRefs: CleanedPlan['keptRefs'] = [];
  const ref = integrationRef(planId);
  const aside = parkedPrefix('aside', planId);
  const refs = await foremanRefs(repo, planId);
  if (!refs.ok) return refs;
  for (const found of refs.value) {
    // Parked work is never on the branch: it waits for a decision. What attempts set aside waits
    // for nothing once the plan is archived.
    const commits = found === ref ? await commitsNotOnHead(repo, found) : null;
    if (((found === ref && commits === 0) || found.startsWith(aside)) && archived) {
      const deleted = await deleteRef(repo, found);
      if (!deleted.ok) return deleted;
      deletedRefs.push(found);
    } else if (!found.startsWith(aside) && (found !== ref || commits !== 0)) {
      keptRefs.push({ ref: found, kind: found === ref ? 'integration' : 'awaiting', commits });
    }
  }
  return ok({ planId, planPath, archived, worktrees, bytes, dir, deletedRefs, keptRefs });
}

/**
 * `plan clean`: removes the plan's worktrees and those of its archived plans (which never run
 * again), with the refs of archived plans whose work is all on the branch. A ref holding work not
 * on the branch, and parked work, are never deleted: they are reported. The caller holds the lock.
 */
export async function cleanPlans(repo: string, planPath: string, env: NodeJS.ProcessEnv): Promise<Result<CleanedPlan[], GitFailure>> {
  const root = worktreesRoot(env);
  const runPath = runPathOf(planPath);
  const cleaned: CleanedPlan[] = [];
  const live = await readValidPlan(runPath);
  const liveId = live === null ? null : planIdOf(live);
  if (live !== null && liveId !== null) {
    const one = await cleanOne(repo, root, runPath, liveId, false);
    if (!one.ok) return one;
    cleaned.push(one.value);
  }
  const seen = new Set(liveId === null ? [] : [liveId]);
  for (const archived of await archivedPlans(runPath)) {
    const planId = planIdOf(archived.plan);
    if (planId === null || seen.has(planId)) continue;
    seen.add(planId);
    const dir = poolDir(root, repo, planId);
    const hasPool = (await stat(dir).catch(() => null)) !== null;
    const refs = await foremanRefs(repo, planId);
    if (!refs.ok) return refs;
    if (!hasPool && refs.value.length === 0) continue;
    const one = await cleanOne(repo, root, archived.path, planId, true);
    if (!one.ok) return one;
    cleaned.push(one.value);
  }
  return ok(cleaned);
}
