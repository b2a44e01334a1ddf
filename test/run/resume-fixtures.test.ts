// Runs stopped by the code of an earlier day resume with today's (test/fixtures/resume, made by its
// make.ts): a headless run killed mid-run, with its journal, and an in-session run stopped while
// its gate ran. The repository comes back with the same commit ids and refs, the files beside the
// plan as the stop left them; the journal reads as it did, and each run resumes to completion.

import { execa } from 'execa';
import { cp, mkdtemp, readFile, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot, runExecute, runPlanTool } from '../support/execute.ts';
import { runGit } from '../support/git-repo.ts';
import { checkedStep, fakeSubagent, playLead, settledCommit, step } from '../skills/support.ts';
import { journalReport } from '../fixtures/resume/report.ts';

const fixtures = join(repoRoot, 'test/fixtures/resume');

/**
 * The session cases wait for a background gate process's verdict as the skill does: `commit
 * --wait 60`, again while the gate still runs (`settledCommit`; once, under the whole suite, a
 * verdict took longer than 60 s). The time limit, well past one wait, is what catches a gate that
 * never gives one.
 */
const SESSION_TEST_MS = 200_000;

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** The fixture's repository (its history and refs imported, `main` checked out) with `.design` as the stop left it. */
async function restore(name: string): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), `foreman-resume-${name}-`)));
  dirs.push(dir);
  const git = (args: string[], input?: string) => runGit(dir, args, input !== undefined ? { input } : {});
  await git(['init', '-q', '-b', 'main']);
  await writeFile(
    join(dir, '.git/config'),
    `${await readFile(join(dir, '.git/config'), 'utf8')}[user]\n\tname = Test Person\n\temail = person@example.com\n[commit]\n\tgpgsign = false\n[maintenance]\n\tauto = false\n`,
  );
  await git(['fast-import', '--quiet'], await readFile(join(fixtures, name, 'repo.fast-export'), 'utf8'));
  // The same commits, under the same refs: nothing was lost or made anew.
  expect(await git(['for-each-ref', '--format=%(objectname) %(refname)'])).toBe(await readFile(join(fixtures, name, 'refs.txt'), 'utf8'));
  await git(['checkout', '-q', '-f', 'main']);
  await cp(join(fixtures, name, 'design'), join(dir, '.design'), { recursive: true });
  return dir;
}

