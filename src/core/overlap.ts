// File overlaps, computed by code (never trusted from the plan). Two tasks overlap when they
// could run at the same time (neither reaches the other through blockedBy) and one writes a
// path that the other writes or reads. Overlapping tasks must never run concurrently.

import { ancestorMatrix, depsOf, unordered } from './graph.ts';
import { pathsIntersect } from './paths.ts';
import { type Task, readsOf, writesOf } from './plan.ts';

function conflicts(a: Task, b: Task): boolean {
  const aw = writesOf(a);
  const bw = writesOf(b);
  const hit = (xs: string[], ys: string[]) => xs.some((x) => ys.some((y) => pathsIntersect(x, y)));
  return hit(aw, bw) || hit(aw, readsOf(b)) || hit(bw, readsOf(a));
}

/** overlaps[i] = sorted indices of the tasks that may not run beside task i. Requires an acyclic graph. */
export function computeOverlaps(tasks: readonly Task[]): number[][] {
  const anc = ancestorMatrix(depsOf(tasks));
  const out: number[][] = tasks.map(() => []);
  for (let a = 0; a < tasks.length; a++) {
    for (let b = a + 1; b < tasks.length; b++) {
      if (unordered(anc, a, b) && conflicts(tasks[a]!, tasks[b]!)) {
        out[a]!.push(b);
        out[b]!.push(a);
      }
    }
  }
  return out;
}

export const overlapSets = (overlaps: readonly number[][]): ReadonlySet<number>[] => overlaps.map((o) => new Set(o));
