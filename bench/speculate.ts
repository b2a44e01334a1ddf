// Speculative execution: dependants built on their blockers' candidates while the gate tests
// them. Two parts:
//   - simulated, with the engine's own step function (`core/engine/simulation.ts`): a chain of 6 tasks
//     and random chained 20-task plans, the gate taking 0.1, 0.5 and 1.0 × a task, no culprit or
//     10 % of first attempts breaking the build, at --speculate 0 (off), 1, 2, 3 and 16. Figures:
//     makespan over (critical-path work + one gate run) for the chain, over the run without
//     speculation for random plans; worker time wasted by cancelled speculation (share of all
//     worker time); cancellations per run.
//   - the real orchestrator (`scripts/execute.ts` with the fake worker): a chain of 6 tasks of
//     2 s each under a gate of 1 s (`sleep 1`), median of 5 runs per setting, over (12 s + 1 s).

import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Plan, Task } from '../src/core/plan/plan.ts';
import { type SimulatedInterval, simulateRun, SIMULATION_DEFAULTS } from '../src/core/engine/simulation.ts';
import { executeScript, fakeWorker, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../test/support/plans.ts';
import { randomDurations, randomPlan, rng } from './random.ts';
import { mean, median, progress, table } from './timing.ts';

export const SPECULATE_LEVELS = [0, 1, 2, 3, 16];
export const SPECULATE_SEEDS = 40;

interface Figures {
  makespan: number;
  /** Worker time of attempts that were cancelled. */
  wasted: number;
  /** All worker time. */
  work: number;
  cancelled: number;
  failed: number;
}

/** Run `plan` with a gate of `gateMs` per run; a task in `culprits` breaks the build on its first attempt whenever it is in the stack. */
export function simulateSpeculation(
  plan: Plan,
  durations: readonly number[],
  o: { concurrency: number; gateMs: number; culprits: ReadonlySet<number>; speculate: number },
): Figures {
  const fresh: Plan = { ...plan, tasks: plan.tasks.map((t) => ({ ...t, status: 'pending' })) };
  const latest = new Map<number, number>();
  const broken = (task: number) => o.culprits.has(task) && latest.get(task) === 1;
  const trace = simulateRun(
    fresh,
    { ...SIMULATION_DEFAULTS, concurrency: o.concurrency, schedule: 'continuous', gate: { batchSize: 4 }, speculate: o.speculate },
    (task, attempt) => {
      latest.set(task, attempt);
      return { durationMs: durations[task]!, report: 'COMPLETED' };
    },
    undefined,
    (segment, integrated) => ({ durationMs: o.gateMs, passed: ![...integrated, ...segment].some(broken) }),
  );
  // The journal says what was cancelled, in any stage: a worker stopped mid-run (its interval ends
  // there), or work that had finished, been verified and queued (its whole run is wasted). The
  // k-th start is the k-th interval.
  const running = new Map<number, SimulatedInterval>();
  const cancelled: SimulatedInterval[] = [];
  let starts = 0;
  for (const event of trace.events) {
    if (event.type === 'task-started') running.set(event.task, trace.intervals[starts++]!);
    if (event.type === 'speculation-cancelled') cancelled.push(running.get(event.task)!);
  }
  return {
    makespan: trace.makespan,
    wasted: cancelled.reduce((n, i) => n + (i.end - i.start), 0),
    work: trace.intervals.reduce((n, i) => n + (i.end - i.start), 0),
    cancelled: cancelled.length,
    failed: trace.state.plan.tasks.filter((t) => t.status === 'failed').length,
  };
}

const chainTask = (i: number, n: number): Task => ({
  subject: `level ${i}`,
  description: `level ${i} of ${n}`,
  status: 'pending',
  blockedBy: i === 0 ? [] : [i - 1],
  metadata: { type: 'implementation', files: { create: [`chain/t${i}.ts`], modify: [] } },
});
const chainPlan = (n: number): Plan => ({ schemaVersion: 3, goal: `a chain of ${n}`, tasks: Array.from({ length: n }, (_, i) => chainTask(i, n)) });

/** Every task writes a file of its own: the bench measures the gate and speculation, not overlaps. */
const disjoint = (plan: Plan): Plan => ({
  ...plan,
  tasks: plan.tasks.map((t, i) => ({ ...t, metadata: { ...t.metadata, files: { create: [`own/t${i}.ts`], modify: [] }, reads: [] } })),
});

export function benchSpeculationSimulated(seeds = SPECULATE_SEEDS): string {
  const task = 1000;
  const rows: string[][] = [];
  for (const shape of ['chain of 6', 'random, chained'] as const) {
    for (const ratio of [0.1, 0.5, 1.0]) {
      const gateMs = ratio * task;
      for (const culpritRate of [0, 0.1]) {
        progress(`speculation simulation: ${shape}, gate ${ratio}× a task, ${culpritRate * 100}% culprits`);
        const samples = Array.from({ length: shape === 'chain of 6' && culpritRate === 0 ? 1 : seeds }, (_, s) => {
          const seed = 7300 + 41 * s;
          const plan = shape === 'chain of 6' ? chainPlan(6) : disjoint(randomPlan({ tasks: 20, seed, window: 8, maxDeps: 3 }));
          const durations = shape === 'chain of 6' ? plan.tasks.map(() => task) : randomDurations(plan.tasks.length, seed).map((d) => d * task);
          const r = rng(seed + 3);
          const culprits = new Set(plan.tasks.flatMap((_, i) => (r() < culpritRate ? [i] : [])));
          return { plan, durations, culprits };
        });
        const base = samples.map((s) => simulateSpeculation(s.plan, s.durations, { concurrency: 4, gateMs, culprits: s.culprits, speculate: 0 }).makespan);
        for (const speculate of SPECULATE_LEVELS) {
          const figures = samples.map((s) => simulateSpeculation(s.plan, s.durations, { concurrency: 4, gateMs, culprits: s.culprits, speculate }));
          const versus =
            shape === 'chain of 6'
              ? `${mean(figures.map((f) => f.makespan / (6 * task + gateMs))).toFixed(2)}× chain + gate`
              : `${(mean(figures.map((f, k) => f.makespan / base[k]! - 1)) * 100).toFixed(1)}% vs off`;
          rows.push([
            shape,
            `${ratio}×`,
            `${culpritRate * 100}%`,
            speculate === 0 ? 'off' : String(speculate),
            versus,
            `${(mean(figures.map((f) => f.wasted / Math.max(1, f.work))) * 100).toFixed(1)}%`,
            mean(figures.map((f) => f.cancelled)).toFixed(2),
            String(figures.reduce((n, f) => n + f.failed, 0)),
          ]);
        }
      }
    }
  }
  return [
    `Simulated with the engine's step function: tasks of 1 unit (random plans: lognormal around it), P = 4, gate batch 4; ${seeds} seeds for random plans and culprit rows.`,
    '',
    table(['plan', 'gate', 'culprits', '--speculate', 'makespan', 'wasted worker time', 'cancellations / run', 'failed'], rows, [
      'l',
      'r',
      'r',
      'r',
      'r',
      'r',
      'r',
      'r',
    ]),
  ].join('\n');
}

/** The real orchestrator on a chain of `n` fake tasks of `sleepMs` under a gate of `sleep gateSeconds`; run-finished durations in ms. */
async function realChain(n: number, sleepMs: number, gateSeconds: number, args: string[], reps: number): Promise<number[]> {
  const plan = makePlan(
    Array.from({ length: n }, (_, i) =>
      fakeTask(`c${i}`, { blockedBy: i === 0 ? [] : [i - 1], create: [`chain/t${i}.txt`], fake: { sleepMs, write: { [`chain/t${i}.txt`]: `level ${i}\n` } } }),
    ),
    { goal: `bench: a chain of ${n}`, context: { testCommand: `sleep ${gateSeconds}` } },
  );
  const out: number[] = [];
  for (let k = 0; k < reps; k++) {
    const repo = await tempGitRepo({ 'README.md': '# bench\n' });
    try {
      await writePlan(repo.dir, plan);
      const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--sandbox', 'off', '--no-probe', ...args], {
        cwd: repo.dir,
        reject: false,
        env: { NO_COLOR: '1' },
        stdin: 'ignore',
        timeout: 300_000,
      });
      if (r.exitCode !== 0) throw new Error(`execute.ts ${args.join(' ')} exited ${r.exitCode}:\n${r.stdout}\n${r.stderr}`);
      const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; durationMs?: number });
      out.push(events.find((e) => e.type === 'run-finished')!.durationMs!);
    } finally {
      await repo.cleanup();
    }
  }
  return out;
}

