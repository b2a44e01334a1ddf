// The in-session path's isolation: each Task subagent works in the worktree Claude Code makes
// for it (`isolation: "worktree"`, played here with `git worktree add -b worktree-agent-<id>
// .claude/worktrees/agent-<id>`); `finalize` verifies there and removes it; `commit` integrates
// onto the plan's ref and lands on the branch at once, so dependants start from their blockers'
// work; a landing blocked by the person's edit touches nothing of theirs and holds dependants back.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';
import { agentLeftovers, checkedStep, isolatedSubagent, plannedRepos, step } from './support.ts';

const { repoWith } = plannedRepos();

/** Runs every task `next` handed out as an isolated subagent and finalizes them all. */
async function round(dir: string, next: any) {
  const ran = await Promise.all(next.tasks.map(async (t: any) => ({ task: t.index, ...(await isolatedSubagent(dir, t.promptFile, t.model)) })));
  await writeFile(join(dir, '.design/prompts/results.json'), JSON.stringify(ran));
  const finalize = await checkedStep(step, dir, ['finalize', '--results', '.design/prompts/results.json']);
  expect(finalize.code, finalize.stderr).toBe(0);
  return { ran, finalize: finalize.json };
}

const head = async (repo: TempGitRepo) => (await repo.git(['rev-parse', 'HEAD'])).trim();

