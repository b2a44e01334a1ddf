// Isolation end to end with the fake worker (issue 12): every attempt works and is verified in a
// worktree of its own outside the repository, verified work is integrated on refs/foreman/<planId>,
// and the person's tree changes only when finished work lands on files they have not changed.
// Crashes (kill -9 at random, resumed until done) are in chaos.test.ts.

import { existsSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { type FakeEvent, fakeEvents, leftovers, repoWithPlan, startExecute } from '../support/fake-run.ts';
import { waitFor } from '../support/wait.ts';
import type { TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';

const { repos, children, tempDir } = leftovers();

/** A repository with the plan, a journal, and a worktree root of its own (so what the run leaves there can be seen). */
async function setup(plan: Plan, files?: Record<string, string>) {
  const made = await repoWithPlan(plan, repos, files);
  const worktrees = await tempDir('foreman-iso-worktrees-');
  return { ...made, worktrees, env: { ...made.env, FOREMAN_WORKTREES: worktrees } };
}

/** A run in the background, to act while it works. */
const start = (dir: string, args: string[], env: Record<string, string>) => startExecute(dir, args, env, children);

const started = (events: FakeEvent[], marker: string) => events.some((e) => e.event === 'start' && e.taskMarker === marker);
const foremanRefs = async (repo: TempGitRepo) =>
  (await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman/', 'refs/foreman-awaiting/'])).split('\n').filter(Boolean);
const worktreeDirs = async (repo: TempGitRepo) => [...(await repo.git(['worktree', 'list', '--porcelain'])).matchAll(/^worktree (.*)$/gm)].map((m) => m[1]!);
const head = async (repo: TempGitRepo) => (await repo.git(['rev-parse', 'HEAD'])).trim();

/** Files git lists in the working tree (tracked and untracked, not ignored), outside .design/. */
async function treeFiles(repo: TempGitRepo): Promise<string[]> {
  return (await repo.git(['ls-files', '-co', '--exclude-standard']))
    .split('\n')
    .filter((f) => f && !f.startsWith('.design/'))
    .sort();
}

/** A finished, landed plan leaves no worktree registered, no foreman ref and nothing in the worktree root. */
async function expectNothingLeft(repo: TempGitRepo, worktrees: string): Promise<void> {
  expect(await worktreeDirs(repo)).toEqual([repo.dir]);
  expect(await foremanRefs(repo)).toEqual([]);
  // A worktree has a .git directory at its top: none is left under the root.
  const left = await readdir(worktrees, { recursive: true }).catch(() => [] as string[]);
  expect(left.filter((entry) => entry === '.git' || entry.endsWith('/.git'))).toEqual([]);
  // The worktrees are gone and every object of what landed is in the person's repository.
  await repo.git(['fsck', '--connectivity-only', '--no-dangling']);
}

describe('every attempt in a worktree of its own', () => {
  it('runs each worker outside the repository, in a worktree of it that is gone when the plan is done', async () => {
    const { repo, journal, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, sleepMs: 200 } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' }, sleepMs: 200 } }),
        fakeTask('C', { create: ['c.txt'], blockedBy: [0, 1], fake: { write: { 'c.txt': 'c\n' } } }),
      ]),
    );
    const r = await runExecute(repo.dir, [], env);
    expect(r.exitCode, r.stderr).toBe(0);
    const starts = (await fakeEvents(journal)).filter((e) => e.event === 'start') as Array<FakeEvent & { cwd: string }>;
    expect(starts).toHaveLength(3);
    for (const s of starts) {
      // Outside the person's tree (no test runner or watcher there finds it), under the worktree root.
      expect(relative(repo.dir, s.cwd).startsWith('..'), s.cwd).toBe(true);
      expect(relative(worktrees, s.cwd).startsWith('..'), s.cwd).toBe(false);
      expect(s.cwd).not.toBe(repo.dir);
    }
    // A and B ran at once: in two different worktrees.
    expect(new Set(starts.filter((s) => s.taskMarker !== 'C').map((s) => s.cwd)).size).toBe(2);
    expect(await repo.git(['show', 'HEAD:c.txt'])).toBe('c\n');
    expect(await treeFiles(repo)).toEqual(['README.md', 'a.txt', 'b.txt', 'c.txt']);
    expect(await repo.git(['status', '--porcelain', '--', ':!.design'])).toBe('');
    await expectNothingLeft(repo, worktrees);
  });

  it("a worktree is a clone of its own borrowing the repository's objects while its worker runs, detached at the integration tip", async () => {
    const signals = await tempDir('foreman-iso-signals-');
    const { repo, journal, env } = await setup(
      makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, waitForFile: join(signals, 'go') } })]),
    );
    const startHead = await head(repo);
    const child = start(repo.dir, [], env);
    await waitFor('A to start', async () => started(await fakeEvents(journal), 'A'));
    const cwd = ((await fakeEvents(journal)).find((e) => e.event === 'start') as FakeEvent & { cwd: string }).cwd;
    // Not a linked worktree: the person's repository records none (Claude Code's sandbox guards the
    // git directory of the worker's repository, which is the worktree's own).
    expect((await repo.git(['worktree', 'list', '--porcelain'])).split('\n').filter((line) => line.startsWith('worktree '))).toEqual([`worktree ${repo.dir}`]);
    expect((await repo.git(['-C', cwd, 'rev-parse', '--path-format=absolute', '--git-common-dir'])).trim()).toBe(join(cwd, '.git'));
    expect(await readFile(join(cwd, '.git', 'objects', 'info', 'alternates'), 'utf8')).toBe(`${join(repo.dir, '.git', 'objects')}\n`);
    expect((await repo.git(['-C', cwd, 'rev-parse', 'HEAD'])).trim()).toBe(startHead);
    expect((await repo.git(['-C', cwd, 'rev-parse', '--abbrev-ref', 'HEAD'])).trim()).toBe('HEAD');
    // The half-done work is in the worktree only (the worker writes it just after it starts).
    await waitFor('A to write a.txt', async () => existsSync(join(cwd, 'a.txt')));
    expect(await readFile(join(cwd, 'a.txt'), 'utf8')).toBe('a\n');
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
    await writeFile(join(signals, 'go'), '');
    expect((await child).exitCode).toBe(0);
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
  });

  it("one task's half-written file is invisible to another task's checks", async () => {
    // A writes a broken module, and finishes it only once B's acceptance check has run (the check
    // leaves a mark outside the repository). B's check loads every module it can see.
    const signals = await tempDir('foreman-iso-half-');
    const checked = join(signals, 'b-checked');
    const { repo, planPath, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['mod/a.js'],
          // biome-ignore lint/suspicious/noThenProperty: the fake worker's directive for what it does next
          fake: { write: { 'mod/a.js': 'export const a = (\n' }, waitForFile: checked, then: { write: { 'mod/a.js': 'export const a = 1;\n' } } },
        }),
        fakeTask('B', {
          create: ['mod/b.js'],
          acceptance: [{ criterion: 'every module loads', check: `for f in mod/*.js; do node --check "$f" || exit 1; done; touch ${checked}` }],
          fake: { write: { 'mod/b.js': 'export const b = 2;\n' } },
        }),
      ]),
    );
    const r = await runExecute(repo.dir, ['--sandbox', 'off', '--max-attempts', '1'], env);
    expect(r.exitCode, r.stdout).toBe(0);
    // B passed its check on the first attempt while A's file was still broken.
    const done = (await readdir(join(repo.dir, '.design/history'))).find((f) => f.endsWith('-plan.json'))!;
    const tasks = (await readPlan(join(repo.dir, '.design/history', done))).tasks;
    expect(tasks.map((t) => [t.status, t.attempts])).toEqual([
      ['completed', 1],
      ['completed', 1],
    ]);
    expect(existsSync(planPath)).toBe(false);
    expect(await readFile(join(repo.dir, 'mod/a.js'), 'utf8')).toBe('export const a = 1;\n');
    expect(await repo.git(['show', 'HEAD:mod/b.js'])).toBe('export const b = 2;\n');
    await expectNothingLeft(repo, worktrees);
  });

  it('a dependant starts from its blockers’ integrated work', async () => {
    const { repo, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', { create: ['lib/a.txt'], fake: { write: { 'lib/a.txt': 'from A\n' } } }),
        fakeTask('B', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'from B\n' } } }),
        fakeTask('C', {
          create: ['c.txt'],
          blockedBy: [0, 1],
          acceptance: [
            { criterion: 'A’s work is there', check: 'grep -qx "from A" lib/a.txt' },
            { criterion: 'B’s work is there', check: 'grep -qx "from B" notes.txt' },
          ],
          fake: { write: { 'c.txt': 'c\n' } },
        }),
      ]),
      { 'notes.txt': 'notes\n' },
    );
    const r = await runExecute(repo.dir, ['--max-attempts', '1'], env);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nfrom B\n');
    expect(await readFile(join(repo.dir, 'c.txt'), 'utf8')).toBe('c\n');
    await expectNothingLeft(repo, worktrees);
  });
});

