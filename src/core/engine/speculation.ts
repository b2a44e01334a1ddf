// Speculation (`--speculate N`: headless, continuous, with a gate): a task starts on its blockers'
// candidates in the merge queue before they integrate, its worktree built on that stack. When a
// candidate leaves the queue without integrating, every attempt built on it is cancelled.

import { assertNever } from '../result.ts';
import { applyCancelled, type CapturedWork, type WorkerRun } from '../attempt/index.ts';
import { queueOrder, withdraw } from './gate.ts';
import { pathsIntersect, statusOf, taskAt, writesOf } from '../plan/index.ts';
import type { Attempt, GatingAttempt, QueuedAttempt } from './attempt.ts';
import { emit, runOf, spentBy, type StepDraft } from './draft.ts';
import type { EngineState } from './state.ts';
import { checkBudget, reportCascade } from './stop.ts';
import { finishedEvent } from './task-finished.ts';

/** A candidate in the merge queue: what a task may be built on speculatively. */
const inQueue = (attempt: Attempt | undefined): attempt is QueuedAttempt | GatingAttempt => attempt?.stage === 'queued' || attempt?.stage === 'gating';

/**
 * What a pending task would be built on if it started now speculatively, or null when it may not:
 * every blocker integrated or a candidate in the merge queue (one at least), the stack being the
 * integration tip plus every candidate queued ahead of its last blocker, in queue order — exactly
 * what will be beneath its own candidate when the gate tests it. Not deeper than `speculate`
 * levels, and writing none of the stack's files (the gate stacks their works one on another).
 * A task that needs approval never starts speculatively: it waits for its blockers to integrate.
 */
export function speculativeStack(
  state: Pick<EngineState, 'config' | 'plan' | 'attempts' | 'gate'>,
  task: number,
): { stack: number[]; works: Array<{ task: number; work: CapturedWork }>; level: number } | null {
  const config = state.config;
  if (config.speculate <= 0 || config.gate === null || config.driver !== 'headless' || config.schedule !== 'continuous') return null;
  const tasks = state.plan.tasks;
  const planned = taskAt(tasks, task);
  // Work that waits for approval is parked, out of every live attempt: a candidate of its stack
  // blamed later could not reach it, and once approved it would integrate on a stack that failed.
  if (statusOf(planned) !== 'pending' || planned.gate === 'human-approval') return null;
  // Candidates the gate passed are being integrated: until the tip holds them, a worktree made
  // now would stand on the tip without them, and its candidate would be gated with them beneath.
  if ([...state.attempts.values()].some(integrating)) return null;
  const order = queueOrder(state.gate);
  let last = -1;
  for (const blocker of planned.blockedBy) {
    if (statusOf(taskAt(tasks, blocker)) === 'completed') continue;
    const at = order.indexOf(blocker);
    if (!inQueue(state.attempts.get(blocker)) || at < 0) return null;
    last = Math.max(last, at);
  }
  if (last < 0) return null;
  const stack = order.slice(0, last + 1);
  const level = 1 + Math.max(0, ...stack.map((candidate) => levelOf(state, candidate)));
  if (level > config.speculate) return null;
  const writes = writesOf(planned);
  if (stack.some((candidate) => writesOf(taskAt(tasks, candidate)).some((path) => writes.some((own) => pathsIntersect(path, own))))) return null;
  // The works its worktree is made of, in order: the queue holds candidates only, each with its work.
  const works: Array<{ task: number; work: CapturedWork }> = [];
  for (const candidate of stack) {
    const ahead = state.attempts.get(candidate);
    if (!inQueue(ahead)) return null;
    works.push({ task: candidate, work: ahead.work });
  }
  return { stack, works, level };
}

/** A candidate the gate passed, in the lane being integrated: the integration tip is about to move. */
const integrating = (attempt: Attempt): boolean => attempt.stage === 'recording' && attempt.purpose === 'integrate';

/**
 * How many levels of candidates not integrated yet `task`'s attempt stands on: 0 on the tip (or
 * once everything it was built on has integrated), else one more than the deepest of them.
 */
