// `plan check` on very large plans: the real command as a person runs it (a plan committed in a
// git repository, so git's ignore check runs too), wall time, CPU time and peak memory from
// /usr/bin/time. Validation computes cycles and file overlaps; both must stay near linear in the
// number of tasks when tasks share nothing, and exact when they do.
//   - chain: task i blocked by i − 1; wide: no blockers; every task creates a file of its own;
//   - random: the core section's generator (blockers among the 20 tasks before, shared files and
//     directories): a denser plan, with real overlaps;
//   - chain, one shared file: the chain where every task also modifies one file, so every pair of
//     tasks shares a written path and is compared (none overlaps: they are all ordered).
// The bundle is the committed one: run `npm run build` first to measure the current sources.

import { existsSync } from 'node:fs';
import type { Plan } from '../src/core/plan/plan.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { writePlan } from '../test/support/plans.ts';
import { randomPlan, scalePlan } from './random.ts';
import { medianCells, planToolRuns, type Sample, timed } from './startup.ts';
import { progress, table } from './timing.ts';

interface ScaleCase {
  name: string;
  tasks: number;
  plan: () => Plan;
}

export const SCALE_CASES: ScaleCase[] = [
  { name: 'chain', tasks: 5_000, plan: () => scalePlan('chain', 5_000) },
  { name: 'wide', tasks: 5_000, plan: () => scalePlan('wide', 5_000) },
  { name: 'chain', tasks: 20_000, plan: () => scalePlan('chain', 20_000) },
  { name: 'wide', tasks: 20_000, plan: () => scalePlan('wide', 20_000) },
  { name: 'random', tasks: 20_000, plan: () => randomPlan({ tasks: 20_000, seed: 21_000 }) },
  { name: 'chain, one shared file', tasks: 20_000, plan: () => scalePlan('chain', 20_000, { shared: 'shared.txt' }) },
];

/**
 * Median of up to `reps` runs of `plan check` on each case, by each way of running the plan
 * tool; a case stops repeating once it has taken 20 s (a slow build's runs are long).
 */
export async function benchScale(o: { reps?: number; cases?: readonly ScaleCase[]; bundle?: string } = {}): Promise<string> {
  const runs = planToolRuns(o.bundle).filter((run) => existsSync(run.script));
  const reps = o.reps ?? 3;
  const rows: string[][] = [];
  for (const c of o.cases ?? SCALE_CASES) {
    // The shared file the last case's tasks modify is in the repository, as a file a plan modifies is.
    const repo = await tempGitRepo({ 'README.md': '# bench\n', '.gitignore': 'node_modules/\n*.log\n', 'shared.txt': 'shared\n' });
    try {
      const path = await writePlan(repo.dir, c.plan());
      await repo.git(['add', '-A']);
      await repo.git(['commit', '-q', '-m', 'plan']);
      for (const run of runs) {
        progress(`scale: ${c.name}, ${c.tasks} tasks, ${run.name}`);
        const samples: Sample[] = [];
        let spentMs = 0;
        while (samples.length < reps && spentMs < 20_000) {
          const sample = timed(run.args(['check', '--plan', path]), repo.dir);
          samples.push(sample);
          spentMs += sample.wallMs;
        }
        rows.push([c.name, c.tasks.toLocaleString('en-US'), run.name, String(samples.length), ...medianCells(samples)]);
      }
    } finally {
      await repo.cleanup();
    }
  }
  const missing = planToolRuns(o.bundle).filter((run) => !existsSync(run.script));
  return [
    table(['plan', 'tasks', 'runs', 'samples', 'wall ms (median)', 'CPU ms (median)', 'peak memory'], rows, ['l', 'r', 'l', 'r', 'r', 'r', 'r']),
    ...missing.map((run) => `\nNot measured: no ${run.script} (\`npm run build\` makes the bundle).`),
  ].join('\n');
}
