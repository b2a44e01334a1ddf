// A run's first state, and how it takes in what an earlier run verified and did not integrate:
// candidates it held for the merge queue rejoin the queue in an order that gates each on the stack
// it was built on (`admitHeld`), and so does work a person approved, which setup holds on a
// candidate ref (without a gate, both integrate at the first record); work a session verified
// integrates at the first record.

import { emptyGateQueue, enqueue } from './gate.ts';
import { attemptsOf, computeOverlaps, depsOf, emptyUsage, longestRemainingPath, overlapSets, type Plan, taskAt } from '../plan/index.ts';
import { newHosts } from '../hosts/index.ts';
import type { CapturedWork } from '../attempt/index.ts';
import { firstLimiter, otherLimiters } from './accounts.ts';
import type { Attempt } from './attempt.ts';
import type { EngineConfig, EngineState } from './state.ts';
import { namedTasks } from '../format.ts';
import { assertNever } from '../result.ts';

/** A candidate an earlier run verified and held for the gate: it rejoins the queue first. */
export interface HeldCandidate {
  task: number;
  work: CapturedWork;
  result: string;
  /**
   * The candidates its worker was built on, in queue order (speculative); absent or empty: the
   * integration tip. From `admitHeld` on, only those not integrated yet: what must be ahead of it.
   */
  stack?: readonly number[];
  /** Work a person approved (setup held it on its candidate ref): its attempt was counted when it awaited approval. */
  approved?: true;
}

/**
 * Candidates an earlier run held, in the order they rejoin the merge queue, so that each is gated
 * on the stack its worker was built on: the candidates of its stack not integrated yet come first,
 * in their order (the queue's front, which a live run's queue also was), then the rest. One whose
 * stack the queue cannot give it again — a candidate of it neither integrated nor held (blamed,
 * and a crash came before its cancellation was recorded), a blocker neither integrated nor in
 * its stack, or a stack that is not the front of the longest one — is dropped and runs again: it
 * may never integrate before its stack, nor be gated on another. Each dropped one with the rule
 * that dropped it, in task order.
 */
export function admitHeld(
  plan: Plan,
  held: readonly HeldCandidate[],
  completed: (task: number) => boolean,
): { kept: HeldCandidate[]; dropped: DroppedCandidate[] } {
  const beneath = new Map(held.map((candidate) => [candidate.task, (candidate.stack ?? []).filter((task) => !completed(task))]));
  const standing = new Set(held.map((candidate) => candidate.task));
  const isFrontOf = (stack: readonly number[], longer: readonly number[]) => stack.length <= longer.length && stack.every((task, i) => longer[i] === task);
  const why = new Map<number, DropReason>();
  let front: number[] = [];
  for (let dropped = true; dropped; ) {
    dropped = false;
    const drop = (task: number, reason: DropReason) => {
      standing.delete(task);
      why.set(task, reason);
      dropped = true;
    };
    for (const task of [...standing]) {
      const stack = beneath.get(task)!;
      const without = taskAt(plan.tasks, task).blockedBy.filter((blocker) => !completed(blocker) && !stack.includes(blocker));
      const gone = stack.filter((below) => below === task || !standing.has(below));
      if (without.length > 0) drop(task, { kind: 'blocker-not-beneath', blockers: without });
      else if (gone.length > 0) drop(task, { kind: 'stack-gone', tasks: gone });
    }
    // Every stack is the front of the queue: the shorter ones are the front of the longest.
    front = [];
    for (const task of [...standing].sort((a, b) => beneath.get(a)!.length - beneath.get(b)!.length || a - b)) {
      const stack = beneath.get(task)!;
      if (isFrontOf(front, stack)) front = stack;
      else if (!isFrontOf(stack, front)) drop(task, { kind: 'stack-not-front', stack });
    }
    // A candidate of the front stands on no more than what is ahead of it there: its stack is a
    // front of the front, and one holding itself was dropped above.
  }
  const order = [...front, ...[...standing].filter((task) => !front.includes(task)).sort((a, b) => a - b)];
  const byTask = new Map(held.map((candidate) => [candidate.task, candidate]));
  return {
    kept: order.map((task) => ({ ...byTask.get(task)!, stack: beneath.get(task)! })),
    dropped: [...why].map(([task, reason]) => ({ task, why: reason })).sort((a, b) => a.task - b.task),
  };
}

