// The task graph: pure functions over `blockedBy` edges. Task i depends on every index in
// deps[i]. Functions that need an acyclic graph say so; validation refuses cycles first.

import { type Plan, statusOf, type Task, taskAt, type TaskStatus } from './plan.ts';

export type Deps = readonly (readonly number[])[];

export const depsOf = (tasks: readonly Task[]): number[][] => tasks.map((t) => [...t.blockedBy]);

/** dependants[i] = tasks that list i in their blockedBy. */
export function dependantsOf(deps: Deps): number[][] {
  const out: number[][] = deps.map(() => []);
  deps.forEach((ds, i) => {
    for (const d of new Set(ds)) out[d]?.push(i);
  });
  return out;
}

/**
 * Every elementary cycle found by a DFS, one per strongly connected component, each written as a
 * closed walk (`[0, 2, 0]`). Self-loops come out as `[i, i]`. Ignores edges to missing tasks.
 */
export function findCycles(deps: Deps): number[][] {
  const n = deps.length;
  const index = new Array<number>(n).fill(-1);
  const low = new Array<number>(n).fill(0);
  const onStack = new Array<boolean>(n).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;

  // Iterative Tarjan, so a long chain cannot overflow the call stack.
  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    const work: Array<{ v: number; next: number }> = [{ v: root, next: 0 }];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = deps[frame.v]!.filter((w) => w >= 0 && w < n);
      if (frame.next < edges.length) {
        const w = edges[frame.next++]!;
        if (index[w] === -1) {
          index[w] = low[w] = counter++;
          stack.push(w);
          onStack[w] = true;
          work.push({ v: w, next: 0 });
        } else if (onStack[w]) {
          low[frame.v] = Math.min(low[frame.v]!, index[w]!);
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low[parent.v] = Math.min(low[parent.v]!, low[frame.v]!);
      if (low[frame.v] === index[frame.v]) {
        const component: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = false;
          component.push(w);
        } while (w !== frame.v);
        components.push(component);
      }
    }
  }

  const cycles: number[][] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = Math.min(...component);
    if (component.length === 1 && !deps[start]!.includes(start)) continue;
    cycles.push(walkCycle(deps, members, start));
  }
  return cycles.sort((a, b) => a[0]! - b[0]!);
}

/** A shortest cycle through `start` inside one strongly connected component (BFS). */
function walkCycle(deps: Deps, members: ReadonlySet<number>, start: number): number[] {
  const prev = new Map<number, number>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of [...deps[v]!].sort((a, b) => a - b)) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(prev.get(path[0]!)!);
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** Tasks in an order where every task comes after its blockers. Requires an acyclic graph. */
export function topologicalOrder(deps: Deps): number[] {
  const n = deps.length;
  const remaining = deps.map((ds) => new Set(ds).size);
  const dependants = dependantsOf(deps);
  const order: number[] = [];
  const queue: number[] = [];
  for (const [i, r] of remaining.entries()) if (r === 0) queue.push(i);
  while (queue.length > 0) {
    const v = queue.shift()!;
    order.push(v);
    for (const w of dependants[v]!) if (--remaining[w]! === 0) queue.push(w);
  }
  if (order.length !== n) throw new Error('topologicalOrder: the graph has a cycle');
  return order;
}

/** Answers "does task i depend, directly or not, on member m?" for a chosen set of members. */
export interface Ancestry {
  dependsOn(task: number, member: number): boolean;
  /** Neither task depends on the other: they could run at the same time. Both must be members. */
  unordered(a: number, b: number): boolean;
}

/**
 * What every task depends on among `members`: one bitset over the members per task, filled in
 * topological order. It takes n × |members| bits, so callers pass only the tasks they will ask
 * about: a full n × n matrix of a 20,000-task plan is gigabytes. Requires an acyclic graph.
 */
