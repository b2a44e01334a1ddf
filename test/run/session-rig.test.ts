// The in-session steps in the test process (SessionRig): the test plays the lead — `setup`,
// `next`, `finalize` with each subagent's final text, `commit` — and run/session/session.ts's own steps run,
// with their I/O (the repository, the subagents' worktrees, the gate process, the journal, the
// clock) replaced by fakes. What a session's steps decide is checked here in milliseconds; the
// real-git side of the steps stays with test/skills/session-*.test.ts. Each output is checked
// against its schema, as the plan tool prints it.

import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/core/plan/plan.ts';
import { noFindings } from '../../src/core/attempt/transition.ts';
import { gitFailure, passed, SessionRig } from '../support/engine-rig.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { declareFiles } from '../../src/core/attempt/interventions.ts';
import { expectSchema } from '../skills/support.ts';

/** A step's output as the plan tool prints it, checked against schemas/<step>.schema.json. */
async function printed<T>(step: string, output: T): Promise<any> {
  const json = JSON.parse(JSON.stringify(output));
  await expectSchema(step, json);
  return json;
}

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });
const statuses = (rig: SessionRig) => rig.state.plan.tasks.map((t) => statusOf(t));

describe('the in-session steps, in process', () => {
  it('runs a plan with a dependency to the end: a dependant is handed out only once its blocker landed', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] }), task('C')]), { concurrency: 4 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 2]);
    // A second `next` while they run hands out nothing more.
    expect(await rig.next()).toEqual([]);
    await rig.finalize([
      [0, 'COMPLETED: made A'],
      [2, 'COMPLETED: made C'],
    ]);
    // Verified is not integrated: only `commit` records.
    expect(rig.recorded).toEqual([]);
    expect(await rig.next()).toEqual([]);
    await rig.commit();
    expect(rig.recorded.map((r) => r.tasks)).toEqual([[0, 2]]);
    expect(await rig.next()).toEqual([1]);
    await rig.finalize([[1, 'COMPLETED: made B']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
    expect(statuses(rig)).toEqual(['completed', 'completed', 'completed']);
    expect(rig.state.plan.tasks.map((t) => t.commit)).toEqual(['commit-1', 'commit-2', 'commit-1']);
    // A subagent's usage is not measured: the run's is unknown, not zero.
    expect(rig.state.usage).toBe('unknown');
  });

  it('holds a dependant back while its blocker’s landing is blocked, and hands it out once it lands', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] })]));
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: made A']]);
    rig.blockLanding = true;
    await rig.commit();
    expect(statuses(rig)).toEqual(['completed', 'pending']);
    expect(await rig.next()).toEqual([]);
    // Waiting to land is not the end of the run.
    expect(rig.finished).toBeNull();
    rig.blockLanding = false;
    await rig.commit();
    expect(await rig.next()).toEqual([1]);
  });

  it('work the integration tip conflicts with goes back to pending without spending an attempt, and runs again', async () => {
    let conflicts = 1;
    const rig = new SessionRig(makePlan([task('A')]), {
      record: (_tasks, round) =>
        conflicts-- > 0 ? gitFailure('integrate', `CONFLICT (content): Merge conflict in A.txt`) : { ok: true, value: `commit-${round}` },
    });
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: made A']]);
    const committed = await rig.commit();
    expect(statuses(rig)).toEqual(['pending']);
    expect(rig.state.plan.tasks[0]!.attempts ?? 0).toBe(0);
    expect(rig.events.some((e) => e.type === 'notice' && e.level === 'warning' && e.message.startsWith('could not integrate'))).toBe(true);
    // The commit says so, as it says nothing else the step function said (a landing, say).
    expect(committed.ok && committed.value.notices).toEqual([
      {
        level: 'warning',
        message:
          'could not integrate the verified work of tasks 0: git integrate failed (exit 1): CONFLICT (content): Merge conflict in A.txt; they run again from the work integrated since (no attempt counted)',
      },
    ]);
    expect(await rig.next()).toEqual([0]);
    expect(rig.subagents.get(0)).toBe(1);
    await rig.finalize([[0, 'COMPLETED: made A again']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
  });

  it('a subagent Claude Code could not make a worktree for goes back to pending without spending an attempt, and is handed out at the next `next`', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B')]), { concurrency: 4 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1]);
    await rig.finalize([
      [
        0,
        "Failed to create worktree: Preparing worktree (new branch 'worktree-agent-a1')\nfatal: failed to read /r/.git/worktrees/agent-a1/commondir: Success",
      ],
      [1, 'COMPLETED: made B'],
    ]);
    const finished = rig.events.filter((e) => e.type === 'task-finished');
    expect(finished).toEqual([
      expect.objectContaining({
        task: 0,
        outcome: 'requeued',
        reason: expect.stringContaining("Claude Code could not make the worker's worktree, so it did not start (Failed to create worktree:"),
      }),
      expect.objectContaining({ task: 1, outcome: 'completed' }),
    ]);
    expect(statuses(rig)[0]).toBe('pending');
    expect(rig.state.plan.tasks[0]!.attempts ?? 0).toBe(0);
    // No back-off: the next hand-out gives it out again, as the same attempt.
    expect(await rig.next()).toEqual([0]);
    await rig.finalize([[0, 'COMPLETED: made A']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
    expect(rig.state.plan.tasks.map((t) => t.attempts)).toEqual([1, 1]);
  });

  it('a write the worker hook refused counts as the task wanting that file: the retry is told to answer BLOCKED, and a second refusal ends the task blocked', async () => {
    const rig = new SessionRig(makePlan([task('A')]));
    await rig.setup();
    await rig.next();
    rig.deniedWrites.set('0-1', ['src/index.ts']);
    await rig.finalize([[0, 'FAILED: could not export it from src/index.ts']]);
    expect(statuses(rig)).toEqual(['pending']);
    expect(rig.state.plan.tasks[0]).toMatchObject({
      undeclaredWrites: ['src/index.ts'],
      retryAdvice: expect.stringContaining('BLOCKED: needs to change <path>'),
    });
    await rig.next();
    rig.deniedWrites.set('0-2', ['src/index.ts']);
    await rig.finalize([[0, 'FAILED: still cannot']]);
    expect(statuses(rig)).toEqual(['blocked']);
    expect(rig.state.plan.tasks[0]!.result).toMatch(/^BLOCKED: the task needs src\/index\.ts, which it does not declare/);
  });

  it('finalize names what a blocked task needs; declared (plan declare), the next `next` re-checks its set-aside work instead of handing it out, and `commit` integrates it', async () => {
    const check = { criterion: 'it holds', check: 'true', exitCode: 0, timedOut: false, timeLimit: { ms: 1000, flag: '--check-timeout' as const }, output: '' };
    const setAside = { paths: ['src/index.ts'], tracked: ['src/index.ts'], kept: { commit: 'f'.repeat(40), ref: 'refs/foreman-aside/rig/0' } };
    const rig = new SessionRig(makePlan([task('A', { acceptance: [{ criterion: 'it holds', check: 'true' }] })]), {
      verify: (t, plan) => passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside, acceptance: [{ ...check, passed: false, exitCode: 1 }] }),
      recheck: (t, plan) =>
        passed(plan.tasks[t]!, {
          acceptance: [{ ...check, passed: true }],
          work: {
            base: 'b'.repeat(40),
            entries: [
              { path: 'A.txt', mode: '100644', object: 'a'.repeat(40) },
              { path: 'src/index.ts', mode: '100644', object: 'd'.repeat(40) },
            ],
          },
        }),
    });
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: done']]);
    await rig.next();
    const blocked = await rig.finalize([[0, 'COMPLETED: done again']]);
    expect(blocked.results[0]).toMatchObject({ outcome: 'blocked', needs: ['src/index.ts'] });
    // What `plan declare 0 --needed` writes.
    const plan = await readPlan(rig.planPath);
    const done = declareFiles(plan, 0, { create: [], modify: ['src/index.ts'], mayChange: [] });
    if (!done.ok) throw new Error(done.error);
    await writePlan(rig.dir, done.value.plan);
    const next = await rig.nextStep();
    expect(next.tasks).toEqual([]);
    expect(next.rechecked).toEqual([expect.objectContaining({ index: 0, outcome: 'completed' })]);
    expect(rig.rechecks).toEqual([[0, 'f'.repeat(40)]]);
    const committed = await rig.commit();
    expect(committed.ok && committed.value.tasks).toEqual([0]);
    expect(statuses(rig)).toEqual(['completed']);
  });

  it('a task that completes with files set aside: finalize names them with the commands, its summary names the task, and the commit that finishes the plan says it again', async () => {
    const setAside = {
      paths: ['dist/a.js', 'dist/b.js', 'dist/c.js', 'stray.txt'],
      tracked: [],
      kept: { commit: 'e'.repeat(40), ref: 'refs/foreman-aside/rig/0' },
    };
    const rig = new SessionRig(makePlan([task('A')]), { verify: (t, plan) => passed(plan.tasks[t]!, { outsideChanges: setAside.paths, setAside }) });
    await rig.setup();
    await rig.next();
    const finalized = await rig.finalize([[0, 'COMPLETED: done']]);
    // Recorded in the plan at once: the next step reads the plan back.
    expect((await readPlan(rig.planPath)).tasks[0]!.setAside).toEqual({ attempt: 1, paths: setAside.paths, commit: 'e'.repeat(40) });
    const id = 'e'.repeat(12);
    expect(finalized.results[0]!.warnings).toEqual([
      `changed files its task does not declare: dist/a.js, dist/b.js, dist/c.js, stray.txt (set aside, not integrated; kept in refs/foreman-aside/rig/0, commit ${id}): \`git show --stat ${id}\` lists them with the attempt's other files, \`git restore --source=${id} -- <path>\` brings one back into your files`,
    ]);
    expect(finalized.summary).toBe(
      'Round 1: 1/1 tasks completed (1/1 overall); task 0 changed files outside its declared files, set aside (its warnings name them and how to read them back)',
    );
    const committed = await rig.commit();
    expect(committed.ok).toBe(true);
    if (!committed.ok) return;
    expect(committed.value.archived).not.toBeNull();
    expect(committed.value.notices).toContainEqual({
      level: 'info',
      message: `task 0 (task A), attempt 1: set aside, not integrated: dist/a.js, dist/b.js, dist/c.js and 1 more (\`git show --stat ${id}\` lists them with the attempt's other files, \`git restore --source=${id} -- <path>\` brings one back into your files)`,
    });
  });

  it('git failing while recording stops the run', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B')]), { record: () => gitFailure('update-ref', 'fatal: cannot lock ref') });
    await rig.setup();
    await rig.next();
    await rig.finalize([
      [0, 'COMPLETED: made A'],
      [1, 'COMPLETED: made B'],
    ]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('git-failed');
    // Pending again, saying why, no attempt counted: the next run does them again.
    expect(statuses(rig)).toEqual(['pending', 'pending']);
    expect(rig.state.plan.tasks.map((t) => [t.attempts ?? 0, t.result])).toEqual([
      [0, expect.stringContaining('fatal: cannot lock ref')],
      [0, expect.stringContaining('fatal: cannot lock ref')],
    ]);
  });

  it('a gate that blames a candidate: its task-finished says retry with the gate output, the others integrate', async () => {
    let blamed = false;
    const rig = new SessionRig(makePlan([task('A'), task('B')]), {
      gate: (tasks) => {
        if (tasks.includes(1) && !blamed) {
          if (tasks.length === 1) blamed = true;
          return false;
        }
        return true;
      },
    });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1]);
    await rig.finalize([
      [0, 'COMPLETED: made A'],
      [1, 'COMPLETED: made B'],
    ]);
    await rig.commit();
    expect(rig.integrated).toEqual([0]);
    const finished = rig.events.filter((e) => e.type === 'task-finished' && e.task === 1);
    expect(finished.map((e) => e.type === 'task-finished' && e.outcome)).toEqual(['completed', 'retry']);
    expect(finished[1]!.type === 'task-finished' && finished[1]!.reason).toContain('FAIL');
    expect(statuses(rig)).toEqual(['completed', 'pending']);
    expect(await rig.next()).toEqual([1]);
    await rig.finalize([[1, 'COMPLETED: made B, fixed']]);
    await rig.commit();
    expect(rig.integrated).toEqual([0, 1]);
    expect(rig.finished?.reason).toBe('all-done');
  });

  it('failures trip the circuit breaker and end the run', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] }), task('C', { blockedBy: [0] }), task('D')]), { maxAttempts: 1 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 3]);
    await rig.finalize([[0, 'FAILED: cannot make A']]);
    expect(rig.events.some((e) => e.type === 'breaker')).toBe(true);
    expect(statuses(rig)).toEqual(['failed', 'skipped', 'skipped', 'in_progress']);
    // The run ends once D, under way, is settled.
    await rig.finalize([[3, 'COMPLETED: made D']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('breaker');
  });

  it('what setup found is applied before anything starts: interrupted work runs again, a failed assumption blocks and skips', async () => {
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C'), task('D')]);
    plan.tasks[2]!.status = 'in_progress';
    const rig = new SessionRig(plan, { concurrency: 4 });
    await rig.setup({ ...noFindings(), interrupted: [2], blocked: [{ task: 0, result: 'BLOCKED: assumption failed (x): `false`' }] });
    expect(statuses(rig)).toEqual(['blocked', 'skipped', 'pending', 'pending']);
    expect(rig.events.filter((e) => e.type === 'task-skipped').map((e) => e.type === 'task-skipped' && [e.task, e.rootCause])).toEqual([[1, 0]]);
    expect(await rig.next()).toEqual([2, 3]);
  });

  it('approved work setup held integrates through the step function as setup posts its events: reported as approved, journaled as a round, its attempt counted once', async () => {
    const plan = makePlan([task('A', { gate: 'human-approval' }), task('B', { blockedBy: [0] })]);
    plan.tasks[0] = { ...plan.tasks[0]!, status: 'completed', attempts: 1, result: 'A done', approvedAt: '2026-01-01T00:00:00.000Z' };
    const rig = new SessionRig(plan, { concurrency: 2 });
    const work = { base: 'base', entries: [{ path: 'A.txt', mode: '100644', object: 'a'.repeat(40) }] };
    const setup = await printed('setup', await rig.setup({ ...noFindings(), approved: [0] }, [{ task: 0, work, result: 'A done', stack: [], approved: true }]));
    expect(setup.approved).toEqual({ tasks: [0], commit: expect.any(String) });
    expect(setup.integrated).toEqual({ tasks: [], commit: null });
    expect(rig.recorded).toMatchObject([{ integrate: [{ task: 0 }], drop: [0] }]);
    expect(rig.events.filter((e) => e.type === 'round-committed').map((e) => e.type === 'round-committed' && e.tasks)).toEqual([[0]]);
    expect(rig.state.plan.tasks[0]).toMatchObject({ status: 'completed', attempts: 1, result: 'A done' });
    // Landed at setup: its dependant is handed out at once.
    expect(await rig.next()).toEqual([1]);
  });
});

