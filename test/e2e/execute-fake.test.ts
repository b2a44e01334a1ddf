// End-to-end runs of scripts/execute.ts with the fast fake worker on temporary git repositories.

import { existsSync } from 'node:fs';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { fakeWorker, runExecute, runExecuteProcess, runPlanTool } from '../support/execute.ts';
import { notLoggedInLines } from '../../src/core/hosts/auth-status.ts';
import { alive } from '../support/processes.ts';
import { type FakeEvent, fakeEvents, leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';

const { repos, tempDir } = leftovers();

const setup = (plan: Plan, files?: Record<string, string>) => repoWithPlan(plan, repos, files);
const journalOf = fakeEvents;

/** [start, end] per task marker and attempt, from the fake worker's journal. */
function intervals(lines: FakeEvent[]) {
  const out = new Map<string, { start: number; end: number }>();
  for (const l of lines) {
    const key = `${l.taskMarker}#${l.attempt}`;
    if (l.event === 'start') out.set(key, { start: l.t, end: Infinity });
    if (l.event === 'end') out.get(key)!.end = l.t;
  }
  return out;
}

const archived = async (dir: string) => (await readdir(join(dir, '.design/history')).catch(() => [])).filter((f) => f.endsWith('-plan.json'));

describe('execute.ts with the fake worker', () => {
  it('runs independent tasks in parallel, dependants after, commits each round and archives the plan', async () => {
    // A and B each say they started (a file outside the repository) and wait for the other's
    // word: run one after the other, the first would wait out its 30 s alone and the spans below
    // would not overlap. (Timed overlap alone failed on a loaded machine, where the second
    // worker's node start could outlast the first's whole run.)
    const rendezvous = await tempDir('foreman-fake-parallel-');
    const started = (marker: string) => join(rendezvous, `${marker}-started`);
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        fake: { write: { 'a.txt': 'a\n', [started('A')]: '' }, waitForFile: started('B'), sleepMs: 400, status: 'COMPLETED: made a' },
      }),
      fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n', [started('B')]: '' }, waitForFile: started('A'), sleepMs: 400 } }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [0, 1], fake: { write: { 'c.txt': 'c\n' }, echoPrompt: true } }),
    ]);
    const { repo, planPath, journal, env } = await setup(plan);
    const r = await runExecute(repo.dir, [], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);

    const spans = intervals(await journalOf(journal));
    const a = spans.get('A#1')!;
    const b = spans.get('B#1')!;
    const c = spans.get('C#1')!;
    expect(a.start < b.end && b.start < a.end).toBe(true); // A and B overlapped in time
    const waits = (await journalOf(journal)).filter((line) => line.event === 'waited');
    expect(waits.map((line) => [line.taskMarker, line.found]).sort()).toEqual([
      ['A', true],
      ['B', true],
    ]);
    expect(c.start).toBeGreaterThanOrEqual(Math.max(a.end, b.end));

    const log = await repo.git(['log', '--format=%s%n%b', '--name-only']);
    for (const f of ['a.txt', 'b.txt', 'c.txt']) expect(log).toContain(f);
    expect(log).toContain('Foreman-Tasks:');
    expect(await repo.git(['status', '--porcelain', '--', 'a.txt', 'b.txt', 'c.txt'])).toBe('');
    expect(await archived(repo.dir)).toHaveLength(1);
    await expect(readFile(planPath)).rejects.toThrow();
    expect(r.stdout).toMatch(/3\/3 completed/);
  });

  it('passes dependency results into the prompt', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' }, status: 'COMPLETED: the answer is 42' } }),
      fakeTask('B', {
        create: ['b.txt'],
        blockedBy: [0],
        prompt: 'Use the result.\n[Dependency results — deferred: lead appends actual results at spawn time]\nThen stop.',
        fake: { write: { 'b.txt': 'b' }, echoPrompt: true },
      }),
    ]);
    const { repo } = await setup(plan);
    const prompts = `${repo.dir}-prompts`;
    const r = await runExecute(repo.dir, ['--no-commit'], { FAKE_WORKER_PROMPTS: prompts });
    expect(r.exitCode).toBe(0);
    const history = await archived(repo.dir);
    const done = JSON.parse(await readFile(join(repo.dir, '.design/history', history[0]!), 'utf8')) as Plan;
    expect(done.tasks[1]!.status).toBe('completed');
    // What B's worker received on stdin: A's reported result in place of the placeholder line.
    const received = await readFile(join(prompts, 'B-1.txt'), 'utf8');
    expect(received).toContain('## Dependency results');
    expect(received).toContain('- Task 0 (task A): the answer is 42');
    expect(received).not.toContain('deferred: lead appends');
    expect(received.indexOf('Use the result.')).toBeLessThan(received.indexOf('- Task 0 (task A): the answer is 42'));
    expect(received.indexOf('- Task 0 (task A): the answer is 42')).toBeLessThan(received.indexOf('Then stop.'));
    // A has no dependencies: its prompt carries none.
    expect(await readFile(join(prompts, 'A-1.txt'), 'utf8')).not.toContain('## Dependency results');
    await rm(prompts, { recursive: true, force: true });
  });

  it('never runs overlapping tasks at the same time', async () => {
    const plan = makePlan([
      fakeTask('A', { modify: ['shared.txt'], fake: { append: { 'shared.txt': 'A\n' }, sleepMs: 300 } }),
      fakeTask('B', { modify: ['shared.txt'], fake: { append: { 'shared.txt': 'B\n' }, sleepMs: 300 } }),
      fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c' }, sleepMs: 300 } }),
    ]);
    const { repo, journal, env } = await setup(plan, { 'shared.txt': 'start\n' });
    const r = await runExecute(repo.dir, [], env);
    expect(r.exitCode).toBe(0);
    const spans = intervals(await journalOf(journal));
    const a = spans.get('A#1')!;
    const b = spans.get('B#1')!;
    expect(a.end <= b.start || b.end <= a.start).toBe(true);
    const c = spans.get('C#1')!;
    expect(c.start < Math.max(a.end, b.end)).toBe(true); // C ran beside one of them
    expect((await readFile(join(repo.dir, 'shared.txt'), 'utf8')).split('\n').sort()).toEqual(['', 'A', 'B', 'start']);
  });

  it('retries with the fallback after an acceptance failure, then completes', async () => {
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        acceptance: [{ criterion: 'a.txt says good', check: 'grep -q good a.txt' }],
        fallback: 'write the word good',
        fake: { attempts: [{ write: { 'a.txt': 'bad' } }, { write: { 'a.txt': 'good' }, echoPrompt: true }] },
      }),
    ]);
    const { repo, journal, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--json'], env);
    expect(r.exitCode).toBe(0);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; outcome?: string; reason?: string });
    const finished = events.filter((e) => e.type === 'task-finished');
    expect(finished.map((e) => e.outcome)).toEqual(['retry', 'completed']);
    expect(finished[0]!.reason).toContain('grep -q good a.txt');
    const starts = (await journalOf(journal)).filter((l) => l.event === 'start');
    expect(starts.map((s) => s.attempt)).toEqual([1, 2]);
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('good');
  });

  it("puts the retry block and the fallback into the second attempt's prompt", async () => {
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        fallback: 'USE-PLAN-B',
        fake: { attempts: [{ status: 'FAILED: could not' }, { write: { 'a.txt': 'ok' }, echoPrompt: true, status: 'FAILED: still no' }] },
      }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir, ['--max-attempts', '2']);
    expect(r.exitCode).toBe(1);
    const log = await readFile(join(repo.dir, '.design/worker-0.log'), 'utf8');
    expect(log).toContain('This is attempt 2 of 2');
    expect(log).toContain('IMPORTANT: the primary approach failed; use this strategy instead: USE-PLAN-B');
    expect(log).toContain('could not');
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.status).toBe('failed');
    expect(after.tasks[0]!.attempts).toBe(2);
    // The failed attempt's file was cleaned up.
    await expect(readFile(join(repo.dir, 'a.txt'))).rejects.toThrow();
  });

  it('skips dependants of a failed task, and the breaker stops the run', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { status: 'FAILED: nope' } }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b' } } }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [1], fake: { write: { 'c.txt': 'c' } } }),
      fakeTask('D', { create: ['d.txt'], fake: { write: { 'd.txt': 'd' }, sleepMs: 300 } }),
      fakeTask('E', { create: ['e.txt'], blockedBy: [3], fake: { write: { 'e.txt': 'e' } } }),
    ]);
    const { repo, planPath, journal, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--max-attempts', '1', '--concurrency', '1'], env);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => t.status ?? 'pending')).toEqual(['failed', 'skipped', 'skipped', 'pending', 'pending']);
    expect(after.tasks[2]!.result).toContain('task 0');
    expect(after.tasks[2]!.skippedBy).toBe(0);
    expect(r.stdout).toMatch(/circuit breaker/i);
    // With concurrency 1 and A first (longest path), the breaker stopped before E ran.
    const markers = (await journalOf(journal)).filter((l) => l.event === 'start').map((l) => l.taskMarker);
    expect(markers).not.toContain('E');
  });

  it('reports a deadlock when pending tasks depend on a failed one that was not cascaded', async () => {
    const plan = makePlan([
      { ...fakeTask('A', { create: ['a.txt'] }), status: 'failed', attempts: 3, result: 'broke' },
      fakeTask('B', { create: ['b.txt'], blockedBy: [0] }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir);
    // Setup cascades the failure, so B is skipped rather than deadlocked: nothing can run.
    expect(r.exitCode).toBe(1);
    expect((await readPlan(planPath)).tasks[1]!.status).toBe('skipped');
  });

  it('kills a worker on --task-timeout, counts a failed attempt, and leaves no process behind', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { hang: true, spawnChild: true } })]);
    const { repo, planPath, journal, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--task-timeout', '2', '--max-attempts', '1'], env);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.status).toBe('failed');
    expect(after.tasks[0]!.result).toContain('the worker timed out after 2s (the limit set by --task-timeout); its whole process group was ended');
    const pids = (await journalOf(journal)).flatMap((l) => [l.pid, (l as { childPid?: number }).childPid].filter((p): p is number => typeof p === 'number'));
    expect(pids.length).toBeGreaterThanOrEqual(2);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('treats a crash, garbage output and a missing status line as failed attempts', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { crash: true } }),
      fakeTask('B', { create: ['b.txt'], fake: { garbage: true } }),
      fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c' }, status: '' } }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => t.status)).toEqual(['failed', 'failed', 'failed']);
    expect(after.tasks[0]!.result).toMatch(/without a result/);
    expect(after.tasks[1]!.result).toMatch(/not stream-json/);
    expect(after.tasks[2]!.result).toMatch(/without a COMPLETED/);
  });

  it("says the plan lint's warnings once as the run starts, in the journal and the log", async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], prompt: 'Write a.txt as README.md describes.', fake: { write: { 'a.txt': 'a' } } })]);
    const { repo, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--no-probe'], env);
    expect(r.exitCode, r.stderr).toBe(0);
    const line =
      'plan warning: tasks[0].prompt names README.md, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it';
    const journaled = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; level?: string; message?: string });
    expect(journaled.filter((e) => e.type === 'notice' && e.message?.startsWith('plan warning:'))).toEqual([
      expect.objectContaining({ level: 'warning', message: line }),
    ]);
    expect(r.stdout.split('\n').filter((l) => l.includes('plan warning:'))).toHaveLength(1);
    expect(r.stdout).toContain(line);
  });

  it('survives a worker that prints 50 MB', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { hugeOutputMB: 50, write: { 'a.txt': 'a' } } })]);
    const { repo } = await setup(plan);
    const r = await runExecute(repo.dir, ['--no-commit']);
    expect(r.exitCode).toBe(0);
  });

  it('resumes after a failure: only the unfinished tasks run again', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } }),
      fakeTask('B', { create: ['b.txt'], fake: { status: 'FAILED: not yet' } }),
    ]);
    const { repo, planPath, journal, env } = await setup(plan);
    expect((await runExecute(repo.dir, ['--max-attempts', '1'], env)).exitCode).toBe(1);
    const mid = await readPlan(planPath);
    expect(mid.tasks.map((t) => t.status)).toEqual(['completed', 'failed']);
    // A person fixes the plan: task B gets a working directive and goes back to pending.
    mid.tasks[1] = { ...fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b' } } }) };
    await writeFile(planPath, JSON.stringify(mid));
    const r = await runExecute(repo.dir, [], env);
    expect(r.exitCode).toBe(0);
    const starts = (await journalOf(journal)).filter((l) => l.event === 'start').map((l) => l.taskMarker);
    expect(starts.filter((m) => m === 'A')).toHaveLength(1);
  });

  it("a person's uncommitted change to a planned file survives; the work waits on the integration ref and landing names the file (exit 1)", async () => {
    // Changed by design (issue 12): no refusal any more. The worker starts from the last commit in
    // a worktree of its own; landing is what the person's change blocks.
    const plan = makePlan([fakeTask('A', { modify: ['notes.txt'], fake: { write: { 'notes.txt': 'worker' } } })]);
    const { repo, planPath } = await setup(plan, { 'notes.txt': 'original\n' });
    await writeFile(join(repo.dir, 'notes.txt'), 'my precious edit\n');
    const head = await repo.git(['rev-parse', 'HEAD']);
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain('notes.txt (modified)');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('my precious edit\n');
    expect(await repo.git(['rev-parse', 'HEAD'])).toBe(head);
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('');
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.status).toBe('completed');
    expect(await repo.git(['show', `refs/foreman/${after.planId}:notes.txt`])).toBe('worker');
  });

  it('marks a task blocked when a blocking assumption fails, and skips its dependants', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], assumptions: [{ claim: 'tool exists', verify: 'exit 3', severity: 'blocking' }], fake: { write: { 'a.txt': 'a' } } }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b' } } }),
      fakeTask('C', { create: ['c.txt'], assumptions: [{ claim: 'warn only', verify: 'false', severity: 'warning' }], fake: { write: { 'c.txt': 'c' } } }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => t.status)).toEqual(['blocked', 'skipped', 'completed']);
    expect(after.tasks[0]!.result).toContain('exit 3');
  });

  it('stops at once with exit 3 when the agent is not logged in, counting no attempt', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { error: 'not-logged-in' } }),
      fakeTask('B', { create: ['b.txt'], fake: { error: 'not-logged-in' } }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(3);
    // Its `auth status` said it was logged in (an expired key says so too): the worker's failure stops the run, in a terminal's words.
    expect(r.stdout + r.stderr).toMatch(
      /the agent is not authenticated \(.*\): log in by running `claude` once in a terminal, or set ANTHROPIC_API_KEY, then run again/,
    );
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => [t.status, t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
  });

  it('refuses at once (exit 3) when the CLI says it is not logged in: no probe, no gate, no worker, nothing written', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check: 'test -f a.txt' }] })], {
      context: { testCommand: 'true' },
    });
    const { repo, planPath, journal } = await setup(plan);
    const before = await readFile(planPath, 'utf8');
    const r = await runExecute(repo.dir, [], { FAKE_WORKER_JOURNAL: journal, FAKE_WORKER_AUTH: 'none' });
    expect(r.exitCode).toBe(3);
    expect(r.stderr.split('\n')).toEqual(notLoggedInLines(fakeWorker));
    // Nothing said of a probe or a gate, no worker started, no run journaled, the plan as it was.
    expect(r.stdout).toBe('');
    expect(await fakeEvents(journal)).toEqual([]);
    expect(existsSync(join(repo.dir, '.design/events.jsonl'))).toBe(false);
    expect(existsSync(join(repo.dir, '.design/plan.lock'))).toBe(false);
    expect(await readFile(planPath, 'utf8')).toBe(before);
  });

  it('asks nothing of a run that starts no worker: a plan with nothing left to run is not refused for the login', async () => {
    const plan = makePlan([{ ...fakeTask('A', { create: ['a.txt'] }), status: 'failed', attempts: 3, result: 'FAILED: no' }]);
    const { repo } = await setup(plan);
    const r = await runExecute(repo.dir, [], { FAKE_WORKER_AUTH: 'none' });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).not.toContain('not logged in');
    expect(r.stdout).toContain('task 0 is failed');
  });

  it('runs when the CLI cannot say whether it is logged in', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]);
    const { repo } = await setup(plan);
    const r = await runExecute(repo.dir, ['--no-probe'], { FAKE_WORKER_AUTH: 'garbage' });
    expect(r.exitCode).toBe(0);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
  });

  it('a rate limit never spends an attempt: a worker refused before it did anything is requeued, its task waits out the hold and runs again', async () => {
    // Refused at its first three starts (the journal counts them), served at the fourth.
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { refusedStarts: 3, retryDelayMs: 200, write: { 'a.txt': 'a' } } })]);
    const { repo, planPath, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--json', '--max-attempts', '1'], env);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map(
        (l) => JSON.parse(l) as { type: string; outcome?: string; attempt?: number; durationMs?: number; at: string; change?: string; until?: string | null },
      );
    expect(r.exitCode, r.stderr).toBe(0);
    const finished = events.filter((e) => e.type === 'task-finished');
    expect(finished.map((e) => e.outcome)).toEqual(['requeued', 'requeued', 'requeued', 'completed']);
    // A requeue counts no attempt: every start is attempt 1 (with --max-attempts 1 a counted one would have ended the task).
    const starts = events.filter((e) => e.type === 'task-started');
    expect(starts.map((e) => e.attempt)).toEqual([1, 1, 1, 1]);
    // Each refusal held the run for the delay the worker's CLI named (its api_retry's retry_delay_ms, 200 ms
    // here; holds in a row back off longer): no start came before the last hold announced ahead of it had ended.
    events.forEach((e, k) => {
      if (e.type !== 'task-started' || k === 0) return;
      const hold = events.slice(0, k).findLast((h) => h.type === 'limit' && h.change === 'hold');
      if (hold !== undefined) expect(Date.parse(e.at)).toBeGreaterThanOrEqual(Date.parse(hold.until!));
    });
    expect(events.filter((e) => e.type === 'limit' && e.change === 'hold').length).toBeGreaterThanOrEqual(3);
    expect((await readPlan(planPath).catch(() => null))?.tasks[0]?.attempts ?? 1).toBe(1);
  });

  it('a limit that ends a worker after it did something: the attempt pauses with its worktree and goes on with its own conversation (--resume)', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'from the first worker\n' }, limitAfterWork: true, retryDelayMs: 100 } }),
    ]);
    const { repo, journal, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--json'], env);
    expect(r.exitCode, r.stderr).toBe(0);
    const types = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types.filter((t) => ['task-started', 'task-paused', 'task-resumed', 'task-finished'].includes(t))).toEqual([
      'task-started',
      'task-paused',
      'task-resumed',
      'task-finished',
    ]);
    // The resumed worker wrote nothing: what the first one wrote, in the worktree it kept, is what landed.
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('from the first worker\n');
    const starts = (await journalOf(journal)).filter((l) => l.event === 'start');
    expect(starts.length).toBe(2);
    expect(starts[1]!.cwd).toBe(starts[0]!.cwd);
    expect(starts[1]!.args).toContain('--resume');
  });

  it('a usage limit resetting later than --limit-wait: the run drains and stops with exit 75, naming when to run again; nothing is spent', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' }, limitAfterWork: { resetInSeconds: 7200 } } }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b' } } }),
    ]);
    const { repo, planPath, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--json', '--limit-wait', '3600'], env);
    expect(r.exitCode, r.stderr).toBe(75);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // Its CLI's retries held the run as a rate limit first; the reset its last refusal named is past
    // --limit-wait: the run drains at once, and never says it waits for the reset.
    expect(events.filter((e) => e['type'] === 'limit').map((e) => e['limit'])).not.toContain('usage-limit');
    expect(events.filter((e) => e['type'] === 'limit' && /waiting/.test(String(e['message'])))).toEqual([]);
    const draining = events.find((e) => e['type'] === 'draining')!;
    const end = events.find((e) => e['type'] === 'run-finished')!;
    expect([end['reason'], end['exitCode'], end['outcome']]).toEqual(['limited', 75, 'incomplete']);
    expect(Date.parse(String(end['resumeAfter'])) - Date.parse(String(draining['at']))).toBeGreaterThan(7100_000);
    expect(String(end['message'])).toMatch(/the usage limit resets at .*longer than --limit-wait \(1h00m\).*Run the same command again after /);
    expect((await readPlan(planPath)).tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
    // A person who comes back later learns from `plan status` what stopped the run, and when to go on.
    const status = await runPlanTool(repo.dir, ['status']);
    expect(status.stdout).toContain(
      `The last run (${end['runId']}) stopped at ${end['at']} (exit 75) because of a rate or usage limit: the usage limit resets at `,
    );
    expect(status.stdout).toMatch(/^Run the same command again after (\w{3} \d{1,2} )?\d\d:\d\d to go on\.$/m);
    const json = JSON.parse((await runPlanTool(repo.dir, ['status', '--json'])).stdout);
    expect(json.run).toBeNull();
    expect(json.stopped).toMatchObject({ runId: end['runId'], reason: 'limited', resumeAfter: end['resumeAfter'], message: end['message'] });
    expect(json.stopped.runAgain).toMatch(/^after /);
  });

  it('a run that drains for a usage limit past --limit-wait waits for nothing: the workers still running are served, and it says neither that the API serves again nor that it waits', async () => {
    // B, C and D outlive A: after A's usage limit drains the run, their CLIs are still served (their later writes).
    const others = ['b', 'c', 'd'].map((name) =>
      fakeTask(name.toUpperCase(), {
        create: [`${name}.txt`, `${name}2.txt`],
        // biome-ignore lint/suspicious/noThenProperty: the fake worker's directive for what it does next
        fake: { write: { [`${name}.txt`]: name }, sleepMs: 1500, then: { write: { [`${name}2.txt`]: name } } },
      }),
    );
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' }, limitAfterWork: { resetInSeconds: 3600 } } }), ...others]);
    const { repo, env } = await setup(plan);
    const r = await runExecute(repo.dir, ['--concurrency', '4', '--limit-wait', '5'], env);
    expect(r.exitCode, r.stderr).toBe(75);
    const lines = r.stdout.split('\n');
    const drained = lines.findIndex((l) => /\bdraining: /.test(l));
    expect(drained, r.stdout).toBeGreaterThan(-1);
    expect(lines.slice(drained).filter((l) => /waiting for|serves again/.test(l))).toEqual([]);
    const journaled = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; change?: string; message?: string });
    const drainedAt = journaled.findIndex((e) => e.type === 'draining');
    expect(drainedAt).toBeGreaterThan(-1);
    // Before the drain its CLI's retries held the run as a rate limit; after it, the limiter says nothing.
    expect(journaled.slice(0, drainedAt).some((e) => e.type === 'limit' && e.change === 'hold')).toBe(true);
    expect(journaled.slice(drainedAt).filter((e) => e.type === 'limit')).toEqual([]);
    // What ran finished its work; the limited task waits for the next run, nothing spent.
    const end = journaled.find((e) => e.type === 'run-finished')!;
    expect(end).toMatchObject({ reason: 'limited', exitCode: 75 });
  });

  it('--dry-run prints the rounds and the commands and starts nothing', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'exists', check: 'test -f a.txt' }] }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], assumptions: [{ claim: 'node', verify: 'node --version', severity: 'blocking' }] }),
    ]);
    const { repo, planPath, journal, env } = await setup(plan);
    const before = await readFile(planPath, 'utf8');
    const r = await runExecute(repo.dir, ['--dry-run'], env);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Round 1');
    expect(r.stdout).toContain('Round 2');
    expect(r.stdout).toContain('test -f a.txt');
    expect(r.stdout).toContain('node --version');
    expect(r.stdout).toContain('Gate: none');
    expect(await readFile(planPath, 'utf8')).toBe(before);
    expect(await journalOf(journal)).toEqual([]);
    const gated = await runExecute(repo.dir, ['--dry-run', '--gate', 'npm test', '--gate-batch', '2'], env);
    expect(gated.stdout).toContain('Gate: `npm test` on batches of up to 2');
    // Flags of the gate are checked like the others.
    expect((await runExecute(repo.dir, ['--dry-run', '--gate', 'npm test', '--no-gate'], env)).exitCode).toBe(2);
    expect((await runExecute(repo.dir, ['--dry-run', '--gate-batch', '0'], env)).exitCode).toBe(2);
    expect((await runExecute(repo.dir, ['--dry-run', '--land', 'sometimes'], env)).exitCode).toBe(2);
  });

  it('exits 2 on bad flags, an invalid plan, or a directory that is not a git repository', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo, planPath } = await setup(plan);
    expect((await runExecute(repo.dir, ['--concurrency', 'zero'])).exitCode).toBe(2);
    expect((await runExecute(repo.dir, ['--bogus'])).exitCode).toBe(2);
    await writeFile(
      planPath,
      '{"schemaVersion": 3, "goal": "x", "tasks": [{"subject": "s", "prompt": "p", "blockedBy": [4], "metadata": {"files": {"create": ["../x"], "modify": []}}}]}',
    );
    const bad = await runExecute(repo.dir);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('tasks[0].blockedBy[0]: task 4 does not exist');
    expect(bad.stderr).toContain('leaves the repository');
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });

  it('FOREMAN_BACKOFF_MS is checked like a flag: a typo exits 2 with one line naming it, before anything runs', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]);
    const { repo, planPath } = await setup(plan);
    const before = await readFile(planPath, 'utf8');
    for (const value of ['abc', '-5', '1.5', '']) {
      const r = await runExecute(repo.dir, [], { FOREMAN_BACKOFF_MS: value });
      expect(r.exitCode, value).toBe(2);
      expect(r.stderr.trim().split('\n'), value).toEqual([
        `execute: FOREMAN_BACKOFF_MS expects a whole number of milliseconds from 0 to 3600000 (1 hour), got "${value}"`,
      ]);
    }
    expect(await readFile(planPath, 'utf8')).toBe(before);
    await expect(readFile(join(repo.dir, 'a.txt'))).rejects.toThrow();
    // A valid value runs.
    expect((await runExecute(repo.dir, [], { FOREMAN_BACKOFF_MS: '0' })).exitCode).toBe(0);
  });

  it('FOREMAN_GIT_TIMEOUT is checked like a flag by execute and the plan tool: a typo exits 2 with one line naming it, before anything runs', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]);
    const { repo, planPath } = await setup(plan);
    const before = await readFile(planPath, 'utf8');
    const takes = 'a whole number of seconds from 1 to 604800 (7 days)';
    for (const value of ['abc', '0', '-5', '1.5', '', '604801']) {
      const r = await runExecute(repo.dir, [], { FOREMAN_GIT_TIMEOUT: value });
      expect(r.exitCode, value).toBe(2);
      expect(r.stderr.trim().split('\n'), value).toEqual([`execute: FOREMAN_GIT_TIMEOUT expects ${takes}, got "${value}"`]);
      const status = await runPlanTool(repo.dir, ['status'], { FOREMAN_GIT_TIMEOUT: value });
      expect(status.exitCode, value).toBe(2);
      expect(status.stderr.split('\n'), value).toEqual([`plan status: FOREMAN_GIT_TIMEOUT expects ${takes}, got "${value}"`]);
      // A session step says it in its JSON too.
      const step = await runPlanTool(repo.dir, ['setup'], { FOREMAN_GIT_TIMEOUT: value });
      expect(step.exitCode, value).toBe(2);
      expect(JSON.parse(step.stdout), value).toEqual({
        error: { kind: 'usage', message: `FOREMAN_GIT_TIMEOUT expects ${takes}, got "${value}"`, details: [] },
      });
    }
    expect(await readFile(planPath, 'utf8')).toBe(before);
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
    expect(existsSync(join(repo.dir, '.design/prompts/session.json'))).toBe(false);
    // A valid value runs.
    expect((await runExecute(repo.dir, [], { FOREMAN_GIT_TIMEOUT: '30' })).exitCode).toBe(0);
  });

  it("a valid FOREMAN_GIT_TIMEOUT is the limit of the run's git commands: one that hangs is ended after it, and named", async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]);
    const { repo } = await setup(plan);
    // git on the PATH as the run finds it: `git status` never answers, as on a huge or stuck repository.
    const bin = await tempDir('foreman-hanging-git-');
    const realGit = join((await execa('git', ['--exec-path'])).stdout.trim(), 'git');
    await writeFile(join(bin, 'git'), `#!/bin/sh\nfor word in "$@"; do [ "$word" = status ] && exec sleep 600; done\nexec '${realGit}' "$@"\n`, {
      mode: 0o755,
    });
    const r = await runExecuteProcess(repo.dir, [], { PATH: `${bin}:${process.env.PATH ?? ''}`, FOREMAN_GIT_TIMEOUT: '3' });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('`git status` timed out after 3s (the limit set by FOREMAN_GIT_TIMEOUT, in seconds); its process group was ended');
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
  });

  it('exits 3 with an install hint when the agent CLI is missing', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo } = await setup(plan);
    const r = await runExecute(repo.dir, ['--claude-bin', '/nonexistent/claude']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('npm install -g @anthropic-ai/claude-code');
  });
});

