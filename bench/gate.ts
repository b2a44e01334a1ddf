// The merge queue in simulated time: random plans run through the engine's own state machine
// (`core/engine/` via `core/engine/simulation.ts`) with the gate in the path, at batch sizes 1
// (one candidate at a time), 2, 4 and 8, against the same plans without a gate. Each gate run
// takes a fixed time; with one culprit, a task's first attempt breaks the build whenever it is in
// the stack (its retry is compatible), as in issue 13's `greet()`/`hello()` case. What is counted:
// gate runs per integrated task, the total time in the gate, the culprit's extra runs, and the
// makespan next to the run without a gate.

import type { Plan } from '../src/core/plan/plan.ts';
import { simulateRun, SIMULATION_DEFAULTS } from '../src/core/engine/simulation.ts';
import { randomDurations, randomPlan, rng } from './random.ts';
import { mean, progress, quantile, table } from './timing.ts';

export const GATE_BATCHES = [1, 2, 4, 8];
export const GATE_SEEDS = 40;

export interface GateFigures {
  makespan: number;
  gateRuns: number;
  gateMs: number;
  integrated: number;
  /** Tasks that ended failed (a culprit's retries ran out): none is expected here. */
  failed: number;
}

/**
 * Run `plan` (every attempt completes, taking `durations[i]`) with `concurrency` workers and the
 * gate at `batchSize` (null: no gate). Each gate run takes `gateMs`; a stack fails while it holds
 * the first attempt of `culprit`.
 */
export function simulateGate(
  plan: Plan,
  durations: readonly number[],
  options: { concurrency: number; batchSize: number | null; gateMs: number; culprit: number | null },
): GateFigures {
  const fresh: Plan = { ...plan, tasks: plan.tasks.map((t) => ({ ...t, status: 'pending' })) };
  // The attempt a task's candidate comes from: its latest.
  const latest = new Map<number, number>();
  const broken = (task: number) => task === options.culprit && latest.get(task) === 1;
  const trace = simulateRun(
    fresh,
    {
      ...SIMULATION_DEFAULTS,
      concurrency: options.concurrency,
      schedule: 'continuous',
      gate: options.batchSize === null ? null : { batchSize: options.batchSize },
    },
    (task, attempt) => {
      latest.set(task, attempt);
      return { durationMs: durations[task]!, report: 'COMPLETED' };
    },
    undefined,
    (segment, integrated) => ({ durationMs: options.gateMs, passed: ![...integrated, ...segment].some(broken) }),
  );
  if (trace.state.stop?.reason !== 'all-done' && trace.state.stop?.reason !== 'failures')
    throw new Error(`gate bench: the run ended with ${trace.state.stop?.reason}`);
  const failed = trace.state.plan.tasks.filter((t) => t.status === 'failed').length;
  return {
    makespan: trace.makespan,
    gateRuns: trace.gateRuns.length,
    gateMs: trace.gateRuns.reduce((n, g) => n + g.end - g.start, 0),
    integrated: trace.state.plan.tasks.filter((t) => t.status === 'completed').length,
    failed,
  };
}

interface Shape {
  name: string;
  plan: (seed: number) => Plan;
}

const SHAPES: Shape[] = [
  // As real plans look: blockers among the 8 tasks before, up to 3 of them.
  { name: 'chained', plan: (seed) => randomPlan({ tasks: 20, seed, window: 8, maxDeps: 3 }) },
  // Independent tasks: the most candidates waiting at once, where batching matters most.
  { name: 'wide', plan: (seed) => randomPlan({ tasks: 20, seed, maxDeps: 0 }) },
];

/** Every task writes files of its own: the bench measures the gate, not overlaps. */
const disjoint = (plan: Plan): Plan => ({
  ...plan,
  tasks: plan.tasks.map((t, i) => ({ ...t, metadata: { ...t.metadata, files: { create: [`own/t${i}.ts`], modify: [] }, reads: [] } })),
});

export function benchGate(seeds = GATE_SEEDS): string {
  const median = 1000; // a task's median duration, in simulated ms
  const rows: string[][] = [];
  const perBatch = new Map<number, { slower: number[]; runsPerTask: number[] }>();
  for (const shape of SHAPES) {
    for (const concurrency of [4, 8]) {
      for (const gateShare of [0.1, 0.5]) {
        const gateMs = gateShare * median;
        for (const culprit of [false, true]) {
          progress(`gate simulation: ${shape.name}, P=${concurrency}, gate ${gateShare}× a task, ${culprit ? 'one culprit' : 'no culprit'}`);
          const samples = Array.from({ length: seeds }, (_, s) => {
            const seed = 9100 + 37 * s + (shape.name === 'wide' ? 5000 : 0);
            const plan = disjoint(shape.plan(seed));
            const durations = randomDurations(plan.tasks.length, seed).map((d) => d * median);
            const bad = culprit ? Math.floor(rng(seed + 1)() * plan.tasks.length) : null;
            const without = simulateGate(plan, durations, { concurrency, batchSize: null, gateMs, culprit: null }).makespan;
            return { plan, durations, bad, without };
          });
          for (const batchSize of GATE_BATCHES) {
            const runsPerTask: number[] = [];
            const gateTime: number[] = [];
            const slower: number[] = [];
            let failed = 0;
            for (const { plan, durations, bad, without } of samples) {
              const f = simulateGate(plan, durations, { concurrency, batchSize, gateMs, culprit: bad });
              runsPerTask.push(f.gateRuns / Math.max(1, f.integrated));
              gateTime.push(f.gateMs / median);
              slower.push(f.makespan / without - 1);
              failed += f.failed;
            }
            const agg = perBatch.get(batchSize) ?? { slower: [], runsPerTask: [] };
            agg.slower.push(...slower);
            agg.runsPerTask.push(...runsPerTask);
            perBatch.set(batchSize, agg);
            rows.push([
              shape.name,
              String(concurrency),
              `${gateShare}×`,
              culprit ? 'one' : 'none',
              String(batchSize),
              mean(runsPerTask).toFixed(2),
              mean(gateTime).toFixed(1),
              `${(mean(slower) * 100).toFixed(1)}%`,
              `${(quantile(slower, 0.9) * 100).toFixed(1)}%`,
              String(failed),
            ]);
          }
        }
      }
    }
  }
  const summary = GATE_BATCHES.map((b) => {
    const agg = perBatch.get(b)!;
    return [String(b), mean(agg.runsPerTask).toFixed(2), `${(mean(agg.slower) * 100).toFixed(1)}%`];
  });
  return [
    `${seeds} random 20-task plans per row (every task writes files of its own), task durations lognormal with median 1 (σ = 0.8),`,
    'P workers, the continuous policy. A gate run takes 0.1× or 0.5× the median task. "one culprit": one random task\'s',
    'first attempt breaks the build whenever it is in the stack; its retry is compatible. Gate time is in median tasks;',
    '"slower" is makespan with the gate ÷ makespan of the same plan without one − 1 (mean, 90th percentile).',
    '"failed": tasks that ended failed over all plans of the row (a culprit is retried, so 0 is expected).',
    '',
    table(['plan', 'P', 'gate', 'culprit', 'batch', 'runs / task', 'gate time', 'slower', 'p90', 'failed'], rows, [
      'l',
      'r',
      'r',
      'l',
      'r',
      'r',
      'r',
      'r',
      'r',
      'r',
    ]),
    '',
    'Over all rows, by batch size:',
    '',
    table(['batch', 'runs / task', 'slower'], summary, ['r', 'r', 'r']),
  ].join('\n');
}