describe('changes outside the declared files', () => {
  it('with --strict-scope, fail the attempt, naming the paths; they never reach the person’s tree or any commit; the retry is told what it may change', async () => {
    const signals = await tempDir('foreman-iso-signals-');
    const { repo, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          fake: {
            attempts: [{ write: { 'a.txt': 'a\n', 'junk/stray.txt': 'oops\n', 'README.md': 'overwritten\n' } }, { write: { 'a.txt': 'a\n' } }],
          },
        }),
      ]),
      { 'README.md': 'hello\n' },
    );
    const prompts = join(signals, 'prompts');
    const r = await runExecute(repo.dir, ['--json', '--max-attempts', '2', '--strict-scope'], { ...env, FAKE_WORKER_PROMPTS: prompts });
    expect(r.exitCode, r.stdout).toBe(0);
    const finished = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; outcome?: string; reason?: string })
      .filter((e) => e.type === 'task-finished');
    expect(finished.map((e) => e.outcome)).toEqual(['retry', 'completed']);
    expect(finished[0]!.reason).toMatch(/changed files its task does not declare.*README\.md/);
    expect(finished[0]!.reason).toContain('junk/stray.txt');
    // The second attempt is told what went wrong and which files it may change.
    const retryPrompt = await readFile(join(prompts, 'A-2.txt'), 'utf8');
    expect(retryPrompt).toContain('junk/stray.txt');
    expect(retryPrompt).toMatch(/You may change only these files.*a\.txt/);
    // Neither the stray file nor the overwrite reached the person's tree, a commit or a ref.
    expect(await treeFiles(repo)).toEqual(['README.md', 'a.txt']);
    expect(existsSync(join(repo.dir, 'junk'))).toBe(false);
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\n');
    expect(await repo.git(['log', '--all', '--format=', '--name-only'])).not.toContain('junk');
    expect(await repo.git(['log', '--all', '-p', '--format=', '--', 'README.md'])).not.toContain('overwritten');
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    await expectNothingLeft(repo, worktrees);
  });

  it('with --strict-scope and no attempt left the task fails, and nothing of its attempt is anywhere but the ref keeping what was set aside', async () => {
    const { repo, planPath, env } = await setup(
      makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n', 'junk/stray.txt': 'oops\n', 'README.md': 'overwritten\n' } } })]),
      { 'README.md': 'hello\n' },
    );
    const startHead = await head(repo);
    const r = await runExecute(repo.dir, ['--max-attempts', '1', '--strict-scope'], env);
    expect(r.exitCode).toBe(1);
    const task = (await readPlan(planPath)).tasks[0]!;
    expect(task.status).toBe('failed');
    expect(task.result).toContain('junk/stray.txt');
    expect(await treeFiles(repo)).toEqual(['README.md']);
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('hello\n');
    expect(await head(repo)).toBe(startHead);
    expect(await repo.git(['log', '--exclude=refs/foreman-aside/*', '--all', '--format=', '--name-only'])).not.toMatch(/junk|a\.txt/);
    // Kept there, to be read back: the attempt's whole work.
    expect(await repo.git(['show', `${task.setAside!.commit}:junk/stray.txt`])).toBe('oops\n');
  });
});