describe('the /execute steps with Claude Code worktrees', () => {
  it('two tasks finalized from two worktrees integrate in one commit and land; the worktrees and branches are removed', async () => {
    const { repo, planPath } = await repoWith(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, status: 'COMPLETED: made a' } }),
        fakeTask('B', { modify: ['README.md'], fake: { append: { 'README.md': 'b\n' }, status: 'COMPLETED: b' } }),
      ]),
    );
    expect((await checkedStep(step, repo.dir, ['setup'])).code).toBe(0);
    const next = await checkedStep(step, repo.dir, ['next']);
    expect(next.json.tasks.map((t: any) => t.index).sort()).toEqual([0, 1]);
    const { ran, finalize } = await round(repo.dir, next.json);
    expect(ran.every((r: any) => typeof r.worktree === 'string' && r.worktree.includes('/.claude/worktrees/agent-'))).toBe(true);
    expect(finalize.results.map((r: any) => r.outcome)).toEqual(['completed', 'completed']);
    // Verified, not integrated yet: nothing has reached the person's tree.
    await expect(readFile(join(repo.dir, 'a.txt'))).rejects.toThrow();
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });

    const commit = await checkedStep(step, repo.dir, ['commit']);
    expect(commit.code, commit.stderr).toBe(0);
    expect(commit.json).toMatchObject({
      tasks: [0, 1],
      landing: { landed: true, files: 2, problem: [] },
      complete: true,
      archived: expect.stringContaining('.design/history/'),
    });
    expect(await head(repo)).toBe(commit.json.commit);
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\nb\n');
    expect(await repo.git(['status', '--porcelain', '--', '.', ':!.design'])).toBe('');
    expect(await repo.git(['log', '-1', '--format=%B'])).toContain('Foreman-Tasks: 0,1');
    // The plan is done: no foreman ref is left.
    expect(await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman'])).toBe('');
    await expect(readFile(planPath)).rejects.toThrow();
  });

  it("with setup --strict-scope, an undeclared change fails the attempt and never reaches the person's tree or a commit", async () => {
    const { repo, planPath } = await repoWith(
      makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n', 'junk/stray.txt': 'stray\n', 'README.md': 'overwritten\n' } } })]),
    );
    await checkedStep(step, repo.dir, ['setup', '--max-attempts', '1', '--strict-scope']);
    const next = await checkedStep(step, repo.dir, ['next']);
    const { finalize } = await round(repo.dir, next.json);
    expect(finalize.results[0]).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('README.md, junk/stray.txt') });
    expect(finalize.results[0].warnings).toEqual([expect.stringContaining('junk/stray.txt')]);
    const commit = await checkedStep(step, repo.dir, ['commit']);
    expect(commit.json).toMatchObject({ commit: null, tasks: [] });
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\n');
    await expect(readFile(join(repo.dir, 'junk/stray.txt'))).rejects.toThrow();
    await expect(readFile(join(repo.dir, 'a.txt'))).rejects.toThrow();
    expect(await repo.git(['log', '--format=%s'])).not.toContain('foreman');
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('failed');
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
  });

  it("by default an undeclared change is set aside: the task completes with its declared work, finalize names it in its warnings, and it never reaches the person's tree", async () => {
    const { repo, planPath } = await repoWith(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'the declared work alone', check: 'test -f a.txt && test ! -e junk/stray.txt && grep -q hello README.md' }],
          fake: { write: { 'a.txt': 'a\n', 'junk/stray.txt': 'stray\n', 'README.md': 'overwritten\n' } },
        }),
      ]),
    );
    await checkedStep(step, repo.dir, ['setup']);
    const { finalize } = await round(repo.dir, (await checkedStep(step, repo.dir, ['next'])).json);
    expect(finalize.results[0]).toMatchObject({ outcome: 'completed' });
    expect(finalize.results[0].warnings).toEqual([
      expect.stringMatching(
        /^changed files its task does not declare: README\.md, junk\/stray\.txt \(set aside, not integrated; kept in refs\/foreman-aside\//,
      ),
    ]);
    const commit = await checkedStep(step, repo.dir, ['commit']);
    expect(commit.json).toMatchObject({ tasks: [0], complete: true });
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\n');
    await expect(readFile(join(repo.dir, 'junk/stray.txt'))).rejects.toThrow();
    expect(await repo.git(['stash', 'list'])).toBe('');
    await expect(readFile(planPath)).rejects.toThrow();
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
  });

  it("a dependant handed out after commit starts from HEAD, which holds its blocker's work", async () => {
    const { repo } = await repoWith(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'from A\n' } } }),
        // B's check passes only when A's work is in its worktree.
        fakeTask('B', {
          create: ['b.txt'],
          blockedBy: [0],
          acceptance: [{ criterion: 'sees A', check: 'grep -q "from A" a.txt' }],
          fake: { write: { 'b.txt': 'b\n' } },
        }),
      ]),
    );
    await checkedStep(step, repo.dir, ['setup']);
    const first = await checkedStep(step, repo.dir, ['next']);
    expect(first.json.tasks.map((t: any) => t.index)).toEqual([0]);
    await round(repo.dir, first.json);
    // Before `commit`, B is not ready: A is verified, not integrated.
    expect((await checkedStep(step, repo.dir, ['next'])).json).toMatchObject({ tasks: [], stall: 'running' });
    const committed = await checkedStep(step, repo.dir, ['commit']);
    expect(committed.json.landing).toMatchObject({ landed: true, commit: committed.json.commit });

    const second = await checkedStep(step, repo.dir, ['next']);
    expect(second.json.tasks).toEqual([expect.objectContaining({ index: 1, isolation: 'worktree', base: committed.json.commit })]);
    expect(await head(repo)).toBe(committed.json.commit);
    const { ran, finalize } = await round(repo.dir, second.json);
    expect(finalize.results[0]).toMatchObject({ index: 1, outcome: 'completed' });
    expect(ran[0].worktree).toBeDefined();
    const last = await checkedStep(step, repo.dir, ['commit']);
    expect(last.json).toMatchObject({ complete: true, landing: { landed: true } });
    expect(await repo.git(['show', 'HEAD:b.txt'])).toBe('b\n');
  });

  it("subagents that commit their own work after a blocker landed: their committed (and then extended) work integrates, and only foreman's commits reach the branch", async () => {
    const { repo } = await repoWith(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'from A\n' } } }),
        fakeTask('B', {
          create: ['b.txt'],
          modify: ['README.md'],
          blockedBy: [0],
          // biome-ignore lint/suspicious/noThenProperty: the fake worker's directive for what it does next
          fake: { write: { 'b.txt': 'b\n' }, commit: 'wip B', then: { append: { 'README.md': 'after the commit\n' } } },
        }),
        fakeTask('C', { create: ['c/c.txt'], blockedBy: [0], fake: { write: { 'c/c.txt': 'c\n' }, commit: 'wip C' } }),
      ]),
    );
    const start = await head(repo);
    await checkedStep(step, repo.dir, ['setup']);
    await round(repo.dir, (await checkedStep(step, repo.dir, ['next'])).json);
    await checkedStep(step, repo.dir, ['commit']);
    const second = await checkedStep(step, repo.dir, ['next']);
    expect(second.json.tasks.map((t: any) => t.index).sort()).toEqual([1, 2]);
    const { finalize } = await round(repo.dir, second.json);
    expect(finalize.results.map((r: any) => r.outcome)).toEqual(['completed', 'completed']);
    const last = await checkedStep(step, repo.dir, ['commit']);
    expect(last.json).toMatchObject({ complete: true, landing: { landed: true } });
    expect(await repo.git(['show', 'HEAD:b.txt'])).toBe('b\n');
    expect(await repo.git(['show', 'HEAD:c/c.txt'])).toBe('c\n');
    expect(await repo.git(['show', 'HEAD:README.md'])).toBe('hello\nafter the commit\n');
    expect(await repo.git(['log', '--format=%s', `${start}..HEAD`])).not.toMatch(/wip/);
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
  });

  it("a landing blocked by the person's edit touches nothing of theirs, exits 1, holds dependants back, and lands once the edit is gone", async () => {
    const { repo } = await repoWith(
      makePlan([
        fakeTask('A', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'A\n' } } }),
        fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b\n' } } }),
      ]),
      { 'notes.txt': 'notes\n' },
    );
    await checkedStep(step, repo.dir, ['setup']);
    const next = await checkedStep(step, repo.dir, ['next']);
    await round(repo.dir, next.json);
    // The person edits the file task A changed, while the session runs.
    await writeFile(join(repo.dir, 'notes.txt'), 'my edit\n');
    const before = await head(repo);
    const blocked = await checkedStep(step, repo.dir, ['commit']);
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(/could not land: .*notes\.txt/);
    expect(blocked.json).toMatchObject({
      tasks: [0],
      landing: { landed: false, commit: null, problem: [expect.stringContaining('notes.txt'), expect.anything()] },
      complete: false,
    });
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('my edit\n');
    expect(await head(repo)).toBe(before);
    // B would start without A's work: it waits.
    const held = await checkedStep(step, repo.dir, ['next']);
    expect(held.json).toMatchObject({ tasks: [], stall: 'landing', stuck: [1] });

    await repo.git(['checkout', '--', 'notes.txt']);
    const landed = await checkedStep(step, repo.dir, ['commit']);
    expect(landed.code, landed.stderr).toBe(0);
    expect(landed.json).toMatchObject({ commit: null, tasks: [], landing: { landed: true, files: 1 } });
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nA\n');
    const go = await checkedStep(step, repo.dir, ['next']);
    expect(go.json.tasks.map((t: any) => t.index)).toEqual([1]);
  });
});
