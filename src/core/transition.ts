// Applying a finalizer decision to the plan: the one place task states change after a worker
// ran. Used by the headless engine and by `plan.ts finalize` (the /execute skill's path).

import { assertNever } from './failure.ts';
import { type CascadeOutcome, type Decision, applyCascade, trimCompleted } from './finalize.ts';
import { type Plan, type UsageFigure, addUsage, attemptsOf, emptyUsage } from './plan.ts';

export interface Applied {
  /** Did the decision count an attempt? */
  attemptCounted: boolean;
  /** Present when the decision ended the task in failure: what got skipped, and the breaker. */
  cascade?: CascadeOutcome;
}

/**
 * Mutates `plan`: its `tasks` array and `progress`, never a task object (a changed task is a new
 * object), so a copy of the array is enough to keep an earlier state intact. `usage` is what this
 * attempt cost, counted whatever the outcome (`unknown` makes the task's unknown).
 */
export function applyDecision(plan: Plan, index: number, decision: Decision, usage: UsageFigure = emptyUsage()): Applied {
  const task = { ...plan.tasks[index]! };
  plan.tasks[index] = task;
  task.usage = addUsage(task.usage ?? emptyUsage(), usage);
  const countAttempt = () => {
    task.attempts = attemptsOf(task) + 1;
  };
  switch (decision.kind) {
    case 'completed': {
      countAttempt();
      task.status = 'completed';
      task.result = decision.result;
      const done = plan.progress?.completedTasks ?? [];
      if (!done.includes(index)) plan.progress = { ...plan.progress, completedTasks: [...done, index] };
      plan.tasks[index] = trimCompleted(task);
      return { attemptCounted: true };
    }
    case 'awaiting_approval':
      countAttempt();
      task.status = 'awaiting_approval';
      task.result = decision.result;
      return { attemptCounted: true };
    case 'retry':
      countAttempt();
      task.status = 'pending';
      task.result = decision.failure;
      return { attemptCounted: true };
    case 'failed':
      countAttempt();
      task.status = 'failed';
      task.result = decision.failure;
      return { attemptCounted: true, cascade: applyCascade(plan) };
    case 'blocked':
      countAttempt();
      task.status = 'blocked';
      task.result = `BLOCKED: ${decision.reason}`;
      return { attemptCounted: true, cascade: applyCascade(plan) };
    case 'requeued':
    case 'interrupted':
    case 'abort-run':
      task.status = 'pending';
      return { attemptCounted: false };
    default:
      return assertNever(decision, 'decision');
  }
}

/** Mark a task as started (a new task object, as in `applyDecision`). */
export function markStarted(plan: Plan, index: number): void {
  plan.tasks[index] = { ...plan.tasks[index]!, status: 'in_progress' };
}
