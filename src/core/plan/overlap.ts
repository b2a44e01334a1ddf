// File overlaps, computed by code (never trusted from the plan). Two tasks overlap when they
// could run at the same time (neither reaches the other through blockedBy) and one writes a
// path that the other writes or reads. Overlapping tasks must never run concurrently.

import { ancestry, depsOf } from './graph.ts';
import { isDirPath } from './paths.ts';
import { readsOf, type Task, writesOf } from './plan.ts';

interface Use {
  task: number;
  write: boolean;
  dir: boolean;
}

/**
 * overlaps[i] = sorted indices of the tasks that may not run beside task i. Requires an acyclic
 * graph. Paths are indexed by their form without a trailing `/`, so only paths that can
 * intersect are compared: equal keys (`src` and `src/` included), and a directory with what
 * lies under it. Comparing every pair of tasks instead is quadratic in the plan's size, and so
 * is asking every task's ancestry: only the tasks sharing a path are asked about.
 */
export function computeOverlaps(tasks: readonly Task[]): number[][] {
  const byKey = new Map<string, Use[]>();
  const add = (path: string, use: Use) => {
    const key = use.dir ? path.slice(0, -1) : path;
    const list = byKey.get(key);
    if (list) list.push(use);
    else byKey.set(key, [use]);
  };
  tasks.forEach((t, i) => {
    for (const p of writesOf(t)) add(p, { task: i, write: true, dir: isDirPath(p) });
    for (const p of readsOf(t)) add(p, { task: i, write: false, dir: isDirPath(p) });
  });

  // Only tasks in a pair that may conflict (a path shared, one of them written) are asked about.
  const members = new Set<number>();
  for (const [key, uses] of byKey) {
    const written = uses.some((use) => use.write);
    if (written && uses.length > 1) for (const use of uses) members.add(use.task);
    const above = directoryUsesAbove(byKey, key);
    const writtenAbove = above.filter((dir) => written || dir.write);
    for (const dir of writtenAbove) members.add(dir.task);
    if (writtenAbove.length > 0) for (const use of uses) members.add(use.task);
  }
  const ancestors = ancestry(depsOf(tasks), members);

  const out = tasks.map(() => new Set<number>());
  const conflict = (a: Use, b: Use) => {
    if (a.task === b.task || !(a.write || b.write) || !ancestors.unordered(a.task, b.task)) return;
    out[a.task]!.add(b.task);
    out[b.task]!.add(a.task);
  };
  for (const [key, uses] of byKey) {
    // Readers of one path never conflict with one another.
    if (uses.some((use) => use.write)) {
      for (let x = 0; x < uses.length; x++) for (let y = x + 1; y < uses.length; y++) conflict(uses[x]!, uses[y]!);
    }
    // Not kept from the loop above: a directory's uses repeated under every key below it add up.
    for (const dir of directoryUsesAbove(byKey, key)) for (const use of uses) conflict(dir, use);
  }
  return out.map((s) => [...s].sort((a, b) => a - b));
}

/** The directory uses (`src/`, `src/lib/`) of the keys above `key` (`src/lib/a.ts`): they cover it. */
function directoryUsesAbove(byKey: ReadonlyMap<string, readonly Use[]>, key: string): Use[] {
  const above: Use[] = [];
  for (let cut = key.indexOf('/'); cut > 0; cut = key.indexOf('/', cut + 1)) {
    for (const use of byKey.get(key.slice(0, cut)) ?? []) if (use.dir) above.push(use);
  }
  return above;
}

export const overlapSets = (overlaps: readonly number[][]): ReadonlySet<number>[] => overlaps.map((o) => new Set(o));