export function ancestry(deps: Deps, members: Iterable<number>): Ancestry {
  const n = deps.length;
  const order = topologicalOrder(deps);
  const isMember = new Uint8Array(n);
  for (const m of members) isMember[m] = 1;
  // Bits follow the topological order, so a member can only depend on members with lower bits.
  const bitOf = new Int32Array(n).fill(-1);
  let count = 0;
  for (const v of order) if (isMember[v] === 1) bitOf[v] = count++;
  const words = Math.ceil(count / 32);
  const bits = new Uint32Array(n * words);
  if (words > 0) {
    for (const v of order) {
      const row = v * words;
      for (const d of deps[v]!) {
        const from = d * words;
        for (let k = 0; k < words; k++) bits[row + k]! |= bits[from + k]!;
        const bit = bitOf[d]!;
        if (bit >= 0) bits[row + (bit >>> 5)]! |= 1 << (bit & 31);
      }
    }
  }
  const bitOfMember = (member: number): number => {
    const bit = bitOf[member]!;
    if (bit < 0) throw new Error(`ancestry: task ${member} is not a member`);
    return bit;
  };
  const hasBit = (task: number, bit: number): boolean => ((bits[task * words + (bit >>> 5)]! >>> (bit & 31)) & 1) === 1;
  return {
    dependsOn: (task, member) => hasBit(task, bitOfMember(member)),
    unordered: (a, b) => {
      const bitA = bitOfMember(a);
      const bitB = bitOfMember(b);
      return bitA < bitB ? !hasBit(b, bitA) : !hasBit(a, bitB);
    },
  };
}

/**
 * ancestors[i][j] is true when task i transitively depends on task j: n² booleans, for small
 * graphs only (large plans ask `ancestry` about the tasks they need). Requires an acyclic graph.
 */
export function ancestorMatrix(deps: Deps): boolean[][] {
  const all = ancestry(deps, deps.keys());
  return deps.map((_, i) => deps.map((__, j) => all.dependsOn(i, j)));
}

/** depth = 1 for a task with no blockers, else 1 + the deepest blocker. Requires an acyclic graph. */
export function depths(deps: Deps): number[] {
  const out = new Array<number>(deps.length).fill(1);
  for (const v of topologicalOrder(deps)) {
    for (const d of deps[v]!) out[v] = Math.max(out[v]!, out[d]! + 1);
  }
  return out;
}

/**
 * Length (in summed weights) of the longest chain from each task to the end of the graph,
 * the task itself included. Scheduling the longest remaining path first keeps the critical
 * path moving. Requires an acyclic graph.
 */
export function longestRemainingPath(deps: Deps, weight: (i: number) => number = () => 1): number[] {
  const dependants = dependantsOf(deps);
  const out = new Array<number>(deps.length).fill(0);
  for (const v of topologicalOrder(deps).reverse()) {
    let best = 0;
    for (const w of dependants[v]!) best = Math.max(best, out[w]!);
    out[v] = weight(v) + best;
  }
  return out;
}

/** The longest chain of tasks through the whole graph (the critical path), as indices in order. */
export function criticalPath(deps: Deps, weight: (i: number) => number = () => 1): number[] {
  if (deps.length === 0) return [];
  const lrp = longestRemainingPath(deps, weight);
  const dependants = dependantsOf(deps);
  let v = lrp.reduce((best, x, i) => (x > lrp[best]! ? i : best), 0);
  const path = [v];
  for (;;) {
    const next = dependants[v]!.reduce<number | null>((best, w) => (best === null || lrp[w]! > lrp[best]! ? w : best), null);
    if (next === null) return path;
    path.push(next);
    v = next;
  }
}

/** Pending tasks whose blockers have all completed, in index order. */
export function readySet(tasks: readonly Task[]): number[] {
  const ready: number[] = [];
  // A blocker that is not in the plan never completes: its dependant is not ready.
  const completed = (blocker: number): boolean => {
    const task = tasks[blocker];
    return task !== undefined && statusOf(task) === 'completed';
  };
  tasks.forEach((t, i) => {
    if (statusOf(t) !== 'pending') return;
    if (t.blockedBy.every(completed)) ready.push(i);
  });
  return ready;
}

