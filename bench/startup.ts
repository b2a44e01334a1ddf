// The plan tool's start-up, as the skills pay it at every step: the built plugin's launcher
// (plugin/bin/foreman, what a skill's step runs), its bundle alone (plugin/dist/plan.mjs with plain
// node), a checkout's launcher (bin/foreman: its bundle of the sources, made again when one
// changed) and the sources under tsx (what that launcher ran before). Wall time and CPU time
// (user + system) of the whole process, and its peak memory, medians of several runs.
//   - `plan status` on a small plan (test/plans/valid/realistic.json, 8 tasks);
//   - `plan next` on a 200-task plan in a fresh git repository each run (it marks tasks in
//     progress and writes their prompts), the plan tool's heaviest step of a round.
// The bundle is the committed one: run `npm run build` first to measure the current sources.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot, tsxLoader } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { writePlan } from '../test/support/plans.ts';
import { benchPlan } from './orchestrator.ts';
import { median, ms, progress, table } from './timing.ts';

const bundle = join(repoRoot, 'plugin/dist/plan.mjs');
const launcher = join(repoRoot, 'plugin/bin/foreman');
const sources = join(repoRoot, 'scripts/plan.ts');
const smallPlan = join(repoRoot, 'test/plans/valid/realistic.json');

export interface Sample {
  wallMs: number;
  cpuMs: number;
  maxRssKb: number;
}

/** One run of `program <args>` (node unless said) in `cwd`, timed by /usr/bin/time when present (for CPU and memory). */
export function timed(args: string[], cwd: string, program: string = process.execPath): Sample {
  const useTime = existsSync('/usr/bin/time');
  const t0 = performance.now();
  // Its output is not kept: a plan check listing thousands of warnings would pass spawnSync's
  // buffer limit, and the process would be killed mid-run.
  const options = { cwd, encoding: 'utf8' as const, stdio: ['ignore', 'ignore', 'pipe'] as ('ignore' | 'pipe')[] };
  const r = useTime ? spawnSync('/usr/bin/time', ['-f', '%U %S %M', program, ...args], options) : spawnSync(program, args, options);
  const wallMs = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${program} ${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-500)}`);
  if (!useTime) return { wallMs, cpuMs: Number.NaN, maxRssKb: Number.NaN };
  const [user, system, rss] = r.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
  return { wallMs, cpuMs: (user! + system!) * 1000, maxRssKb: rss! };
}

/** The median wall time, CPU time and peak memory of `samples`, as table cells. */
export const medianCells = (samples: readonly Sample[]): string[] => {
  const mid = (f: (s: Sample) => number) => median(samples.map(f));
  return [ms(mid((s) => s.wallMs)), ms(mid((s) => s.cpuMs)), `${Math.round(mid((s) => s.maxRssKb) / 1024)} MB`];
};

/** A way of running the plan tool: `program` (node unless said) with `args(the tool's arguments)`. */
export interface PlanToolRun {
  name: string;
  /** The file the run needs (it is skipped when the file is missing). */
  script: string;
  program?: string;
  args: (toolArgs: string[]) => string[];
}

/** The plan tool run two ways: a built bundle with plain node, and the sources under tsx. */
export const planToolRuns = (bundlePath = bundle): PlanToolRun[] => [
  {
    name: `bundle (node ${bundlePath.startsWith(repoRoot) ? relative(repoRoot, bundlePath) : bundlePath})`,
    script: bundlePath,
    args: (a) => [bundlePath, ...a],
  },
  { name: 'sources (node --import tsx scripts/plan.ts)', script: sources, args: (a) => ['--import', tsxLoader, sources, ...a] },
];

/** A step run by a launcher (`<launcher> plan …`), which finds node and starts a bundle. */
const launcherRun = (name: string, launcherPath: string): PlanToolRun => ({ name, script: launcherPath, program: launcherPath, args: (a) => ['plan', ...a] });

/** What a skill's step runs (the plugin's launcher), and what a step runs from a checkout (its launcher, which bundles the sources again when one changed). */
const launcherRuns = [
  launcherRun('launcher (plugin/bin/foreman plan)', launcher),
  launcherRun('checkout launcher (bin/foreman plan)', join(repoRoot, 'bin/foreman')),
];

export async function benchStartup(o: { reps?: number } = {}): Promise<string> {
  if (!existsSync(bundle)) return `No bundle at ${bundle}: run \`npm run build\` first.`;
  const reps = o.reps ?? 7;
  const rows: string[][] = [];
  const plan = benchPlan(200, 0);
  for (const v of [...launcherRuns, ...planToolRuns()]) {
    progress(`startup: ${v.name}, plan status`);
    const status: Sample[] = [];
    for (let i = 0; i < reps; i++) status.push(timed(v.args(['status', '--plan', smallPlan]), repoRoot, v.program));
    progress(`startup: ${v.name}, plan next on 200 tasks`);
    const next: Sample[] = [];
    for (let i = 0; i < Math.max(3, Math.ceil(reps / 2)); i++) {
      const repo = await tempGitRepo({ 'README.md': '# bench\n', 'shared/a.txt': 'a\n', 'shared/b.txt': 'b\n', 'shared/c.txt': 'c\n' });
      try {
        await writePlan(repo.dir, plan);
        await repo.git(['add', '-A']);
        await repo.git(['commit', '-q', '-m', 'plan']);
        next.push(timed(v.args(['next', '--concurrency', '4']), repo.dir, v.program));
      } finally {
        await repo.cleanup();
      }
    }
    for (const [what, samples] of [
      ['plan status, 8 tasks', status],
      ['plan next, 200 tasks', next],
    ] as const) {
      rows.push([what, v.name, ...medianCells(samples)]);
    }
  }
  rows.sort((a, b) => a[0]!.localeCompare(b[0]!));
  const idle = timed(['-e', '0'], repoRoot);
  return [
    table(['command', 'runs', 'wall ms (median)', 'CPU ms (median)', 'peak memory'], rows, ['l', 'l', 'r', 'r', 'r']),
    '',
    `For scale: \`node -e 0\` took ${ms(idle.wallMs)} wall, ${ms(idle.cpuMs)} CPU here just now (a loaded machine inflates every wall time).`,
  ].join('\n');
}
