// Interrupts, the run lock, dirty trees and hostile plans: nothing a person did is lost, no
// worker is left running, and the run can always be resumed.

import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';
import { registryPathFor } from '../../src/adapters/processes/orphans.ts';
import { groupAlive, processStartTime } from '../../src/adapters/processes/processes.ts';
import { nodeArgsFor, planScript, runExecute, runPlanTool } from '../support/execute.ts';
import { type FakeEvent, fakeEvents, leftovers, repoWithPlan, startExecute } from '../support/fake-run.ts';
import { waitFor } from '../support/wait.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';
import { alive } from '../support/processes.ts';
import { makeZombie } from '../support/zombies.ts';
import { agentWorktreeFor } from '../skills/support.ts';

const { repos, children } = leftovers();

const setup = (plan: Plan, files?: Record<string, string>) => repoWithPlan(plan, repos, files);

const start = (dir: string, journal: string, args: string[] = []) => startExecute(dir, args, { FAKE_WORKER_JOURNAL: journal }, children);

const allPids = (events: FakeEvent[]) => [...new Set(events.flatMap((e) => [e.pid, e.childPid].filter((p): p is number => typeof p === 'number')))];

const hangingPlan = () =>
  makePlan([
    fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'partial' }, hang: true, spawnChild: true } }),
    fakeTask('B', { create: ['b.txt'], fake: { hang: true, spawnChild: 'stubborn' } }),
    fakeTask('C', { create: ['c.txt'], blockedBy: [0], fake: { write: { 'c.txt': 'c' } } }),
  ]);

