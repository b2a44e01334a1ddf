// A review round in a session, step by step (the lead's steps in-process, the subagents played by
// the fake worker in worktrees made as Claude Code makes them, the worker hook called as Claude
// Code calls it): after `plan revise`, `plan next` hands the task out again from its parked work's
// base, its prompt carrying the person's words and the work so far, the hand-out telling the hook
// which work to put in the worktree; a revision whose worker never read its prompt file (so
// nothing put that work in) is not verified; one that did parks the whole change again.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handOutRoot, readHandOut } from '../../src/adapters/worker/hand-out.ts';
import { preToolUse } from '../../src/cli/hook.ts';
import { UNREVISED } from '../../src/run/session/finalize-step.ts';
import { runGit } from '../support/git-repo.ts';
import { leftovers } from '../support/fake-run.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';
import { agentWorktreeFor, checkedStep, fakeSubagent, plannedRepos, step } from './support.ts';

const { repoWith } = plannedRepos();
const { tempDir } = leftovers();

const FEEDBACK = 'Also handle the empty string.';

describe('a review round, step by step', () => {
  it('hands the revision out from its parked work, refuses one no worker of it started from that work, and parks the whole change again', async () => {
    const { repo, planPath } = await repoWith(
      makePlan([
        {
          ...fakeTask('G', { modify: ['greet.txt'], fake: { append: { 'greet.txt': 'worked on\n' } } }),
          gate: 'human-approval',
        },
      ]),
      { 'greet.txt': 'hello\n' },
    );
    const cache = await tempDir('foreman-review-cache-');
    // The steps run in a Claude Code session: they publish what the hook needs.
    const env = { CLAUDE_CODE_SESSION_ID: 'review-session-1', XDG_CACHE_HOME: cache, HOME: cache };
    const run = (argv: string[]) => checkedStep((cwd, args) => step(cwd, args, env), repo.dir, argv);
    /** A subagent of the session: a worktree as Claude Code makes it; `reads` its prompt file first (the hook binds it), then the fake worker. */
    const subagent = async (promptFile: string, reads: boolean) => {
      const { dir } = await agentWorktreeFor(repo.dir);
      const agent = dir.split('agent-').at(-1)!;
      if (reads) {
        const call = { session_id: env.CLAUDE_CODE_SESSION_ID, agent_id: agent, cwd: dir, tool_name: 'Read', tool_input: { file_path: promptFile } };
        expect(JSON.parse(await preToolUse(JSON.stringify(call), env)).hookSpecificOutput).toMatchObject({ permissionDecision: 'allow' });
      }
      const output = await fakeSubagent(dir, promptFile, 'haiku');
      await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify([{ task: 0, output: output.split('\n').at(-1), worktree: dir }]));
      return run(['finalize', '--results', '.design/prompts/results.json']);
    };

    await run(['setup']);
    const first = await run(['next']);
    expect((await subagent(first.json.tasks[0].promptFile, true)).json.results[0].outcome).toBe('awaiting_approval');
    await run(['commit']);
    const parkedBase = (await runGit(repo.dir, ['rev-parse', 'HEAD'])).trim();
    // The person commits meanwhile: the revision still starts from the parked work's base.
    await writeFile(join(repo.dir, 'notes.txt'), 'the person’s\n');
    await runGit(repo.dir, ['add', 'notes.txt']);
    await runGit(repo.dir, ['commit', '-q', '-m', 'the person goes on']);

    await writeFile(join(repo.dir, '.design/prompts/feedback.md'), `${FEEDBACK}\n`);
    expect((await step(repo.dir, ['revise', '0', '--feedback-file', '.design/prompts/feedback.md'], env)).code).toBe(0);
    const again = await run(['next']);
    const [task] = again.json.tasks;
    expect(task).toMatchObject({ index: 0, attempt: 1, base: parkedBase });
    const prompt = await readFile(task.promptFile, 'utf8');
    expect(prompt).toContain(`> ${FEEDBACK}`);
    expect(prompt).toContain('+worked on');
    const parkedCommit = (await runGit(repo.dir, ['rev-parse', `refs/foreman-awaiting/${(await readPlan(planPath)).planId}/0`])).trim();
    const handOut = await readHandOut(handOutRoot(env), env.CLAUDE_CODE_SESSION_ID);
    expect(handOut?.tasks).toEqual([expect.objectContaining({ index: 0, parked: { base: parkedBase, commit: parkedCommit } })]);

    // A subagent that never read its prompt file: nothing put the parked work in its worktree.
    const unbound = await subagent(task.promptFile, false);
    expect(unbound.json.results[0]).toMatchObject({ outcome: 'retry', reason: expect.stringContaining(UNREVISED.slice(0, 60)) });

    // The next one reads it: the hook puts the parked work in, the worker appends to it.
    const third = await run(['next']);
    expect(third.json.tasks[0]).toMatchObject({ index: 0, attempt: 2, base: parkedBase });
    expect((await subagent(third.json.tasks[0].promptFile, true)).json.results[0].outcome).toBe('awaiting_approval');
    await run(['commit']);
    const review = (await run(['next'])).json;
    expect(review).toMatchObject({ stall: 'awaiting_approval', stuck: [0] });
    expect(review.review[0]).toMatchObject({ files: [{ path: 'greet.txt', change: 'modified', added: 2, removed: 0 }] });
    // Its attempts are the task's as before the round; the round is recorded.
    const plan = await readPlan(planPath);
    expect(plan.tasks[0]).toMatchObject({
      status: 'awaiting_approval',
      attempts: 1,
      reviews: [expect.objectContaining({ feedback: FEEDBACK, outcome: 'parked', attempts: 2 })],
    });
    expect((await step(repo.dir, ['approve', '0'], env)).code).toBe(0);
    expect(await readFile(join(repo.dir, 'greet.txt'), 'utf8')).toBe('hello\nworked on\nworked on\n');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('the person’s\n');
  });
});
