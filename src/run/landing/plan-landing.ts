// What the plan tool does with a plan's integration ref between runs: find the plan to land and land
// its integration ref now (`plan land`, and `plan approve` after integrating the approved work,
// approved-work.ts). Removing its worktrees is plan-clean.ts, saying where they stand
// plan-worktrees-status.ts. A run's end does the same landing (src/run/lifecycle.ts); these share
// its pieces: the landing records next to the plan, `land`/`resumeLanding`, and the refs of
// src/adapters/git/refs.ts.

import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  completeLanding,
  countCommits,
  deletePlanRefs,
  headBranchRef,
  integrationRef,
  land,
  landedBase,
  landingIntentPath,
  ownLayout,
  readPlanFile,
  readRef,
  recordLandedBase,
  removePlanWorktrees,
  resolveCommit,
  topLevel,
  worktreesRoot,
} from '../../adapters/index.ts';
import {
  assertNever,
  commandHint,
  describeGitFailure,
  describeLandingProblem,
  err,
  type GitFailure,
  type Landed,
  type LandingProblem,
  type LandMode,
  ok,
  parsePlan,
  type Plan,
  type Result,
  statusOf,
} from '../../core/index.ts';
import { endGateProcess } from '../session/index.ts';
import { retirePlan } from '../lifecycle.ts';

/** The top of the git repository holding `planPath`'s directory (real path), or null when it is in none; or why git could not say. */
export async function repositoryOf(planPath: string): Promise<Result<string | null, GitFailure>> {
  const dir = dirname(planPath);
  if ((await stat(dir).catch(() => null))?.isDirectory() !== true) return ok(null);
  const top = await topLevel(dir);
  if (!top.ok || top.value === null) return top;
  return ok(await realpath(top.value).catch(() => null));
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

export async function readValidPlan(file: string): Promise<Plan | null> {
  const read = await readPlanFile(file);
  if (!read.ok) return null;
  const parsed = parsePlan(read.value.text);
  return parsed.ok ? parsed.value : null;
}

export const planIdOf = (plan: Plan): string | null => (typeof plan.planId === 'string' && plan.planId !== '' ? plan.planId : null);

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
