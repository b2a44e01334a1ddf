// fast-check arbitraries for plans and schedule simulations, plus brute-force reference
// definitions the property tests compare the core against. The reference functions are written
// independently of src/core (plain reachability, plain string checks) on purpose.

import fc from 'fast-check';
import { type Plan, type Task, TASK_STATUSES, type TaskStatus } from '../../src/core/plan/plan.ts';

/**
 * Paths tasks write and read. Directory paths (`src/`, `src/lib/`, `docs/`) cover the files under
 * them; `src` (a file named like a directory) is there to exercise that edge as well.
 */
export const PATH_POOL = [
  'src/',
  'src/a.ts',
  'src/b.ts',
  'src/lib/',
  'src/lib/c.ts',
  'src/lib/d.ts',
  'src',
  'srcx/e.ts',
  'test/a.test.ts',
  'docs/',
  'docs/guide.md',
  'README.md',
  'package.json',
] as const;

export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

export interface DagOptions {
  minTasks?: number;
  maxTasks?: number;
  /** Most blockers a task draws (before duplicates are removed). */
  maxDeps?: number;
  /** Relabel the tasks with a random permutation so index order is not always topological. Default true. */
  shuffle?: boolean;
}

/**
 * A random DAG as `deps[i]` = blockers of task i. Built with every edge pointing to a smaller
 * index, then (optionally) relabelled by a random permutation.
 */
export function dagArb(opts: DagOptions = {}): fc.Arbitrary<number[][]> {
  const { minTasks = 1, maxTasks = 8, maxDeps = 3, shuffle = true } = opts;
  return fc.integer({ min: minTasks, max: maxTasks }).chain((n) =>
    fc
      .tuple(
        fc.array(fc.array(fc.nat({ max: 1000 }), { maxLength: maxDeps }), { minLength: n, maxLength: n }),
        shuffle ? fc.shuffledSubarray(range(n), { minLength: n, maxLength: n }) : fc.constant(range(n)),
      )
      .map(([raw, perm]) => {
        const topo = raw.map((ks, i) => (i === 0 ? [] : [...new Set(ks.map((k) => k % i))]));
        const deps: number[][] = range(n).map(() => []);
        topo.forEach((ds, i) => {
          deps[perm[i]!] = ds.map((d) => perm[d]!);
        });
        return deps;
      }),
  );
}

/** A random directed graph that may have cycles (self-loops included, when asked). */
export function graphArb(opts: { maxTasks?: number; maxDeps?: number; selfLoops?: boolean } = {}): fc.Arbitrary<number[][]> {
  const { maxTasks = 8, maxDeps = 3, selfLoops = true } = opts;
  return fc
    .integer({ min: 1, max: maxTasks })
    .chain((n) =>
      fc
        .array(fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { maxLength: Math.min(maxDeps, n) }), { minLength: n, maxLength: n })
        .map((deps) => (selfLoops ? deps : deps.map((ds, i) => ds.filter((d) => d !== i)))),
    );
}

export interface TaskFilesDraw {
  create: string[];
  modify: string[];
  reads: string[];
}

/** Files of one task: each path at most once, in create, modify or reads. */
export const filesArb: fc.Arbitrary<TaskFilesDraw> = fc
  .array(fc.tuple(fc.constantFrom(...PATH_POOL), fc.constantFrom('create', 'modify', 'read', 'read')), { maxLength: 3 })
  .map((draws) => {
    const seen = new Set<string>();
    const out: TaskFilesDraw = { create: [], modify: [], reads: [] };
    for (const [p, kind] of draws) {
      if (seen.has(p)) continue;
      seen.add(p);
      (kind === 'create' ? out.create : kind === 'modify' ? out.modify : out.reads).push(p);
    }
    return out;
  });

/**
 * How statuses are drawn:
 * - `pending`: every task pending (a fresh plan);
 * - `consistent`: a state a run can reach: a task that is not pending or skipped has all its
 *   blockers completed, and a task is skipped only below a failed/blocked/skipped blocker or when
 *   its own blockers allowed it to run (a person skipped it);
 * - `any`: every task any status (possibly unreachable states).
 */
export type StatusMode = 'pending' | 'consistent' | 'any';

export interface PlanOptions extends DagOptions {
  statuses?: StatusMode;
}

const DEAD: ReadonlySet<TaskStatus> = new Set(['failed', 'blocked', 'skipped']);

