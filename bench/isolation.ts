// What isolation costs (issue 12): every attempt in a pooled git worktree, its work captured from
// the worktree, integrated onto refs/foreman/<planId> with plumbing, landed on the person's branch.
//
// Per-task orchestration overhead: N instant tasks (the fake worker sleeps 0 ms and writes one
// file) through scripts/execute.ts at --concurrency P, against spawning the same fake worker N
// times, P at a time, with nothing around it. The difference, divided by N, is what foreman adds
// per task: worktree reset and clean, prompt, stream parsing, capture, integration, plan writes,
// journal, landing. Git processes are counted by the run's own runner (`run-finished`'s
// `gitProcesses`) and, by command, with GIT_TRACE (each git process prints one
// `trace: built-in: git <command>` line; git's own child processes, such as clone's upload-pack,
// are in the trace and not in the runner's count).

import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Plan } from '../src/core/plan/plan.ts';
import { executeScript, fakeWorker, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../test/support/plans.ts';
import { median, ms, progress, table } from './timing.ts';

/**
 * CPU milliseconds (user + system) of this process's children that have ended and been waited
 * for, descendants included (Linux: /proc/self/stat, fields cutime and cstime, at 100 ticks a
 * second); null elsewhere. On a shared machine the wall times below move with the load; the CPU
 * a run's processes spend does not.
 */
function childrenCpuMs(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command name: state is field 3, so cutime (16) and cstime (17) are at 13 and 14.
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** The CPU `fn`'s child processes spend, and its wall time. */
async function measured<T>(fn: () => Promise<T>): Promise<{ value: T; cpuMs: number | null }> {
  const before = childrenCpuMs();
  const value = await fn();
  const after = childrenCpuMs();
  return { value, cpuMs: before === null || after === null ? null : after - before };
}

/** `tasks` independent instant tasks, each creating a file of its own. */
export function instantPlan(tasks: number): Plan {
  return makePlan(
    Array.from({ length: tasks }, (_, i) => fakeTask(`i${i}`, { create: [`out/i${i}.txt`], fake: { write: { [`out/i${i}.txt`]: `task ${i}\n` } } })),
    { goal: `bench: ${tasks} instant fake tasks` },
  );
}

/** The fake worker `count` times, `concurrency` at a time, each with its task's prompt, in a scratch directory: the floor. */
async function bareSpawns(plan: Plan, concurrency: number): Promise<number> {
  const scratch = await mkdtemp(join(tmpdir(), 'foreman-bench-bare-'));
  try {
    let next = 0;
    const t0 = performance.now();
    const lane = async () => {
      while (next < plan.tasks.length) {
        const task = plan.tasks[next++]!;
        await execa(fakeWorker, ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'sonnet', '--permission-mode', 'dontAsk'], {
          input: `${task.prompt}\n`,
          cwd: scratch,
        });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    return performance.now() - t0;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** execute.ts --dry-run on the plan: node, tsx, loading and validating, what a run spends before any task. */
async function dryRun(plan: Plan): Promise<void> {
  const repo = await tempGitRepo({ 'README.md': '# bench\n' });
  try {
    await writePlan(repo.dir, plan);
    const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--dry-run'], {
      cwd: repo.dir,
      reject: false,
      env: { NO_COLOR: '1' },
      stdin: 'ignore',
    });
    if (r.exitCode !== 0) throw new Error(`execute.ts --dry-run exited ${r.exitCode}: ${r.stderr.slice(-2000)}`);
  } finally {
    await repo.cleanup();
  }
}

interface EngineRun {
  /** run-finished.durationMs: the run itself, node and tsx start-up excluded. */
  runMs: number;
  wallMs: number;
  /** Git processes by command (`worktree`, `add`, `commit-tree`…), from GIT_TRACE. */
  git: Map<string, number>;
  /** The run's own count (`run-finished.gitProcesses`, its one git runner's). */
  counted: number;
}

async function engineRun(plan: Plan, concurrency: number): Promise<EngineRun> {
  const repo = await tempGitRepo({ 'README.md': '# bench\n' });
  const worktrees = await mkdtemp(join(tmpdir(), 'foreman-bench-worktrees-'));
  const trace = join(worktrees, 'git-trace.txt');
  try {
    await writePlan(repo.dir, plan);
    const t0 = performance.now();
    const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--concurrency', String(concurrency), '--no-probe'], {
      cwd: repo.dir,
      reject: false,
      env: { NO_COLOR: '1', FOREMAN_WORKTREES: join(worktrees, 'pool'), GIT_TRACE: trace },
      stdin: 'ignore',
      timeout: 600_000,
    });
    const wallMs = performance.now() - t0;
    if (r.exitCode !== 0) throw new Error(`execute.ts exited ${r.exitCode}:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
    const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; durationMs?: number; gitProcesses?: number });
    const git = new Map<string, number>();
    for (const match of (await readFile(trace, 'utf8').catch(() => '')).matchAll(/trace: built-in: git (.*)$/gm)) {
      // The command word: the first argument that is not an option (or an option's value after -c / -C).
      const words = match[1]!.split(' ').map((word) => word.replace(/^'|'$/g, ''));
      let command = '?';
      for (let i = 0; i < words.length; i++) {
        if (words[i] === '-c' || words[i] === '-C') i++;
        else if (!words[i]!.startsWith('-')) {
          command = words[i]!;
          break;
        }
      }
      git.set(command, (git.get(command) ?? 0) + 1);
    }
    const finished = events.find((e) => e.type === 'run-finished');
    return { runMs: finished?.durationMs ?? Number.NaN, wallMs, git, counted: finished?.gitProcesses ?? Number.NaN };
  } finally {
    await repo.cleanup();
    await rm(worktrees, { recursive: true, force: true });
  }
}

/** What foreman may add per task over a bare spawn, in ms (the git layer's issue). */
const PER_TASK_TARGET_MS = 20;

export async function benchIsolation(o: { tasks?: number; concurrency?: number; reps?: number } = {}): Promise<string> {
  const n = o.tasks ?? 200;
  const p = o.concurrency ?? 8;
  const reps = o.reps ?? 3;
  const plan = instantPlan(n);

  const bare: number[] = [];
  const bareCpu: number[] = [];
  const engine: EngineRun[] = [];
  const engineCpu: number[] = [];
  const startCpu: number[] = [];
  // Interleaved, so a change in the machine's load hits both alike.
  for (let k = 0; k < reps; k++) {
    progress(`isolation: ${n} bare spawns of the fake worker, ${p} at a time (${k + 1}/${reps})`);
    const spawned = await measured(() => bareSpawns(plan, p));
    bare.push(spawned.value);
    if (spawned.cpuMs !== null) bareCpu.push(spawned.cpuMs);
    progress(`isolation: ${n} instant tasks through execute.ts --concurrency ${p} (${k + 1}/${reps})`);
    const ran = await measured(() => engineRun(plan, p));
    engine.push(ran.value);
    if (ran.cpuMs !== null) engineCpu.push(ran.cpuMs);
    const started = await measured(() => dryRun(plan));
    if (started.cpuMs !== null) startCpu.push(started.cpuMs);
  }
  const bareMs = median(bare);
  const runMs = median(engine.map((r) => r.runMs));
  const perTask = (runMs - bareMs) / n;
  // CPU: the run's processes (execute.ts, its git processes, its workers) less its start-up and less the same workers spawned bare.
  const cpuPerTask = bareCpu.length === reps && engineCpu.length === reps ? (median(engineCpu) - median(startCpu) - median(bareCpu)) / n : null;
  const git = engine[0]!.git;
  const gitTotal = [...git.values()].reduce((a, b) => a + b, 0);
  const byCommand = [...git.entries()].sort((a, b) => b[1] - a[1]).map(([command, count]) => `${command} ${(count / n).toFixed(2)}`);
  const cpuRows =
    cpuPerTask === null
      ? []
      : [
          ['CPU: the bare spawns', ms(median(bareCpu)), ms(median(bareCpu) / n)],
          [
            'CPU: execute.ts and everything it ran, less its start-up (--dry-run)',
            ms(median(engineCpu) - median(startCpu)),
            ms((median(engineCpu) - median(startCpu)) / n),
          ],
          ['**CPU foreman adds**', ms(median(engineCpu) - median(startCpu) - median(bareCpu)), `**${ms(cpuPerTask)}**`],
        ];

  return [
    `${n} independent instant tasks (the fake worker sleeps 0 ms and writes one file), --concurrency ${p}, no probe; median of ${reps} runs, interleaved.`,
    '',
    table(
      ['what', 'ms', 'per task'],
      [
        [`bare: the fake worker spawned ${n} times, ${p} at a time`, ms(bareMs), ms(bareMs / n)],
        ['execute.ts: worktrees, capture, integration, landing (in-process)', ms(runMs), ms(runMs / n)],
        ['execute.ts wall (node + tsx start-up included)', ms(median(engine.map((r) => r.wallMs))), ''],
        ['**overhead of foreman over the bare spawns**', ms(runMs - bareMs), `**${ms(perTask)}**`],
        ...cpuRows,
      ],
      ['l', 'r', 'r'],
    ),
    '',
    `- target ≤ ${PER_TASK_TARGET_MS} ms per task: ${perTask <= PER_TASK_TARGET_MS ? 'met' : 'missed'} in wall time${cpuPerTask === null ? '' : `; in CPU, ${cpuPerTask <= PER_TASK_TARGET_MS ? 'met' : 'missed'} (on a loaded machine, the CPU figure is the steadier one)`}`,
    `- git processes: ${engine[0]!.counted} in the run as its runner counted them, ${(engine[0]!.counted / n).toFixed(2)} per task (target ≤ 6: ${engine[0]!.counted / n <= 6 ? 'met' : 'missed'}); GIT_TRACE saw ${gitTotal}; per task by command: ${byCommand.join(', ')}`,
  ].join('\n');
}