const DEAD_ENDS: ReadonlySet<TaskStatus> = new Set(['failed', 'blocked', 'skipped']);

export interface Skip {
  index: number;
  /** The failed, blocked or skipped task at the root of the chain that stops this one. */
  rootCause: number;
  /** The direct blocker through which the root cause reaches this task. */
  via: number;
}

/**
 * Pending tasks that can never run because a task they depend on (directly or not) failed, was
 * blocked or was skipped. Each carries the root cause. Requires an acyclic graph.
 */
export function cascade(tasks: readonly Task[]): Skip[] {
  const deps = depsOf(tasks);
  const root = new Map<number, number>();
  tasks.forEach((t, i) => {
    // A task skipped by cascade remembers its root cause; one skipped by a person is its own.
    if (DEAD_ENDS.has(statusOf(t))) root.set(i, statusOf(t) === 'skipped' ? (t.skippedBy ?? i) : i);
  });
  const skips: Skip[] = [];
  for (const v of topologicalOrder(deps)) {
    if (statusOf(taskAt(tasks, v)) !== 'pending') continue;
    const via = [...deps[v]!].sort((a, b) => a - b).find((d) => root.has(d));
    if (via === undefined) continue;
    const rootCause = root.get(via)!;
    root.set(v, rootCause);
    skips.push({ index: v, rootCause, via });
  }
  return skips.sort((a, b) => a.index - b.index);
}

export interface BreakerDecision {
  trip: boolean;
  totalTasks: number;
  pendingCount: number;
  wouldBeSkipped: number;
}

/**
 * The circuit breaker: with more than 3 tasks, stop when at least half of the pending tasks
 * would be skipped by cascading failures. `pendingCount` counts the tasks pending before the
 * skips are applied (the skipped ones included).
 */
export function breaker(totalTasks: number, pendingCount: number, wouldBeSkipped: number): BreakerDecision {
  const trip = totalTasks > 3 && wouldBeSkipped > 0 && wouldBeSkipped * 2 >= pendingCount;
  return { trip, totalTasks, pendingCount, wouldBeSkipped };
}

export type Stall =
  | { kind: 'none' }
  /** Work remains but nothing can start and nothing is running. */
  | { kind: 'deadlock'; pending: number[] }
  /** Everything left waits on tasks a person must approve. */
  | { kind: 'awaiting_approval'; awaitingApproval: number[]; waiting: number[] };

/** Decide whether a run that has nothing running can make progress. */
export function stall(tasks: readonly Task[], running: ReadonlySet<number> = new Set()): Stall {
  if (running.size > 0) return { kind: 'none' };
  const pending = tasks.flatMap((t, i) => (statusOf(t) === 'pending' ? [i] : []));
  if (pending.length === 0 || readySet(tasks).length > 0) return { kind: 'none' };
  const awaitingApproval = tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [i] : []));
  if (awaitingApproval.length > 0) {
    const belowApproval = ancestry(depsOf(tasks), awaitingApproval);
    const waitsOnApproval = (i: number) => awaitingApproval.some((g) => belowApproval.dependsOn(i, g));
    if (pending.every(waitsOnApproval)) return { kind: 'awaiting_approval', awaitingApproval, waiting: pending };
  }
  return { kind: 'deadlock', pending };
}

/** Counts of tasks by status. */
export function countByStatus(plan: Plan): Record<TaskStatus, number> {
  const counts: Record<TaskStatus, number> = {
    pending: 0,
    in_progress: 0,
    completed: 0,
    failed: 0,
    blocked: 0,
    skipped: 0,
    awaiting_approval: 0,
  };
  for (const t of plan.tasks) counts[statusOf(t)]++;
  return counts;
}