describe('interrupts', () => {
  it('SIGINT stops the workers (and their children), puts tasks back without an attempt, exits 130, and the run resumes', async () => {
    const { repo, planPath, journal } = await setup(hangingPlan());
    const child = start(repo.dir, journal);
    await waitFor('both workers and their children', async () => (await fakeEvents(journal)).filter((e) => e.event === 'child').length >= 2);
    const t0 = Date.now();
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(Date.now() - t0).toBeLessThan(8000);
    expect(allPids(await fakeEvents(journal)).filter(alive)).toEqual([]);
    expect(existsSync(join(repo.dir, '.design/plan.lock'))).toBe(false);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    // The interrupted attempt's partial file stayed in its worktree: it never reached the person's tree.
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);

    // Resume: a person fixes the hanging tasks; the run completes.
    after.tasks[0] = { ...after.tasks[0]!, prompt: fakeTask('A', { fake: { write: { 'a.txt': 'a' } } }).prompt };
    after.tasks[1] = { ...after.tasks[1]!, prompt: fakeTask('B', { fake: { write: { 'b.txt': 'b' } } }).prompt };
    await writeFile(planPath, JSON.stringify(after));
    const resumed = await runExecute(repo.dir);
    expect(resumed.exitCode).toBe(0);
    expect(await readFile(join(repo.dir, 'c.txt'), 'utf8')).toBe('c');
  });

  it('a second SIGINT exits at once and still leaves no worker running', async () => {
    const { repo, planPath, journal } = await setup(hangingPlan());
    const child = start(repo.dir, journal);
    await waitFor('both workers', async () => (await fakeEvents(journal)).filter((e) => e.event === 'child').length >= 2);
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    child.kill('SIGINT');
    const r = await child;
    // Exit 130; or, when the run had already finished (its summary printed) and node was tearing the
    // process down, the second SIGINT meets no handler any more and ends it: the shell reports
    // that as 130 too. Either way it is at once, and nothing is left running (below).
    const finishedFirst = r.signal === 'SIGINT' && r.stdout.includes('finished: interrupted (interrupted)');
    if (!finishedFirst) expect(r.exitCode, `signal ${r.signal}: ${r.stdout.slice(-1500)}\n${r.stderr.slice(-1500)}`).toBe(130);
    expect(Date.now() - t0).toBeLessThan(3000);
    await waitFor('every worker to die', async () => allPids(await fakeEvents(journal)).filter(alive).length === 0);
    // The plan is still there and whole (a missing plan must fail here, not pass as '{}')…
    const left = parsePlan(readFileSync(planPath, 'utf8'));
    expect(left.ok, left.ok ? '' : left.error.join('\n')).toBe(true);
    // …with no attempt counted for the work that was stopped,
    expect((left.ok ? left.value : null)!.tasks.map((t) => t.attempts ?? 0)).toEqual([0, 0, 0]);
    // and the run resumes from it once the hanging tasks are fixed.
    const plan = await readPlan(planPath);
    plan.tasks[0] = { ...plan.tasks[0]!, prompt: fakeTask('A', { fake: { write: { 'a.txt': 'a' } } }).prompt };
    plan.tasks[1] = { ...plan.tasks[1]!, prompt: fakeTask('B', { fake: { write: { 'b.txt': 'b' } } }).prompt };
    await writeFile(planPath, JSON.stringify(plan));
    const resumed = await runExecute(repo.dir);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(await readFile(join(repo.dir, 'c.txt'), 'utf8')).toBe('c');
  });

  it('a first SIGTERM drains (the workers go on); a second one stops the run as SIGINT does', async () => {
    const { repo, planPath, journal } = await setup(hangingPlan());
    const child = start(repo.dir, journal);
    await waitFor('both workers and their children', async () => (await fakeEvents(journal)).filter((e) => e.event === 'child').length >= 2);
    child.kill('SIGTERM');
    await waitFor('the drain to be journaled', async () =>
      (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => '')).includes('"draining"'),
    );
    // Draining: the hanging workers are left to finish.
    expect(allPids(await fakeEvents(journal)).filter(alive).length).toBeGreaterThanOrEqual(2);
    child.kill('SIGTERM');
    expect((await child).exitCode).toBe(130);
    expect(allPids(await fakeEvents(journal)).filter(alive)).toEqual([]);
    // As after SIGINT: the lock released, the tasks back to pending without an attempt, A's partial file not in the person's tree.
    expect(existsSync(join(repo.dir, '.design/plan.lock'))).toBe(false);
    expect((await readPlan(planPath)).tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
  });

  it('a run after SIGKILL of the orchestrator stops the orphaned workers before cleaning up', async () => {
    const { repo, planPath, journal } = await setup(hangingPlan());
    const child = start(repo.dir, journal);
    await waitFor('both workers', async () => (await fakeEvents(journal)).filter((e) => e.event === 'child').length >= 2);
    child.kill('SIGKILL');
    await child;
    const orphans = allPids(await fakeEvents(journal)).filter(alive);
    expect(orphans.length).toBeGreaterThanOrEqual(2); // the workers outlived the orchestrator
    const plan = await readPlan(planPath);
    plan.tasks[0] = { ...plan.tasks[0]!, prompt: fakeTask('A', { fake: { write: { 'a.txt': 'a' } } }).prompt };
    plan.tasks[1] = { ...plan.tasks[1]!, prompt: fakeTask('B', { fake: { write: { 'b.txt': 'b' } } }).prompt };
    await writeFile(planPath, JSON.stringify(plan));
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/stopped 2 process group\(s\) left running by an earlier run: the worker of task [01]; the worker of task [01]/);
    expect(r.stdout).toMatch(/^\S+ info: tasks 0 and 1 were interrupted: they will run again$/m);
    expect(orphans.filter(alive)).toEqual([]);
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a');
  });
});