describe('cost budgets', () => {
  it('--max-cost-usd stops starting work once the run cost reaches the limit; a resume continues', async () => {
    const t = (m: string) => fakeTask(m, { create: [`${m}.txt`], fake: { write: { [`${m}.txt`]: m }, costUsd: 0.4 } });
    const { repo, planPath, journal, env } = await setup(makePlan([t('A'), t('B'), t('C'), t('D')]));
    const r = await runExecute(repo.dir, ['--max-cost-usd', '1', '--concurrency', '1', '--json'], env);
    expect(r.exitCode).toBe(1);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; costUsd?: number; limitUsd?: number; reason?: string; message?: string });
    const budget = events.find((e) => e.type === 'budget-reached')!;
    expect(budget.costUsd).toBeCloseTo(1.2);
    expect(budget.limitUsd).toBe(1);
    const finished = events.find((e) => e.type === 'run-finished')!;
    expect(finished.reason).toBe('budget');
    expect(finished.message).toMatch(/cost reached \$1\.20 \(limit \$1\.00\)/);
    const after = await readPlan(planPath);
    expect(after.tasks.map((x) => x.status ?? 'pending')).toEqual(['completed', 'completed', 'completed', 'pending']);
    expect(after.tasks[0]!.usage).toMatchObject({ costUsd: expect.closeTo(0.4) });

    const resumed = await runExecute(repo.dir, ['--max-cost-usd', '1'], env);
    expect(resumed.exitCode).toBe(0);
    expect((await fakeEvents(journal)).filter((e) => e.event === 'start')).toHaveLength(4);
  });

  it('gives each worker --max-budget-usd from the task or from --task-budget-usd', async () => {
    const { repo, journal, env } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], maxBudgetUsd: 0.5, fake: { write: { 'a.txt': 'a' } } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b' } } }),
      ]),
    );
    expect((await runExecute(repo.dir, ['--task-budget-usd', '2'], env)).exitCode).toBe(0);
    const starts = (await fakeEvents(journal)).filter((e) => e.event === 'start') as Array<{ taskMarker?: string; args?: string[] }>;
    const budgetOf = (m: string) => {
      const args = starts.find((s) => s.taskMarker === m)!.args!;
      return args[args.indexOf('--max-budget-usd') + 1];
    };
    expect(budgetOf('A')).toBe('0.5');
    expect(budgetOf('B')).toBe('2');
  });

  it('a worker that hits its budget is a failed attempt with that reason', async () => {
    const { repo, planPath } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { error: 'max-budget' } })]));
    expect((await runExecute(repo.dir, ['--max-attempts', '1'])).exitCode).toBe(1);
    expect((await readPlan(planPath)).tasks[0]!.result).toMatch(/budget/);
  });
});

