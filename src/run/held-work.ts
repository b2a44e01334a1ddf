// Work an earlier run or session left waiting on refs of its own, as setup (run/setup.ts) finds
// it: approved work held as a candidate of the merge queue, candidates an earlier run held for the
// gate, and parked work nobody waits for any more (dropped).

import { dropParked, parkedTasks } from '../adapters/git/refs.ts';
import { openReview } from '../core/review.ts';
import type { GitFailure } from '../core/git-text.ts';
import { type SetupFindings, commitAfter, statusAfter } from '../core/transition.ts';
import { type Result, ok } from '../core/failure.ts';
import type { Plan } from '../core/plan.ts';
import type { Integration } from './integration.ts';

/**
 * Parked work of tasks neither awaiting approval nor approved (rejected, or put back since):
 * dropped, it never lands. A task in a review round keeps its parked work until the revision parks.
 */
export async function dropRejected(plan: Plan, integration: Integration, findings: SetupFindings): Promise<Result<void, GitFailure>> {
  // One listing of the parked refs, not one lookup per task.
  const parked = await parkedTasks(integration.repo, integration.planId, 'awaiting');
  if (!parked.ok) return parked;
  for (const i of parked.value) {
    const status = i < plan.tasks.length ? statusAfter(plan, i, findings) : undefined;
    if (status === 'awaiting_approval' || (status === 'completed' && commitAfter(plan, i, findings) === undefined)) continue;
    if ((status === 'pending' || status === 'in_progress') && openReview(plan.tasks[i]!) !== null) continue;
    await dropParked(integration.repo, integration.planId, i);
  }
  return ok(undefined);
}
