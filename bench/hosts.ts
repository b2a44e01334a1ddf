// What an ssh host costs: scripts/execute.ts as a child process with the fake worker
// (test/fixtures/fake-worker.mjs) as the hosts' claude, on real OpenSSH (test/support/sshd.ts:
// two sshd on 127.0.0.1, as the hosts' tests use). Per-attempt overhead of a host's slot over a
// local one (the same plan on `local?slots=1` and on one host of 1 slot), and the makespan of a
// 24-task plan over 2 hosts × 2 slots against its lower bound max(critical path, work ÷ slots).

import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Plan } from '../src/core/plan/plan.ts';
import { executeScript, fakeWorker, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../test/support/plans.ts';
import { sshdMissing, startTestSshd } from '../test/support/sshd.ts';
import { randInt, rng } from './random.ts';
import { lowerBound } from './schedule.ts';
import { median, ms, progress, table } from './timing.ts';

/** Tasks of `sleepMs` each, every one writing a file of its own; with `chained`, up to 2 blockers among the 6 before. */
function hostPlan(tasks: number, sleepMs: number, chained: boolean, seed = 24): Plan {
  const r = rng(seed);
  return makePlan(
    Array.from({ length: tasks }, (_, i) => {
      const deps = new Set<number>();
      if (chained && i > 0) for (let k = randInt(r, 0, 2); k > 0; k--) deps.add(randInt(r, Math.max(0, i - 6), i - 1));
      const own = `out/t${i}.txt`;
      return fakeTask(`t${i}`, { blockedBy: [...deps], create: [own], fake: { sleepMs, write: { [own]: `task ${i}\n` } } });
    }),
    { goal: `bench: ${tasks} fake tasks of ${sleepMs} ms on hosts` },
  );
}

/** One run: the run's own duration (run-finished.durationMs). */
async function runOn(plan: Plan, hosts: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const repo = await tempGitRepo({ 'README.md': '# bench\n' });
  try {
    await writePlan(repo.dir, plan);
    const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--sandbox', 'off', ...hosts.flatMap((h) => ['--host', h])], {
      cwd: repo.dir,
      reject: false,
      env: { ...env, NO_COLOR: '1' },
      stdin: 'ignore',
      timeout: 600_000,
    });
    if (r.exitCode !== 0) throw new Error(`execute.ts on ${hosts.join(' ')} exited ${r.exitCode}:\n${r.stdout}\n${r.stderr}`);
    const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; durationMs?: number });
    return events.find((event) => event.type === 'run-finished')?.durationMs ?? Number.NaN;
  } finally {
    await repo.cleanup();
  }
}

export async function benchHosts(o: { reps?: number; quick?: boolean } = {}): Promise<string> {
  if (sshdMissing !== null) return `skipped: ${sshdMissing}`;
  const reps = o.reps ?? 3;
  const sshd = await startTestSshd(2);
  try {
    const url = (index: number, slots: number) => `ssh://${sshd.hosts[index]!.alias}${sshd.hosts[index]!.workDir}?slots=${slots}&claude=${fakeWorker}`;
    const attempts = o.quick === true ? 6 : 12;
    const sleepMs = 100;
    const serial = hostPlan(attempts, sleepMs, false);
    progress(`hosts: ${attempts} tasks of ${sleepMs} ms, one slot here and one on a host, ${reps} runs each`);
    const local: number[] = [];
    const remote: number[] = [];
    // The first run on a host sends foreman's program there; it is kept, as every later run finds it.
    await runOn(hostPlan(1, 0, false), [url(0, 1)], sshd.env);
    for (let k = 0; k < reps; k++) {
      local.push(await runOn(serial, ['local?slots=1'], sshd.env));
      remote.push(await runOn(serial, [url(0, 1)], sshd.env));
    }
    const perAttempt = (median(remote) - median(local)) / attempts;

    const tasks = 24;
    const taskMs = o.quick === true ? 1000 : 3000;
    const plan = hostPlan(tasks, taskMs, true);
    const bound = lowerBound(
      plan,
      plan.tasks.map(() => taskMs),
      4,
    );
    progress(`hosts: ${tasks} tasks of ${taskMs} ms over 2 hosts × 2 slots, ${reps} runs`);
    const spread: number[] = [];
    const here: number[] = [];
    for (let k = 0; k < reps; k++) {
      spread.push(await runOn(plan, [url(0, 2), url(1, 2)], sshd.env));
      here.push(await runOn(plan, ['local?slots=4'], sshd.env));
    }
    return [
      `The fake worker as each host's claude, over real OpenSSH on 127.0.0.1 (two sshd), --sandbox off; median of ${reps} runs (run-finished.durationMs).`,
      '',
      table(
        ['run', 'ms', 'note'],
        [
          [`${attempts} × ${sleepMs} ms, local?slots=1`, ms(median(local)), ''],
          [`${attempts} × ${sleepMs} ms, one ssh host, 1 slot`, ms(median(remote)), `${ms(perAttempt)} ms more per attempt`],
          [
            `${tasks} × ${taskMs} ms (chained), 2 ssh hosts × 2 slots`,
            ms(median(spread)),
            `${(median(spread) / bound).toFixed(2)}× the lower bound (${ms(bound)} ms)`,
          ],
          [`${tasks} × ${taskMs} ms (chained), local?slots=4`, ms(median(here)), `${(median(here) / bound).toFixed(2)}× the lower bound`],
        ],
        ['l', 'r', 'l'],
      ),
    ].join('\n');
  } finally {
    await sshd.stop();
  }
}
