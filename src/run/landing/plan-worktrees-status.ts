// What `plan status` says of a plan's worktrees and refs: how many worktrees, their disk use and
// folder, the integrated commits not on your branch yet, and the work parked awaiting approval.

import { diskUsage, integrationRef, parkedTasks, poolDir, readRef, worktreesRoot } from '../../adapters/index.ts';
import { type GitFailure, ok, type Plan, type Result } from '../../core/index.ts';
import { slotCount } from './plan-clean.ts';
import { commitsNotOnHead, planIdOf, repositoryOf } from './plan-landing.ts';

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
  const found = await repositoryOf(planPath);
  if (!found.ok || found.value === null) return found.ok ? ok(null) : found;
  const repo = found.value;
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
