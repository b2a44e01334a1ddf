// How an attempt's end is told in the journal: its `task-finished` event, the outcome its decision
// is called there and why it did not complete, in words.

import type { RunEventBody, TaskOutcome } from '../report/index.ts';
import { assertNever } from '../result.ts';
import { type Decision, describeWorkerFailure, type WorkerRun } from '../attempt/index.ts';
import { taskAt, UNKNOWN } from '../plan/index.ts';
import type { Attempt } from './attempt.ts';
import { spentBy, type StepDraft } from './draft.ts';

/** What a decision is called in the journal's `task-finished` events. */
export function outcomeOf(decision: Decision): TaskOutcome {
  switch (decision.kind) {
    case 'completed':
    case 'awaiting_approval':
    case 'retry':
    case 'failed':
    case 'blocked':
    case 'requeued':
    case 'interrupted':
      return decision.kind;
    case 'abort-run':
      return 'interrupted';
    default:
      return assertNever(decision, 'decision');
  }
}

/** Why the attempt did not complete, in words (undefined when it did). */
export function reasonOf(decision: Decision): string | undefined {
  switch (decision.kind) {
    case 'completed':
    case 'awaiting_approval':
      return undefined;
    case 'retry':
    case 'failed':
      return decision.failure;
    case 'blocked':
    case 'requeued':
      return decision.reason;
    case 'interrupted':
      return 'interrupted';
    case 'abort-run':
      return describeWorkerFailure(decision.failure);
    default:
      return assertNever(decision, 'decision');
  }
}

/**
 * The `task-finished` event of an attempt whose workers did `run` in this run (none: an earlier
 * run's worker, whose time and cost were told then), but for its outcome and words.
 */
export function finishedEvent(building: StepDraft, attempt: Attempt, run: WorkerRun | null): Omit<Extract<RunEventBody, { type: 'task-finished' }>, 'outcome'> {
  return {
    type: 'task-finished',
    task: attempt.task,
    subject: taskAt(building.draft.plan.tasks, attempt.task).subject,
    attempt: attempt.number,
    durationMs: run?.durationMs ?? 0,
    usage: spentBy(run),
    ...(run?.sessionId !== undefined ? { sessionId: run.sessionId } : {}),
    logPath: run?.logPath ?? '',
    permissionDenials: run === null ? 0 : run.unmeasured ? UNKNOWN : run.permissionDenials.length,
  };
}
