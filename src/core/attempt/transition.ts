// The task state changes of a run, pure: a finalizer decision applied after a worker ran, a start,
// and what setting up the run found. Only the step function (core/engine/) calls them,
// headless and in-session alike; a static test keeps it so.

import { assertNever } from '../result.ts';
import { type Decision, trimCompleted } from './finalize.ts';
import {
  addUsage,
  applyCascade,
  attemptsOf,
  type CascadeOutcome,
  emptyUsage,
  openReview,
  type Plan,
  statusOf,
  type Task,
  taskAt,
  type TaskReview,
  type TaskSetAside,
  type TaskStatus,
  type UsageFigure,
} from '../plan/index.ts';
import { recheckable, withDeclared } from './widen.ts';

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
  const task = { ...taskAt(plan.tasks, index) };
  plan.tasks[index] = task;
  task.usage = addUsage(task.usage ?? emptyUsage(), usage);
  const countAttempt = () => {
    task.attempts = attemptsOf(task) + 1;
    delete task.retryAdvice;
  };
  switch (decision.kind) {
    case 'completed': {
      countAttempt();
      task.status = 'completed';
      task.result = decision.result;
      listCompleted(plan, index);
      plan.tasks[index] = trimCompleted(task);
      return { attemptCounted: true };
    }
    case 'awaiting_approval':
      countAttempt();
      task.status = 'awaiting_approval';
      task.result = decision.result;
      // A review round's revision awaits approval in place of the work it revised.
      plan.tasks[index] = endReview(task, 'parked');
      return { attemptCounted: true };
    case 'retry':
      countAttempt();
      task.status = 'pending';
      task.result = decision.failure;
      if (decision.advice !== undefined) task.retryAdvice = decision.advice;
      return { attemptCounted: true };
    case 'failed':
    case 'blocked':
      if (openReview(task) !== null) {
        // A review round that cannot go on: the earlier work awaits approval again, nothing is skipped.
        countAttempt();
        plan.tasks[index] = endReview(task, 'failed', decision.kind === 'failed' ? decision.failure : `BLOCKED: ${decision.reason}`);
        return { attemptCounted: true };
      }
      countAttempt();
      task.status = decision.kind;
      task.result = decision.kind === 'failed' ? decision.failure : `BLOCKED: ${decision.reason}`;
      return { attemptCounted: true, cascade: applyCascade(plan) };
    case 'interrupted':
      task.status = 'pending';
      if (decision.reason !== undefined) task.result = decision.reason;
      return { attemptCounted: false };
    case 'requeued':
    case 'abort-run':
      task.status = 'pending';
      return { attemptCounted: false };
    default:
      return assertNever(decision, 'decision');
  }
}

/**
 * Ends `task`'s open round (a new task object, as `applyDecision` makes): `parked`, its revision
 * awaits approval; `failed` (with why), the earlier work does, with its result. The attempts the
 * round took are the round's; the task's go back to what they were.
 */
function endReview(task: Task, outcome: 'parked' | 'failed', failure?: string): Task {
  const review = openReview(task);
  if (review === null) return task;
  const ended: TaskReview = { ...review, outcome, attempts: attemptsOf(task), ...(failure !== undefined ? { failure } : {}) };
  const next: Task = { ...task, status: 'awaiting_approval', attempts: review.attemptsBefore, reviews: [...task.reviews!.slice(0, -1), ended] };
  if (outcome === 'failed') {
    if (review.result !== undefined) next.result = review.result;
    else delete next.result;
    delete next.retryAdvice;
  }
  return next;
}

/**
 * Approved work integrated: the task is completed again with its commit's result. Its attempt was
 * counted when it awaited approval, and what it cost then, so neither counts again.
 */
export function applyApproved(plan: Plan, index: number, result: string): void {
  const task = { ...taskAt(plan.tasks, index), status: 'completed' as const, result };
  listCompleted(plan, index);
  plan.tasks[index] = trimCompleted(task);
}

/** `index` joins the plan's list of completed tasks (`progress.completedTasks`). */
function listCompleted(plan: Plan, index: number): void {
  const done = plan.progress?.completedTasks ?? [];
  if (!done.includes(index)) plan.progress = { ...plan.progress, completedTasks: [...done, index] };
}

/**
 * A cancelled speculation: the task is pending again with no attempt counted (`usage`, what it
 * cost, counts), and skipped at once when a task it depends on failed meanwhile.
 */
export function applyCancelled(plan: Plan, index: number, usage: UsageFigure): Applied {
  applyDecision(plan, index, { kind: 'interrupted' }, usage);
  return { attemptCounted: false, cascade: applyCascade(plan) };
}

/**
 * What an attempt did outside its task's declared files (a new task object, as in
 * `applyDecision`): `undeclared` joins the paths its earlier attempts changed or were refused
 * (`undeclaredWrites`), and `setAside` (when it set any aside) replaces the last record of it.
 */