/** Statuses for a DAG, drawn per `mode` from one random pick per task. */
export function assignStatuses(deps: number[][], picks: TaskStatus[], mode: StatusMode): TaskStatus[] {
  if (mode === 'pending') return deps.map(() => 'pending');
  if (mode === 'any') return picks;
  const out = new Array<TaskStatus | undefined>(deps.length).fill(undefined);
  const visit = (i: number): TaskStatus => {
    const known = out[i];
    if (known !== undefined) return known;
    const blockers = deps[i]!.map(visit);
    const pick = picks[i]!;
    let s: TaskStatus;
    if (blockers.every((b) => b === 'completed')) s = pick;
    else if (pick === 'skipped' && blockers.some((b) => DEAD.has(b))) s = 'skipped';
    else s = 'pending';
    out[i] = s;
    return s;
  };
  return deps.map((_, i) => visit(i));
}

export function buildTask(i: number, blockedBy: number[], files: TaskFilesDraw, status: TaskStatus): Task {
  const task: Task = {
    subject: `task ${i}`,
    prompt: `Do task ${i}.`,
    blockedBy,
    metadata: { files: { create: files.create, modify: files.modify } },
    status,
  };
  if (files.reads.length > 0) task.metadata.reads = files.reads;
  if (status === 'completed') task.result = `did task ${i}`;
  return task;
}

/** A random plan that passes validation (no declared fileOverlaps). */
export function planArb(opts: PlanOptions = {}): fc.Arbitrary<Plan> {
  const mode = opts.statuses ?? 'pending';
  return dagArb(opts).chain((deps) =>
    fc
      .tuple(
        fc.array(filesArb, { minLength: deps.length, maxLength: deps.length }),
        fc.array(fc.constantFrom(...TASK_STATUSES), { minLength: deps.length, maxLength: deps.length }),
      )
      .map(([files, picks]) => {
        const statuses = assignStatuses(deps, picks, mode);
        return {
          schemaVersion: 3 as const,
          goal: 'a random goal',
          tasks: deps.map((ds, i) => buildTask(i, ds, files[i]!, statuses[i]!)),
        };
      }),
  );
}

export const MAX_SIM_TASKS = 8;

export interface Simulation {
  plan: Plan;
  concurrency: number;
  /** Duration of each attempt of task i (time units). */
  durations: number[];
  /** How many attempts of task i fail before one succeeds (≥ maxAttempts: the task fails for good). */
  failuresBefore: number[];
}

export function simulationArb(opts: { allSucceed?: boolean; maxTasks?: number } = {}): fc.Arbitrary<Simulation> {
  const max = opts.maxTasks ?? MAX_SIM_TASKS;
  return fc.record({
    plan: planArb({ maxTasks: max, statuses: 'pending' }),
    concurrency: fc.integer({ min: 1, max: 4 }),
    durations: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: max, maxLength: max }),
    failuresBefore: opts.allSucceed
      ? fc.constant(new Array<number>(max).fill(0))
      : fc.array(fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 3 }) }), {
          minLength: max,
          maxLength: max,
        }),
  });
}

// ---------------------------------------------------------------------------------------------
// Brute-force reference definitions.

/** reach[i] = every task i depends on, directly or not (graph search; works on cyclic graphs too). */
export function reachable(deps: readonly (readonly number[])[]): Set<number>[] {
  return deps.map((_, start) => {
    const seen = new Set<number>();
    const stack = [...deps[start]!];
    while (stack.length > 0) {
      const v = stack.pop()!;
      if (seen.has(v)) continue;
      seen.add(v);
      stack.push(...(deps[v] ?? []));
    }
    return seen;
  });
}

export const hasCycleBrute = (deps: readonly (readonly number[])[]): boolean => reachable(deps).some((r, i) => r.has(i));

/** `d` covers `p`: equal, or `d` is a directory (ends in `/`) and `p` is under it or names it. */
export const coversBrute = (d: string, p: string): boolean => d === p || (d.endsWith('/') && (p.startsWith(d) || `${p}/` === d));
export const touchBrute = (a: string, b: string): boolean => coversBrute(a, b) || coversBrute(b, a);

export function conflictBrute(a: Task, b: Task): boolean {
  const writes = (t: Task) => [...t.metadata.files.create, ...t.metadata.files.modify];
  const reads = (t: Task) => t.metadata.reads ?? [];
  const any = (xs: string[], ys: string[]) => xs.some((x) => ys.some((y) => touchBrute(x, y)));
  return any(writes(a), writes(b)) || any(writes(a), reads(b)) || any(reads(a), writes(b));
}

/** Overlap pairs by the definition in the issue. */
export function overlapsBrute(tasks: readonly Task[]): number[][] {
  const reach = reachable(tasks.map((t) => t.blockedBy));
  return tasks.map((a, i) => tasks.flatMap((b, j) => (i !== j && !reach[i]!.has(j) && !reach[j]!.has(i) && conflictBrute(a, b) ? [j] : [])));
}
