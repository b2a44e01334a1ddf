// The real orchestrator's overhead: scripts/execute.ts as a child process, as a person runs it,
// with the fake worker (test/fixtures/fake-worker.mjs, a node script shaped like `claude -p`)
// instead of Claude Code, so every millisecond not spent sleeping in a worker is foreman's
// (spawning, stream parsing, verification, git commits, plan writes) or node's start-up.

import { execa } from 'execa';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Plan } from '../src/core/plan/plan.ts';
import { executeScript, fakeWorker, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../test/support/plans.ts';
import { randInt, rng } from './random.ts';
import { lowerBound, simulate } from './schedule.ts';
import { median, ms, progress, table } from './timing.ts';

const SHARED = ['shared/a.txt', 'shared/b.txt', 'shared/c.txt'];

/**
 * A fixed random 20-task plan: up to 2 blockers among the 6 tasks before, every task creates a
 * file of its own, about a quarter of them also append to one of 3 shared files (overlaps).
 */
export function benchPlan(tasks: number, sleepMs: number, seed = 20): Plan {
  const r = rng(seed);
  return makePlan(
    Array.from({ length: tasks }, (_, i) => {
      const deps = new Set<number>();
      if (i > 0) for (let k = randInt(r, 0, 2); k > 0; k--) deps.add(randInt(r, Math.max(0, i - 6), i - 1));
      const own = `out/t${i}.txt`;
      const shared = r() < 0.25 ? SHARED[randInt(r, 0, SHARED.length - 1)] : undefined;
      return fakeTask(`t${i}`, {
        blockedBy: [...deps],
        create: [own],
        modify: shared ? [shared] : [],
        fake: { sleepMs, write: { [own]: `task ${i}\n` }, ...(shared ? { append: { [shared]: `task ${i}\n` } } : {}) },
      });
    }),
    { goal: `bench: ${tasks} fake tasks of ${sleepMs} ms` },
  );
}

interface JournalEvent {
  type: string;
  at: string;
  task?: number;
  tasks?: number[];
  durationMs?: number;
}

interface Measured {
  wallMs: number;
  /** run-finished.durationMs: from the lock to the end, start-up of node and tsx excluded. */
  runMs: number;
  events: JournalEvent[];
}

async function runOnce(plan: Plan, args: string[]): Promise<Measured> {
  const repo = await tempGitRepo({ 'README.md': '# bench\n', ...Object.fromEntries(SHARED.map((f) => [f, 'shared\n'])) });
  try {
    await writePlan(repo.dir, plan);
    const t0 = performance.now();
    const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, ...args], {
      cwd: repo.dir,
      reject: false,
      env: { NO_COLOR: '1' },
      stdin: 'ignore',
      timeout: 120_000,
    });
    const wallMs = performance.now() - t0;
    if (r.exitCode !== 0) throw new Error(`execute.ts ${args.join(' ')} exited ${r.exitCode}:\n${r.stdout}\n${r.stderr}`);
    if (args.includes('--dry-run')) return { wallMs, runMs: 0, events: [] };
    const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as JournalEvent);
    const finished = events.find((e) => e.type === 'run-finished');
    return { wallMs, runMs: finished?.durationMs ?? Number.NaN, events };
  } finally {
    await repo.cleanup();
  }
}

const at = (events: JournalEvent[], type: string) => Date.parse(events.find((e) => e.type === type)!.at);

/** Per round commit: ms from the last task-finished of its tasks to round-committed (the commit and plan write). */
function commitTimes(events: JournalEvent[]): number[] {
  const finished = new Map<number, number>();
  const out: number[] = [];
  for (const e of events) {
    if (e.type === 'task-finished' && e.task !== undefined) finished.set(e.task, Date.parse(e.at));
    if (e.type === 'round-committed' && e.tasks && e.tasks.length > 0) out.push(Date.parse(e.at) - Math.max(...e.tasks.map((t) => finished.get(t) ?? 0)));
  }
  return out;
}

