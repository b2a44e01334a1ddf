// The /execute path holds work awaiting approval the same way the headless engine does: a ready task that
// overlaps a task awaiting approval does not start, and `next` says the run waits for approval, with
// the parked work's change for the person to review.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { checkedStep, isolatedSubagent, step } from './support.ts';
import { leftovers } from '../support/fake-run.ts';

const { repos } = leftovers();

describe('plan.ts next with work awaiting approval', () => {
  it('keeps an overlapping task waiting until the approval is decided', async () => {
    const repo = await tempGitRepo({ 'notes.txt': 'notes\n' });
    repos.push(repo);
    await writePlan(
      repo.dir,
      makePlan([
        { ...fakeTask('A', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'A\n' } } }), gate: 'human-approval' },
        fakeTask('B', { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'B\n' } } }),
      ]),
    );
    await checkedStep(step, repo.dir, ['setup']);
    const first = await checkedStep(step, repo.dir, ['next']);
    expect(first.json.tasks.map((t: { index: number }) => t.index)).toEqual([0]);
    const out = await isolatedSubagent(repo.dir, first.json.tasks[0].promptFile, 'sonnet');
    await writeFile(join(repo.dir, 'r.json'), JSON.stringify([{ task: 0, output: out.output, worktree: out.worktree }]));
    const fin = await checkedStep(step, repo.dir, ['finalize', '--results', 'r.json']);
    expect(fin.json.results.map((r: { outcome: string }) => r.outcome)).toEqual(['awaiting_approval']);
    await checkedStep(step, repo.dir, ['commit']);
    const held = await checkedStep(step, repo.dir, ['next']);
    expect(held.json).toMatchObject({ tasks: [], stall: 'awaiting_approval', stuck: [0] });
    expect(held.json.waiting).toEqual([expect.objectContaining({ index: 1, overlapsWith: [0] })]);
    // What the person reviews: the parked work's files, a line summing it up, the command showing the whole diff.
    expect(held.json.review).toEqual([
      {
        index: 0,
        subject: 'task A',
        files: [{ path: 'notes.txt', change: 'modified', added: 1, removed: 0 }],
        summary: '1 file: notes.txt (+1)',
        diff: expect.stringMatching(/^git diff [0-9a-f]{40} [0-9a-f]{40}$/),
      },
    ]);
    const diff = await repo.git(held.json.review[0].diff.split(' ').slice(1));
    expect(diff).toContain('+A');
  });
});