export async function benchSpeculationReal(o: { reps?: number } = {}): Promise<string> {
  const reps = o.reps ?? 5;
  const n = 6;
  const sleepMs = 2000;
  const gateSeconds = 1;
  const ideal = n * sleepMs + gateSeconds * 1000;
  const rows: string[][] = [];
  for (const [name, args] of [
    ['--no-speculate', ['--no-speculate']],
    ['--speculate 1 (default)', ['--speculate', '1']],
    ['--speculate 2', ['--speculate', '2']],
    ['--speculate 5', ['--speculate', '5']],
  ] as const) {
    progress(`speculation, real orchestrator: chain of ${n} × ${sleepMs} ms, gate sleep ${gateSeconds}, ${name}, ${reps} runs`);
    const runs = await realChain(n, sleepMs, gateSeconds, [...args], reps);
    rows.push([name, `${(median(runs) / 1000).toFixed(2)} s`, `${(median(runs) / ideal).toFixed(3)}×`, runs.map((r) => (r / 1000).toFixed(1)).join(', ')]);
  }
  return [
    `\`scripts/execute.ts\` with the fake worker: a chain of ${n} tasks of ${sleepMs / 1000} s, \`context.testCommand: sleep ${gateSeconds}\` (the gate, on the starting commit too), concurrency 4, median of ${reps} runs of the run's own duration (run-finished), over chain work + one gate run (${ideal / 1000} s).`,
    '',
    table(['setting', 'run', 'over chain + gate', 'runs (s)'], rows, ['l', 'r', 'r', 'l']),
  ].join('\n');
}