/** A held candidate `admitHeld` dropped (it runs again), and the rule that dropped it. */
export interface DroppedCandidate {
  task: number;
  why: DropReason;
}

/**
 * Why a held candidate was dropped: it waits now for `blockers`, which its work was not built on
 * (the plan was edited since); `tasks` of its stack (not integrated) no longer wait in the queue;
 * or its `stack` (what of it is not integrated) is not the front of the others'.
 */
export type DropReason =
  | { kind: 'blocker-not-beneath'; blockers: number[] }
  | { kind: 'stack-gone'; tasks: number[] }
  | { kind: 'stack-not-front'; stack: readonly number[] };

/** Why a held candidate was dropped, in words for the person: `its held work …`. */
export function describeDrop(why: DropReason): string {
  switch (why.kind) {
    case 'blocker-not-beneath':
      return `was built without ${namedTasks(why.blockers)}, which it waits for now`;
    case 'stack-gone':
      return `was built on the work of ${namedTasks(why.tasks)}, no longer in the merge queue`;
    case 'stack-not-front':
      return `was built on a stack (${namedTasks(why.stack)}) the merge queue cannot give it again`;
    default:
      return assertNever(why, 'drop reason');
  }
}

/**
 * A run's first state. `held`: candidates an earlier run held on their refs (they rejoin the merge
 * queue first; without a gate now, they integrate at once). `verified`: work an earlier session
 * verified and did not integrate, whose work it kept (it integrates, or is held, at the first record).
 */
export function initialState(
  plan: Plan,
  config: EngineConfig,
  now: number,
  held: readonly HeldCandidate[] = [],
  verified: readonly HeldCandidate[] = [],
): EngineState {
  const attempts = new Map<number, Attempt>();
  const earlier = (candidate: HeldCandidate, held: boolean) => ({
    task: candidate.task,
    // Approved work's attempt was counted when it awaited approval.
    number: attemptsOf(taskAt(plan.tasks, candidate.task)) + (candidate.approved === true ? 0 : 1),
    decision: { kind: 'completed' as const, result: candidate.result },
    work: candidate.work,
    verifiedBy: { kind: 'earlier-run' as const, held, ...(candidate.approved === true ? { approved: true as const } : {}) },
    // Built on candidates still held: cancelled if one of them is blamed, as in the run that made it.
    ...(held && candidate.stack !== undefined && candidate.stack.length > 0 ? { stack: candidate.stack } : {}),
  });
  for (const candidate of held) {
    // Without a gate now, they integrate at once.
    attempts.set(candidate.task, config.gate === null ? { ...earlier(candidate, true), stage: 'verified' } : { ...earlier(candidate, true), stage: 'queued' });
  }
  for (const attempt of verified) {
    if (!attempts.has(attempt.task)) attempts.set(attempt.task, { ...earlier(attempt, false), stage: 'verified' });
  }
  return {
    config,
    plan,
    overlaps: overlapSets(computeOverlaps(plan.tasks)),
    priority: longestRemainingPath(depsOf(plan.tasks)),
    now,
    attempts,
    limiter: firstLimiter(config),
    ...otherLimiters(config),
    admitted: null,
    round: 0,
    usage: emptyUsage(),
    unlanded: new Set(),
    baseline: 'none',
    aborted: false,
    timing: { workers: 0, workerMs: 0, records: 0, recordMs: 0 },
    recordingSince: null,
    gate: enqueue(emptyGateQueue(), config.gate === null ? [] : held.map((candidate) => candidate.task)),
    stop: null,
    finished: false,
    widened: new Set(),
    ...(config.hosts !== undefined ? { hosts: newHosts(config.hosts) } : {}),
  };
}