describe('approvals', () => {
  it('gate → reject: the task fails and its dependants are skipped on the next run', async () => {
    const { repo, planPath } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], gate: 'human-approval', fake: { write: { 'a.txt': 'a' } } }),
        fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b' } } }),
      ]),
    );
    const first = await runExecute(repo.dir);
    expect(first.exitCode).toBe(1);
    expect(first.stdout).toMatch(/approve/);
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('awaiting_approval');
    const rejected = await runPlanTool(repo.dir, ['reject', '0', '--reason', 'wrong approach']);
    expect(rejected.exitCode).toBe(0);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => t.status)).toEqual(['failed', 'skipped']);
    const again = await runExecute(repo.dir);
    expect(again.exitCode).toBe(1);
    expect(existsSync(join(repo.dir, 'b.txt'))).toBe(false);
  });
});

describe('--schedule rounds', () => {
  it('runs the ready set as a round and commits once per round', async () => {
    const { repo, journal, env } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' }, sleepMs: 100 } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b' }, sleepMs: 600 } }),
        fakeTask('C', { create: ['c.txt'], blockedBy: [0], fake: { write: { 'c.txt': 'c' } } }),
      ]),
    );
    const r = await runExecute(repo.dir, ['--schedule', 'rounds', '--json'], env);
    expect(r.exitCode).toBe(0);
    const commits = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; tasks?: number[] })
      .filter((e) => e.type === 'round-committed');
    expect(commits.map((c) => c.tasks)).toEqual([[0, 1], [2]]);
    // C waited for the whole first round (B included), unlike the continuous policy.
    const spans = intervals(await journalOf(journal));
    expect(spans.get('C#1')!.start).toBeGreaterThanOrEqual(spans.get('B#1')!.end);
    expect((await repo.git(['log', '--format=%s'])).trim().split('\n')).toHaveLength(3);
  });
});

