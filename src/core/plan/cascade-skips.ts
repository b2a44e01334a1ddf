// The skips a failure (or a person's decision) leads to: the tasks that can no longer run, and
// whether so many would be skipped that the circuit breaker trips.

import { breaker, type BreakerDecision, cascade, type Skip } from './graph.ts';
import { type Plan, statusOf, taskAt } from './plan.ts';

export interface CascadeOutcome {
  skips: Skip[];
  breaker: BreakerDecision;
}

/** Skip what can no longer run, and decide whether the circuit breaker trips. Mutates `plan` (its `tasks` array). */
export function applyCascade(plan: Plan): CascadeOutcome {
  const pendingBefore = plan.tasks.filter((t) => statusOf(t) === 'pending').length;
  const skips = cascade(plan.tasks);
  for (const s of skips) {
    // A new task object (see `applyDecision`): an earlier copy of the plan keeps the old one.
    const task = { ...taskAt(plan.tasks, s.index) };
    plan.tasks[s.index] = task;
    const root = taskAt(plan.tasks, s.rootCause);
    task.status = 'skipped';
    task.skippedBy = s.rootCause;
    task.result = `skipped: depends on task ${s.rootCause} (${root.subject}), which ${statusOf(root) === 'skipped' ? 'was skipped' : `is ${statusOf(root)}`}${s.via !== s.rootCause ? ` (through task ${s.via})` : ''}`;
  }
  return { skips, breaker: breaker(plan.tasks.length, pendingBefore, skips.length) };
}
