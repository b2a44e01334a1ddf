// A person's review goes back to the worker, through the REAL Claude Code CLI driven by the
// scripted Messages API server: a task parked for approval is revised with the reviewer's words,
// its next attempt's prompt carries them and the work so far, its worktree holds the parked files
// (the worker edits them, it does not rewrite them), the revision parks again and, approved, lands
// whole; the round spends none of the task's attempts. And a candidate the gate blames retries
// from its own work, with the gate's output in its prompt.

import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, type ScriptedRequest, startModelServer, text, toolUse, type TurnScript, variants } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const FEEDBACK = 'also handle the empty string';
const cwdOf = (req: ScriptedRequest) => req.cwd ?? '.';

/** What each revising worker found: its prompt and what reading the parked file gave it. */
const seen: { prompts: string[]; reads: string[] } = { prompts: [], reads: [] };

/**
 * A worker that starts from earlier work: it records its prompt, reads `file` (which must be in its
 * worktree, holding `before`), and edits `before` into `after` rather than rewriting the file.
 */
const editsEarlierWork = (file: string, before: string, after: string, done: string): TurnScript[] => [
  (req) => {
    seen.prompts.push(req.prompt);
    return [toolUse('Read', { file_path: join(cwdOf(req), file) })];
  },
  (req) => {
    const read = req.toolResults[0];
    seen.reads.push(read?.is_error === false ? read.content : `error: ${read?.content ?? 'no result'}`);
    if (read?.is_error !== false || !read.content.includes(before.trim())) return [text(`FAILED: the earlier ${file} is not in my worktree`)];
    return [toolUse('Edit', { file_path: join(cwdOf(req), file), old_string: before, new_string: after })];
  },
  [text(done)],
];

let server: ModelServer;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      ...variants('TASK-MARKER: parse', [
        {
          // The revision: its worktree must hold the parked file, which it edits.
          when: '## Changes requested in review',
          turns: editsEarlierWork(
            'src/parse.txt',
            'handles text\n',
            'handles text\nhandles the empty string\n',
            'COMPLETED: src/parse.txt handles the empty string too',
          ),
        },
        {
          turns: [
            (req) => [toolUse('Write', { file_path: join(cwdOf(req), 'src/parse.txt'), content: 'handles text\n' })],
            [text('COMPLETED: src/parse.txt handles text')],
          ],
        },
      ]),
      ...variants('TASK-MARKER: tidy', [
        // The revision cannot do what was asked: the round fails.
        { when: '## Changes requested in review', turns: [[text('FAILED: the empty string cannot be handled here')]] },
        {
          turns: [(req) => [toolUse('Write', { file_path: join(cwdOf(req), 'src/tidy.txt'), content: 'tidy\n' })], [text('COMPLETED: src/tidy.txt is tidy')]],
        },
      ]),
      ...variants('TASK-MARKER: shout', [
        {
          // The retry after the gate blamed it: it starts from its own candidate work.
          when: 'This is attempt 2',
          turns: editsEarlierWork('src/shout.txt', 'broken', 'fixed', 'COMPLETED: fixed src/shout.txt'),
        },
        {
          turns: [
            (req) => [toolUse('Write', { file_path: join(cwdOf(req), 'src/shout.txt'), content: 'HELLO broken\n' })],
            [text('COMPLETED: wrote src/shout.txt')],
          ],
        },
      ]),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

async function repoWith(plan: Plan): Promise<{ repo: TempGitRepo; env: Record<string, string | undefined> }> {
  const repo = await tempGitRepo({ 'README.md': '# sample\n' });
  const home = await tempHome();
  cleanups.push(repo.cleanup, () => rm(home, { recursive: true, force: true }));
  await writePlan(repo.dir, plan);
  return { repo, env: claudeEnv(server.url, home) };
}

const task = (marker: string, file: string, extra: Partial<Plan['tasks'][number]> = {}): Plan['tasks'][number] => ({
  subject: `task ${marker}`,
  prompt: `Do the ${marker} step.\nTASK-MARKER: ${marker}`,
  blockedBy: [],
  metadata: { files: { create: [file], modify: [] } },
  agent: { model: 'haiku' },
  ...extra,
});

async function eventsOf(repo: TempGitRepo): Promise<RunEvent[]> {
  const journal = await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8');
  return journal
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);
}