describe('approvals and overlapping work', () => {
  it('a task overlapping work awaiting approval waits until the approval is decided', async () => {
    const { repo, planPath, journal, env } = await setup(
      makePlan([
        fakeTask('A', { modify: ['notes.txt'], gate: 'human-approval', fake: { append: { 'notes.txt': 'A\n' } } }),
        fakeTask('B', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'B\n' }, sleepMs: 200 } }),
      ]),
      { 'notes.txt': 'notes\n' },
    );
    // Same priority: with one worker at a time A (the lower index) starts first.
    const first = await runExecute(repo.dir, ['--concurrency', '1'], env);
    expect(first.exitCode).toBe(1);
    expect((await fakeEvents(journal)).filter((e) => e.event === 'start').map((e) => e.taskMarker)).toEqual(['A']);
    // B did not run on top of A's unapproved edit.
    expect((await readPlan(planPath)).tasks.map((t) => t.status ?? 'pending')).toEqual(['awaiting_approval', 'pending']);
    expect(first.stdout).toMatch(/waiting for approval/);
    expect((await runPlanTool(repo.dir, ['approve', '0'])).exitCode).toBe(0);
    const second = await runExecute(repo.dir, [], env);
    expect(second.exitCode).toBe(0);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nA\nB\n');
    // A's line was committed once, by the approved-work commit, before B's.
    const log = await repo.git(['log', '-p', '--format=%s', '--', 'notes.txt']);
    expect(log.match(/^\+A$/gm)).toHaveLength(1);
  });
});