describe('the end of an in-session run, as the step function says it', () => {
  it('a red baseline: nothing is handed out, and the journal ends the run refused (exit 2), in the words a headless run has', async () => {
    const rig = new SessionRig(makePlan([task('A')]), { gate: () => true, baseline: false });
    const set = await printed('setup', await rig.setup());
    expect(set.gate).toMatchObject({ baseline: 'failed', runs: [{ tasks: [], passed: false }], output: 'FAIL: the starting commit' });
    expect(rig.gated).toEqual([[]]);
    expect(await printed('next', await rig.nextStep())).toMatchObject({ tasks: [], stall: 'gate' });
    expect(rig.finished).toMatchObject({
      reason: 'failures',
      exitCode: 2,
      message: expect.stringMatching(/^the gate `npm test` already fails on the starting commit, before any task ran/),
    });
    // `commit` refuses it again, and the run is not ended twice.
    const commit = await rig.commit();
    expect(!commit.ok && commit.error).toMatchObject({ kind: 'baseline-failed', output: 'FAIL: the starting commit' });
    expect(rig.events.filter((e) => e.type === 'run-finished')).toHaveLength(1);
  });

  it('a baseline run the integration tip moved under tested nothing: it runs again on the new tip, and its verdict counts', async () => {
    const rig = new SessionRig(makePlan([task('A')]), { gate: () => true, gateTrouble: (launch) => (launch === 0 ? 'tip-moved' : null) });
    const set = await printed('setup', await rig.setup());
    expect(rig.gated).toEqual([[], []]);
    expect(set.gate).toMatchObject({ baseline: 'passed' });
    expect(set.notices).toContainEqual({
      level: 'warning',
      message: expect.stringMatching(/^the gate run on the starting commit is run again: the integration tip moved/),
    });
    expect(await rig.next()).toEqual([0]);
  });

  it('a gate run that writes its result and exits between the read that finds it running and the check that it runs is collected, not run again', async () => {
    // On a busy machine a fast gate (a baseline, a flaky test) ends in that gap; running it again would count a second run.
    // The first run of each stack (the baseline, then A's candidate) ends so.
    const stacks = new Set<string>();
    const firstOfItsStack = (tasks: readonly number[]) => !stacks.has(tasks.join()) && Boolean(stacks.add(tasks.join()));
    const rig = new SessionRig(makePlan([task('A')]), {
      gate: () => true,
      gateTrouble: (_launch, tasks) => (firstOfItsStack(tasks) ? 'finished-after-read' : null),
    });
    const set = await printed('setup', await rig.setup());
    expect(set.gate).toMatchObject({ baseline: 'passed', runs: [{ tasks: [], passed: true }] });
    const ranAgain = expect.objectContaining({ message: expect.stringMatching(/ended without a result|run again/) });
    expect(set.notices).not.toContainEqual(ranAgain);
    expect(await rig.next()).toEqual([0]);
    await rig.finalize([[0, 'COMPLETED: made A']]);
    const committed = await rig.commit();
    expect(committed.ok, committed.ok ? '' : JSON.stringify(committed.error)).toBe(true);
    const commit = await printed('commit', committed.ok && committed.value);
    expect(commit).toMatchObject({ tasks: [0], complete: true, gate: { runs: [{ tasks: [0], passed: true }] } });
    expect(commit.notices ?? []).not.toContainEqual(ranAgain);
    expect(rig.gated).toEqual([[], [0]]);
  });

  it('a commit refused by the baseline says what it said on the way: a gate process that died without a result, run again', async () => {
    // Setup cannot start the baseline's gate process (asked twice); commit's first one dies, the next fails.
    const rig = new SessionRig(makePlan([task('A')]), {
      gate: () => true,
      baseline: false,
      gateTrouble: (launch) => (launch <= 1 ? 'not-started' : launch === 2 ? 'killed' : null),
    });
    const set = await printed('setup', await rig.setup());
    expect(set.gate).toMatchObject({ baseline: 'running' });
    const commit = await rig.commit();
    expect(!commit.ok && commit.error).toMatchObject({
      kind: 'baseline-failed',
      output: 'FAIL: the starting commit',
      notices: [{ level: 'warning', message: 'the gate process for the starting commit ended without a result: it runs again' }],
    });
  });

  it('a commit stopped by git failing says what it said on the way: a gate process that died without a result, run again', async () => {
    let records = 0;
    const rig = new SessionRig(makePlan([task('A')]), {
      gate: () => true,
      // The candidate is held (record 1), the gate's first run on it dies, the next passes, and integrating it (record 2) fails.
      gateTrouble: (launch, tasks) => (launch === 1 && tasks.length > 0 ? 'killed' : null),
      record: (_tasks, round) => (++records === 2 ? gitFailure('update-ref', 'fatal: cannot lock ref') : { ok: true, value: `commit-${round}` }),
    });
    await rig.setup();
    expect(await rig.next()).toEqual([0]);
    await rig.finalize([[0, 'COMPLETED: made A']]);
    const commit = await rig.commit();
    expect(!commit.ok && commit.error).toMatchObject({
      kind: 'git-failed',
      failure: { step: 'update-ref' },
      notices: [
        { level: 'warning', message: 'the gate process for tasks 0 ended without a result: it runs again' },
        { level: 'warning', message: 'could not integrate the verified work of tasks 0: git update-ref failed (exit 1): fatal: cannot lock ref' },
      ],
    });
    expect(rig.finished?.reason).toBe('git-failed');
  });

  it('a new setup ends the run an earlier session left under way, at its last step, as the step function words it', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B')]), { concurrency: 1 });
    await rig.setup();
    await rig.next();
    const lastStep = rig.events.at(-1)!.at;
    // The session ends here, its subagent still out; another begins.
    rig.subagents.clear();
    await rig.setup({ ...noFindings(), interrupted: [0] });
    const runs = rig.events.filter((e) => e.type === 'run-finished');
    expect(runs).toEqual([
      expect.objectContaining({
        reason: 'interrupted',
        exitCode: 130,
        message: expect.stringContaining(`the session ended before this run finished (its last step was at ${lastStep}); a new \`plan setup\` started another`),
      }),
    ]);
    expect(runs[0]!.runId).not.toBe(rig.events.at(-1)!.runId);
    expect(statuses(rig)).toEqual(['pending', 'pending']);
    expect(await rig.next()).toEqual([0]);
  });
});

