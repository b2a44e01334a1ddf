// A headless run in the test process, given its adapters (run/adapters.ts) as the CLI gives the
// real ones: the repository, its worktrees and the commands are real; the workers, the clock, the
// processes and plan.json's writes are the test's. It shows the run does its I/O through what it
// is given: each worker through `workers`, each plan write through `planStore`, its time from
// `clock`, and a killed run's leftovers ended before anything else.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Git } from '../../src/adapters/git/repository.ts';
import { PlanKeeper, serializePlan } from '../../src/adapters/store/plan-file.ts';
import type { WorkerRequest } from '../../src/adapters/worker/worker-request.ts';
import type { RunEventBody } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { realRunAdapters, type RunAdapters } from '../../src/run/adapters.ts';
import { type HeadlessSettings, runHeadless } from '../../src/run/headless/headless.ts';
import { DEFAULTS } from '../../src/run/settings.ts';
import { FakeClock, reported } from '../support/engine-rig.ts';
import { afterEachCleanups, tempRepoIn, withoutMachineGitConfig } from '../support/git-repo.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

withoutMachineGitConfig();
const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

const settingsFor = (repo: string): HeadlessSettings => ({
  repo,
  planPath: join(repo, '.design/plan.json'),
  claudeBin: 'claude-not-used',
  concurrency: 2,
  taskTimeoutMs: DEFAULTS.taskTimeoutMs,
  maxAttempts: 2,
  permissionMode: DEFAULTS.permissionMode,
  schedule: 'continuous',
  checkTimeoutMs: 30_000,
  commit: true,
  land: 'end',
  gate: null,
  backoffMs: DEFAULTS.backoffMs,
  limitWaitMs: DEFAULTS.limitWaitMs,
  probe: false,
  strict: false,
  probeTimeoutMs: DEFAULTS.probeTimeoutMs,
  noGate: true,
});

describe('runHeadless, given its adapters', () => {
  it('runs each worker through `workers`, writes the plan through `planStore`, takes its time from `clock`, and ends leftovers first', async () => {
    const repo = await repoWith({ 'README.md': 'hello\n', '.gitignore': '.design/\n' });
    const plan: Plan = makePlan([
      fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check: 'test -f a.txt' }] }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0] }),
    ]);
    const settings = settingsFor(repo.dir);
    const text = serializePlan(plan);
    await mkdir(join(repo.dir, '.design'), { recursive: true });
    await writeFile(settings.planPath, text);

    const real = realRunAdapters({ repo: repo.dir, planPath: settings.planPath, git: new Git(repo.dir), env: process.env });
    const calls: string[] = [];
    const requests: WorkerRequest[] = [];
    const saved: Plan[] = [];
    const clock = new FakeClock();
    clock.time = 1_000;
    const adapters: RunAdapters = {
      ...real,
      clock,
      processes: {
        endLeftovers: async () => {
          calls.push('end-leftovers');
          return [];
        },
        forget: async () => void calls.push('forget'),
      },
      // A worker that does its task in its worktree and reports, as a real one would; a minute of the clock passes.
      workers: {
        run: async (request) => {
          calls.push(`worker ${request.taskIndex}`);
          requests.push(request);
          const file = plan.tasks[request.taskIndex]!.metadata.files.create[0]!;
          await writeFile(join(request.cwd, file), `${file}\n`);
          clock.time += 60_000;
          return reported(`COMPLETED: wrote ${file}`);
        },
      },
      planStore: {
        open: (read) => {
          const keeper = new PlanKeeper(settings.planPath, read);
          return {
            save: (next) => {
              saved.push(structuredClone(next));
              return keeper.save(next);
            },
          };
        },
      },
    };
    const events: RunEventBody[] = [];
    const run = await runHeadless(
      plan,
      settings,
      {
        planText: text,
        env: process.env,
        sandboxed: false,
        interrupt: new AbortController().signal,
        drain: new AbortController().signal,
        emit: (event) => events.push(event),
        record: (event) => events.push(event),
        say: null,
        gitProcessesBefore: 0,
      },
      adapters,
    );
    if (!run.ok) throw new Error(`refused: ${JSON.stringify(run.error)}`);
    expect(run.value.finished.exitCode).toBe(0);

    // Leftovers ended before any worker; the run's processes forgotten once it is over.
    expect(calls).toEqual(['end-leftovers', 'worker 0', 'worker 1', 'forget']);
    // Each worker ran in a worktree of its own, with its task's prompt and exactly its declared file to write.
    expect(requests.map((r) => r.taskIndex)).toEqual([0, 1]);
    expect(requests.every((r) => r.cwd !== repo.dir)).toBe(true);
    expect(requests[0]!.allowedTools.some((rule) => rule.includes('a.txt'))).toBe(true);
    expect(requests[1]!.allowedTools.some((rule) => rule.includes('b.txt'))).toBe(true);
    // Every write went through the plan store; the last says both tasks completed.
    expect(saved.length).toBeGreaterThan(2);
    expect(saved.at(-1)!.tasks.map((t) => t.status)).toEqual(['completed', 'completed']);
    // The run's duration is the clock's: two minutes of workers.
    expect(run.value.finished.durationMs).toBe(120_000);
    // The work landed on the branch.
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a.txt\n');
    expect(await readFile(join(repo.dir, 'b.txt'), 'utf8')).toBe('b.txt\n');
    expect((await repo.git(['log', '--format=%s'])).trim().split('\n')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'round-committed').map((e) => e.type === 'round-committed' && e.tasks)).toEqual([[0], [1]]);
  });
});