describe('nothing left running after a crash', () => {
  // Check groups to kill should a test fail before foreman ends them.
  const leftovers: number[] = [];
  afterEach(() => {
    for (const g of leftovers.splice(0)) {
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  });

  /**
   * An acceptance check that, the first time, records its shell's pid (= its process group) and
   * sleeps before overwriting the verified file; later runs of it pass at once. It writes its pid
   * outside the repository and names its shell's own pid, so these runs go without the sandbox
   * (`--sandbox off`, `FOREMAN_SANDBOX=off`); test/markers.test.ts ends what carries a dead run's marker.
   */
  async function sleepyCheck() {
    const scratch = await mkdtemp(join(tmpdir(), 'foreman-check-'));
    const pidFile = join(scratch, 'check.pid');
    // The path once: the registry keeps a command's first 200 characters, and a temporary directory's path can be long.
    const check = `p=${pidFile}; if [ -e $p ]; then exit 0; fi; echo $$ > $p; sleep 1000; echo late > a.txt`;
    return { scratch, pidFile, check };
  }

  it('an acceptance check orphaned by kill -9 of the run is ended by the next run and never writes', async () => {
    const { scratch, pidFile, check } = await sleepyCheck();
    try {
      const { repo, journal } = await setup(
        makePlan([fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check }], fake: { write: { 'a.txt': 'a\n' } } })]),
      );
      const child = start(repo.dir, journal, ['--sandbox', 'off']);
      await waitFor('the acceptance check to start', async () => existsSync(pidFile) && (await readFile(pidFile, 'utf8')).trim() !== '');
      const checkGroup = Number((await readFile(pidFile, 'utf8')).trim());
      leftovers.push(checkGroup);
      // The check is recorded in the registry, saying what it is.
      const records = JSON.parse(await readFile(join(repo.dir, '.design/workers.json'), 'utf8')) as Array<Record<string, unknown>>;
      expect(records).toEqual([expect.objectContaining({ kind: 'acceptance-check', task: 0, command: check, pgid: checkGroup })]);
      child.kill('SIGKILL');
      await child;
      expect(alive(checkGroup)).toBe(true); // the check outlived the orchestrator

      const r = await runExecute(repo.dir, ['--sandbox', 'off']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toContain(`stopped 1 process group(s) left running by an earlier run: the acceptance check of task 0 (\`${check}\`)`);
      expect(alive(checkGroup)).toBe(false);
      expect(groupAlive(checkGroup)).toBe(false); // its sleep too: nothing is left to write
      expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
      expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
      expect(existsSync(join(repo.dir, '.design/workers.json'))).toBe(false);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('plan setup (the /execute skill) ends a check that a killed finalize left running', async () => {
    const { scratch, pidFile, check } = await sleepyCheck();
    try {
      const { repo, planPath } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check }] })]));
      const unsandboxed = { ...process.env, FOREMAN_SANDBOX: 'off' };
      expect((await runPlanTool(repo.dir, ['setup'], unsandboxed)).exitCode).toBe(0);
      expect((await runPlanTool(repo.dir, ['next'], unsandboxed)).exitCode).toBe(0);
      // The subagent worked in a worktree of its own, as Claude Code makes one (isolation "worktree").
      const agent = await agentWorktreeFor(repo.dir);
      await writeFile(join(agent.dir, 'a.txt'), 'a\n');
      const results = join(scratch, 'results.json');
      await writeFile(results, JSON.stringify([{ task: 0, output: 'COMPLETED: made a', worktree: agent.dir }]));
      const finalize = execa('node', [...nodeArgsFor(planScript), 'finalize', '--results', results], {
        cwd: repo.dir,
        reject: false,
        stdin: 'ignore',
        env: unsandboxed,
      });
      children.push(finalize);
      await waitFor('the acceptance check to start', async () => existsSync(pidFile) && (await readFile(pidFile, 'utf8')).trim() !== '');
      const checkGroup = Number((await readFile(pidFile, 'utf8')).trim());
      leftovers.push(checkGroup);
      // Killed once the check is recorded: on a loaded machine the check can write its pid before
      // finalize, descheduled right after starting it, has written the record.
      const registry = registryPathFor(planPath);
      await waitFor('finalize to record the check', async () => (await readFile(registry, 'utf8').catch(() => '')).includes(`"pgid": ${checkGroup},`));
      finalize.kill('SIGKILL');
      await finalize;
      expect(alive(checkGroup)).toBe(true);

      const r = await runPlanTool(repo.dir, ['setup'], unsandboxed);
      expect(r.exitCode, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { notices: Array<{ level: string; message: string }>; reset: number[] };
      expect(out.notices).toContainEqual({
        level: 'warning',
        message: `stopped 1 process group(s) left running by an earlier run: the acceptance check of task 0 (\`${check}\`)`,
      });
      expect(out.reset).toEqual([0]);
      expect(groupAlive(checkGroup)).toBe(false);
      expect((await readPlan(planPath)).tasks[0]!.status ?? 'pending').toBe('pending');
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});

