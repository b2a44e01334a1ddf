// The headless engine in the test process: workers are released one at a time by the test, time
// is a fake clock, worktrees, verification and git are fakes. Ordering, overlaps, retries, budget,
// the breaker, interrupts, gates and git failures, checked step by step with no sleeps (rate and
// usage limits: limits.test.ts).

import { describe, expect, it } from 'vitest';
import { err } from '../../src/core/result.ts';
import type { Host } from '../../src/core/hosts/url.ts';
import { type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { EngineRig, failedRun, gitFailure, passed, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });

describe('the engine, in process', () => {
  it('starts a dependant only once its blocker is recorded, and passes its result on', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B', { blockedBy: [0] }), task('C')]), { settings: { concurrency: 4 } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 2]);
    expect(rig.worktrees.get(0)).toBe('/worktrees/0');
    expect(rig.started.find((r) => r.taskIndex === 0)!.cwd).toBe('/worktrees/0');
    await rig.finish(0, 'COMPLETED: made A');
    expect(rig.recorded.map((r) => [r.tasks, r.round])).toEqual([[[0], 1]]);
    expect(rig.recorded[0]!.integrate.map((i) => i.task)).toEqual([0]);
    // Verified: its worktree is free for the next attempt.
    expect(rig.released).toEqual([0]);
    expect(rig.runningTasks).toEqual([1, 2]);
    expect(rig.started.find((r) => r.taskIndex === 1)!.prompt).toContain('made A');
    await rig.finish(2, 'COMPLETED: made C');
    await rig.finish(1, 'COMPLETED: made B');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(result.plan.tasks.map((t) => [statusOf(t), t.commit])).toEqual([
      ['completed', 'commit-1'],
      ['completed', 'commit-3'],
      ['completed', 'commit-2'],
    ]);
    // Saved before each worker started, with the task in progress.
    expect(rig.saves.some((p) => statusOf(p.tasks[0]!) === 'in_progress' && statusOf(p.tasks[2]!) === 'in_progress')).toBe(true);
  });

  it('starts a worker only once the plan that says it started is written, and holds nothing else back for a slow write', async () => {
    const writes: Array<{ plan: Plan; done: () => void }> = [];
    const rig = new EngineRig(makePlan([task('A'), task('B'), task('C', { blockedBy: [0] })]), {
      settings: { concurrency: 2 },
      save: (plan) => new Promise<void>((done) => writes.push({ plan, done })),
    });
    await rig.advance(0);
    // The worktrees are made ready meanwhile; the workers wait for the write.
    expect(rig.stacks.map(([t]) => t)).toEqual([0, 1]);
    expect(rig.runningTasks).toEqual([]);
    expect(writes.map((w) => w.plan.tasks.map(statusOf))).toEqual([['in_progress', 'in_progress', 'pending']]);
    writes[0]!.done();
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 1]);
    // A is verified and recorded, and its dependant C may start: C's worker waits for the write
    // that says so, while everything else goes on.
    await rig.finish(0, 'COMPLETED: a');
    expect(rig.recorded.map((r) => r.tasks)).toEqual([[0]]);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.plan.tasks.map(statusOf)).toEqual(['completed', 'in_progress', 'in_progress']);
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: b');
    expect(rig.recorded.map((r) => r.tasks)).toEqual([[0], [1]]);
    // Steps that change the plan while a write runs share the one write after it, of the newest plan.
    expect(writes).toHaveLength(2);
    writes[1]!.done();
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([2]);
    expect(writes).toHaveLength(3);
    expect(writes[2]!.plan.tasks.map(statusOf)).toEqual(['completed', 'completed', 'in_progress']);
    await rig.finish(2, 'COMPLETED: c');
    // The run ends only once its last plan is written.
    writes[2]!.done();
    await rig.advance(0);
    expect(rig.result).toBeNull();
    expect(writes).toHaveLength(4);
    writes[3]!.done();
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(writes[3]!.plan.tasks.map(statusOf)).toEqual(['completed', 'completed', 'completed']);
  });

  it('stops with the error when the plan cannot be written', async () => {
    const rig = new EngineRig(makePlan([task('A')]), { save: async () => Promise.reject(new Error('ENOSPC: no space left on device')) });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([]);
    await expect(rig.ended()).rejects.toThrow(/ENOSPC/);
  });

  it('never runs two tasks that touch the same file at once, and never more than the concurrency', async () => {
    const rig = new EngineRig(makePlan([task('A', { create: ['shared.txt'] }), task('B', { modify: ['shared.txt'], create: [] }), task('C'), task('D')]), {
      settings: { concurrency: 2 },
    });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 2]);
    await rig.finish(2, 'COMPLETED: c');
    // B overlaps A, which still runs: D takes the slot.
    expect(rig.runningTasks).toEqual([0, 3]);
    await rig.finish(0, 'COMPLETED: a');
    expect(rig.runningTasks).toEqual([1, 3]);
    await rig.finish(1, 'COMPLETED: b');
    await rig.finish(3, 'COMPLETED: d');
    expect((await rig.ended()).reason).toBe('all-done');
  });

  it('retries a failed attempt in a fresh worktree, with the failure in the next prompt', async () => {
    const rig = new EngineRig(makePlan([task('A')]));
    await rig.advance(0);
    await rig.finish(0, 'FAILED: the tests would not pass');
    expect(rig.released).toEqual([0]);
    expect(rig.worktrees.has(0)).toBe(true);
    expect(rig.outcomes()).toEqual([[0, 'retry']]);
    expect(rig.started.map((r) => [r.taskIndex, r.attempt])).toEqual([
      [0, 1],
      [0, 2],
    ]);
    expect(rig.started[1]!.prompt).toContain('the tests would not pass');
    await rig.finish(0, 'COMPLETED: fixed');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(result.plan.tasks[0]!.attempts).toBe(2);
  });

  it('an acceptance failure counts as an attempt; the last one fails the task and skips its dependants', async () => {
    const failing = {
      acceptance: [
        {
          criterion: 'tests pass',
          check: 'npm test',
          passed: false,
          exitCode: 1,
          timedOut: false,
          timeLimit: { ms: 300_000, flag: '--check-timeout' },
          output: 'Error: expected 2',
        },
      ],
    };
    const rig = new EngineRig(makePlan([task('A'), task('B', { blockedBy: [0] })]), {
      settings: { maxAttempts: 2 },
      verify: (t, plan) => passed(plan.tasks[t]!, failing),
    });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.finish(0, 'COMPLETED: a again');
    const result = await rig.ended();
    expect(rig.outcomes()).toEqual([
      [0, 'retry'],
      [0, 'failed'],
    ]);
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['failed', 'skipped']);
    expect(result.plan.tasks[0]!.result).toContain('expected 2');
    expect(result.reason).toBe('failures');
  });

  it('stops starting work once the budget is spent, and finishes what runs', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B'), task('C')]), { settings: { concurrency: 2, maxCostUsd: 1 } });
    await rig.advance(0);
    await rig.finish(0, reported('COMPLETED: a', 1.25));
    expect(rig.runningTasks).toEqual([1]);
    expect(rig.events).toContainEqual({ type: 'budget-reached', costUsd: 1.25, limitUsd: 1 });
    await rig.finish(1, reported('COMPLETED: b', 0.5));
    const result = await rig.ended();
    expect(result.reason).toBe('budget');
    expect(result.usage).toMatchObject({ costUsd: 1.75 });
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['completed', 'completed', 'pending']);
  });

  it('trips the circuit breaker when failures would skip half of what is pending', async () => {
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C', { blockedBy: [1] }), task('D'), task('E', { blockedBy: [3] })]);
    const rig = new EngineRig(plan, { settings: { concurrency: 1, maxAttempts: 1 } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0]);
    await rig.finish(0, 'FAILED: no');
    const result = await rig.ended();
    expect(result.reason).toBe('breaker');
    expect(rig.events.some((e) => e.type === 'breaker')).toBe(true);
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['failed', 'skipped', 'skipped', 'pending', 'pending']);
    expect(rig.started.map((r) => r.taskIndex)).toEqual([0]);
  });

  it('says the circuit breaker once: a failure after it tripped skips its dependants without a second breaker line', async () => {
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C', { blockedBy: [0] }), task('D'), task('E', { blockedBy: [3] })]);
    const rig = new EngineRig(plan, { settings: { concurrency: 2, maxAttempts: 1 } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 3]);
    await rig.finish(0, 'FAILED: no');
    await rig.finish(3, 'FAILED: no');
    const result = await rig.ended();
    expect(result.reason).toBe('breaker');
    expect(rig.events.filter((e) => e.type === 'breaker')).toHaveLength(1);
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['failed', 'skipped', 'skipped', 'failed', 'skipped']);
  });

  it('on interrupt, stops the workers, undoes their attempts, records verified work and stops', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B')]), { settings: { concurrency: 2 } });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.interrupt();
    const result = await rig.ended();
    expect(result.reason).toBe('interrupted');
    expect(rig.outcomes()).toEqual([
      [0, 'completed'],
      [1, 'interrupted'],
    ]);
    expect(rig.released.sort()).toEqual([0, 1]);
    expect(rig.worktrees.size).toBe(0);
    expect(result.plan.tasks.map((t) => [statusOf(t), t.attempts])).toEqual([
      ['completed', 1],
      ['pending', undefined],
    ]);
  });

  it('work awaiting approval is parked on a ref of its own, holds its files and no worktree; the run says so', async () => {
    const plan = makePlan([
      task('A', { gate: 'human-approval', create: ['a.txt'] }),
      task('B', { modify: ['a.txt'], create: [] }),
      task('C', { blockedBy: [0] }),
    ]);
    const work = { base: 'b'.repeat(40), entries: [{ path: 'a.txt', mode: '100644', object: 'a'.repeat(40) }] };
    const rig = new EngineRig(plan, { settings: { concurrency: 3 }, verify: (t, current) => passed(current.tasks[t]!, { work }) });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0]);
    await rig.finish(0, 'COMPLETED: a for review');
    const result = await rig.ended();
    expect(result.reason).toBe('awaiting_approval');
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['awaiting_approval', 'pending', 'pending']);
    expect(rig.recorded.map((r) => [r.integrate, r.park])).toEqual([[[], [{ task: 0, work }]]]);
    expect(result.plan.tasks[0]!.commit).toBeUndefined();
    expect(rig.worktrees.size).toBe(0);
  });

  it('integrates exactly the work verification captured', async () => {
    const work = (task: number) => ({ base: 'b'.repeat(40), entries: [{ path: `${'AB'[task]}.txt`, mode: '100644', object: String(task + 1).repeat(40) }] });
    const rig = new EngineRig(makePlan([task('A'), task('B')]), {
      settings: { concurrency: 2 },
      verify: (t, plan) => passed(plan.tasks[t]!, { work: work(t) }),
    });
    await rig.advance(0);
    await rig.finish(1, 'COMPLETED: b');
    await rig.finish(0, 'COMPLETED: a');
    await rig.ended();
    expect(rig.recorded.flatMap((r) => r.integrate)).toEqual([
      { task: 1, work: work(1) },
      { task: 0, work: work(0) },
    ]);
  });

  it('a worktree that cannot be made ready stops the run before any attempt is spent', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B')]), {
      settings: { concurrency: 2 },
      prepare: (t) => (t === 0 ? { ok: false, error: 'the setup command `npm ci` failed (exit 1): ENOTFOUND' } : { ok: true, value: `/worktrees/${t}` }),
    });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: b');
    const result = await rig.ended();
    expect(result.reason).toBe('setup-failed');
    expect(result.message).toContain('ENOTFOUND');
    expect(result.plan.tasks.map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['completed', 1],
    ]);
  });

  it('with --strict-scope, an attempt that changed files its task does not declare fails with their names', async () => {
    const setAside = { paths: ['README.md', 'junk/stray.txt'], tracked: ['README.md'], kept: { commit: 'a'.repeat(40), ref: 'refs/foreman-aside/p/0' } };
    const rig = new EngineRig(makePlan([task('A')]), {
      settings: { maxAttempts: 1, strictScope: true },
      verify: (t, plan) => passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside }),
    });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    const result = await rig.ended();
    expect(statusOf(result.plan.tasks[0]!)).toBe('failed');
    expect(result.plan.tasks[0]!.result).toContain('README.md, junk/stray.txt');
    expect(rig.recorded).toEqual([]);
    // The journal's task-finished carries them as a warning too, for the report; the task records them.
    expect(rig.events.find((e) => e.type === 'task-finished')).toMatchObject({
      warnings: [
        `changed files its task does not declare: README.md, junk/stray.txt (set aside, not integrated; kept in refs/foreman-aside/p/0, commit ${'a'.repeat(12)}): \`git show --stat ${'a'.repeat(12)}\` lists them with the attempt's other files, \`git restore --source=${'a'.repeat(12)} -- <path>\` brings one back into your files`,
      ],
    });
    expect(result.plan.tasks[0]).toMatchObject({
      undeclaredWrites: ['README.md', 'junk/stray.txt'],
      setAside: { attempt: 1, paths: ['README.md', 'junk/stray.txt'], commit: 'a'.repeat(40) },
    });
  });

  it('an attempt that changed files its task does not declare completes with its declared work when its checks pass, the files set aside and named', async () => {
    const setAside = { paths: ['package-lock.json'], tracked: ['package-lock.json'], kept: { commit: 'b'.repeat(40), ref: 'refs/foreman-aside/p/0' } };
    const rig = new EngineRig(makePlan([task('A')]), { verify: (t, plan) => passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside }) });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    const result = await rig.ended();
    expect(statusOf(result.plan.tasks[0]!)).toBe('completed');
    expect(rig.recorded.flatMap((r) => r.integrate.map((w) => w.task))).toEqual([0]);
    expect(rig.events.find((e) => e.type === 'task-finished')).toMatchObject({
      outcome: 'completed',
      warnings: [expect.stringContaining('changed files its task does not declare: package-lock.json (set aside, not integrated')],
      setAside: { paths: ['package-lock.json'], commit: 'b'.repeat(40) },
    });
    expect(result.plan.tasks[0]!.setAside).toEqual({ attempt: 1, paths: ['package-lock.json'], commit: 'b'.repeat(40) });
  });

  it('a task widened to declare its set-aside work re-checks that work first: passing, it completes with no worker run', async () => {
    const commit = 'c'.repeat(40);
    const widened = task('A', { modify: ['src/index.ts'] });
    Object.assign(widened, { recheck: true, setAside: { attempt: 1, paths: ['src/index.ts'], commit } });
    const rig = new EngineRig(makePlan([widened]), {
      verify: (t, plan) =>
        passed(plan.tasks[t]!, {
          acceptance: [
            { criterion: 'c', check: 'true', passed: true, exitCode: 0, timedOut: false, timeLimit: { ms: 1000, flag: '--check-timeout' }, output: '' },
          ],
          work: {
            base: 'b'.repeat(40),
            entries: [
              { path: 'A.txt', mode: '100644', object: 'a'.repeat(40) },
              { path: 'src/index.ts', mode: '100644', object: 'd'.repeat(40) },
            ],
          },
        }),
    });
    const result = await rig.ended();
    expect(rig.rechecks).toEqual([[0, commit]]);
    expect(rig.started).toEqual([]);
    expect(statusOf(result.plan.tasks[0]!)).toBe('completed');
    expect(result.plan.tasks[0]!.recheck).toBeUndefined();
  });

  it('a re-check that does not pass costs no attempt: a worker does the task next', async () => {
    const widened = task('A', { modify: ['src/index.ts'] });
    Object.assign(widened, { recheck: true, setAside: { attempt: 1, paths: ['src/index.ts'], commit: 'c'.repeat(40) } });
    // No acceptance check: a re-check (no status line) cannot prove itself.
    const rig = new EngineRig(makePlan([widened]));
    await rig.advance(0);
    expect(rig.rechecks).toHaveLength(1);
    expect(rig.started.map((r) => r.taskIndex)).toEqual([0]);
    expect(rig.events.find((e) => e.type === 'task-finished')).toMatchObject({
      outcome: 'interrupted',
      reason: expect.stringMatching(/^the re-check of the work its last attempt set aside did not pass/),
    });
    await rig.finish(0, 'COMPLETED: by a worker');
    const result = await rig.ended();
    expect(statusOf(result.plan.tasks[0]!)).toBe('completed');
    expect(result.plan.tasks[0]!.attempts).toBe(1);
  });

  it("a review round's attempt works in a worktree of its parked work, its prompt with the words and that work's diff; verified, it parks again", async () => {
    const parked = { commit: 'c'.repeat(40), base: 'b'.repeat(40) };
    const revised = task('A', { gate: 'human-approval' });
    Object.assign(revised, {
      attempts: 0,
      result: 'wrote A',
      reviews: [{ at: '2026-11-29T11:00:00.000Z', feedback: 'also handle the empty string', ...parked, result: 'wrote A', outcome: 'open', attemptsBefore: 1 }],
    });
    const rig = new EngineRig(makePlan([revised, task('B', { blockedBy: [0] })]));
    await rig.advance(0);
    expect(rig.starts).toEqual([[0, parked]]);
    expect(rig.stacks).toEqual([]);
    expect(rig.started.map((r) => r.taskIndex)).toEqual([0]);
    expect(rig.started[0]!.prompt).toContain('> also handle the empty string');
    expect(rig.started[0]!.prompt).toContain(`diff ${parked.base}..${parked.commit}`);
    await rig.finish(0, 'COMPLETED: the empty string too');
    const result = await rig.ended();
    expect(rig.recorded.map((r) => r.park.map((p) => p.task))).toEqual([[0]]);
    expect(result.plan.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, result: 'the empty string too' });
    expect(result.plan.tasks[0]!.reviews).toEqual([expect.objectContaining({ outcome: 'parked', attempts: 1 })]);
    expect(statusOf(result.plan.tasks[1]!)).toBe('pending');
    expect(result.reason).toBe('awaiting_approval');
  });

  it('a re-check whose worktree cannot be made ready costs no attempt and stops nothing: a worker does the task next', async () => {
    const widened = task('A', { modify: ['src/index.ts'] });
    Object.assign(widened, { recheck: true, setAside: { attempt: 1, paths: ['src/index.ts'], commit: 'c'.repeat(40) } });
    const rig = new EngineRig(makePlan([widened]), {
      prepareRecheck: () => err('the work task 0’s last attempt set aside (commit cccccccccccc) cannot be read'),
    });
    await rig.advance(0);
    expect(rig.rechecks).toHaveLength(1);
    expect(rig.started.map((r) => r.taskIndex)).toEqual([0]);
    expect(rig.events.find((e) => e.type === 'notice' && e.level === 'warning')).toMatchObject({
      message: expect.stringMatching(/^task 0: the work its last attempt set aside could not be re-checked \(.*cannot be read\); a worker does the task next/),
    });
    await rig.finish(0, 'COMPLETED: by a worker');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(statusOf(result.plan.tasks[0]!)).toBe('completed');
    expect(result.plan.tasks[0]!.attempts).toBe(1);
  });

  it('--widen adds a tracked file an attempt wanted, once, and the task runs again with no attempt counted (re-checking what it set aside)', async () => {
    const setAside = { paths: ['src/index.ts'], tracked: ['src/index.ts'], kept: { commit: 'e'.repeat(40), ref: 'refs/foreman-aside/p/0' } };
    let verifications = 0;
    const rig = new EngineRig(makePlan([task('A', { create: ['src/feature.ts'], acceptance: [{ criterion: 'c', check: 'true' }] })]), {
      settings: { widen: ['src/**'] },
      verify: (t, plan) => {
        const check = { criterion: 'c', check: 'true', exitCode: 0, timedOut: false, timeLimit: { ms: 1000, flag: '--check-timeout' as const }, output: '' };
        if (verifications++ === 0)
          return passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside, acceptance: [{ ...check, passed: false, exitCode: 1 }] });
        // The re-check: the attempt's whole work, now all declared, passes.
        return passed(plan.tasks[t]!, {
          acceptance: [{ ...check, passed: true }],
          work: {
            base: 'b'.repeat(40),
            entries: [
              { path: 'src/feature.ts', mode: '100644', object: 'c'.repeat(40) },
              { path: 'src/index.ts', mode: '100644', object: 'd'.repeat(40) },
            ],
          },
        });
      },
    });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.advance(0);
    const widenedEvent = rig.events.find((e) => e.type === 'task-widened');
    expect(widenedEvent).toMatchObject({ task: 0, paths: ['src/index.ts'], recheck: true });
    expect(rig.rechecks).toEqual([[0, 'e'.repeat(40)]]);
    const result = await rig.ended();
    expect(statusOf(result.plan.tasks[0]!)).toBe('completed');
    expect(result.plan.tasks[0]!.metadata.files.modify).toEqual(['src/index.ts']);
    // The widened attempt counted nothing; the re-check's pass is the task's one attempt.
    expect(result.plan.tasks[0]!.attempts).toBe(1);
  });

  it('--widen adds nothing outside its patterns, nor an untracked file: the failure says why', async () => {
    const setAside = { paths: ['docs/x.md', 'src/new.ts'], tracked: ['docs/x.md'], kept: null };
    const rig = new EngineRig(makePlan([task('A')]), {
      settings: { widen: ['src/**'], maxAttempts: 1 },
      // It created nothing of its own: only what was set aside.
      verify: (t, plan) =>
        passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside, missingCreated: ['A.txt'], work: { base: 'b'.repeat(40), entries: [] } }),
    });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    const result = await rig.ended();
    expect(rig.events.some((e) => e.type === 'task-widened')).toBe(false);
    expect(result.plan.tasks[0]!.result).toMatch(
      /--widen did not add what it wanted: docs\/x\.md matches no --widen pattern \(src\/\*\*\); src\/new\.ts is not a file git tracks/,
    );
  });

  it('stops the run when the agent cannot run at all, counting no attempt', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B')]), { settings: { concurrency: 2 } });
    await rig.advance(0);
    await rig.finish(0, failedRun({ reason: 'not-authenticated', message: 'Not logged in' }));
    const result = await rig.ended();
    expect(result.reason).toBe('agent-unavailable');
    expect(result.agentFailure).toEqual({ reason: 'not-authenticated', message: 'Not logged in' });
    expect(result.plan.tasks.map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
  });

  it('an integration that fails stops the run, saying what failed; the task is pending again with the reason on it and no attempt counted', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B', { blockedBy: [0] })]), { record: () => gitFailure('update-ref', 'cannot lock ref') });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    const result = await rig.ended();
    expect(result.reason).toBe('git-failed');
    expect(result.message).toContain('cannot lock ref');
    expect(result.message).toContain('task 0 is pending again and run again when you run the same command');
    expect(result.message).not.toMatch(/once git works/);
    expect(statusOf(result.plan.tasks[0]!)).toBe('pending');
    expect(result.plan.tasks[0]!.attempts ?? 0).toBe(0);
    expect(result.plan.tasks[0]!.result).toMatch(
      /^could not integrate the verified work of tasks 0: .*cannot lock ref.*; it runs again at the next run \(no attempt counted\)$/,
    );
    expect(result.plan.tasks[0]!.commit).toBeUndefined();
    expect(rig.started.map((r) => r.taskIndex)).toEqual([0]);
  });

  it('with the rounds policy, records once per round and opens the next round after it', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B'), task('C', { blockedBy: [0] })]), { settings: { concurrency: 4, schedule: 'rounds' } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 1]);
    await rig.finish(0, 'COMPLETED: a');
    // C is ready only once round 1 is recorded, and round 1 ends when B is done.
    expect(rig.recorded).toEqual([]);
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: b');
    expect(rig.recorded.map((r) => [r.tasks, r.round])).toEqual([[[0, 1], 1]]);
    expect(rig.runningTasks).toEqual([2]);
    await rig.finish(2, 'COMPLETED: c');
    expect((await rig.ended()).reason).toBe('all-done');
    expect(rig.recorded.map((r) => r.round)).toEqual([1, 2]);
  });
});