/** The fake worker alone (in a scratch directory, where it writes its file): node start-up, read the prompt, print stream-json, exit. */
async function workerAlone(prompt: string): Promise<number> {
  const scratch = await mkdtemp(join(tmpdir(), 'foreman-bench-'));
  try {
    const t0 = performance.now();
    await execa(fakeWorker, ['-p', '--output-format', 'stream-json', '--verbose'], { input: prompt, cwd: scratch });
    return performance.now() - t0;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

export async function benchOrchestrator(o: { reps?: number; tasks?: number; sleepMs?: number; concurrency?: number } = {}): Promise<string> {
  const reps = o.reps ?? 3;
  const n = o.tasks ?? 20;
  const sleepMs = o.sleepMs ?? 200;
  const p = o.concurrency ?? 4;
  const plan = benchPlan(n, sleepMs);
  const durations = plan.tasks.map(() => sleepMs);
  const lb = lowerBound(plan, durations, p);

  const rows: string[][] = [];
  const commits: string[] = [];
  const startup: number[] = [];
  for (let k = 0; k < reps; k++) startup.push((await runOnce(plan, ['--dry-run'])).wallMs);
  const startMs = median(startup);

  for (const policy of ['continuous', 'rounds'] as const) {
    progress(`orchestrator: ${n} tasks, --schedule ${policy}, ${reps} runs`);
    const runs: Measured[] = [];
    for (let k = 0; k < reps; k++) runs.push(await runOnce(plan, ['--concurrency', String(p), '--schedule', policy]));
    const ideal = simulate(plan, durations, p, policy);
    const wall = median(runs.map((r) => r.wallMs));
    const run = median(runs.map((r) => r.runMs));
    const perRun = runs.map((r) => commitTimes(r.events));
    commits.push(
      `${policy}: ${perRun[0]!.length} commits, median ${ms(median(perRun.flat()))} ms each, ${ms(median(perRun.map((c) => c.reduce((a, b) => a + b, 0))))} ms per run`,
    );
    rows.push([
      policy,
      ms(wall),
      ms(run),
      `${ms(ideal.makespan)}${policy === 'rounds' ? ` (${ideal.rounds} rounds)` : ''}`,
      ms(run - ideal.makespan),
      ms((run - ideal.makespan) / n),
      `${(run / lb).toFixed(2)}×`,
    ]);
  }

  progress(`orchestrator: 1-task plan, 0 ms worker, ${reps + 2} runs`);
  const one = benchPlan(1, 0);
  const single: Measured[] = [];
  for (let k = 0; k < reps + 2; k++) single.push(await runOnce(one, []));
  const alone: number[] = [];
  for (let k = 0; k < reps + 2; k++) alone.push(await workerAlone(`${one.tasks[0]!.prompt}\n`));
  const roundTrip = median(single.map((r) => at(r.events, 'round-committed') - at(r.events, 'task-started')));
  const toFinish = median(single.map((r) => at(r.events, 'task-finished') - at(r.events, 'task-started')));
  const singleWall = median(single.map((r) => r.wallMs));

  return [
    `${n} tasks (fixed random DAG, ${plan.tasks.filter((t) => t.metadata.files.modify.length > 0).length} of them appending to 3 shared files), every worker sleeps ${sleepMs} ms, --concurrency ${p};`,
    `median of ${reps} runs. "ideal" is the same policy simulated with zero overhead; the lower bound is max(critical path, work / P) = ${ms(lb)} ms.`,
    '',
    table(['schedule', 'wall ms', 'in-process ms', 'ideal ms', 'overhead ms', 'per task', 'vs lower bound'], rows, ['l', 'r', 'r', 'r', 'r', 'r', 'r']),
    '',
    `- commits (task-finished → round-committed, queueing included): ${commits.join('; ')}`,
    `- start-up (execute.ts --dry-run on the same plan: node + tsx + load + validate): ${ms(startMs)} ms wall`,
    `- one worker round-trip (1-task plan, 0 ms worker; journal task-started → round-committed): ${ms(roundTrip)} ms, of which task-started → task-finished (spawn, run, parse, verify) ${ms(toFinish)} ms; the fake worker alone (node start-up included) takes ${ms(median(alone))} ms`,
    `- the whole 1-task run: ${ms(singleWall)} ms wall, ${ms(singleWall - startMs)} ms more than --dry-run`,
  ].join('\n');
}
