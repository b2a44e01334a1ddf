// How a run stops: Ctrl-C, the session that ended, a drain, the budget, the circuit breaker; and,
// once nothing runs and nothing can start, the words the run ends with (`finish`).

import { skippedEvents } from '../events.ts';
import { formatCost } from '../format.ts';
import { countByStatus, stall } from '../graph.ts';
import { UNKNOWN, statusOf } from '../plan.ts';
import type { Applied } from '../transition.ts';
import { IN_FLIGHT, tasksIn } from './attempt.ts';
import { type Work, emit, stopWith } from './draft.ts';

/** Tell every worker to stop; their attempts end as interrupted. */
export function abortWorkers(work: Work): void {
  if (work.draft.aborted) return;
  work.draft.aborted = true;
  work.effects.push({ type: 'abort-workers' });
}

export function interrupt(work: Work): void {
  // An interrupt outranks a drain in progress: the workers stop now.
  if (work.draft.stop?.reason === 'drained') work.draft.stop = null;
  stopWith(work, { reason: 'interrupted', message: 'interrupted' });
  abortWorkers(work);
}

/**
 * The session ended with the run under way: it ends now, whatever stopped it before; no task of it
 * changes. What its subagents still out cost is not known.
 */
export function sessionEnded(work: Work, lastStepAt: number | null): void {
  if (tasksIn(work, IN_FLIGHT).length > 0) work.draft.usage = UNKNOWN;
  const when = lastStepAt === null ? 'an unknown time' : new Date(lastStepAt).toISOString();
  work.draft.stop = {
    reason: 'interrupted',
    message: `the session ended before this run finished (its last step was at ${when}); a new \`plan setup\` started another`,
  };
  finish(work);
}

/** Start nothing new; let every attempt under way finish, and its work integrate. Once only. */
export function drain(work: Work): void {
  if (work.draft.stop !== null) return;
  const running = tasksIn(work, IN_FLIGHT);
  stopWith(work, {
    reason: 'drained',
    message:
      running.length === 0
        ? 'drained: nothing was running, and nothing new started'
        : `drained: ${running.length === 1 ? 'task' : 'tasks'} ${running.join(', ')} finished, and nothing new started`,
  });
  emit(work, { type: 'draining', running });
}

/** Nothing runs and nothing can start: say why the run ends. */
export function finish(work: Work): void {
  const draft = work.draft;
  const plan = draft.plan;
  // A drain (asked for, or a limit's wait too long) that ended with every task completed finished the plan.
  if ((draft.stop?.reason === 'drained' || draft.stop?.reason === 'limited') && countByStatus(plan).completed === plan.tasks.length) draft.stop = null;
  if (draft.stop === null) {
    const counts = countByStatus(plan);
    const stalled = stall(plan.tasks);
    if (stalled.kind === 'deadlock') {
      emit(work, { type: 'stalled', kind: 'deadlock', tasks: stalled.pending });
      stopWith(work, { reason: 'deadlock', message: `deadlock: tasks ${stalled.pending.join(', ')} are pending but none can become ready` });
    } else if (stalled.kind === 'awaiting_approval') {
      emit(work, { type: 'stalled', kind: 'awaiting_approval', tasks: stalled.gates });
      stopWith(work, {
        reason: 'awaiting_approval',
        message: `waiting for approval: ${stalled.gates.map((g) => `task ${g}`).join(', ')}`,
      });
    } else if (counts.completed === plan.tasks.length) {
      stopWith(work, { reason: 'all-done', message: `all ${plan.tasks.length} tasks completed` });
    } else if (counts.awaiting_approval > 0) {
      const gates = plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [`task ${i}`] : []));
      stopWith(work, { reason: 'awaiting_approval', message: `waiting for approval: ${gates.join(', ')}` });
    } else {
      stopWith(work, { reason: 'failures', message: `${counts.completed} of ${plan.tasks.length} tasks completed` });
    }
  }
  draft.finished = true;
  work.effects.push({ type: 'finish', stop: draft.stop!, usage: draft.usage });
}

/** Once the run's cost (cancelled speculation included) reaches `--max-cost-usd`, nothing new starts. */
export function checkBudget(work: Work): void {
  const draft = work.draft;
  const limit = draft.config.maxCostUsd;
  if (limit !== undefined && draft.usage !== UNKNOWN && draft.usage.costUsd >= limit && draft.stop === null) {
    emit(work, { type: 'budget-reached', costUsd: draft.usage.costUsd, limitUsd: limit });
    stopWith(work, { reason: 'budget', message: `the run's cost reached ${formatCost(draft.usage.costUsd)} (limit ${formatCost(limit)})` });
  }
}

export function reportCascade(work: Work, applied: Applied): void {
  const cascade = applied.cascade;
  if (!cascade) return;
  for (const event of skippedEvents(work.draft.plan.tasks, cascade.skips)) emit(work, event);
  if (cascade.breaker.trip) {
    emit(work, { type: 'breaker', pendingCount: cascade.breaker.pendingCount, wouldBeSkipped: cascade.breaker.wouldBeSkipped });
    stopWith(work, {
      reason: 'breaker',
      message: `circuit breaker: ${cascade.breaker.wouldBeSkipped} of ${cascade.breaker.pendingCount} pending tasks were skipped because of failures`,
    });
  }
}