const events = async (dir: string) =>
  (await readFile(join(dir, '.design/events.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);

const archived = async (dir: string) => (await readdir(join(dir, '.design/history')).catch(() => [] as string[])).filter((f) => f.endsWith('-plan.json'));

/** Each task's file on the branch, and the tasks the branch's commits name in their trailers. */
async function landed(dir: string, files: readonly string[]): Promise<{ files: Record<string, string>; trailers: number[] }> {
  const out: Record<string, string> = {};
  for (const file of files) out[file] = await runGit(dir, ['show', `main:${file}`]);
  const trailers = (await runGit(dir, ['log', '--format=%(trailers:key=Foreman-Tasks,valueonly)', 'main']))
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number)
    .sort((a, b) => a - b);
  return { files: out, trailers };
}

const foremanRefs = (dir: string) => runGit(dir, ['for-each-ref', '--format=%(refname)', 'refs/foreman/', 'refs/foreman-candidate/', 'refs/foreman-awaiting/']);

describe('a run stopped by an earlier version', () => {
  it('headless, killed mid-run: its journal reads as it did, and the same command resumes it to completion', async () => {
    const dir = await restore('headless');
    const before = await events(dir);
    const runId = before[0]!.runId as string;
    // The killed run, reported from its journal as the code of its day reported it.
    const report = await journalReport(join(dir, '.design/plan.json'), runId);
    expect(report.data).toEqual(JSON.parse(await readFile(join(fixtures, 'headless/report.json'), 'utf8')));
    expect(report.markdown).toBe(await readFile(join(fixtures, 'headless/report.md'), 'utf8'));
    const command = await runPlanTool(dir, ['report', '--run', runId]);
    expect(command.exitCode, command.stderr).toBe(0);
    const plan = JSON.parse(await readFile(join(dir, '.design/plan.json'), 'utf8'));
    expect(plan.tasks.map((t: { status?: string }) => t.status ?? 'pending')).toEqual(['completed', 'in_progress', 'in_progress', 'pending']);

    const r = await runExecute(dir, ['--concurrency', '2', '--gate', 'node gate.js b.txt', '--speculate', '1']);
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(await archived(dir)).toHaveLength(1);
    expect(await landed(dir, ['a.txt', 'b.txt', 'c.txt', 'd.txt'])).toEqual({
      files: { 'a.txt': 'make a\n', 'b.txt': 'make b\n', 'c.txt': 'make c\n', 'd.txt': 'make d\n' },
      trailers: [0, 1, 2, 3],
    });
    expect(await foremanRefs(dir)).toBe('');
    expect(await runGit(dir, ['status', '--porcelain', '--untracked-files=no'])).toBe('');

    // The journal keeps the killed run as it was; the resumed run follows it.
    const after = await events(dir);
    expect(after.slice(0, before.length)).toEqual(before);
    const resumed = after.slice(before.length);
    expect(resumed[0]).toMatchObject({ type: 'run-started', resumed: true });
    // The held candidate was gated again, not run again; the attempt the kill cut short ran again, as its first.
    expect(resumed.filter((e) => e.type === 'task-started').map((e) => [e.task, e.attempt])).toEqual([
      [2, 1],
      [3, 1],
    ]);
    expect(resumed.filter((e) => e.type === 'gate-finished' && e.tasks.includes(1)).map((e) => e.passed)).toEqual([true]);
    expect(resumed.at(-1)).toMatchObject({ type: 'run-finished', reason: 'all-done' });
  });

  it(
    'in a session, stopped while its gate ran: the next steps test the candidate again, finish the task handed out, and complete',
    async () => {
      const dir = await restore('session');
      const before = await events(dir);
      const session = JSON.parse(await readFile(join(dir, '.design/prompts/session.json'), 'utf8'));
      expect(session.engine.attempts.map((a: { task: number; stage: string }) => [a.task, a.stage])).toEqual([
        [0, 'gating'],
        [1, 'running'],
      ]);

      // The gate process is gone without a verdict: its stack is tested again, and task 0 lands.
      const commit = await settledCommit(step, dir, ['commit', '--wait', '60']);
      expect(commit.code, commit.stderr).toBe(0);
      expect(commit.json).toMatchObject({ tasks: [0], gate: { state: 'idle' } });
      expect(await runGit(dir, ['show', 'main:a.txt'])).toBe('make a\n');

      // Task 1's subagent, in a worktree from the commit `next` handed it out at, as Claude Code made it.
      const base = session.handedOut['1'].base as string;
      const worktree = join(dir, '.claude/worktrees/agent-resumed1');
      await runGit(dir, ['worktree', 'add', '-q', '-b', 'worktree-agent-resumed1', worktree, base]);
      const output = await fakeSubagent(worktree, join(dir, '.design/prompts/task-1.md'), 'sonnet');
      await writeFile(join(dir, '.design/prompts/results.json'), JSON.stringify([{ task: 1, output: output.trim().split('\n').at(-1), worktree }]));
      const finalize = await checkedStep(step, dir, ['finalize', '--results', '.design/prompts/results.json']);
      expect(finalize.code, finalize.stderr).toBe(0);
      expect(finalize.json.results).toEqual([expect.objectContaining({ index: 1, outcome: 'completed' })]);
      const second = await settledCommit(step, dir, ['commit', '--wait', '60']);
      expect(second.json).toMatchObject({ tasks: [1], complete: false });

      // Task 2, blocked by both, is handed out now and completes the plan.
      const next = await checkedStep(step, dir, ['next']);
      expect(next.json.tasks.map((t: { index: number }) => t.index)).toEqual([2]);
      const last = join(dir, '.claude/worktrees/agent-resumed2');
      await runGit(dir, ['worktree', 'add', '-q', '-b', 'worktree-agent-resumed2', last, 'HEAD']);
      const lastOutput = await fakeSubagent(last, next.json.tasks[0].promptFile, next.json.tasks[0].model);
      await writeFile(join(dir, '.design/prompts/results.json'), JSON.stringify([{ task: 2, output: lastOutput.trim().split('\n').at(-1), worktree: last }]));
      expect((await checkedStep(step, dir, ['finalize', '--results', '.design/prompts/results.json'])).code).toBe(0);
      const done = await settledCommit(step, dir, ['commit', '--wait', '60']);
      expect(done.json).toMatchObject({ tasks: [2], complete: true });
      expect(done.json.archived).toMatch(/\.design\/history\/\d{8}T\d{6}Z-plan\.json$/);
      expect(await landed(dir, ['a.txt', 'b.txt', 'c.txt'])).toEqual({
        files: { 'a.txt': 'make a\n', 'b.txt': 'make b\n', 'c.txt': 'make c\n' },
        trailers: [0, 1, 2],
      });
      expect(await foremanRefs(dir)).toBe('');
      // The journal keeps what the stopped steps wrote.
      expect((await events(dir)).slice(0, before.length)).toEqual(before);
      await execa('git', ['worktree', 'prune'], { cwd: dir });
    },
    SESSION_TEST_MS,
  );

  it(
    'in a session whose file lost a candidate’s decision: the damaged attempt is dropped as it is read, the next step works, and `setup` finds the candidate on its ref',
    async () => {
      const dir = await restore('session');
      const path = join(dir, '.design/prompts/session.json');
      const session = JSON.parse(await readFile(path, 'utf8'));
      delete session.engine.attempts[0].decision;
      await writeFile(path, JSON.stringify(session, null, 2));

      const commit = await settledCommit(step, dir, ['commit', '--wait', '60']);
      expect(commit.code, commit.stderr).toBe(0);
      expect(commit.json.tasks).toEqual([]);
      const after = JSON.parse(await readFile(path, 'utf8'));
      expect(after.engine.attempts.map((a: { task: number; stage: string }) => [a.task, a.stage])).toEqual([[1, 'running']]);
      // Its work was never lost: the candidate's ref holds it, and a new run's setup queues it again.
      const t = await playLead(dir, step, ['--gate', 'node gate.js a.txt', '--concurrency', '2', '--wait', '60']);
      expect(t.end).toMatchObject({ complete: true });
      expect(await landed(dir, ['a.txt', 'b.txt', 'c.txt'])).toEqual({
        files: { 'a.txt': 'make a\n', 'b.txt': 'make b\n', 'c.txt': 'make c\n' },
        trailers: [0, 1, 2],
      });
      // Task 0 was not run again: its held work integrated.
      expect(t.rounds.flatMap((r) => r.next.tasks.map((task: { index: number }) => task.index))).not.toContain(0);
    },
    SESSION_TEST_MS,
  );
});
