// The scheduling policy. The engine asks "what may start now?" whenever something changes
// (a worker finished, a limit's hold ended), so a task starts the moment its blockers complete
// and a slot is free. Rounds are a policy on top: the `rounds` policy admits only the wave that
// was ready when the round opened.

import { readySet } from './graph.ts';
import { statusOf, type Task, taskAt } from './plan.ts';

export type SchedulePolicy = 'continuous' | 'rounds';
export const SCHEDULE_POLICIES: readonly SchedulePolicy[] = ['continuous', 'rounds'];

export interface ScheduleState {
  tasks: readonly Task[];
  /** Tasks that may start though their blockers have not all completed (speculatively, on candidates of the merge queue). */
  alsoReady?: readonly number[];
  running: ReadonlySet<number>;
  overlaps: readonly ReadonlySet<number>[];
  concurrency: number;
  /** Higher runs first (the longest remaining path). */
  priority: readonly number[];
  /** With the rounds policy: the tasks of the open round. */
  admitted?: ReadonlySet<number>;
  /**
   * Tasks that claim their files without a worker (verified work not recorded yet, work awaiting approval; see
   * `claimingFiles` in engine/queries.ts). They take no slot, but a task overlapping them must still
   * wait: its edits would mix into their commit.
   */
  claimingFiles?: ReadonlySet<number>;
}

/** Ready tasks ordered by priority (longest remaining path first), then index. */
export function byPriority(ready: readonly number[], priority: readonly number[]): number[] {
  return [...ready].sort((a, b) => priority[b]! - priority[a]! || a - b);
}

/** The tasks to start now: ready, admitted, within capacity, overlapping nothing running or uncommitted. */
export function pickStarts(state: ScheduleState): number[] {
  const capacity = state.concurrency - state.running.size;
  if (capacity <= 0) return [];
  const busy = new Set([...state.running, ...(state.claimingFiles ?? [])]);
  const picked: number[] = [];
  const ready = state.alsoReady === undefined ? readySet(state.tasks) : [...new Set([...readySet(state.tasks), ...state.alsoReady])];
  for (const i of byPriority(ready, state.priority)) {
    if (picked.length >= capacity) break;
    if (busy.has(i)) continue;
    if (state.admitted && !state.admitted.has(i)) continue;
    if ([...busy].some((r) => state.overlaps[i]!.has(r))) continue;
    picked.push(i);
    busy.add(i);
  }
  return picked;
}

/**
 * Split a ready set into groups of mutually non-overlapping tasks (greedy colouring in priority
 * order): each group can run in parallel; groups run one after another.
 */
export function parallelGroups(ready: readonly number[], overlaps: readonly ReadonlySet<number>[], priority: readonly number[]): number[][] {
  const groups: number[][] = [];
  for (const i of byPriority(ready, priority)) {
    const group = groups.find((g) => g.every((j) => !overlaps[i]!.has(j)));
    if (group) group.push(i);
    else groups.push([i]);
  }
  return groups.map((g) => g.sort((a, b) => a - b));
}

/**
 * The rounds a run would take if every task succeeded: each round is the ready set after the
 * previous rounds completed, split into parallel groups. Used by `--dry-run`.
 */
export function projectedRounds(tasks: readonly Task[], overlaps: readonly ReadonlySet<number>[], priority: readonly number[]): number[][][] {
  // A projection, not a run: which tasks would have completed, kept beside the plan's own states.
  const done = new Set(tasks.flatMap((t, i) => (statusOf(t) === 'completed' ? [i] : [])));
  const waiting = new Set(tasks.flatMap((t, i) => (statusOf(t) === 'pending' ? [i] : [])));
  const rounds: number[][][] = [];
  for (;;) {
    const ready = [...waiting].filter((i) => taskAt(tasks, i).blockedBy.every((d) => done.has(d))).sort((x, y) => x - y);
    if (ready.length === 0) return rounds;
    rounds.push(parallelGroups(ready, overlaps, priority));
    for (const i of ready) {
      waiting.delete(i);
      done.add(i);
    }
  }
}
