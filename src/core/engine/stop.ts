// How a run stops: Ctrl-C, the session that ended, a drain, the budget, the circuit breaker; and,
// once nothing runs and nothing can start, the words the run ends with (`finish`).

import { skippedEvents } from '../report/index.ts';
import { formatCost, plural } from '../format.ts';
import { countByStatus, stall, statusOf, UNKNOWN } from '../plan/index.ts';
import type { Applied } from '../attempt/index.ts';
import { IN_FLIGHT, tasksIn } from './attempt.ts';
import { emit, type StepDraft, stopWith } from './draft.ts';

/** Tell every worker to stop; their attempts end as interrupted. */
export function abortWorkers(building: StepDraft): void {
  if (building.draft.aborted) return;
  building.draft.aborted = true;
  building.effects.push({ type: 'abort-workers' });
}

export function interrupt(building: StepDraft): void {
  // An interrupt outranks a drain in progress: the workers stop now.
  if (building.draft.stop?.reason === 'drained') building.draft.stop = null;
  stopWith(building, { reason: 'interrupted', message: 'interrupted' });
  abortWorkers(building);
}

/**
 * The session ended with the run under way: it ends now, whatever stopped it before; no task of it
 * changes. What its subagents still out cost is not known.
 */
export function sessionEnded(building: StepDraft, lastStepAt: number | null): void {
  if (tasksIn(building, IN_FLIGHT).length > 0) building.draft.usage = UNKNOWN;
  const when = lastStepAt === null ? 'an unknown time' : new Date(lastStepAt).toISOString();
  building.draft.stop = {
    reason: 'interrupted',
    message: `the session ended before this run finished (its last step was at ${when}); a new \`plan setup\` started another`,
  };
  finish(building);
}

/** Start nothing new; let every attempt under way finish, and its work integrate. Once only. */
export function drain(building: StepDraft): void {
  if (building.draft.stop !== null) return;
  const running = tasksIn(building, IN_FLIGHT);
  stopWith(building, {
    reason: 'drained',
    message:
      running.length === 0
        ? 'drained: nothing was running, and nothing new started'
        : `drained: ${running.length === 1 ? 'task' : 'tasks'} ${running.join(', ')} finished, and nothing new started`,
  });
  emit(building, { type: 'draining', running });
}

/** Nothing runs and nothing can start: say why the run ends. */
export function finish(building: StepDraft): void {
  const draft = building.draft;
  const plan = draft.plan;
  // A drain (asked for, or a limit's wait too long) that ended with every task completed finished the plan.
  const drained = ['drained', 'limited', 'api-unreachable', 'hosts-down'].includes(draft.stop?.reason ?? '');
  if (drained && countByStatus(plan).completed === plan.tasks.length) draft.stop = null;
  if (draft.stop === null) {
    const counts = countByStatus(plan);
    const stalled = stall(plan.tasks);
    if (stalled.kind === 'deadlock') {
      emit(building, { type: 'stalled', kind: 'deadlock', tasks: stalled.pending });
      stopWith(building, {
        reason: 'deadlock',
        message:
          stalled.pending.length === 1
            ? `deadlock: task ${stalled.pending[0]} is pending but cannot become ready`
            : `deadlock: tasks ${stalled.pending.join(', ')} are pending but none can become ready`,
      });
    } else if (stalled.kind === 'awaiting_approval') {
      emit(building, { type: 'stalled', kind: 'awaiting_approval', tasks: stalled.awaitingApproval });
      stopWith(building, {
        reason: 'awaiting_approval',
        message: `waiting for approval: ${stalled.awaitingApproval.map((g) => `task ${g}`).join(', ')}`,
      });
    } else if (counts.completed === plan.tasks.length) {
      stopWith(building, { reason: 'all-done', message: plan.tasks.length === 1 ? 'the one task completed' : `all ${plan.tasks.length} tasks completed` });
    } else if (counts.awaiting_approval > 0) {
      const awaitingApproval = plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [`task ${i}`] : []));
      stopWith(building, { reason: 'awaiting_approval', message: `waiting for approval: ${awaitingApproval.join(', ')}` });
    } else {
      stopWith(building, { reason: 'failures', message: `${counts.completed} of ${plural(plan.tasks.length, 'task')} completed` });
    }
  }
  draft.finished = true;
  building.effects.push({ type: 'finish', stop: draft.stop!, usage: draft.usage });
}

/** Once the run's cost (cancelled speculation included) reaches `--max-cost-usd`, nothing new starts. */
export function checkBudget(building: StepDraft): void {
  const draft = building.draft;
  const limit = draft.config.maxCostUsd;
  if (limit !== undefined && draft.usage !== UNKNOWN && draft.usage.costUsd >= limit && draft.stop === null) {
    emit(building, { type: 'budget-reached', costUsd: draft.usage.costUsd, limitUsd: limit });
    stopWith(building, { reason: 'budget', message: `the run's cost reached ${formatCost(draft.usage.costUsd)} (limit ${formatCost(limit)})` });
  }
}

export function reportCascade(building: StepDraft, applied: Applied): void {
  const cascade = applied.cascade;
  if (!cascade) return;
  for (const event of skippedEvents(building.draft.plan.tasks, cascade.skips)) emit(building, event);
  // Once tripped, the run is stopping: a later failure's skips are said, the breaker not again.
  if (cascade.breaker.trip && building.draft.stop?.reason !== 'breaker') {
    emit(building, { type: 'breaker', pendingCount: cascade.breaker.pendingCount, wouldBeSkipped: cascade.breaker.wouldBeSkipped });
    stopWith(building, {
      reason: 'breaker',
      message: `circuit breaker: ${cascade.breaker.wouldBeSkipped} of ${plural(cascade.breaker.pendingCount, 'pending task')} ${cascade.breaker.wouldBeSkipped === 1 ? 'was' : 'were'} skipped because of failures`,
    });
  }
}