export function recordUndeclared(plan: Plan, index: number, undeclared: readonly string[], setAside: TaskSetAside | null): void {
  if (undeclared.length === 0 && setAside === null) return;
  const task = { ...taskAt(plan.tasks, index) };
  if (undeclared.length > 0) task.undeclaredWrites = [...new Set([...(task.undeclaredWrites ?? []), ...undeclared])].sort();
  if (setAside !== null) task.setAside = setAside;
  plan.tasks[index] = task;
}

/** Mark a task as started (a new task object, as in `applyDecision`); a re-check of its set-aside work is done once. */
export function markStarted(plan: Plan, index: number): void {
  const { recheck: _recheck, ...task } = taskAt(plan.tasks, index);
  plan.tasks[index] = { ...task, status: 'in_progress' };
}

/**
 * `--widen`: `paths` (files the repository has) join the task's declared files to modify; when
 * that declares all its last attempt set aside, its next start re-checks that work first. Returns
 * whether it will.
 */
export function widenDeclared(plan: Plan, index: number, paths: readonly string[]): boolean {
  const widened = withDeclared(taskAt(plan.tasks, index), paths, 'modify');
  const recheck = recheckable(widened);
  plan.tasks[index] = recheck ? { ...widened, recheck: true } : widened;
  return recheck;
}

/**
 * What setting up a run found in the repository (run/setup.ts gathers it without touching the
 * plan); the step function applies it with its `set-up` event.
 */
export interface SetupFindings {
  /** Tasks an integration commit holds though plan.json had not recorded it: completed. */
  recovered: Array<{ task: number; commit: string; result: string }>;
  /** Completed tasks and the integration commit that holds them, where plan.json had none. */
  commits: Array<{ task: number; commit: string }>;
  /**
   * Approved tasks whose parked work setup held on a candidate ref: in progress again until the
   * step function records it (integrated at its first record, or, with a gate, once the gate passed it).
   */
  approved: number[];
  /** Tasks in progress whose attempt was cut short: pending again. */
  interrupted: number[];
  /** Completed tasks whose created files are gone from the integration tip: pending again. */
  reverted: Array<{ task: number; missing: string[] }>;
  /** Tasks a blocking assumption failed for, and why. */
  blocked: Array<{ task: number; result: string }>;
}

export const noFindings = (): SetupFindings => ({ recovered: [], commits: [], approved: [], interrupted: [], reverted: [], blocked: [] });

/** A task's status once `findings` are applied (what setup reads while it still gathers them). */
export function statusAfter(plan: Plan, index: number, findings: SetupFindings): TaskStatus {
  if (findings.blocked.some((b) => b.task === index)) return 'blocked';
  if (findings.interrupted.includes(index) || findings.reverted.some((r) => r.task === index)) return 'pending';
  if (findings.approved.includes(index)) return 'in_progress';
  if (findings.recovered.some((r) => r.task === index)) return 'completed';
  return statusOf(taskAt(plan.tasks, index));
}

/** A task's integration commit once `findings` are applied. */
export function commitAfter(plan: Plan, index: number, findings: SetupFindings): string | undefined {
  if (findings.reverted.some((r) => r.task === index)) return undefined;
  return findings.recovered.find((r) => r.task === index)?.commit ?? taskAt(plan.tasks, index).commit ?? findings.commits.find((c) => c.task === index)?.commit;
}

/** Apply what setup found, as `applyDecision` does (new task objects), then skip what can no longer run. Mutates `plan`. */
export function applySetupFindings(plan: Plan, findings: SetupFindings): CascadeOutcome {
  const touched = new Set([
    ...findings.recovered.map((r) => r.task),
    ...findings.commits.map((c) => c.task),
    ...findings.approved,
    ...findings.interrupted,
    ...findings.reverted.map((r) => r.task),
    ...findings.blocked.map((b) => b.task),
  ]);
  for (const index of [...touched].sort((a, b) => a - b)) {
    const before = taskAt(plan.tasks, index);
    const task = { ...before, status: statusAfter(plan, index, findings) };
    const commit = commitAfter(plan, index, findings);
    if (commit === undefined) delete task.commit;
    else task.commit = commit;
    const recovered = findings.recovered.find((r) => r.task === index);
    const reverted = findings.reverted.find((r) => r.task === index);
    const blocked = findings.blocked.find((b) => b.task === index);
    if (recovered) {
      // Its attempt ran and was integrated; only the record of it was lost.
      task.result = recovered.result;
      task.attempts = attemptsOf(before) + 1;
      listCompleted(plan, index);
      plan.tasks[index] = trimCompleted(task);
      continue;
    }
    const done = plan.progress?.completedTasks ?? [];
    if (findings.approved.includes(index) && done.includes(index)) plan.progress = { ...plan.progress, completedTasks: done.filter((i) => i !== index) };
    if (reverted) task.result = `was completed, but its created files are missing: ${reverted.missing.join(', ')}`;
    if (blocked) task.result = blocked.result;
    plan.tasks[index] = task;
  }
  return applyCascade(plan);
}
