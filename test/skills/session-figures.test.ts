// What an in-session run (/foreman:execute: `plan.ts setup | next | finalize | commit`, Task
// subagents as workers) reports. The plan tool sees when it hands a task out (`next`) and when
// it judges it (`finalize`), so durations are real; it never sees a subagent's cost, tokens or
// permission denials, so those are "unknown" everywhere, never a $0.00 that reads as measured.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/report/events.ts';
import { formatDuration } from '../../src/core/format.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { checkedStep, expectSchema, isolatedSubagent, step } from './support.ts';
import { leftovers } from '../support/fake-run.ts';

const { repos } = leftovers();

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

/** One round of the lead: next, a fake subagent per task, finalize, commit. */
async function round(dir: string) {
  const nextCalled = Date.now();
  const next = await checkedStep(step, dir, ['next']);
  const nextReturned = Date.now();
  expect(next.code, next.stderr).toBe(0);
  expect(next.json.tasks.length).toBeGreaterThan(0);
  const outputs = await Promise.all(
    next.json.tasks.map(async (t: any) => {
      const ran = await isolatedSubagent(dir, t.promptFile, t.model);
      return { task: t.index, output: lastLine(ran.output), ...(ran.worktree ? { worktree: ran.worktree } : {}) };
    }),
  );
  const results = join(dir, '.design/prompts/results.json');
  await writeFile(results, JSON.stringify(outputs));
  const finalizeCalled = Date.now();
  const finalize = await checkedStep(step, dir, ['finalize', '--results', results]);
  const finalizeReturned = Date.now();
  expect(finalize.code, finalize.stderr).toBe(0);
  const commit = await checkedStep(step, dir, ['commit']);
  expect(commit.code, commit.stderr).toBe(0);
  // What a task's duration can be, handed out by `next` and judged by `finalize`, by this clock.
  const durationBounds = { least: finalizeCalled - nextReturned, most: finalizeReturned - nextCalled };
  return { next: next.json, finalize: finalize.json, commit: commit.json, durationBounds };
}

