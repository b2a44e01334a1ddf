// The pure core on large random plans: how long validation, overlaps and the graph functions
// take as plans grow. Median wall time of repeated runs in this process.

import { depsOf, findCycles, longestRemainingPath, readySet, topologicalOrder } from '../src/core/plan/graph.ts';
import { computeOverlaps, overlapSets } from '../src/core/plan/overlap.ts';
import type { Plan, Task } from '../src/core/plan/plan.ts';
import { pickStarts } from '../src/core/plan/schedule.ts';
import { parsePlan, validatePlan } from '../src/core/plan/validate.ts';
import { randomPlan } from './random.ts';
import { ms, progress, table, timeSync, type Timing } from './timing.ts';

export const CORE_SIZES = [200, 1000, 3000];

/** The plan with the first `fraction` of a topological order completed (for readySet / pickStarts). */
function halfDone(plan: Plan, fraction = 0.4): Task[] {
  const order = topologicalOrder(depsOf(plan.tasks));
  const done = new Set(order.slice(0, Math.floor(order.length * fraction)));
  return plan.tasks.map((t, i) => ({ ...t, status: done.has(i) ? 'completed' : 'pending' }));
}

interface Row {
  name: string;
  note: string;
  bySize: Map<number, Timing>;
}

export function benchCore(sizes: readonly number[] = CORE_SIZES, opts: { budgetMs?: number } = {}): string {
  const rows: Row[] = [
    { name: 'parsePlan', note: 'JSON text → validated plan (schema, indices, cycles, paths, overlaps)', bySize: new Map() },
    { name: 'validatePlan', note: 'the same from a parsed object', bySize: new Map() },
    {
      name: 'computeOverlaps',
      note: 'a path index (only paths that can intersect are compared), the ancestry of the tasks sharing a written path',
      bySize: new Map(),
    },
    { name: 'findCycles', note: 'Tarjan over the whole graph (acyclic here)', bySize: new Map() },
    { name: 'longestRemainingPath', note: 'the scheduling priority', bySize: new Map() },
    { name: 'readySet', note: '40% of the tasks completed', bySize: new Map() },
    { name: 'pickStarts', note: 'one scheduling decision, concurrency 8', bySize: new Map() },
  ];
  const stats: string[] = [];
  for (const n of sizes) {
    progress(`core: ${n} tasks`);
    const plan = randomPlan({ tasks: n, seed: 1000 + n });
    const text = JSON.stringify(plan);
    const deps = depsOf(plan.tasks);
    const overlaps = computeOverlaps(plan.tasks);
    const pairs = overlaps.reduce((a, o) => a + o.length, 0) / 2;
    const edges = deps.reduce((a, d) => a + d.length, 0);
    const depth = Math.max(...longestRemainingPath(deps));
    stats.push(
      `${n} tasks: ${edges} dependency edges, longest chain ${depth} tasks, ${pairs} overlapping pairs, ${text.length.toLocaleString('en-US')} bytes of JSON`,
    );
    const budgetMs = opts.budgetMs ?? 1000;
    const t = (fn: (s: undefined) => unknown) => timeSync(fn, { setup: () => undefined, budgetMs });

    const parsed = parsePlan(text);
    if (!parsed.ok) throw new Error(`the random plan is invalid: ${parsed.error.slice(0, 3).join('; ')}`);
    rows[0]!.bySize.set(
      n,
      t(() => parsePlan(text)),
    );
    rows[1]!.bySize.set(
      n,
      timeSync((p) => validatePlan(p), { setup: () => JSON.parse(text) as unknown, budgetMs }),
    );
    rows[2]!.bySize.set(
      n,
      t(() => computeOverlaps(plan.tasks)),
    );
    rows[3]!.bySize.set(
      n,
      t(() => findCycles(deps)),
    );
    rows[4]!.bySize.set(
      n,
      t(() => longestRemainingPath(deps)),
    );
    const tasks = halfDone(plan);
    rows[5]!.bySize.set(
      n,
      t(() => readySet(tasks)),
    );
    const sets = overlapSets(overlaps);
    const priority = longestRemainingPath(deps);
    rows[6]!.bySize.set(
      n,
      t(() => pickStarts({ tasks, running: new Set(), overlaps: sets, concurrency: 8, priority })),
    );
  }
  const header = ['function', ...sizes.map((n) => `${n} tasks`), 'what it does'];
  const body = rows.map((r) => [r.name, ...sizes.map((n) => ms(r.bySize.get(n)!.medianMs)), r.note]);
  return [
    'Median ms per call (one warm-up call, then repeated for ~1 s, at least 5 runs; calls over 0.25 s: 3 runs, over 2 s: 2 runs, the first included).',
    '',
    table(header, body, ['l', ...sizes.map(() => 'r' as const), 'l']),
    '',
    ...stats.map((s) => `- ${s}`),
  ].join('\n');
}