describe('changes outside the declared files, set aside (the default)', () => {
  it('the checks judge the declared work alone; passing, it lands, the set-aside files named and never in the person’s tree; failing, the retry is told to leave them or answer BLOCKED, and a second time ends the task blocked', async () => {
    const signals = await tempDir('foreman-iso-signals-');
    const { repo, planPath, env } = await setup(
      makePlan([
        // A tool's side effect (a rewritten lockfile) beside the declared work: its check passes without it.
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'lockfile as committed', check: 'grep -q committed lock.json && test -f a.txt' }],
          fake: { write: { 'a.txt': 'a\n', 'lock.json': 'rewritten\n' } },
        }),
        // A worker that needs an undeclared file: both attempts write it through the shell, and the check needs it.
        fakeTask('B', {
          create: ['b.txt'],
          acceptance: [{ criterion: 'needs index', check: 'grep -q b index.txt' }],
          fake: { write: { 'b.txt': 'b\n', 'index.txt': 'b\n' } },
        }),
      ]),
      { 'README.md': 'hello\n', 'lock.json': 'committed\n', 'index.txt': 'index\n' },
    );
    const prompts = join(signals, 'prompts');
    const r = await runExecute(repo.dir, ['--json', '--max-attempts', '3'], { ...env, FAKE_WORKER_PROMPTS: prompts });
    expect(r.exitCode, r.stdout).toBe(1);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; task?: number; outcome?: string; reason?: string; warnings?: string[] });
    const finished = (task: number) => events.filter((e) => e.type === 'task-finished' && e.task === task);
    expect(finished(0)).toEqual([
      expect.objectContaining({
        outcome: 'completed',
        warnings: [expect.stringContaining('changed files its task does not declare: lock.json (set aside, not integrated')],
      }),
    ]);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    expect(await readFile(join(repo.dir, 'lock.json'), 'utf8')).toBe('committed\n');
    // B: the first attempt fails its check, naming the file; the retry is told what to do; the second ends it blocked.
    expect(finished(1).map((e) => e.outcome)).toEqual(['retry', 'blocked']);
    expect(finished(1)[0]!.reason).toMatch(/acceptance check failed \(needs index\).*; changed files its task does not declare: index\.txt/s);
    const retryPrompt = await readFile(join(prompts, 'B-2.txt'), 'utf8');
    expect(retryPrompt).toContain('The previous attempt changed or tried to change index.txt, which this task does not declare');
    expect(retryPrompt).toContain('BLOCKED: needs to change <path>, which the task does not declare');
    expect(finished(1)[1]!.reason).toMatch(/^the task needs index\.txt, which it does not declare/);
    const b = (await readPlan(planPath)).tasks[1]!;
    expect(b).toMatchObject({ status: 'blocked', attempts: 2, undeclaredWrites: ['index.txt'], setAside: { attempt: 2, paths: ['index.txt'] } });
    expect(await readFile(join(repo.dir, 'index.txt'), 'utf8')).toBe('index\n');
  });
});

