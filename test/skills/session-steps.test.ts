// The /execute skill's deterministic steps: `plan.ts setup | next | finalize | commit`. The lead
// is played by the test (no model): the fake worker reads each prompt file as a Task subagent
// would. Every JSON output is checked against its schema in schemas/.

import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock, currentLockInfo } from '../../src/adapters/store/run-lock.ts';
import { runExecute } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import {
  agentLeftovers,
  checkedStep,
  dirtyOutsideDesign,
  headTree,
  isolatedSubagent,
  leadRounds,
  leadSetup,
  type LeadTranscript,
  plannedRepos,
  step,
  stepViaLauncher,
} from './support.ts';

const { repoWith, tempRepo } = plannedRepos();

const archives = async (dir: string) => (await readdir(join(dir, '.design/history')).catch(() => [])).filter((f) => f.endsWith('-plan.json'));

/** Five tasks: parallel work, a read/write overlap, a retry after a failed acceptance check, a chain, a modified file. */
const mixedPlan = () =>
  makePlan([
    fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, status: 'COMPLETED: made a' } }),
    fakeTask('B', {
      modify: ['shared.txt'],
      acceptance: [{ criterion: 'says good', check: 'grep -q good shared.txt' }],
      fallback: 'write the word good',
      fake: { attempts: [{ append: { 'shared.txt': 'bad\n' } }, { append: { 'shared.txt': 'good\n' }, status: 'COMPLETED: shared is good' }] },
    }),
    fakeTask('C', { create: ['c.txt'], reads: ['shared.txt'], fake: { write: { 'c.txt': 'c\n' } } }),
    fakeTask('D', { create: ['d/one.txt', 'd/two.txt'], blockedBy: [0, 1], fake: { write: { 'd/one.txt': '1\n', 'd/two.txt': '2\n' } } }),
    fakeTask('E', { modify: ['README.md'], blockedBy: [3], fake: { append: { 'README.md': 'more\n' } } }),
  ]);

