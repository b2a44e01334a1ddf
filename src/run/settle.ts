// Recording a finished attempt in the plan, with the one side effect some decisions need first:
// an attempt that is undone (retried, failed, interrupted) has its declared files put back as
// they are in HEAD. Only the task's own files: a task that overlaps it never runs beside it.
// Used by the headless engine and by `plan.ts finalize` (the /execute skill).

import type { Git } from '../adapters/git.ts';
import type { GitFailure } from '../core/git-text.ts';
import { type Result, ok } from '../core/failure.ts';
import type { Decision } from '../core/finalize.ts';
import { type Plan, type UsageFigure, writesOf } from '../core/plan.ts';
import { type Applied, applyDecision } from '../core/transition.ts';

/** Decisions that throw the attempt's work away. */
export const undoesAttempt = (d: Decision): boolean => d.kind === 'retry' || d.kind === 'failed' || d.kind === 'interrupted' || d.kind === 'abort-run';

/**
 * Restore the task's files when the decision undoes its attempt, then apply the decision.
 * Mutates `plan`. When the restore fails, the decision is not applied (the task stays in
 * progress, so the next run restores it again) and the git failure is returned.
 */
export async function settleAttempt(git: Git, plan: Plan, index: number, decision: Decision, usage?: UsageFigure): Promise<Result<Applied, GitFailure>> {
  if (undoesAttempt(decision)) {
    const restored = await git.restore(writesOf(plan.tasks[index]!));
    if (!restored.ok) return restored;
  }
  return ok(applyDecision(plan, index, decision, usage));
}
