// File overlaps, computed by code (never trusted from the plan). Two tasks overlap when they
// could run at the same time (neither reaches the other through blockedBy) and one writes a
// path that the other writes or reads. Overlapping tasks must never run concurrently.

import { ancestorMatrix, depsOf, unordered } from './graph.ts';
import { isDirPath } from './paths.ts';
import { type Task, readsOf, writesOf } from './plan.ts';

interface Use {
  task: number;
  write: boolean;
  dir: boolean;
}

/**
 * overlaps[i] = sorted indices of the tasks that may not run beside task i. Requires an acyclic
 * graph. Paths are indexed by their form without a trailing `/`, so only paths that can
 * intersect are compared: equal keys (`src` and `src/` included), and a directory with what
 * lies under it. Comparing every pair of tasks instead is quadratic in the plan's size.
 */
export function computeOverlaps(tasks: readonly Task[]): number[][] {
  const anc = ancestorMatrix(depsOf(tasks));
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

  const out = tasks.map(() => new Set<number>());
  const conflict = (a: Use, b: Use) => {
    if (a.task === b.task || !(a.write || b.write) || !unordered(anc, a.task, b.task)) return;
    out[a.task]!.add(b.task);
    out[b.task]!.add(a.task);
  };
  for (const [key, uses] of byKey) {
    for (let x = 0; x < uses.length; x++) for (let y = x + 1; y < uses.length; y++) conflict(uses[x]!, uses[y]!);
    // Directories above this path cover it.
    for (let cut = key.indexOf('/'); cut > 0; cut = key.indexOf('/', cut + 1)) {
      for (const above of byKey.get(key.slice(0, cut)) ?? []) {
        if (!above.dir) continue;
        for (const use of uses) conflict(above, use);
      }
    }
  }
  return out.map((s) => [...s].sort((a, b) => a - b));
}

export const overlapSets = (overlaps: readonly number[][]): ReadonlySet<number>[] => overlaps.map((o) => new Set(o));
