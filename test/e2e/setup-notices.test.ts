// What a run's setup says of what it finds, each notice whole with its level, in the situation a
// person meets it in: a run killed while its candidates waited for the gate, then a task added to
// the plan (one candidate waits in the merge queue, one runs again); work integrated though
// plan.json does not record it; an assumption its check does not confirm. Headless runs of the
// fake worker on real repositories. The in-session steps' (tasks interrupted, a gate process left
// running) are in test/skills/session-steps.test.ts and session-gate.test.ts.

import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute } from '../support/execute.ts';
import { fakeEvents, leftovers, repoWithPlan, startExecute } from '../support/fake-run.ts';
import type { TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { waitFor } from '../support/wait.ts';

const { repos, children, tempDir } = leftovers();

async function setup(plan: Plan) {
  const made = await repoWithPlan(plan, repos);
  const worktrees = await tempDir('foreman-setup-notices-worktrees-');
  return { ...made, env: { ...made.env, FOREMAN_WORKTREES: worktrees } };
}

/** The notices of the journal's last run, as its setup and the run said them. */
async function lastRunNotices(repo: TempGitRepo): Promise<Array<{ level: string; message: string }>> {
  const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);
  const lastRun = events.filter((e) => e.type === 'run-started').at(-1)!.runId;
  return events.flatMap((e) => (e.type === 'notice' && e.runId === lastRun ? [{ level: e.level, message: e.message }] : []));
}

const startsOf = async (journal: string, marker: string) =>
  (await fakeEvents(journal)).filter((e) => e.event === 'start' && e.taskMarker === marker).map((e) => e.attempt);

describe("a run's setup says what it found", () => {
  it('a run killed while candidates wait for the gate: the one held as it was waits in the merge queue; the one built without the blocker added since runs again', async () => {
    const marks = await tempDir('foreman-setup-notices-held-');
    const running = join(marks, 'gate-running');
    const first = join(marks, 'first-run');
    const release = join(marks, 'release');
    const a = fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } });
    const b = fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b\n' } } });
    const { repo, planPath, journal, env } = await setup(makePlan([a, b]));
    // The killed run's gate on A's candidate: its first run fails once B (built on that candidate)
    // is verified, which frees the lane for B's candidate to join the queue behind A's while A is
    // tested alone again; that run hangs once both are held. The resumed run's gate passes.
    const events = join(repo.dir, '.design/events.jsonl');
    const gate = [
      `if [ ! -e '${release}' ] && [ -e a.txt ]; then`,
      `  if [ ! -e '${first}' ]; then touch '${first}'; until grep '"type":"task-finished"' '${events}' | grep -q '"task":1,'; do sleep 0.05; done; exit 1; fi`,
      `  until [ "$(git -C '${repo.dir}' for-each-ref refs/foreman-candidate/ | wc -l)" -ge 2 ]; do sleep 0.05; done; echo $$ > '${running}'; exec sleep 300`,
      'fi',
    ].join('\n');
    await writePlan(repo.dir, makePlan([a, b], { context: { testCommand: gate } }));
    const child = startExecute(repo.dir, ['--sandbox', 'off', '--concurrency', '2', '--speculate', '1'], env, children);
    await waitFor('the gate to hang on both held candidates', async () => existsSync(running) && (await readFile(running, 'utf8')).trim() !== '');
    child.kill('SIGKILL');
    await child;
    const killed = await readPlan(planPath);
    expect(killed.tasks.map((t) => t.status)).toEqual(['in_progress', 'in_progress']);

    // Before running it again, the person adds a task B must wait for: B's held work was built without it.
    const c = fakeTask('C', { create: ['c.txt'], fake: { write: { 'c.txt': 'c\n' } } });
    await writePlan(repo.dir, { ...killed, tasks: [killed.tasks[0]!, { ...killed.tasks[1]!, blockedBy: [0, 2] }, c] });
    await writeFile(release, '');
    const resumed = await runExecute(repo.dir, ['--sandbox', 'off', '--concurrency', '2', '--speculate', '1'], env);
    expect(resumed.exitCode, `${resumed.stdout}\n${resumed.stderr}`).toBe(0);

    const notices = await lastRunNotices(repo);
    expect(notices).toContainEqual({ level: 'info', message: 'task 1: its held work was built without task 2, which it waits for now; it runs again' });
    expect(notices).toContainEqual({ level: 'info', message: 'task 0: its verified work waits in the merge queue, as an earlier run left it' });
    // A was gated and integrated, not run again; B ran again, as its first attempt still, and landed with C.
    expect(await startsOf(journal, 'A')).toEqual([1]);
    expect(await startsOf(journal, 'B')).toEqual([1, 1]);
    expect(await repo.git(['show', 'HEAD:b.txt'])).toBe('b\n');
    expect(await repo.git(['show', 'HEAD:c.txt'])).toBe('c\n');
  });

  it('work integrated though plan.json does not record it (a run killed between the two): recorded as completed, not run again', async () => {
    const a = fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } });
    const b = fakeTask('B', { create: ['b.txt'], fake: { status: 'FAILED: the spec is unclear' } });
    const { repo, planPath, journal, env } = await setup(makePlan([a, b]));
    const first = await runExecute(repo.dir, ['--max-attempts', '1'], env);
    expect(first.exitCode, `${first.stdout}\n${first.stderr}`).toBe(1);
    const recorded = await readPlan(planPath);
    expect(recorded.tasks.map((t) => t.status)).toEqual(['completed', 'failed']);
    const commit = recorded.tasks[0]!.commit;
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    // plan.json as a run killed after integrating A's work, before writing that it had, leaves it
    // (a completed task's prompt goes from the file; one in progress still has it).
    const { commit: _commit, result: _result, ...unrecorded } = recorded.tasks[0]!;
    await writePlan(repo.dir, { ...recorded, tasks: [{ ...unrecorded, prompt: a.prompt, status: 'in_progress' }, recorded.tasks[1]!] });

    const again = await runExecute(repo.dir, ['--max-attempts', '1'], env);
    expect(again.exitCode, `${again.stdout}\n${again.stderr}`).toBe(1);
    expect(await lastRunNotices(repo)).toContainEqual({ level: 'info', message: 'task 0: its work had been integrated; recorded as completed' });
    expect(await startsOf(journal, 'A')).toEqual([1]);
    expect((await readPlan(planPath)).tasks[0]).toMatchObject({ status: 'completed', commit });
  });

  it('an assumption of warning severity that its check does not confirm: said as the run starts, and the task runs', async () => {
    const a = fakeTask('A', {
      create: ['a.txt'],
      assumptions: [{ claim: 'the formatter is configured', verify: 'test -e .formatter.json', severity: 'warning' }],
      fake: { write: { 'a.txt': 'a\n' } },
    });
    const { repo, env } = await setup(makePlan([a]));
    const r = await runExecute(repo.dir, [], env);
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(await lastRunNotices(repo)).toContainEqual({
      level: 'warning',
      message: 'task 0: assumption not confirmed (the formatter is configured): `test -e .formatter.json`',
    });
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
  });
});
