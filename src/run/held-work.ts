// Work an earlier run or session left waiting on refs of its own, as setup (run/setup.ts) finds
// it: approved work held as a candidate of the merge queue, candidates an earlier run held for the
// gate, and parked work nobody waits for any more (dropped).

import { dropParked, parkedTasks } from '../adapters/index.ts';
import {
  admitHeld,
  commitAfter,
  describeDrop,
  err,
  type GitFailure,
  type HeldCandidate,
  namedTasks,
  type Notice,
  ok,
  openReview,
  type Plan,
  type Result,
  type SetupFindings,
  statusAfter,
  taskAt,
  type TaskStatus,
} from '../core/index.ts';
import type { SetupProblem } from './refusals.ts';
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
    if ((status === 'pending' || status === 'in_progress') && openReview(taskAt(plan.tasks, i)) !== null) continue;
    await dropParked(integration.repo, integration.planId, i);
  }
  return ok(undefined);
}

/**
 * Verified work that waits for the merge queue, as setup finds it: approved tasks whose work is
 * parked and not integrated yet (`approvedTasks`) are held as candidates now (added to
 * `findings.approved`: the step function integrates them, after the gate when there is one, as
 * all verified work); candidates an earlier run held stay in progress, their verified work on refs
 * of their own, unless the queue cannot give them what they were built on, or they now wait for a
 * task they were not built on (dropped: they run again, and the notice says why). `statusNow`: a
 * task's status with what setup found so far. The candidates kept, and what to tell the person.
 */
export async function holdWaitingWork(
  plan: Plan,
  integration: Integration,
  findings: SetupFindings,
  approvedTasks: number[],
  statusNow: (index: number) => TaskStatus,
): Promise<Result<{ held: HeldCandidate[]; notices: Notice[] }, SetupProblem>> {
  const approved = await integration.holdApproved(approvedTasks);
  if (approved.ok) findings.approved.push(...approved.value);
  if (!approved.ok) return err({ kind: 'git-failed', doing: 'hold approved work as a candidate', failure: approved.error });
  const heldEarlier = await integration.heldCandidates(plan, (task) => statusNow(task) === 'in_progress');
  if (!heldEarlier.ok) return err({ kind: 'git-failed', doing: 'read the candidates an earlier run held for the gate', failure: heldEarlier.error });
  const heldNow = heldEarlier.value.map((candidate) => (findings.approved.includes(candidate.task) ? { ...candidate, approved: true as const } : candidate));
  const admitted = admitHeld(plan, heldNow, (task) => statusNow(task) === 'completed');
  const held = admitted.kept;
  const notices: Notice[] = [];
  for (const { task, why } of admitted.dropped) {
    await dropParked(integration.repo, integration.planId, task, 'candidate');
    notices.push({ level: 'info', message: `task ${task}: its held work ${describeDrop(why)}; it runs again` });
  }
  if (held.length > 0)
    notices.push({
      level: 'info',
      message: `${namedTasks(held.map((h) => h.task))}: ${held.length === 1 ? 'its' : 'their'} verified work waits in the merge queue, as an earlier run left it`,
    });
  return ok({ held, notices });
}