const foremanRefs = async (repo: TempGitRepo) =>
  (await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman/', 'refs/foreman-awaiting/', 'refs/foreman-candidate/'])).split('\n').filter(Boolean);

describe('a review goes back to the worker (real Claude Code CLI)', () => {
  it('parked, revised with feedback, the revision edits the parked files and parks again; approved, both attempts land whole; the round spends no attempt', async () => {
    seen.prompts = [];
    seen.reads = [];
    const { repo, env } = await repoWith(makePlan([task('parse', 'src/parse.txt', { gate: 'human-approval' })]));
    const args = ['--claude-bin', claudeBin, '--sandbox', 'off'];
    // Nothing awaits approval yet: refused, saying what to do instead.
    const early = await runPlanTool(repo.dir, ['revise', '0', '--feedback', FEEDBACK], env);
    expect(early.exitCode).toBe(2);
    expect(early.stderr).toContain(
      'cannot revise task 0 (task parse): it is pending; only a task that is awaiting_approval can be revised: it has no work to review yet',
    );

    const first = await runExecute(repo.dir, args, env);
    expect(first.exitCode, `${first.stdout}\n${first.stderr}`).toBe(1);
    // The run names the three decisions with the task's number.
    expect(first.stdout).toMatch(/approve 0`, `[^`]*revise 0 --feedback …` or `[^`]*reject 0 --reason …`/);
    expect((await foremanRefs(repo)).filter((ref) => ref.startsWith('refs/foreman-awaiting/'))).toHaveLength(1);

    const revised = await runPlanTool(repo.dir, ['revise', '0', '--feedback', FEEDBACK], env);
    expect(revised.exitCode, revised.stderr).toBe(0);
    expect(revised.stdout).toContain('task 0 (task parse): awaiting_approval → pending — review round 1');
    const status = await runPlanTool(repo.dir, ['status', '--json'], env);
    const pending = JSON.parse(status.stdout) as { tasks: Array<{ status: string; attempts: number; reviews: Array<{ feedback: string; outcome: string }> }> };
    expect(pending.tasks[0]).toMatchObject({ status: 'pending', reviews: [{ feedback: FEEDBACK, outcome: 'open' }] });
    const table = await runPlanTool(repo.dir, ['status'], env);
    expect(table.stdout).toContain('revising, asked: also'); // the table fits 80 columns
    expect(table.stdout).toContain(`task 0: review round 1 (`);
    expect(table.stdout).toContain(`under way: its revision runs next — asked: ${JSON.stringify(FEEDBACK)}`);

    // The same command picks the revision up.
    const second = await runExecute(repo.dir, args, env);
    expect(second.exitCode, `${second.stdout}\n${second.stderr}`).toBe(1);
    expect(seen.prompts).toHaveLength(1);
    const prompt = seen.prompts[0]!;
    expect(prompt).toContain(`## Changes requested in review`);
    expect(prompt).toContain(`> ${FEEDBACK}`);
    expect(prompt).toContain('## The work so far');
    expect(prompt).toContain('+handles text');
    expect(seen.reads[0]).toContain('handles text');

    const events = await eventsOf(repo);
    const lastRun = events.filter((e) => e.type === 'run-started').at(-1)!.runId;
    const ofLast = events.filter((e) => e.runId === lastRun);
    expect(ofLast.filter((e) => e.type === 'task-started')).toEqual([
      expect.objectContaining({ task: 0, attempt: 1, review: { round: 1, feedback: FEEDBACK } }),
    ]);
    expect(ofLast.filter((e) => e.type === 'review-ended')).toEqual([expect.objectContaining({ task: 0, round: 1, outcome: 'parked', attempts: 1 })]);
    const afterRound = await readPlan(join(repo.dir, '.design/plan.json'));
    expect(afterRound.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, reviews: [{ feedback: FEEDBACK, outcome: 'parked', attempts: 1 }] });
    // The parked ref now holds the whole change on the first attempt's start.
    const [ref] = (await foremanRefs(repo)).filter((r) => r.startsWith('refs/foreman-awaiting/'));
    expect(await repo.git(['show', `${ref}:src/parse.txt`])).toBe('handles text\nhandles the empty string\n');
    expect((await repo.git(['rev-parse', `${ref}^`])).trim()).toBe((await repo.git(['rev-parse', 'main'])).trim());
    const shown = await runPlanTool(repo.dir, ['status'], env);
    expect(shown.stdout).toContain(`task 0: review round 1 (`);
    expect(shown.stdout).toContain(`revised, 1 attempt; the revision awaits approval — asked: ${JSON.stringify(FEEDBACK)}`);

    const report = await runPlanTool(repo.dir, ['report'], env);
    expect(report.stdout).toContain(`## Reviews\n\n- Task 0 (task parse), review round 1 (`);

    const approved = await runPlanTool(repo.dir, ['approve', '0'], env);
    expect(approved.exitCode, `${approved.stdout}\n${approved.stderr}`).toBe(0);
    // Landed whole: the first attempt's line and the revision's.
    expect(await repo.git(['show', 'HEAD:src/parse.txt'])).toBe('handles text\nhandles the empty string\n');
    // All done: the plan went to the history, its attempts as before the round, the round kept.
    const archived = (await readdir(join(repo.dir, '.design/history'))).filter((f) => f.endsWith('-plan.json'));
    const done = await readPlan(join(repo.dir, '.design/history', archived[0]!));
    expect(done.tasks[0]).toMatchObject({ status: 'completed', attempts: 1, reviews: [{ feedback: FEEDBACK, outcome: 'parked' }] });
    expect(await foremanRefs(repo)).toEqual([]);
  });

  it('a round that uses up its attempts puts the earlier work back to awaiting approval, with the failure; approved, that work lands', async () => {
    const { repo, env } = await repoWith(makePlan([task('tidy', 'src/tidy.txt', { gate: 'human-approval' })]));
    const args = ['--claude-bin', claudeBin, '--sandbox', 'off', '--max-attempts', '1'];
    expect((await runExecute(repo.dir, args, env)).exitCode).toBe(1);
    const [ref] = (await foremanRefs(repo)).filter((r) => r.startsWith('refs/foreman-awaiting/'));
    const earlier = (await repo.git(['rev-parse', ref!])).trim();
    expect((await runPlanTool(repo.dir, ['revise', '0', '--feedback', FEEDBACK], env)).exitCode).toBe(0);

    const second = await runExecute(repo.dir, args, env);
    expect(second.exitCode, `${second.stdout}\n${second.stderr}`).toBe(1);
    expect(second.stdout).toContain("task 0's review round 1 failed (1 attempt): the worker reported FAILED: the empty string cannot be handled here");
    const plan = await readPlan(join(repo.dir, '.design/plan.json'));
    expect(plan.tasks[0]).toMatchObject({
      status: 'awaiting_approval',
      attempts: 1,
      result: 'src/tidy.txt is tidy',
      reviews: [{ outcome: 'failed', attempts: 1, failure: 'the worker reported FAILED: the empty string cannot be handled here' }],
    });
    // The earlier work is still what is parked.
    expect((await repo.git(['rev-parse', ref!])).trim()).toBe(earlier);
    const approved = await runPlanTool(repo.dir, ['approve', '0'], env);
    expect(approved.exitCode, approved.stderr).toBe(0);
    expect(await repo.git(['show', 'HEAD:src/tidy.txt'])).toBe('tidy\n');
  });

  it("a candidate the gate blames retries from its own work, the gate's output in its prompt; the retry spends an attempt", async () => {
    seen.prompts = [];
    seen.reads = [];
    const gate = 'if grep -qs broken src/shout.txt; then echo "src/shout.txt is still broken"; exit 1; fi';
    const { repo, env } = await repoWith(makePlan([task('shout', 'src/shout.txt')], { context: { testCommand: gate } }));
    const run = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--sandbox', 'off'], env);
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(seen.prompts).toHaveLength(1);
    expect(seen.prompts[0]).toContain('src/shout.txt is still broken');
    expect(seen.prompts[0]).toContain(
      "## The work so far\n\nYour workspace already holds your previous attempt's work, which the gate's test command failed on",
    );
    expect(seen.prompts[0]).toContain('+HELLO broken');
    expect(seen.reads[0]).toContain('HELLO broken');
    const events = await eventsOf(repo);
    expect(events.filter((e) => e.type === 'task-started')).toEqual([
      expect.objectContaining({ attempt: 1 }),
      expect.objectContaining({ attempt: 2, fromCandidate: true }),
    ]);
    expect(await repo.git(['show', 'HEAD:src/shout.txt'])).toBe('HELLO fixed\n');
    const archived = (await readdir(join(repo.dir, '.design/history'))).filter((f) => f.endsWith('-plan.json'));
    expect((await readPlan(join(repo.dir, '.design/history', archived[0]!))).tasks[0]).toMatchObject({ status: 'completed', attempts: 2 });
  });
});