describe('the person’s edits during a run', () => {
  it('survive untouched and uncommitted; landing names the file that blocks it (exit 1) and lands once it is clear', async () => {
    const signals = await tempDir('foreman-iso-signals-');
    const { repo, planPath, journal, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'from A\n' }, waitForFile: join(signals, 'edited') } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' } } }),
      ]),
      { 'README.md': 'hello\n', 'notes.txt': 'notes\n', 'mine.txt': 'mine\n', 'staged.txt': 'v1\n' },
    );
    const startHead = await head(repo);
    const child = start(repo.dir, [], env);
    await waitFor('A to start', async () => started(await fakeEvents(journal), 'A'));
    // The person edits an unrelated file, a file task A modifies, and stages a change.
    await writeFile(join(repo.dir, 'mine.txt'), 'mine\nmy edit\n');
    await writeFile(join(repo.dir, 'notes.txt'), 'notes\nmy note\n');
    await writeFile(join(repo.dir, 'staged.txt'), 'v2 staged\n');
    await repo.git(['add', 'staged.txt']);
    await writeFile(join(signals, 'edited'), '');
    const r = await child;

    expect(r.exitCode).toBe(1);
    expect(r.stdout).toMatch(/could not land: not landed: a file it would update has local changes: notes\.txt \(modified\)/);
    expect(r.stdout).toContain('git merge --ff-only refs/foreman/');
    // Every edit is as the person left it: nothing restored, nothing staged, nothing committed.
    expect(await readFile(join(repo.dir, 'mine.txt'), 'utf8')).toBe('mine\nmy edit\n');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nmy note\n');
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('staged.txt\n');
    expect(await repo.git(['show', ':staged.txt'])).toBe('v2 staged\n');
    expect(await repo.git(['diff', '--name-only'])).toBe('mine.txt\nnotes.txt\n');
    // The branch did not move (landing is all or nothing); the work waits, whole, on the integration ref.
    expect(await head(repo)).toBe(startHead);
    expect(existsSync(join(repo.dir, 'b.txt'))).toBe(false);
    const [ref] = (await foremanRefs(repo)).filter((name) => name.startsWith('refs/foreman/'));
    expect(await repo.git(['show', `${ref}:notes.txt`])).toBe('notes\nfrom A\n');
    expect(await repo.git(['show', `${ref}:b.txt`])).toBe('b\n');
    expect(await repo.git(['log', '--format=', '--name-only', `${startHead}..${ref}`])).not.toMatch(/mine\.txt|staged\.txt/);
    expect((await readPlan(planPath)).tasks.map((t) => t.status)).toEqual(['completed', 'completed']);

    // The person puts their note aside; the next run lands everything and cleans up, their other edits still intact.
    await writeFile(join(repo.dir, 'notes.txt'), 'notes\n');
    const again = await runExecute(repo.dir, [], env);
    expect(again.exitCode, again.stdout).toBe(0);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nfrom A\n');
    expect(await repo.git(['show', 'HEAD:b.txt'])).toBe('b\n');
    expect(await readFile(join(repo.dir, 'mine.txt'), 'utf8')).toBe('mine\nmy edit\n');
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('staged.txt\n');
    expect(await repo.git(['show', 'HEAD:staged.txt'])).toBe('v1\n');
    expect(await repo.git(['diff', '--name-only'])).toBe('mine.txt\n');
    // No second attempt: the work had been integrated.
    expect((await fakeEvents(journal)).filter((e) => e.event === 'start')).toHaveLength(2);
    await expectNothingLeft(repo, worktrees);
  });

  it('uncommitted changes at the start get a notice, are not seen by workers, and survive', async () => {
    const { repo, env, journal, worktrees } = await setup(
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'the committed notes', check: 'grep -qx notes notes.txt && ! grep -q draft notes.txt' }],
          fake: { write: { 'a.txt': 'a\n' } },
        }),
      ]),
      { 'README.md': 'hello\n', 'notes.txt': 'notes\n' },
    );
    await writeFile(join(repo.dir, 'notes.txt'), 'notes\ndraft\n');
    const r = await runExecute(repo.dir, ['--max-attempts', '1'], env);
    expect(r.exitCode, r.stdout).toBe(0);
    // The plan's own files (.design/) are not the person's changes.
    expect(r.stdout).toContain('you have an uncommitted change (notes.txt): workers start from the last commit and will not see it');
    // Landing is all or nothing: the warning does not promise that other files land.
    expect(r.stdout).toContain(
      'if a task changes that file, its work waits on the integration ref and nothing lands on your branch until you commit, stash or drop your change',
    );
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\ndraft\n');
    expect(await repo.git(['show', 'HEAD:notes.txt'])).toBe('notes\n');
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    expect((await fakeEvents(journal)).filter((e) => e.event === 'start')).toHaveLength(1);
    await expectNothingLeft(repo, worktrees);
  });
});

