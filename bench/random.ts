// Seeded random plans for the benchmarks: random DAGs whose tasks create, modify and read random
// file paths, directories included (`pkg3/mod1/` covers every file under it). The same seed
// always gives the same plan, so figures are comparable from one run to the next.

import type { Plan, Task } from '../src/core/plan/plan.ts';

/** mulberry32: a small, fast, seedable PRNG returning floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const randInt = (r: () => number, min: number, max: number): number => min + Math.floor(r() * (max - min + 1));
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** A standard normal deviate (Box–Muller). */
export function gaussian(r: () => number): number {
  const u = 1 - r();
  const v = r();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export interface RandomPlanOptions {
  tasks: number;
  seed: number;
  /** Most blockers per task (drawn 0..maxDeps). Default 3. */
  maxDeps?: number;
  /** Blockers are drawn among the `window` tasks generated just before (a deep graph); default 20. */
  window?: number;
  /** Relabel tasks with a random permutation, so index order is not a topological order. Default true. */
  shuffle?: boolean;
}

/**
 * A random valid plan. Every task creates 1–2 files of its own, modifies 0–2 files made by
 * earlier tasks (now and then a whole directory), and reads 0–2 paths; each task draws up to
 * `maxDeps` blockers among the `window` tasks generated before it.
 */
export function randomPlan(o: RandomPlanOptions): Plan {
  const r = rng(o.seed);
  const n = o.tasks;
  const maxDeps = o.maxDeps ?? 3;
  const window = o.window ?? 20;
  const packages = Math.max(2, Math.ceil(n / 40));
  const dirs: string[] = [];
  for (let p = 0; p < packages; p++) for (let m = 0; m < 4; m++) dirs.push(`pkg${p}/mod${m}/`);
  const pool: string[] = dirs.map((d) => `${d}index.ts`);

  const generated: Task[] = [];
  for (let i = 0; i < n; i++) {
    const deps = new Set<number>();
    const k = i === 0 ? 0 : randInt(r, 0, maxDeps);
    for (let j = 0; j < k; j++) deps.add(randInt(r, Math.max(0, i - window), i - 1));

    const create = Array.from({ length: randInt(r, 1, 2) }, (_, c) => `${pick(r, dirs)}t${i}_${c}.ts`);
    const modify = new Set<string>();
    for (let j = randInt(r, 0, 2); j > 0; j--) modify.add(r() < 0.04 ? pick(r, dirs) : pick(r, pool));
    const reads = new Set<string>();
    for (let j = randInt(r, 0, 2); j > 0; j--) reads.add(r() < 0.1 ? pick(r, dirs) : pick(r, pool));
    pool.push(...create);

    generated.push({
      subject: `task ${i}`,
      prompt: `Do task ${i}.\nTASK-MARKER: t${i}`,
      blockedBy: [...deps],
      metadata: { type: 'implementation', files: { create, modify: [...modify] }, reads: [...reads] },
    });
  }

  if (o.shuffle === false) return { schemaVersion: 3, goal: `random plan of ${n} tasks (seed ${o.seed})`, tasks: generated };
  // Relabel: generated task g becomes task perm[g].
  const perm = generated.map((_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  const tasks = new Array<Task>(n);
  generated.forEach((t, g) => {
    tasks[perm[g]!] = { ...t, subject: `task ${perm[g]}`, blockedBy: t.blockedBy.map((d) => perm[d]!) };
  });
  return { schemaVersion: 3, goal: `random plan of ${n} tasks (seed ${o.seed})`, tasks };
}

/** Task durations with a long tail, as real agent tasks have: lognormal, median 1, σ = `sigma`. */
export function randomDurations(n: number, seed: number, sigma = 0.8): number[] {
  const r = rng(seed ^ 0x9e3779b9);
  return Array.from({ length: n }, () => Math.exp(sigma * gaussian(r)));
}

/**
 * A plan at the scale the plan tool must still check quickly: `chain` (task i blocked by i − 1)
 * or `wide` (no blockers), every task creating a file of its own, so nothing overlaps; with
 * `shared`, every task also modifies that one file.
 */
export function scalePlan(shape: 'chain' | 'wide', n: number, o: { shared?: string } = {}): Plan {
  const tasks: Task[] = Array.from({ length: n }, (_, i) => ({
    subject: `task ${i}`,
    prompt: `Do task ${i}.`,
    blockedBy: shape === 'chain' && i > 0 ? [i - 1] : [],
    metadata: { type: 'implementation', files: { create: [`f${i}.txt`], modify: o.shared === undefined ? [] : [o.shared] } },
  }));
  return { schemaVersion: 3, goal: `${shape} plan of ${n} tasks`, tasks };
}
