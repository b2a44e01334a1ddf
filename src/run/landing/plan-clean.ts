// `plan clean`: remove the worktrees and refs of plans that no longer need them (finished, archived,
// or gone), never what a live run holds or what has not landed.

import { readdir, stat } from 'node:fs/promises';
import { deleteRef, diskUsage, foremanRefs, integrationRef, parkedPrefix, poolDir, removePlanWorktrees, worktreesRoot } from '../../adapters/index.ts';
import { type GitFailure, ok, type Result } from '../../core/index.ts';
import { archivedPlans, commitsNotOnHead, planIdOf, readValidPlan, runPathOf } from './plan-landing.ts';

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

export async function slotCount(dir: string): Promise<number> {
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

/** The ids of the plan at `planPath` and of its archived plans: the plans `plan clean` cleans. */
export async function planIdsToClean(planPath: string): Promise<string[]> {
  const runPath = runPathOf(planPath);
  const live = await readValidPlan(runPath);
  const plans = [...(live === null ? [] : [live]), ...(await archivedPlans(runPath)).map((archived) => archived.plan)];
  return [...new Set(plans.flatMap((plan) => planIdOf(plan) ?? []))];
}