// Moved from test/skills/session-steps.test.ts, with their assertions: they need the steps and the
// step function, not git.
describe('the /execute steps, in process', () => {
  it('next writes full worker prompts and marks the tasks in progress; overlapping ready tasks wait', async () => {
    const plan = makePlan([
      fakeTask('A', { modify: ['shared.txt'], fake: { append: { 'shared.txt': 'A\n' } } }),
      fakeTask('B', { modify: ['shared.txt'], fake: { append: { 'shared.txt': 'B\n' } } }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [0], prompt: 'Build on A.\nDependency results will appear here when the task starts.\nThen stop.' }),
    ]);
    const rig = new SessionRig(plan);
    await printed('setup', await rig.setup());
    const next = await printed('next', await rig.nextStep());
    expect(next.tasks).toHaveLength(1);
    const [first] = next.tasks;
    expect(next.waiting).toEqual([{ index: 1 - first.index, subject: expect.any(String), overlapsWith: [first.index] }]);
    expect(next.queued).toBe(1);
    expect(next).toMatchObject({ round: 1, stall: 'none', inProgress: [] });
    const prompt = await readFile(first.promptFile, 'utf8');
    expect(prompt).toContain(`TASK-MARKER: ${first.index === 0 ? 'A' : 'B'}`);
    expect(prompt).toContain('End your reply with exactly one final status line, as plain text');
    expect(prompt).toContain('Do not stage, commit');
    expect((await readPlan(rig.planPath)).tasks[first.index]!.status).toBe('in_progress');

    // Called again before finalizing: nothing new may start beside the running task.
    const again = await printed('next', await rig.nextStep());
    expect(again).toMatchObject({ tasks: [], stall: 'running', inProgress: [first.index], round: 1 });
  });

  it('cascades a failure to the dependants and trips the circuit breaker', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'] }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0] }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [1] }),
      fakeTask('D', { create: ['d.txt'] }),
      fakeTask('E', { create: ['e.txt'], blockedBy: [3] }),
    ]);
    const rig = new SessionRig(plan, { maxAttempts: 1, concurrency: 1 });
    await rig.setup();
    const next = await printed('next', await rig.nextStep());
    expect(next.tasks.map((t: { index: number }) => t.index)).toEqual([0]); // the longest chain first
    expect(next).toMatchObject({ waiting: [], queued: 1 }); // task D: no free slot
    const fin = await printed('finalize', await rig.finalize([[0, 'FAILED: the API is gone']]));
    expect(fin.results[0]).toMatchObject({ outcome: 'failed', reason: 'the worker reported FAILED: the API is gone' });
    expect(fin.skipped).toEqual([
      { index: 1, subject: 'task B', rootCause: 0 },
      { index: 2, subject: 'task C', rootCause: 0 },
    ]);
    expect(fin.breaker).toEqual({ trip: true, totalTasks: 5, pendingCount: 4, wouldBeSkipped: 2 });
    expect(fin.summary).toContain('circuit breaker tripped');
  });

  it('setup on a plan whose tasks are all completed archives it and says there is nothing to do', async () => {
    const plan = makePlan([{ ...fakeTask('A', { create: ['a.txt'] }), status: 'completed', result: 'done', attempts: 1 }]);
    const rig = new SessionRig(plan);
    const s = await printed('setup', await rig.setup());
    expect(s).toMatchObject({ nothingToDo: true, pending: 0, archived: expect.stringContaining('.design/history/') });
    expect((await readdir(join(rig.dir, '.design/history'))).filter((f) => f.endsWith('-plan.json'))).toHaveLength(1);
  });
});