describe('the /execute steps played by a model-free lead, each step through the launcher', () => {
  // One lead in three tests, one after the other, then the comparison: every step is a process of
  // its own, and the whole lead is more work than one time limit allows on a busy machine.
  const files = { 'README.md': 'hello\n', 'shared.txt': 'start\n' };
  // The lead's repository outlives each test (plannedRepos' are removed after each): removed after them all.
  let lead: { repo: TempGitRepo; planPath: string } | undefined;
  afterAll(() => lead?.repo.cleanup());
  let played: LeadTranscript | undefined;
  /** How many of the lead's tests it got through. */
  let parts = 0;
  /** The lead as the test before left it: a test after a failed one says so instead of failing on its own. */
  const leadAfter = (part: number) => {
    if (lead === undefined || played === undefined || parts < part) throw new Error('the lead did not get this far: see the test before');
    return { lead, t: played };
  };

  it('set up and play the first round', async () => {
    const repo = await tempGitRepo(files);
    lead = { repo, planPath: await writePlan(repo.dir, mixedPlan()) };
    played = await leadSetup(repo.dir, stepViaLauncher);
    await leadRounds(repo.dir, stepViaLauncher, played, 1);
    parts = 1;
  });

  it('play the next two rounds', async () => {
    const { lead, t } = leadAfter(1);
    await leadRounds(lead.repo.dir, stepViaLauncher, t, 2);
    parts = 2;
  });

  it('play the rounds after to the end of the plan', async () => {
    const { lead, t } = leadAfter(2);
    await leadRounds(lead.repo.dir, stepViaLauncher, t, 47);
    expect(t.end).not.toBeNull();
    parts = 3;
  });

  it('reach the same final tree as the headless run of the same plan', async () => {
    const { lead, t } = leadAfter(3);
    const headless = await repoWith(mixedPlan(), files);
    const r = await runExecute(headless.repo.dir);
    expect(r.exitCode, r.stderr).toBe(0);

    expect(t.end.archived).toMatch(/\.design\/history\/\d{8}T\d{6}Z-plan\.json$/);
    expect(t.end.complete).toBe(true);
    expect(await headTree(lead.repo.dir)).toEqual(await headTree(headless.repo.dir));
    expect(await dirtyOutsideDesign(lead.repo.dir)).toEqual([]);
    // Every subagent worktree and branch is gone, and so are the plan's refs.
    expect(await agentLeftovers(lead.repo.dir)).toEqual({ worktrees: [], branches: [] });
    expect(await lead.repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman', 'refs/foreman-awaiting'])).toBe('');
    // Each commit landed as it was made: every round's work is on the branch.
    for (const round of t.rounds) expect(round.commit.landing).toMatchObject({ landed: true, problem: [] });
    expect(await archives(lead.repo.dir)).toHaveLength(1);
    await expect(readFile(lead.planPath)).rejects.toThrow();
    // The prompts went with the plan.
    await expect(readdir(join(lead.repo.dir, '.design/prompts'))).rejects.toThrow();

    // The round structure: B overlaps C (C reads what B writes), so they never started together.
    for (const round of t.rounds) {
      const started = round.next.tasks.map((x: { index: number }) => x.index);
      expect(started.includes(1) && started.includes(2)).toBe(false);
    }
    const retried = t.rounds.flatMap((x) => x.finalize.retry);
    expect(retried).toEqual([expect.objectContaining({ index: 1, attempt: 2 })]);
    // Every commit carries the trailers that make resume work.
    const log = (await lead.repo.git(['log', '--format=%B'])).split('\n');
    expect(log.filter((l) => l.startsWith('Foreman-Tasks:'))).toHaveLength(t.rounds.filter((x) => x.commit.commit).length);
  });

  it("finalize verifies in the subagent's worktree and removes it; a failed attempt never reaches the tree; the next prompt carries the retry and the fallback", async () => {
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        acceptance: [{ criterion: 'a.txt says good', check: 'grep -q good a.txt' }],
        fallback: 'USE-PLAN-B',
        fake: { write: { 'a.txt': 'bad\n' } },
      }),
    ]);
    const { repo, planPath } = await repoWith(plan);
    await checkedStep(step, repo.dir, ['setup']);
    const next = await checkedStep(step, repo.dir, ['next']);
    expect(next.json.tasks[0]).toMatchObject({ isolation: 'worktree', base: (await repo.git(['rev-parse', 'HEAD'])).trim() });
    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, 'sonnet');
    expect(await readFile(join(ran.worktree!, 'a.txt'), 'utf8')).toBe('bad\n');
    const results = join(repo.dir, 'results.json');
    await writeFile(results, JSON.stringify([{ task: 0, output: ran.output, worktree: ran.worktree }]));
    const fin = await checkedStep(step, repo.dir, ['finalize', '--results', results]);
    expect(fin.json.results).toEqual([
      expect.objectContaining({ index: 0, outcome: 'retry', attempt: 1, reason: expect.stringContaining('grep -q good a.txt') }),
    ]);
    expect(fin.json.retry).toEqual([expect.objectContaining({ index: 0, attempt: 2 })]);
    expect(fin.json.summary).toBe('Round 1: 0/1 tasks completed (0/1 overall); 1 to retry');
    await expect(readFile(join(repo.dir, 'a.txt'))).rejects.toThrow(); // the worker never wrote in the person's tree
    // What Claude Code made for the subagent is gone: its worktree and its branch.
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
    expect((await readPlan(planPath)).tasks[0]).toMatchObject({ status: 'pending', attempts: 1 });

    // Finalizing the same results again changes nothing.
    const twice = await checkedStep(step, repo.dir, ['finalize', '--results', results]);
    expect(twice.json.results).toEqual([expect.objectContaining({ index: 0, outcome: 'ignored' })]);

    const retry = await checkedStep(step, repo.dir, ['next']);
    expect(retry.json.tasks[0]).toMatchObject({ index: 0, attempt: 2 });
    const prompt = await readFile(retry.json.tasks[0].promptFile, 'utf8');
    expect(prompt).toContain('This is attempt 2 of 3');
    expect(prompt).toContain('IMPORTANT: the primary approach failed; use this strategy instead: USE-PLAN-B');
  });

  it('a COMPLETED claim without the declared file is a failed attempt; a missing status line too', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] }), fakeTask('B', { create: ['b.txt'] })]);
    const { repo } = await repoWith(plan);
    await checkedStep(step, repo.dir, ['setup', '--max-attempts', '1']);
    await checkedStep(step, repo.dir, ['next']);
    await writeFile(
      join(repo.dir, 'r.json'),
      JSON.stringify([
        { task: 0, output: 'All done!\nCOMPLETED: made a.txt' },
        { task: 1, output: 'I wrote it.' },
      ]),
    );
    const fin = await checkedStep(step, repo.dir, ['finalize', '--results', 'r.json']);
    expect(fin.json.results.map((r: { outcome: string }) => r.outcome)).toEqual(['failed', 'failed']);
    expect(fin.json.results[0].reason).toContain('declared files were not created: a.txt');
    expect(fin.json.results[1].reason).toContain('without a COMPLETED/FAILED/BLOCKED line');
    const next = await checkedStep(step, repo.dir, ['next']);
    expect(next.json.stall).toBe('done');
  });

  it('a blocked report blocks the task and skips what depends on it; awaiting approval stalls the run', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'] }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0] }),
      { ...fakeTask('G', { create: ['g.txt'], fake: { write: { 'g.txt': 'g' } } }), gate: 'human-approval' },
      fakeTask('H', { create: ['h.txt'], blockedBy: [2] }),
    ]);
    const { repo } = await repoWith(plan);
    await checkedStep(step, repo.dir, ['setup']);
    const next = await checkedStep(step, repo.dir, ['next']);
    expect(next.json.tasks.map((t: { index: number }) => t.index).sort()).toEqual([0, 2]);
    const g = await isolatedSubagent(repo.dir, next.json.tasks.find((t: { index: number }) => t.index === 2).promptFile, 'sonnet');
    await writeFile(
      join(repo.dir, 'r.json'),
      JSON.stringify([
        { task: 0, output: 'BLOCKED: needs an API key' },
        { task: 2, output: g.output, worktree: g.worktree },
      ]),
    );
    const fin = await checkedStep(step, repo.dir, ['finalize', '--results', 'r.json']);
    expect(fin.json.results.map((r: { outcome: string }) => r.outcome)).toEqual(['blocked', 'awaiting_approval']);
    expect(fin.json.skipped.map((s: { index: number }) => s.index)).toEqual([1]);
    // One of the two pending tasks was skipped: with more than 3 tasks that trips the breaker.
    expect(fin.json.breaker).toMatchObject({ trip: true, pendingCount: 2, wouldBeSkipped: 1 });
    const commit = await checkedStep(step, repo.dir, ['commit']);
    expect(commit.json).toMatchObject({ commit: null, tasks: [], archived: null, complete: false, landing: { landed: true } });
    // The work awaiting approval waits on a ref of its own, not in the person's tree, and holds no worktree.
    const planId = (await readPlan(join(repo.dir, '.design/plan.json'))).planId;
    expect(await repo.git(['show', `refs/foreman-awaiting/${planId}/2:g.txt`])).toBe('g');
    await expect(readFile(join(repo.dir, 'g.txt'))).rejects.toThrow();
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
    const stalled = await checkedStep(step, repo.dir, ['next']);
    expect(stalled.json).toMatchObject({ stall: 'awaiting_approval', stuck: [2], tasks: [] });
  });

  it('setup blocks tasks whose blocking assumption fails, and reports every assumption', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], assumptions: [{ claim: 'a tool exists', verify: 'echo nope; exit 3', severity: 'blocking' }] }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0] }),
      fakeTask('C', {
        create: ['c.txt'],
        assumptions: [
          { claim: 'fine', verify: 'true', severity: 'blocking' },
          { claim: 'maybe', verify: 'false', severity: 'warning' },
        ],
      }),
    ]);
    const { repo } = await repoWith(plan);
    const s = await checkedStep(step, repo.dir, ['setup']);
    expect(s.json.blocked).toEqual([{ index: 0, subject: 'task A', reason: expect.stringContaining('exit 3') }]);
    expect(s.json.skipped).toEqual([{ index: 1, subject: 'task B', rootCause: 0 }]);
    expect(s.json.assumptions).toMatchObject({ total: 3, passed: 1 });
    expect(s.json.assumptions.failed.map((a: { claim: string }) => a.claim)).toEqual(['a tool exists', 'maybe']);
    expect(s.json.assumptions.failed[0].output).toBe('nope');
    expect(s.json.notices).toEqual([{ level: 'warning', message: 'task 2: assumption not confirmed (maybe): `false`' }]);
    expect(s.json).toMatchObject({ pending: 1, nothingToDo: false, isResume: false });
  });

  it("setup says the plan lint's warnings the plan neither fixes nor accepts, once, in its notices", async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], prompt: 'Write a.txt as README.md describes.' }),
      fakeTask('B', { create: ['b.txt'], reads: ['a.txt'] }),
    ]);
    const accepted =
      'tasks[1] reads a.txt, which tasks[0] changes, but neither depends on the other: add 0 to tasks[1].blockedBy to read it after the change, or 1 to tasks[0].blockedBy to read it before';
    plan.acceptedWarnings = [{ warning: accepted, reason: 'B only needs a.txt not to change while it runs' }];
    const { repo } = await repoWith(plan);
    const s = await checkedStep(step, repo.dir, ['setup']);
    expect(s.json.notices).toEqual([
      {
        level: 'warning',
        message:
          'plan warning: tasks[0].prompt names README.md, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
      },
    ]);
  });

  it('setup resumes an interrupted session: in-progress work runs again, verified work left unintegrated is integrated and landed', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } }),
      fakeTask('B', { modify: ['b.txt'], fake: { write: { 'b.txt': 'half-done\n' } } }),
    ]);
    const { repo, planPath } = await repoWith(plan, { 'b.txt': 'original\n' });
    await checkedStep(step, repo.dir, ['setup']);
    const next = await checkedStep(step, repo.dir, ['next']);
    const ran = new Map<number, { output: string; worktree?: string }>();
    for (const t of next.json.tasks) ran.set(t.index, await isolatedSubagent(repo.dir, t.promptFile, t.model));
    await writeFile(join(repo.dir, 'r.json'), JSON.stringify([{ task: 0, output: 'COMPLETED: a', worktree: ran.get(0)!.worktree }]));
    await checkedStep(step, repo.dir, ['finalize', '--results', 'r.json']);
    // The session ends here: A verified but not integrated, B still in progress with its edit in its worktree.

    const again = await checkedStep(step, repo.dir, ['setup']);
    expect(again.json).toMatchObject({
      isResume: true,
      reset: [1],
      integrated: { commit: expect.stringMatching(/^[0-9a-f]{40}$/), tasks: [0] },
      landing: { landed: true, files: 1 },
      pending: 1,
    });
    expect(again.json.notices).toContainEqual({ level: 'info', message: 'task 1 was interrupted: it will run again' });
    expect(await readFile(join(repo.dir, 'b.txt'), 'utf8')).toBe('original\n');
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
    const after = await readPlan(planPath);
    expect(after.tasks[0]).toMatchObject({ status: 'completed', commit: again.json.integrated.commit });
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(again.json.integrated.commit);
    expect(after.tasks[1]).toMatchObject({ status: 'pending' });
    expect(await repo.git(['show', '--name-only', '--format=%B', 'HEAD'])).toContain('Foreman-Tasks: 0');
  });

  it("refuses with a JSON error: no plan, an invalid plan, a bad results file, a worktree that is not a subagent's, a held lock; a dirty planned file is a notice", async () => {
    const repo = await tempRepo({ 'notes.txt': 'original\n' });
    const none = await checkedStep(step, repo.dir, ['setup']);
    expect(none).toMatchObject({ code: 2, json: { error: { kind: 'no-plan' } } });
    expect(none.stderr.split('\n')).toHaveLength(1);

    const planPath = await writePlan(repo.dir, makePlan([fakeTask('A', { modify: ['notes.txt'] })]));
    await writeFile(join(repo.dir, 'notes.txt'), 'my edit\n');
    // Workers start from the last commit and never touch the person's files: a notice, not a refusal.
    const dirty = await checkedStep(step, repo.dir, ['setup']);
    expect(dirty.code).toBe(0);
    expect(dirty.json.notices).toEqual([{ level: 'warning', message: expect.stringMatching(/uncommitted change \(notes\.txt\)/) }]);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('my edit\n');
    await repo.git(['checkout', '--', 'notes.txt']);

    // A worktree that is not one Claude Code made for a subagent is refused before anything changes.
    await checkedStep(step, repo.dir, ['next']);
    for (const elsewhere of [repo.dir, join(repo.dir, '..'), join(repo.dir, '.claude/worktrees/agent-nothere')]) {
      await writeFile(join(repo.dir, 'w.json'), JSON.stringify([{ task: 0, output: 'COMPLETED: x', worktree: elsewhere }]));
      const bad = await checkedStep(step, repo.dir, ['finalize', '--results', 'w.json']);
      expect(bad).toMatchObject({ code: 2, json: { error: { kind: 'bad-worktree' } } });
    }
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('in_progress');

    await writeFile(join(repo.dir, 'bad.json'), '{"oops": 1}');
    const bad = await checkedStep(step, repo.dir, ['finalize', '--results', 'bad.json']);
    expect(bad).toMatchObject({ code: 2, json: { error: { kind: 'bad-results' } } });
    // A results file that is not JSON is named with the line and column where it stops being JSON.
    await writeFile(join(repo.dir, 'broken.json'), '[{"task": 0,\n  "output": }]');
    const broken = await checkedStep(step, repo.dir, ['finalize', '--results', 'broken.json']);
    expect(broken).toMatchObject({ code: 2, json: { error: { kind: 'bad-results' } } });
    expect((broken.json as { error: { message: string } }).error.message).toMatch(/broken\.json: not valid JSON at line 2, column 13: Unexpected token '\}'$/);
    const missing = await checkedStep(step, repo.dir, ['finalize']);
    expect(missing).toMatchObject({ code: 2, json: { error: { kind: 'usage' } } });
    // No results at all: a lead that lost its workers' replies is told so, and nothing changes.
    await writeFile(join(repo.dir, 'empty.json'), '[]');
    const empty = await checkedStep(step, repo.dir, ['finalize', '--results', 'empty.json']);
    expect(empty).toMatchObject({ code: 2, json: { error: { kind: 'bad-results', details: [] } } });
    expect(empty.json.error.message).toMatch(
      /empty\.json: no results \(an empty list\), so nothing was finalized: give one \{"task": N, "output": "…"\} for each task `plan next` handed out$/,
    );
    expect(empty.stderr).toBe(`plan finalize: ${empty.json.error.message}`);
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('in_progress');
    // git cannot open the integration ref (a ref beneath its name is in the way): nothing was finalized, and it says so.
    const ref = `refs/foreman/${(await readPlan(planPath)).planId}`;
    const tip = (await repo.git(['rev-parse', ref])).trim();
    await repo.git(['update-ref', '-d', ref]);
    await repo.git(['update-ref', `${ref}/in-the-way`, tip]);
    await writeFile(join(repo.dir, 'one.json'), JSON.stringify([{ task: 0, output: 'COMPLETED: x' }]));
    const unopened = await checkedStep(step, repo.dir, ['finalize', '--results', 'one.json']);
    expect(unopened).toMatchObject({ code: 4, json: { error: { kind: 'git-failed' } } });
    expect(unopened.json.error.message).toMatch(
      /^could not open the plan's integration ref: .*; nothing was finalized \(every task stays in progress\)\. Fix it and run finalize again with the same results\.$/,
    );
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('in_progress');
    await repo.git(['update-ref', '-d', `${ref}/in-the-way`]);
    await repo.git(['update-ref', ref, tip]);

    const lock = await acquireLock(planPath, currentLockInfo('execute'));
    expect(lock.ok).toBe(true);
    try {
      const held = await checkedStep(step, repo.dir, ['next']);
      expect(held).toMatchObject({ code: 3, json: { error: { kind: 'locked' } } });
      expect(held.stderr).toMatch(/holds the lock/);
    } finally {
      if (lock.ok) await lock.value.release();
    }

    await writeFile(
      planPath,
      '{"schemaVersion": 3, "goal": "x", "tasks": [{"subject": "s", "prompt": "p", "blockedBy": [4], "metadata": {"files": {"create": [], "modify": []}}}]}',
    );
    const invalid = await checkedStep(step, repo.dir, ['commit']);
    expect(invalid).toMatchObject({ code: 2, json: { error: { kind: 'invalid-plan', details: [expect.stringContaining('task 4 does not exist')] } } });
  });
});