describe('the engine with hosts', () => {
  const sshHost = (name: string, slots: number): Host => ({
    kind: 'ssh',
    name,
    url: `ssh://${name}/w?slots=${slots}`,
    host: name,
    workDir: '/w',
    slots,
    claude: 'claude',
    node: 'node',
    git: 'git',
    include: false,
    freeMb: 1024,
  });

  it('a host fault told by the workspaces loses its attempt (no attempt spent), and the task finishes on the other host', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B')]), { settings: { concurrency: 2, hosts: [sshHost('h1', 1), sshHost('h2', 1)] } });
    await rig.advance(0);
    expect(rig.placed).toEqual([
      [0, 'h1:1'],
      [1, 'h2:1'],
    ]);
    expect(rig.runningTasks).toEqual([0, 1]);
    await rig.hostFault('h2', 'the channel to h2 ended (exit 255) without a report');
    // B's worker was stopped; its attempt ends lost, and B waits for a slot on a host that works.
    expect(rig.runningTasks).toEqual([0]);
    expect(rig.events.find((event) => event.type === 'host-down')).toMatchObject({ host: 'h2', lost: [1] });
    expect(rig.outcomes()).toEqual([[1, 'interrupted']]);
    await rig.finish(0, 'COMPLETED: made A');
    expect(rig.placed.at(-1)).toEqual([1, 'h1:1']);
    await rig.finish(1, 'COMPLETED: made B');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    // One attempt each: the lost one was not spent.
    expect(rig.started.map((request) => [request.taskIndex, request.attempt])).toEqual([
      [0, 1],
      [1, 1],
      [1, 1],
    ]);
  });
});