function levelOf(state: Pick<EngineState, 'attempts'>, task: number, seen: ReadonlySet<number> = new Set()): number {
  const stack = state.attempts.get(task)?.stack ?? [];
  const live = stack.filter((candidate) => state.attempts.has(candidate) && !seen.has(candidate));
  if (live.length === 0) return 0;
  const path = new Set([...seen, task]);
  return 1 + Math.max(...live.map((candidate) => levelOf(state, candidate, path)));
}

/** Pending tasks not ready yet that may start now on their blockers' candidates. */
export function speculativeReady(state: Pick<EngineState, 'config' | 'plan' | 'attempts' | 'gate'>): number[] {
  if (state.config.speculate <= 0 || state.config.gate === null || state.gate.waiting.length + state.gate.segments.length === 0) return [];
  return state.plan.tasks.flatMap((t, i) => (statusOf(t) === 'pending' && speculativeStack(state, i) !== null ? [i] : []));
}

/**
 * Candidates `gone` leave the merge queue without integrating: every attempt built on one of
 * them, transitively and in any stage, is cancelled. A worker or its checks are stopped at once
 * and the attempt ends when they have; one verified or in the queue ends now, leaving the queue.
 * None is `gating` here: `gated` puts the whole run's candidates back in the queue before it
 * blames one, and no gate runs while a record (one that failed) is in the lane.
 * Its task goes back to pending with no attempt counted (what it cost counts), and starts again
 * later from the new tip. Returns the cancelled candidates that were in the queue (their refs go).
 */
export function cancelBuiltOn(building: StepDraft, gone: readonly number[], why: string): number[] {
  const removed = new Set(gone);
  const cancelled: Array<{ attempt: Attempt; stack: readonly number[] }> = [];
  const cancelledAlready = (attempt: Attempt) => (attempt.stage === 'running' || attempt.stage === 'verifying') && attempt.cancelled !== undefined;
  for (let grew = true; grew; ) {
    grew = false;
    for (const attempt of building.attempts.values()) {
      const stack = attempt.stack;
      if (stack === undefined || cancelledAlready(attempt) || removed.has(attempt.task)) continue;
      if (!stack.some((candidate) => removed.has(candidate))) continue;
      removed.add(attempt.task);
      cancelled.push({ attempt, stack });
      grew = true;
    }
  }
  const queued = cancelled.filter(({ attempt }) => inQueue(attempt)).map(({ attempt }) => attempt.task);
  building.draft.gate = withdraw(building.draft.gate, new Set(queued));
  for (const { attempt, stack } of cancelled) {
    emit(building, {
      type: 'speculation-cancelled',
      task: attempt.task,
      subject: taskAt(building.draft.plan.tasks, attempt.task).subject,
      attempt: attempt.number,
      stack: [...stack],
      stage: attempt.stage,
      reason: why,
    });
    switch (attempt.stage) {
      case 'running':
      case 'verifying':
        building.attempts.set(attempt.task, { ...attempt, cancelled: why });
        building.effects.push({ type: 'cancel-worker', task: attempt.task });
        break;
      case 'paused':
        // Its worker is gone, but it kept its worktree to resume in: that goes back to the pool.
        endCancelled(building, attempt, runOf(attempt), true, why);
        break;
      case 'verified':
      case 'recording':
      case 'queued':
      case 'gating':
        endCancelled(building, attempt, runOf(attempt), false, why);
        break;
      default:
        assertNever(attempt, 'attempt');
    }
  }
  return queued;
}

/**
 * A cancelled speculation ends (`why`: a candidate it was built on left the merge queue): no
 * attempt of its task, which is pending again. `run`: what its workers did in this run; `worktree`: it still holds one.
 */
export function endCancelled(building: StepDraft, attempt: Attempt, run: WorkerRun | null, worktree: boolean, why: string): void {
  const task = attempt.task;
  building.attempts.delete(task);
  if (worktree) building.effects.push({ type: 'release-workspace', task });
  const applied = applyCancelled(building.draft.plan, task, spentBy(run));
  building.effects.push({ type: 'save' });
  emit(building, { ...finishedEvent(building, attempt, run), outcome: 'cancelled', reason: `speculation cancelled: ${why}` });
  reportCascade(building, applied);
  checkBudget(building);
}