describe('changes outside the declared files', () => {
  it("fail the attempt of the task that made them, never of other tasks, and never reach the person's tree", async () => {
    const { repo, planPath } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a', 'stray.txt': 'oops' }, sleepMs: 300 } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b' }, sleepMs: 300, status: 'FAILED: no' } }),
        fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c' }, sleepMs: 300 } }),
      ]),
    );
    // With --strict-scope an undeclared change fails the attempt, and each worker has a worktree of
    // its own, so it is pinned on its task even when all run at once.
    const r = await runExecute(repo.dir, ['--max-attempts', '1', '--strict-scope']);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => t.status)).toEqual(['failed', 'failed', 'completed']);
    expect(after.tasks[0]!.result).toMatch(/does not declare.*: stray\.txt$/);
    expect(after.tasks[1]!.result).not.toContain('stray.txt');
    expect(after.tasks[2]!.result ?? '').not.toContain('stray.txt');
    // The stray file is committed only where foreman keeps what it set aside, and never was in the person's tree.
    expect(await repo.git(['log', '--format=', '--name-only', '--exclude=refs/foreman-aside/*', '--all'])).not.toContain('stray.txt');
    expect((await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman-aside/'])).trim()).toMatch(/^refs\/foreman-aside\/[^/]+\/0$/);
    expect(existsSync(join(repo.dir, 'stray.txt'))).toBe(false);
    expect(await repo.git(['show', 'HEAD:c.txt'])).toBe('c');
  });

  it("are set aside by default: the task that made them completes with its declared work, named in a warning, and they never reach the person's tree", async () => {
    const { repo, planPath } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'declared work only', check: 'test -f a.txt && test ! -e stray.txt' }],
          fake: { write: { 'a.txt': 'a', 'stray.txt': 'oops' }, sleepMs: 300 },
        }),
        fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c' }, sleepMs: 300 } }),
      ]),
    );
    const r = await runExecute(repo.dir, ['--max-attempts', '1', '--json']);
    expect(r.exitCode).toBe(0);
    const finished = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((e) => e.type === 'task-finished' && e.task === 0);
    expect(finished).toEqual([
      expect.objectContaining({
        outcome: 'completed',
        warnings: [expect.stringMatching(/^changed files its task does not declare: stray\.txt \(set aside, not integrated; kept in refs\/foreman-aside\//)],
      }),
    ]);
    expect(await repo.git(['log', '--format=', '--name-only', '--exclude=refs/foreman-aside/*', '--all'])).not.toContain('stray.txt');
    expect(existsSync(join(repo.dir, 'stray.txt'))).toBe(false);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a');
    // The plan finished and its refs went with it; the archived plan names what was set aside.
    await expect(readPlan(planPath)).rejects.toThrow();
  });
});