describe('one run at a time', () => {
  it('a second run on the same plan exits 3 naming the process that holds the lock', async () => {
    const { repo, journal } = await setup(hangingPlan());
    const first = start(repo.dir, journal);
    await waitFor('the first run to start a worker', async () => (await fakeEvents(journal)).some((e) => e.event === 'start'));
    const second = await runExecute(repo.dir);
    expect(second.exitCode).toBe(3);
    expect(second.stderr).toContain(`pid ${first.pid}`);
    expect(second.stderr).toContain(hostname());
    first.kill('SIGINT');
    expect((await first).exitCode).toBe(130);
  });

  it('takes over a lock left by a dead process, with a notice', async () => {
    const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]));
    const dead = execa('node', ['-e', '']);
    await dead;
    await writeFile(
      join(repo.dir, '.design/plan.lock'),
      JSON.stringify({ pid: dead.pid, host: hostname(), startedAt: '2026-01-01T00:00:00Z', command: 'execute' }),
    );
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/took over a stale lock left by pid \d+/);
  });

  it('takes over at once a lock held by a zombie, or by a pid now running another process', async () => {
    const zombie = await makeZombie();
    try {
      const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]));
      const lockFile = join(repo.dir, '.design/plan.lock');
      await writeFile(
        lockFile,
        JSON.stringify({
          pid: zombie.pid,
          host: hostname(),
          startedAt: '2026-01-01T00:00:00Z',
          command: 'execute',
          processStart: processStartTime(zombie.pid),
        }),
      );
      const r = await runExecute(repo.dir);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toContain(`took over a stale lock left by pid ${zombie.pid} (started 2026-01-01T00:00:00Z), which is no longer running`);

      // The zombie's parent is alive: its pid with a start time that is not its own is a reused pid.
      const parent = zombie.parent.pid!;
      const { repo: again } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]));
      await writeFile(
        join(again.dir, '.design/plan.lock'),
        JSON.stringify({ pid: parent, host: hostname(), startedAt: '2026-01-01T00:00:00Z', processStart: `${processStartTime(parent)}9` }),
      );
      const reused = await runExecute(again.dir);
      expect(reused.exitCode, reused.stderr).toBe(0);
      expect(reused.stdout).toContain(`took over a stale lock left by pid ${parent} (started 2026-01-01T00:00:00Z), a pid that now belongs to another process`);
    } finally {
      zombie.parent.kill('SIGKILL');
    }
  });

  it('refuses plan-changing commands while a run holds the lock', async () => {
    const { repo, journal } = await setup(hangingPlan());
    const first = start(repo.dir, journal);
    await waitFor('a worker', async () => (await fakeEvents(journal)).some((e) => e.event === 'start'));
    const { runPlanTool } = await import('../support/execute.ts');
    const skip = await runPlanTool(repo.dir, ['skip', '2', '--reason', 'not now']);
    expect(skip.exitCode).toBe(3);
    expect(skip.stderr).toMatch(/lock/);
    first.kill('SIGINT');
    await first;
  });
});

