// A person's edit to the plan between two in-session steps: the next step reads the plan file as
// it is now and says so; the edit is never written over. A task in progress keeps the prompt its
// worker was given and is judged by `finalize` against the plan as edited.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { checkedStep, isolatedSubagent, step } from './support.ts';
import { leftovers } from '../support/fake-run.ts';

const { repos } = leftovers();

describe('an edit to the plan between in-session steps', () => {
  it('is read by the next step, which says so; a task in progress is judged against the plan as edited', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    const planPath = await writePlan(
      repo.dir,
      makePlan([
        fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a.txt exists', check: 'test -f a.txt' }], fake: { write: { 'a.txt': 'a\n' } } }),
        fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' } } }),
      ]),
    );
    const run = (argv: string[]) => checkedStep((cwd, a) => step(cwd, a, { FOREMAN_SANDBOX: 'off' }), repo.dir, argv);
    await run(['setup']);
    const next = await run(['next', '--concurrency', '1']);
    expect(next.json.tasks.map((t: any) => t.index)).toEqual([0]);
    expect(next.json.notices).toBeUndefined();

    // The person edits the plan while task 0's worker works: task 0 now also requires a file its
    // worker will not write, and task 1 gets a new prompt.
    const edited = await readPlan(planPath);
    edited.tasks[0]!.agent!.acceptanceCriteria!.push({ criterion: 'a.txt says A', check: 'grep -q A a.txt' });
    edited.tasks[1]!.prompt = edited.tasks[1]!.prompt!.replace('Do B.', 'Do B, as the person asked.');
    const text = `${JSON.stringify(edited, null, 2)}\n`;
    await writeFile(planPath, text);

    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    const finalize = await run(['finalize', '--results', '.design/prompts/results.json']);
    expect(finalize.json.notices).toEqual([
      expect.objectContaining({ level: 'warning', message: expect.stringMatching(/^the plan file changed since the last step.*Task 0, in progress, keep/) }),
    ]);
    // Judged by the edited acceptance check: it fails, so the attempt is retried.
    expect(finalize.json.results[0]).toMatchObject({ index: 0, outcome: 'retry' });
    expect(finalize.json.results[0].reason).toContain('grep -q A a.txt');
    // The edit is in the plan the step wrote, not written over.
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.agent!.acceptanceCriteria).toHaveLength(2);
    expect(after.tasks[1]!.prompt).toContain('as the person asked');

    // Said once: the next step sees the file as the last one left it.
    const again = await run(['next', '--concurrency', '1']);
    expect(again.json.notices).toBeUndefined();
    expect(await readFile(again.json.tasks[0].promptFile, 'utf8')).toContain(again.json.tasks[0].index === 1 ? 'as the person asked' : 'a.txt says A');
  });
});