const journalOf = async (dir: string): Promise<RunEvent[]> =>
  (await readFile(join(dir, '.design/events.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RunEvent);

describe('an in-session run', () => {
  it('reports unknown cost, not $0.00, in status, report and history, with durations from the plan tool', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(
      repo.dir,
      makePlan([
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'a.txt says good', check: 'grep -q good a.txt' }],
          fake: { attempts: [{ write: { 'a.txt': 'bad\n' } }, { write: { 'a.txt': 'good\n' }, status: 'COMPLETED: a is good' }] },
        }),
        fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b\n' } } }),
      ]),
    );
    expect((await checkedStep(step, repo.dir, ['setup'])).code).toBe(0);

    // Round 1: A's first attempt fails its acceptance check and goes back for a retry.
    const first = await round(repo.dir);
    const bounds = [first.durationBounds];
    expect(first.finalize.results).toEqual([expect.objectContaining({ index: 0, outcome: 'retry' })]);

    // Mid-run: the plan records A's attempt as unknown, and status says so.
    const statusJson = await step(repo.dir, ['status', '--json']);
    expect(statusJson.code).toBe(0);
    expect(statusJson.json).toMatchObject({ costUsd: 'unknown', costUnknownFor: 1, run: { inSession: true, costUsd: 'unknown', costUnknownFor: 1 } });
    const status = await step(repo.dir, ['status']);
    expect(status.stdout).toContain('Cost so far: unknown (unknown in run ');
    expect(status.stdout).toContain('runs in a Claude Code session (/foreman:execute) and has not finished');
    expect(status.stdout).not.toContain('$0.00');
    expect(status.stdout).not.toContain('crashed');

    bounds.push((await round(repo.dir)).durationBounds); // A again: completed
    const last = await round(repo.dir); // B: completed, the plan is archived
    bounds.push(last.durationBounds);
    expect(last.commit.archived).toMatch(/history\/\d{8}T\d{6}Z-plan\.json$/);

    // The journal: one session run, every attempt with the plan tool's duration and unknown figures.
    const events = await journalOf(repo.dir);
    for (const e of events) await expectSchema('event', e);
    const started = events.filter((e) => e.type === 'run-started');
    expect(started).toEqual([expect.objectContaining({ mode: 'session', goal: 'test goal', taskCount: 2 })]);
    const runId = started[0]!.runId;
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([runId]));
    const starts = events.filter((e): e is Extract<RunEvent, { type: 'task-started' }> => e.type === 'task-started');
    const finishes = events.filter((e): e is Extract<RunEvent, { type: 'task-finished' }> => e.type === 'task-finished');
    expect(finishes.map((e) => [e.task, e.attempt, e.outcome])).toEqual([
      [0, 1, 'retry'],
      [0, 2, 'completed'],
      [1, 1, 'completed'],
    ]);
    // Each attempt handed out once, in the order it was judged.
    expect(starts.map((e) => [e.task, e.attempt])).toEqual(finishes.map((e) => [e.task, e.attempt]));
    finishes.forEach((f, k) => {
      expect(f).toMatchObject({ usage: 'unknown', permissionDenials: 'unknown' });
      // From `next` handing it out to `finalize` judging it: within what the test's clock saw of
      // both steps (a bound that holds however slow the machine is).
      expect(f.durationMs).toBeGreaterThan(0);
      expect(f.durationMs).toBeGreaterThanOrEqual(bounds[k]!.least);
      expect(f.durationMs).toBeLessThanOrEqual(bounds[k]!.most);
    });
    const finished = events.filter((e) => e.type === 'run-finished');
    expect(finished).toEqual([expect.objectContaining({ outcome: 'completed', reason: 'all-done', usage: 'unknown' })]);
    expect(events.filter((e) => e.type === 'round-committed')).toHaveLength(2);

    // history: the run, its real duration, its cost unknown.
    const historyJson = await step(repo.dir, ['history', '--json']);
    expect(historyJson.code).toBe(0);
    expect(historyJson.json.runs).toEqual([
      expect.objectContaining({ runId, outcome: 'completed', costUsd: 'unknown', costUnknownFor: 3, archive: expect.stringMatching(/-plan\.json$/) }),
    ]);
    expect(historyJson.json.runs[0].durationMs).toBeGreaterThan(0);
    const history = await step(repo.dir, ['history']);
    const row = history.stdout.split('\n').find((l) => l.includes(runId))!;
    expect(row).toContain('completed');
    expect(row).toContain(formatDuration(historyJson.json.runs[0].durationMs));
    expect(row).toMatch(/\bunknown\b/);
    expect(history.stdout).not.toContain('$0.00');
    expect(history.stdout.trimEnd().split('\n').at(-1)).toBe('1 run, unknown cost in all');

    // report: the run from the archived plan; durations per task from the plan tool, cost and tokens unknown.
    const report = await step(repo.dir, ['report']);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain(`# foreman run ${runId}`);
    expect(report.stdout).toContain('- **Cost:** unknown');
    expect(report.stdout).toContain('- **Tokens:** unknown');
    expect(report.stdout).toContain('- **Not measured:** the cost, tokens and permission denials of 3 attempts run by Task subagents');
    const durationOf = (task: number) => formatDuration(finishes.filter((f) => f.task === task).reduce((s, f) => s + f.durationMs, 0));
    expect(report.stdout).toContain(`| 0 | task A | completed | 2 | ${durationOf(0)} | unknown | sonnet |`);
    expect(report.stdout).toContain(`| 1 | task B | completed | 1 | ${durationOf(1)} | unknown | sonnet |`);
    expect(report.stdout).toContain('no log (a Task subagent in a Claude Code session)');
    expect(report.stdout).not.toContain('$0.00');
  });

  it('a new setup ends the run an earlier session left unfinished', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]));
    await checkedStep(step, repo.dir, ['setup']);
    await checkedStep(step, repo.dir, ['next']); // the session ends here, A in progress
    await checkedStep(step, repo.dir, ['setup']);
    const events = await journalOf(repo.dir);
    for (const e of events) await expectSchema('event', e);
    const runs = [...new Set(events.map((e) => e.runId))];
    expect(runs).toHaveLength(2);
    const ended = events.find((e): e is Extract<RunEvent, { type: 'run-finished' }> => e.type === 'run-finished' && e.runId === runs[0])!;
    expect(ended).toMatchObject({ outcome: 'interrupted', usage: 'unknown' });
    // It lasted until its last step (the next), not until the setup that noticed it had ended.
    const lastStep = events.filter((e) => e.runId === runs[0] && e.type === 'task-started').at(-1)!;
    const firstEvent = events.find((e) => e.runId === runs[0])!;
    expect(Math.abs(ended.durationMs - (Date.parse(lastStep.at) - Date.parse(firstEvent.at)))).toBeLessThan(1000);
    expect(ended.message).toContain(`its last step was at ${lastStep.at}`);
    expect(events.filter((e) => e.runId === runs[1]).map((e) => e.type)).toEqual(['run-started']);
    const history = await step(repo.dir, ['history', '--json']);
    expect(history.json.runs.map((r: { outcome: string }) => r.outcome)).toEqual(['interrupted', 'in-session']);
  });
});