describe('approvals', () => {
  it('work awaiting approval waits on its own ref, nothing of it in the person’s tree; approving lands it, and the refs go', async () => {
    const { repo, planPath, env, worktrees } = await setup(
      makePlan([
        fakeTask('G', {
          create: ['g.txt'],
          modify: ['notes.txt'],
          gate: 'human-approval',
          fake: { write: { 'g.txt': 'g\n' }, append: { 'notes.txt': 'G\n' } },
        }),
        fakeTask('H', {
          create: ['h.txt'],
          blockedBy: [0],
          acceptance: [{ criterion: 'sees G', check: 'test -f g.txt' }],
          fake: { write: { 'h.txt': 'h\n' } },
        }),
        fakeTask('I', { create: ['i.txt'], fake: { write: { 'i.txt': 'i\n' } } }),
      ]),
      { 'README.md': 'hello\n', 'notes.txt': 'notes\n' },
    );
    const startHead = await head(repo);
    const first = await runExecute(repo.dir, [], env);
    expect(first.exitCode).toBe(1);
    const plan = await readPlan(planPath);
    expect(plan.tasks.map((t) => t.status ?? 'pending')).toEqual(['awaiting_approval', 'pending', 'completed']);
    const parked = `refs/foreman-awaiting/${plan.planId}/0`;
    expect((await foremanRefs(repo)).sort()).toEqual([`refs/foreman/${plan.planId}`, parked].sort());
    expect(await repo.git(['show', `${parked}:g.txt`])).toBe('g\n');
    expect(await repo.git(['show', `${parked}:notes.txt`])).toBe('notes\nG\n');
    // Not integrated and not in the person's tree; I's work landed.
    expect(existsSync(join(repo.dir, 'g.txt'))).toBe(false);
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\n');
    expect(await repo.git(['ls-tree', '--name-only', `refs/foreman/${plan.planId}`])).not.toContain('g.txt');
    expect(await repo.git(['show', 'HEAD:i.txt'])).toBe('i\n');
    expect(await head(repo)).not.toBe(startHead);

    expect((await runPlanTool(repo.dir, ['approve', '0'])).exitCode).toBe(0);
    const second = await runExecute(repo.dir, [], env);
    expect(second.exitCode, second.stdout).toBe(0);
    expect(await repo.git(['show', 'HEAD:g.txt'])).toBe('g\n');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nG\n');
    expect(await readFile(join(repo.dir, 'h.txt'), 'utf8')).toBe('h\n');
    await expectNothingLeft(repo, worktrees);
  });

  it('rejecting drops the parked work: it never lands, and its ref goes', async () => {
    const { repo, planPath, env } = await setup(
      makePlan([
        fakeTask('G', { create: ['g.txt'], gate: 'human-approval', fake: { write: { 'g.txt': 'g\n' } } }),
        fakeTask('I', { create: ['i.txt'], fake: { write: { 'i.txt': 'i\n' }, sleepMs: 100 } }),
      ]),
    );
    expect((await runExecute(repo.dir, [], env)).exitCode).toBe(1);
    const planId = (await readPlan(planPath)).planId;
    expect(await foremanRefs(repo)).toContain(`refs/foreman-awaiting/${planId}/0`);
    expect((await runPlanTool(repo.dir, ['reject', '0', '--reason', 'not this way'])).exitCode).toBe(0);
    const again = await runExecute(repo.dir, [], env);
    expect(again.exitCode).toBe(1);
    expect(await foremanRefs(repo)).not.toContain(`refs/foreman-awaiting/${planId}/0`);
    expect(existsSync(join(repo.dir, 'g.txt'))).toBe(false);
    expect(await repo.git(['log', '--all', '--format=', '--name-only'])).not.toContain('g.txt');
    expect(await repo.git(['show', 'HEAD:i.txt'])).toBe('i\n');
  });
});