describe('plan.ts summary and archive', () => {
  it('summary shows the table, the graph, the critical path, the rounds and how to run', async () => {
    const { repo } = await repoWith(mixedPlan());
    const r = await step(repo.dir, ['summary']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('| 3 | task D |');
    expect(r.stdout).toContain('```mermaid\nflowchart TD');
    expect(r.stdout).toMatch(/### Critical path\n\n\d \(task [AB]\) → 3 \(task D\) → 4 \(task E\): 3 tasks/);
    expect(r.stdout).toContain('/foreman:execute');
    expect(r.stdout).toContain('headless, from a terminal: `npx tsx scripts/execute.ts` (watch it with `npx tsx scripts/plan.ts status`)');
  });

  it('archive moves the plan into history, and refuses while a run holds the lock', async () => {
    const { repo, planPath } = await repoWith(mixedPlan());
    const lock = await acquireLock(planPath, currentLockInfo('execute'));
    expect(lock.ok).toBe(true);
    const held = await step(repo.dir, ['archive']);
    expect(held.code).toBe(3);
    expect(held.stderr).toMatch(/holds the lock/);
    expect(await archives(repo.dir)).toHaveLength(0);
    if (lock.ok) await lock.value.release();
    const r = await step(repo.dir, ['archive']);
    expect(r.code).toBe(0);
    expect(await archives(repo.dir)).toHaveLength(1);
    await expect(readFile(planPath)).rejects.toThrow();
    expect((await step(repo.dir, ['archive'])).code).toBe(2);
  });
});