describe('what was set aside, and the way to go on, on the screen (issue 49)', () => {
  it("the task's line and the Summary name the paths set aside and the git commands, which read them back after the plan finished", async () => {
    const strays = { 'stray.txt': 'oops\n', 'dist/a.js': 'a\n', 'dist/b.js': 'b\n', 'dist/c.js': 'c\n', 'dist/d.js': 'd\n' };
    const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n', ...strays }, sleepMs: 100 } })]));
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => / task 0 completed /.test(l));
    const commit =
      /set aside, not integrated: dist\/a\.js, dist\/b\.js, dist\/c\.js and 2 more \(`git show --stat ([0-9a-f]{12})` lists them with the attempt's other files, `git restore --source=\1 -- <path>` brings one back into your files\)$/.exec(
        line ?? '',
      )?.[1];
    expect(commit, line).toBeDefined();
    expect(r.stdout).toContain('the one task completed');
    const summary = r.stdout.slice(r.stdout.indexOf('\nSummary: '));
    expect(summary).toContain('Summary: 1/1 completed');
    expect(summary).toContain('  set aside: 1 task');
    expect(summary).toContain(
      `    0: task A (attempt 1) — set aside, not integrated: dist/a.js, dist/b.js, dist/c.js and 2 more (\`git show --stat ${commit}\``,
    );
    expect(summary).not.toContain('to go on:');
    // The plan finished and its refs went; the commands still work, as a person types them.
    expect((await repo.git(['for-each-ref', 'refs/foreman-aside/'])).trim()).toBe('');
    const listed = await repo.git(['show', '--stat', '--format=', commit!]);
    for (const path of ['stray.txt', 'dist/a.js', 'dist/d.js']) expect(listed).toContain(path);
    expect(existsSync(join(repo.dir, 'stray.txt'))).toBe(false);
    await repo.git(['restore', `--source=${commit}`, '--', 'stray.txt']);
    expect(await readFile(join(repo.dir, 'stray.txt'), 'utf8')).toBe('oops\n');
  });

  it('a run started from outside the repository (--repo) names the repository in the git commands, which work as typed from there', async () => {
    const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n', 'stray.txt': 'oops\n' }, sleepMs: 100 } })]));
    const elsewhere = await tempDir('foreman-elsewhere-');
    const r = await runExecute(elsewhere, ['--repo', repo.dir, '--max-attempts', '1']);
    expect(r.exitCode, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => / task 0 completed /.test(l)) ?? '';
    const show = /\(`(git -C \S+ show --stat [0-9a-f]{12})` lists them/.exec(line)?.[1];
    expect(show, line).toBe(`git -C ${repo.dir} show --stat ${show?.slice(-12)}`);
    expect(r.stdout.slice(r.stdout.indexOf('\nSummary: '))).toContain(`(\`${show}\` lists them`);
    const typed = await execa('sh', ['-c', show!], { cwd: elsewhere, reject: false });
    expect(typed.exitCode, typed.stderr).toBe(0);
    expect(typed.stdout).toContain('stray.txt');
  });

  it('a run started from a subfolder names the repository in the git commands, which bring a set-aside file back as typed from there', async () => {
    const { repo } = await setup(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n', 'dist/x.js': 'built\n' }, sleepMs: 100 } })]), {
      'src/index.js': 'index\n',
    });
    const subfolder = join(repo.dir, 'src');
    const r = await runExecute(subfolder, ['--max-attempts', '1']);
    expect(r.exitCode, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => / task 0 completed /.test(l)) ?? '';
    const [, show, restore] =
      /\(`(git -C \S+ show --stat [0-9a-f]{12})` lists them .*, `(git -C \S+ restore --source=[0-9a-f]{12} -- <path>)` brings one back/.exec(line) ?? [];
    expect(show, line).toBe(`git -C ${repo.dir} show --stat ${show?.slice(-12)}`);
    expect(r.stdout.slice(r.stdout.indexOf('\nSummary: '))).toContain(`(\`${show}\` lists them`);
    // Typed where the run was started, with the path as the line names it (relative to the top).
    const listed = await execa('sh', ['-c', show!], { cwd: subfolder, reject: false });
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('dist/x.js');
    expect(existsSync(join(repo.dir, 'dist/x.js'))).toBe(false);
    const restored = await execa('sh', ['-c', restore!.replace('<path>', 'dist/x.js')], { cwd: subfolder, reject: false });
    expect(restored.exitCode, restored.stderr).toBe(0);
    expect(await readFile(join(repo.dir, 'dist/x.js'), 'utf8')).toBe('built\n');
  });

  it('a failed run ends with one `plan retry` naming every failed task, whole, and the Summary repeats it', async () => {
    const failing = (marker: string) =>
      fakeTask(marker, { create: [`${marker}.txt`], fake: { write: { [`${marker}.txt`]: 'x\n' }, status: 'FAILED: not today' } });
    const { repo, planPath } = await setup(makePlan([failing('A'), failing('B'), fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c\n' } } })]));
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode).toBe(1);
    const retry = '`npx tsx scripts/plan.ts retry 0 1`';
    const closing = r.stdout.split('\n').find((l) => / finished: incomplete /.test(l)) ?? '';
    expect(closing).toContain(`1 of 3 tasks completed. The plan keeps its state in ${planPath}: tasks 0 and 1 are failed`);
    expect(closing).toContain(`put them back with ${retry} (tasks skipped because of them come back too) and run the same command again`);
    expect(closing.endsWith('and run the same command again')).toBe(true);
    const summary = r.stdout.slice(r.stdout.indexOf('\nSummary: '));
    expect(summary).toContain('  to go on:');
    expect(summary).toContain(`    ${retry} puts tasks 0 and 1 back to pending, with the tasks skipped because of them`);
    expect(summary).toContain('    then run the same command again');
    // The command as printed works, all or nothing.
    const tool = await runPlanTool(repo.dir, ['retry', '0', '1']);
    expect(tool.exitCode, tool.stderr).toBe(0);
    expect((await readPlan(planPath)).tasks.map((t) => t.status)).toEqual(['pending', 'pending', 'completed']);
  });
});

describe('what a task needed, named and fixed (issue 40)', () => {
  it('a blocked task that wanted an undeclared file: the run names it and the exact command, runnable from where the person is (a --repo run names its plan); plan declare --needed puts it back', async () => {
    const { repo, planPath } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          // The refused Edit names the file in its own worktree.
          fake: {
            write: { 'a.txt': 'a\n' },
            permissionDenials: [{ tool_name: 'Edit', tool_input: { file_path: '$CWD/src/index.js' } }],
            status: 'BLOCKED: needs to modify src/index.js, which the task does not declare',
          },
        }),
      ]),
      { 'src/index.js': 'export {};\n' },
    );
    const elsewhere = join(repo.dir, '..');
    const r = await runExecute(elsewhere, ['--repo', repo.dir]);
    expect(r.exitCode).toBe(1);
    const after = await readPlan(planPath);
    expect(after.tasks[0]).toMatchObject({ status: 'blocked', undeclaredWrites: ['src/index.js'] });
    expect(after.tasks[0]!.result).toContain('it needs src/index.js, which the task does not declare');
    expect(r.stdout).toMatch(new RegExp(`declare 0 --needed --plan ${planPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\` \\(it needs src/index\\.js\\)`));
    const declared = await runPlanTool(repo.dir, ['declare', '0', '--needed']);
    expect(declared.exitCode).toBe(0);
    expect((await readPlan(planPath)).tasks[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
      metadata: { files: { create: ['a.txt'], modify: ['src/index.js'] } },
    });
  });

  it('--widen adds it within the run instead: journaled, and the task runs again with no attempt counted', async () => {
    const { repo, planPath } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'exported', check: 'grep -q feature src/index.js' }],
          // Both attempts write the file through the shell; once it is declared, the second lands.
          fake: { write: { 'a.txt': 'a\n', 'src/index.js': 'export { feature };\n' } },
        }),
      ]),
      { 'src/index.js': 'export {};\n' },
    );
    const r = await runExecute(repo.dir, ['--widen', 'src/**', '--json']);
    expect(r.exitCode, r.stdout).toBe(0);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; task?: number; outcome?: string; paths?: string[]; recheck?: boolean });
    expect(events.find((e) => e.type === 'task-widened')).toMatchObject({ task: 0, paths: ['src/index.js'], recheck: true });
    expect(events.filter((e) => e.type === 'task-finished').map((e) => e.outcome)).toEqual(['interrupted', 'completed']);
    expect(await repo.git(['show', 'HEAD:src/index.js'])).toBe('export { feature };\n');
    // The re-check of the set-aside work completed it: the worker ran once.
    expect(events.filter((e) => e.type === 'task-started')).toHaveLength(2);
    await expect(readPlan(planPath)).rejects.toThrow();
  });
});
