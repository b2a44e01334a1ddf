// Review rounds in the step function (core/plan/review.ts: the round itself): where a task's next
// attempt starts — its parked work in a review round, or its own candidate work after the gate
// blamed it — and the journal's word when a decision ends a round.

import { type Applied, applyDecision, type CapturedWork, type Decision } from '../attempt/index.ts';
import { openReview, revisionStart, taskAt, type UsageFigure } from '../plan/index.ts';
import { emit, type StepDraft } from './draft.ts';
import type { AttemptStart } from './effects.ts';

/** Where task `task`'s next attempt starts when not at the integration tip, and what its start event says of it; taken once. */
export function takeStart(
  building: StepDraft,
  task: number,
): { from: AttemptStart; event: { review: { round: number; feedback: string } } | { fromCandidate: true } } | null {
  const draft = building.draft;
  const planned = taskAt(draft.plan.tasks, task);
  const candidate = draft.retryFrom?.get(task);
  if (candidate !== undefined) {
    const rest = new Map(draft.retryFrom);
    rest.delete(task);
    draft.retryFrom = rest;
  }
  const revision = revisionStart(planned);
  if (revision !== null) return { from: revision, event: { review: { round: planned.reviews!.length, feedback: openReview(planned)!.feedback } } };
  return candidate !== undefined ? { from: { work: candidate }, event: { fromCandidate: true } } : null;
}

/** A blamed candidate retried: its next attempt starts from `work`, its own (headless: a session's subagent starts from the branch). */
export function retryFromCandidate(building: StepDraft, task: number, work: CapturedWork): void {
  const draft = building.draft;
  if (draft.config.driver !== 'headless') return;
  draft.retryFrom = new Map(draft.retryFrom ?? []).set(task, work);
}

/** `applyDecision`, saying in the journal when it ended the task's review round. */
export function applyReviewed(building: StepDraft, task: number, decision: Decision, usage: UsageFigure): Applied {
  const plan = building.draft.plan;
  const open = openReview(taskAt(plan.tasks, task)) !== null;
  const applied = applyDecision(plan, task, decision, usage);
  const after = taskAt(plan.tasks, task);
  const review = after.reviews?.[after.reviews.length - 1];
  if (open && review !== undefined && review.outcome !== 'open')
    emit(building, {
      type: 'review-ended',
      task,
      subject: after.subject,
      round: after.reviews!.length,
      outcome: review.outcome,
      attempts: review.attempts ?? 0,
      ...(review.failure !== undefined ? { failure: review.failure } : {}),
    });
  return applied;
}
