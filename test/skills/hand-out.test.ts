// What the in-session steps tell the plugin's worker hook (src/run/session/hand-out.ts): inside a
// Claude Code session (CLAUDE_CODE_SESSION_ID), `setup`, `next` and `finalize` publish the tasks
// handed out now, with their prompt files and declared files; the end of the run withdraws it,
// and `setup` removes what earlier sessions of the plan left. Outside a session nothing is written.
// Also: `plan next` after the last `commit` archived the plan says the plan is done.

import { mkdir, mkdtemp, readFile, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handOutRoot, readHandOut, writeHandOut } from '../../src/adapters/worker/hand-out.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { checkedStep, isolatedSubagent, step } from './support.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function fixture() {
  const repo: TempGitRepo = await tempGitRepo({ 'README.md': 'hello\n' });
  cleanups.push(repo.cleanup);
  const home = await mkdtemp(join(tmpdir(), 'foreman-hand-out-home-'));
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  const planPath = await writePlan(
    repo.dir,
    makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } }),
      fakeTask('B', { create: ['b/'], modify: ['README.md'], fake: { write: { 'b/x.txt': 'x\n' }, append: { 'README.md': 'b\n' } } }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [0], fake: { write: { 'c.txt': 'c\n' } } }),
    ]),
  );
  const env = { HOME: home, CLAUDE_CODE_SESSION_ID: 'session-1', FOREMAN_SANDBOX: 'off' };
  const run = (argv: string[]) => checkedStep((cwd, a) => step(cwd, a, env), repo.dir, argv);
  return { repo, home, planPath, env, run, root: handOutRoot(env) };
}

describe('the hand-out the in-session steps publish for the worker hook', () => {
  it('lists what next handed out, drops what finalize settled, and is withdrawn when the run ends', async () => {
    const { repo, planPath, run, root } = await fixture();
    expect((await run(['setup'])).code).toBe(0);
    expect(await readHandOut(root, 'session-1')).toMatchObject({
      session: 'session-1',
      repo: await realpath(repo.dir),
      planPath,
      tasks: [],
      sandbox: { available: false, reason: '--sandbox off' },
    });

    const next = await run(['next']);
    expect(next.json.tasks.map((t: any) => t.index)).toEqual([0, 1]);
    expect((await readHandOut(root, 'session-1'))!.tasks).toEqual([
      { index: 0, attempt: 1, subject: 'task A', promptFile: join(repo.dir, '.design/prompts/task-0.md'), files: ['a.txt'] },
      { index: 1, attempt: 1, subject: 'task B', promptFile: join(repo.dir, '.design/prompts/task-1.md'), files: ['b/', 'README.md'] },
    ]);

    // Task 0 is finalized: its worker's binding goes with it; task 1 is still out.
    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    expect((await run(['finalize', '--results', '.design/prompts/results.json'])).code).toBe(0);
    expect((await readHandOut(root, 'session-1'))!.tasks.map((t) => t.index)).toEqual([1]);

    const other = await isolatedSubagent(repo.dir, next.json.tasks[1].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 1, output: other.output.split('\n').at(-1), worktree: other.worktree }]),
    );
    await run(['finalize', '--results', '.design/prompts/results.json']);
    await run(['commit']);
    const last = await run(['next']);
    const final = await isolatedSubagent(repo.dir, last.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 2, output: final.output.split('\n').at(-1), worktree: final.worktree }]),
    );
    await run(['finalize', '--results', '.design/prompts/results.json']);
    expect((await run(['commit'])).json.archived).toMatch(/history/);
    // The run is over: the session's folder, and the root with it, are gone.
    await expect(readdir(root)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('writes nothing outside a Claude Code session', async () => {
    const { repo, home } = await fixture();
    const outside = (argv: string[]) => checkedStep((cwd, a) => step(cwd, a, { HOME: home, FOREMAN_SANDBOX: 'off' }), repo.dir, argv);
    await outside(['setup']);
    expect((await outside(['next'])).json.tasks.length).toBe(2);
    await expect(readdir(join(home, '.cache/foreman/sessions'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('setup removes the hand-outs earlier sessions left for the plan, and other sessions’ stay', async () => {
    const { repo, planPath, run, root } = await fixture();
    const repoReal = await realpath(repo.dir);
    const left = { version: 1 as const, repo: repoReal, planPath, sandbox: { available: true as const, network: [] }, tasks: [] };
    await writeHandOut(root, { ...left, session: 'old-session' });
    await writeHandOut(root, { ...left, session: 'other-plan', planPath: join(repoReal, 'elsewhere/plan.json') });
    await mkdir(join(root, 'old-session', 'tmp', 'agent'), { recursive: true });
    await run(['setup']);
    expect((await readdir(root)).sort()).toEqual(['other-plan', 'session-1']);
  });
});

describe('plan next after the last commit archived the plan', () => {
  it('answers that the plan is done, with where it went', async () => {
    const { repo, run } = await fixture();
    await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]));
    await run(['setup']);
    const next = await run(['next']);
    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    await run(['finalize', '--results', '.design/prompts/results.json']);
    const commit = await run(['commit']);
    expect(commit.json.archived).toMatch(/history/);
    const after = await run(['next']);
    expect(after.code).toBe(0);
    expect(after.json).toMatchObject({ stall: 'done', complete: true, tasks: [], archived: commit.json.archived });
    expect(JSON.parse(await readFile(commit.json.archived, 'utf8')).tasks[0].status).toBe('completed');
  });

  it('still says there is no plan when none was ever run, or the newest archive is unfinished', async () => {
    const { repo, run } = await fixture();
    await rm(join(repo.dir, '.design/plan.json'));
    expect((await run(['next'])).json.error.kind).toBe('no-plan');
    await mkdir(join(repo.dir, '.design/history'), { recursive: true });
    await writeFile(join(repo.dir, '.design/history/20260101T000000Z-plan.json'), JSON.stringify(makePlan([fakeTask('A', { create: ['a.txt'] })])));
    expect((await run(['next'])).json.error.kind).toBe('no-plan');
  });
});