describe('the engine with a gate (the merge queue)', () => {
  const gate = { command: 'npm test', batchSize: 4, timeoutMs: 60_000 };

  it('two tasks that pass alone and break together: the first integrates, the second is retried with the gate output, then everything integrates', async () => {
    let retried = false;
    const rig = new EngineRig(makePlan([task('A'), task('B')]), {
      settings: { concurrency: 2, gate },
      // B breaks the build once A is in, until its retry.
      gate: (tasks, integrated) => {
        const stack = [...integrated, ...tasks];
        return retried || !(stack.includes(0) && stack.includes(1));
      },
    });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: renamed greet to hello');
    // A alone passes and integrates.
    expect(rig.gated).toEqual([[0]]);
    expect(rig.integrated).toEqual([0]);
    await rig.finish(1, 'COMPLETED: added use.js calling greet');
    // B on top of A fails twice (its own stack), and is retried with the gate's output.
    expect(rig.gated).toEqual([[0], [1], [1]]);
    expect(rig.integrated).toEqual([0]);
    expect(rig.outcomes()).toContainEqual([1, 'retry']);
    const retry = rig.started.filter((r) => r.taskIndex === 1)[1]!;
    expect(retry.prompt).toContain("the plan's test command failed");
    expect(retry.prompt).toContain('greet is not a function');
    retried = true;
    await rig.finish(1, 'COMPLETED: use.js calls hello');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(rig.integrated).toEqual([0, 1]);
    // Every integration was of a stack the gate passed.
    expect(rig.events.filter((e) => e.type === 'gate-finished').map((e) => e.type === 'gate-finished' && [e.tasks, e.passed, e.integrated, e.culprit])).toEqual(
      [
        [[0], true, [0], null],
        [[1], false, [], null],
        [[1], false, [], 1],
        [[1], true, [1], null],
      ],
    );
  });

  it('a batch of four with one culprit: three integrate, the culprit is found within four more runs; dependants wait', async () => {
    const plan = makePlan([task('A'), task('B'), task('C'), task('D'), task('E', { blockedBy: [2] })]);
    const rig = new EngineRig(plan, { settings: { concurrency: 4, gate, maxAttempts: 1 }, gate: (tasks) => !tasks.includes(2) });
    await rig.advance(0);
    // The gate is busy with nothing: all four finish before it starts, so they are one batch.
    for (const t of [0, 1, 2, 3]) await rig.finish(t, `COMPLETED: ${t}`);
    const result = await rig.ended();
    expect(rig.gated[1]).toBeDefined();
    expect(rig.gated.length - 1).toBeLessThanOrEqual(4);
    expect([...rig.integrated].sort()).toEqual([0, 1, 3]);
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['completed', 'completed', 'failed', 'completed', 'skipped']);
  });

  it('a flaky gate (fails once, then passes) fails no task', async () => {
    let runs = 0;
    const rig = new EngineRig(makePlan([task('A'), task('B')]), { settings: { concurrency: 2, gate }, gate: () => runs++ !== 0 });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.finish(1, 'COMPLETED: b');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(rig.events.some((e) => e.type === 'gate-finished' && e.flake)).toBe(true);
    expect(rig.outcomes().filter(([, outcome]) => outcome !== 'completed')).toEqual([]);
  });

  it('Ctrl-C while the gate runs: the candidates stay held, untested, for the next run', async () => {
    const rig = new EngineRig(makePlan([task('A')]), { settings: { gate }, gate: () => ({ passed: null, output: '', durationMs: 1 }) });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.interrupt();
    const result = await rig.ended();
    expect(result.reason).toBe('interrupted');
    expect(rig.recorded[0]!.hold.map((h) => h.task)).toEqual([0]);
    expect(rig.integrated).toEqual([]);
    // Still in progress: the next run finds it held and tests it first.
    expect(statusOf(result.plan.tasks[0]!)).toBe('in_progress');
    expect(result.plan.tasks[0]!.result).toBe('a');
  });

  it('speculation: a dependant starts on its blocker’s candidate; when the gate blames the blocker, its worker is stopped, its worktree released, and it is not an attempt', async () => {
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] })]);
    let blamed = 0;
    // A's first attempt breaks the build (twice alone: the culprit); its retry passes.
    const rig = new EngineRig(plan, {
      settings: { concurrency: 2, gate, speculate: 2, maxCostUsd: 100 },
      gate: (tasks) => !(tasks.includes(0) && blamed++ < 2),
    });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0]);
    await rig.finish(0, reported('COMPLETED: a', 1));
    // While the gate tests A, B runs on A's candidate.
    expect(rig.stacks).toContainEqual([1, [0]]);
    const stopped = rig.started.find((r) => r.taskIndex === 1)!;
    const result = await rig.ended().catch(() => null);
    expect(result).toBeNull();
    expect(stopped.signal?.aborted).toBe(true);
    expect(rig.released).toContain(1);
    expect(rig.events.filter((e) => e.type === 'speculation-cancelled').map((e) => e.type === 'speculation-cancelled' && [e.task, e.stack, e.stage])).toEqual([
      [1, [0], 'running'],
    ]);
    // B's attempt ends once its stopped worker has returned, after A's verdict.
    expect(rig.outcomes()).toEqual([
      [0, 'completed'],
      [0, 'retry'],
      [1, 'cancelled'],
    ]);
    // A again; then B, again attempt 1, on A's new candidate.
    expect(rig.runningTasks).toEqual([0]);
    await rig.finish(0, 'COMPLETED: a, fixed');
    expect(rig.runningTasks).toEqual([1]);
    expect(rig.started.filter((r) => r.taskIndex === 1).map((r) => r.attempt)).toEqual([1, 1]);
    await rig.finish(1, 'COMPLETED: b');
    const done = await rig.ended();
    expect(done.reason).toBe('all-done');
    expect(rig.integrated).toEqual([0, 1]);
    expect(done.plan.tasks.map((t) => t.attempts)).toEqual([2, 1]);
    // What the cancelled worker cost counts (the fake worker's run reports 0 here; A's first cost 1).
    expect(done.usage !== 'unknown' && done.usage.costUsd).toBe(1);
  });

  it('--speculate 0: a dependant waits for its blocker to integrate', async () => {
    const rig = new EngineRig(makePlan([task('A'), task('B', { blockedBy: [0] })]), { settings: { concurrency: 2, gate, speculate: 0 } });
    await rig.advance(0);
    await rig.finish(0, 'COMPLETED: a');
    await rig.finish(1, 'COMPLETED: b');
    await rig.ended();
    expect(rig.stacks).toEqual([
      [0, []],
      [1, []],
    ]);
    expect(rig.events.some((e) => e.type === 'task-started' && e.stack !== undefined)).toBe(false);
  });
});