describe('when work lands', () => {
  it('--no-commit: the work lands as uncommitted changes, HEAD unchanged, nothing staged', async () => {
    const { repo, env, worktrees } = await setup(
      makePlan([
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } }),
        fakeTask('B', { modify: ['notes.txt'], blockedBy: [0], fake: { append: { 'notes.txt': 'B\n' } } }),
      ]),
      { 'README.md': 'hello\n', 'notes.txt': 'notes\n' },
    );
    const startHead = await head(repo);
    const r = await runExecute(repo.dir, ['--no-commit'], env);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(await head(repo)).toBe(startHead);
    expect(await repo.git(['rev-parse', 'main'])).toBe(`${startHead}\n`);
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('');
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('notes\nB\n');
    expect(await repo.git(['status', '--porcelain', '--', ':!.design'])).toBe(' M notes.txt\n?? a.txt\n');
    await expectNothingLeft(repo, worktrees);
  });

  it('--land continuous moves the branch during the run; --land end only when the run stops', async () => {
    for (const mode of ['continuous', 'end'] as const) {
      // B waits for a signal file, so the run is still going when A's work is integrated.
      const go = join(await tempDir('foreman-iso-go-'), 'go');
      const { repo, journal, env, worktrees } = await setup(
        makePlan([
          fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } }),
          fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' }, waitForFile: go } }),
        ]),
      );
      const startHead = await head(repo);
      const child = start(repo.dir, ['--land', mode], env);
      await waitFor('B to start', async () => started(await fakeEvents(journal), 'B'));
      // A's work is integrated while B still works.
      await waitFor('A to be integrated', async () => {
        const refs = (await foremanRefs(repo)).filter((name) => name.startsWith('refs/foreman/'));
        return refs.length === 1 && (await repo.git(['ls-tree', '--name-only', refs[0]!])).includes('a.txt');
      });
      if (mode === 'continuous') {
        await waitFor('the branch to move', async () => (await head(repo)) !== startHead);
        expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
        expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('a\n');
      } else {
        expect(await head(repo)).toBe(startHead);
        expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
      }
      expect(started(await fakeEvents(journal), 'B') && !(await fakeEvents(journal)).some((e) => e.event === 'end' && e.taskMarker === 'B')).toBe(true);
      await writeFile(go, '');
      const r = await child;
      expect(r.exitCode, `${mode}: ${r.stdout}`).toBe(0);
      expect(await treeFiles(repo)).toEqual(['README.md', 'a.txt', 'b.txt']);
      expect(await repo.git(['status', '--porcelain', '--', ':!.design'])).toBe('');
      await expectNothingLeft(repo, worktrees);
    }
  });
});