describe("a person's work is never lost", () => {
  it('uncommitted and staged edits outside the plan survive retries, a crash and the resume', async () => {
    const plan = makePlan([
      fakeTask('A', {
        modify: ['src/app.txt'],
        acceptance: [{ criterion: 'fixed', check: 'grep -q fixed src/app.txt' }],
        fake: {
          attempts: [{ append: { 'src/app.txt': 'broken\n' } }, { append: { 'src/app.txt': 'broken again\n' } }, { append: { 'src/app.txt': 'fixed\n' } }],
        },
      }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b' }, sleepMs: 3000 } }),
    ]);
    const { repo, journal } = await setup(plan, { 'README.md': 'hello\n', 'src/app.txt': 'app\n', 'staged.txt': 'v1\n' });
    await writeFile(join(repo.dir, 'README.md'), 'hello\nmy unsaved thoughts\n');
    await writeFile(join(repo.dir, 'staged.txt'), 'v2 staged\n');
    await repo.git(['add', 'staged.txt']);

    const child = start(repo.dir, journal);
    await waitFor('task B to start', async () => (await fakeEvents(journal)).some((e) => e.event === 'start' && e.taskMarker === 'B'));
    child.kill('SIGKILL');
    await child;
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);

    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\nmy unsaved thoughts\n');
    expect(await readFile(join(repo.dir, 'staged.txt'), 'utf8')).toBe('v2 staged\n');
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('staged.txt\n');
    expect(await repo.git(['log', '--format=', '--name-only'])).not.toContain('staged.txt\n\n');
    expect(await readFile(join(repo.dir, 'src/app.txt'), 'utf8')).toBe('app\nfixed\n');
  });

  it('a planned file edited by a person before a resume keeps the edit; landing names it (exit 1) and lands once it is clear', async () => {
    // Changed by design (issue 12): no refusal (exit 2) any more; the edit blocks only the landing.
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' }, status: 'FAILED: no' } }),
      fakeTask('B', { modify: ['notes.txt'], blockedBy: [0], fake: { append: { 'notes.txt': 'B\n' } } }),
    ]);
    const { repo, planPath } = await setup(plan, { 'notes.txt': 'notes\n' });
    expect((await runExecute(repo.dir, ['--max-attempts', '1'])).exitCode).toBe(1);
    const p = await readPlan(planPath);
    p.tasks[0] = fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } });
    p.tasks[1] = { ...p.tasks[1]!, status: 'pending', result: undefined };
    await writeFile(planPath, JSON.stringify(p));
    await writeFile(join(repo.dir, 'notes.txt'), 'notes\nmine\n');
    const head = await repo.git(['rev-parse', 'HEAD']);
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain('notes.txt (modified)');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nmine\n');
    expect(await repo.git(['rev-parse', 'HEAD'])).toBe(head);
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
    // The person puts the edit aside: the next run lands both tasks' work.
    await writeFile(join(repo.dir, 'notes.txt'), 'notes\n');
    const again = await runExecute(repo.dir);
    expect(again.exitCode, again.stdout).toBe(0);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nB\n');
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a');
  });
});

describe('hostile plans and repositories', () => {
  it('refuses a path that leads outside the repository through a symlink (exit 2, nothing run)', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'foreman-outside-'));
    try {
      const plan = makePlan([fakeTask('A', { create: ['link/pwned.txt'], fake: { write: { 'link/pwned.txt': 'x' } } })]);
      const { repo, journal } = await setup(plan);
      await symlink(outside, join(repo.dir, 'link'));
      const r = await runExecute(repo.dir, [], { FAKE_WORKER_JOURNAL: journal });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/link\/pwned\.txt.*outside the repository/);
      expect(await fakeEvents(journal)).toEqual([]);
      expect(existsSync(join(outside, 'pwned.txt'))).toBe(false);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('removes a stale .git/index.lock left by a killed git, with a notice', async () => {
    const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]));
    await mkdir(join(repo.dir, '.git'), { recursive: true });
    await writeFile(join(repo.dir, '.git/index.lock'), '');
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^\S+ warning: removed a stale \.git\/index\.lock left by a git process that was killed$/m);
    expect(await repo.git(['ls-files', 'a.txt'])).toBe('a.txt\n');
  });

  it('bounds the output of acceptance commands and times them out', async () => {
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        acceptance: [{ criterion: 'spews then hangs', check: 'yes | head -c 5000000; sleep 100' }],
        fake: { write: { 'a.txt': 'a' } },
      }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir, ['--check-timeout', '2', '--max-attempts', '1']);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.result).toMatch(/timed out/);
    expect(after.tasks[0]!.result!.length).toBeLessThan(10_000);
  });
});
