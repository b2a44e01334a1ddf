// A person controlling a headless run from another terminal (fake worker): `plan drain` lets the
// tasks under way finish and land, starts nothing new, and the run exits resumable; SIGTERM does
// the same, and a second SIGTERM stops it at once; an edit to the plan file while the run holds it
// is kept, byte for byte, where the run says, and never written over.

import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../../src/adapters/store/journal.ts';
import { type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { fakeEvents, leftovers, repoWithPlan, startExecute } from '../support/fake-run.ts';
import { waitFor } from '../support/wait.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';

const { repos, children, tempDir } = leftovers();

const start = (dir: string, journal: string, args: string[] = []) =>
  startExecute(dir, ['--no-probe', '--json', ...args], { FAKE_WORKER_JOURNAL: journal }, children);

const started = async (journal: string, markers: string[]) => {
  const events = await fakeEvents(journal);
  return markers.every((m) => events.some((e) => e.event === 'start' && e.taskMarker === m));
};

const eventsOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; [k: string]: unknown });

async function signals(): Promise<string> {
  const dir = await tempDir('foreman-controls-');
  return dir;
}

/** A and B wait for `go`; C needs A. */
const waitingPlan = (go: string): Plan =>
  makePlan([
    fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, waitForFile: go } }),
    fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' }, waitForFile: go } }),
    fakeTask('C', { create: ['c.txt'], blockedBy: [0], fake: { write: { 'c.txt': 'c\n' } } }),
  ]);

describe('plan drain', () => {
  it('lets the running tasks finish and land, starts nothing new, exits 1 resumable; the next run finishes the plan', async () => {
    const go = join(await signals(), 'go');
    const { repo, journal, planPath } = await repoWithPlan(waitingPlan(go), repos);
    const run = start(repo.dir, journal, ['--concurrency', '2']);
    await waitFor('A and B to start', () => started(journal, ['A', 'B']));

    const drained = await runPlanTool(repo.dir, ['drain']);
    expect(drained.exitCode, drained.stderr).toBe(0);
    expect(drained.stdout).toMatch(/^asked the run \(pid \d+, started .*\) to drain: it finishes the tasks it is running, starts nothing new/);
    await waitFor('the drain to be journaled', async () =>
      (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => '')).includes('"draining"'),
    );
    // Asked again, it sends no second SIGTERM (which would stop the run at once) and says so.
    const again = await runPlanTool(repo.dir, ['drain']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^the run \(pid \d+\) was asked to drain already, at \d{4}-.*: it is finishing what it was running/);
    await writeFile(go, '');
    const r = await run;
    expect(r.exitCode, r.stderr).toBe(1);
    expect(eventsOf(r.stdout).some((e) => e.type === 'interrupted')).toBe(false);
    // The note went with the run's lock.
    expect(await readdir(join(repo.dir, '.design'))).not.toContain('plan.drain');
    const events = eventsOf(r.stdout);
    expect(events.find((e) => e.type === 'draining')).toMatchObject({ running: [0, 1] });
    expect(events.find((e) => e.type === 'run-finished')).toMatchObject({ reason: 'drained', outcome: 'incomplete', exitCode: 1 });
    // C became ready when A landed, and did not start.
    expect((await fakeEvents(journal)).some((e) => e.taskMarker === 'C')).toBe(false);
    const plan = await readPlan(planPath);
    expect(plan.tasks.map(statusOf)).toEqual(['completed', 'completed', 'pending']);
    // A and B's work landed on the branch.
    expect(await repo.git(['ls-files'])).toMatch(/a\.txt[\s\S]*b\.txt/);
    const journaled = parseJournal(await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8')).events.map((e) => e.type);
    expect(journaled).toContain('draining');

    const resumed = await runExecute(repo.dir, ['--no-probe'], { FAKE_WORKER_JOURNAL: journal });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    // A and B ran once, in the first run (in either order); C alone in the second.
    const starts = (await fakeEvents(journal)).filter((e) => e.event === 'start').map((e) => e.taskMarker);
    expect([...starts.slice(0, 2)].sort()).toEqual(['A', 'B']);
    expect(starts.slice(2)).toEqual(['C']);
  });

  it('asked twice at the same moment, signals the run once: it drains, not stops', async () => {
    const go = join(await signals(), 'go');
    const { repo, journal } = await repoWithPlan(waitingPlan(go), repos);
    const run = start(repo.dir, journal, ['--concurrency', '2']);
    await waitFor('A and B to start', () => started(journal, ['A', 'B']));
    // Both in this process, so each one's reads and writes interleave with the other's.
    const both = await Promise.all([runPlanTool(repo.dir, ['drain']), runPlanTool(repo.dir, ['drain'])]);
    for (const d of both) expect(d.exitCode, d.stderr).toBe(0);
    expect(both.filter((d) => d.stdout.startsWith('asked the run '))).toHaveLength(1);
    expect(both.filter((d) => /^the run \(pid \d+\) was asked to drain already/.test(d.stdout))).toHaveLength(1);
    await waitFor('the drain to be journaled', async () =>
      (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => '')).includes('"draining"'),
    );
    await writeFile(go, '');
    const r = await run;
    expect(r.exitCode, r.stderr).toBe(1);
    const events = eventsOf(r.stdout);
    expect(events.some((e) => e.type === 'interrupted')).toBe(false);
    expect(events.find((e) => e.type === 'run-finished')).toMatchObject({ reason: 'drained', exitCode: 1 });
  });

  it('says there is nothing to drain when no run holds the plan (exit 2)', async () => {
    const { repo } = await repoWithPlan(waitingPlan('/nonexistent'), repos);
    const r = await runPlanTool(repo.dir, ['drain']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.trim()).toMatch(/^no run is working on .*plan\.json: nothing to drain$/);
  });
});

describe('SIGTERM', () => {
  it('drains; a second SIGTERM stops the run at once (130), its task back to pending', async () => {
    const go = join(await signals(), 'go');
    const { repo, journal, planPath } = await repoWithPlan(waitingPlan(go), repos);
    const run = start(repo.dir, journal, ['--concurrency', '1']);
    await waitFor('A to start', () => started(journal, ['A']));
    run.kill('SIGTERM');
    await waitFor('the drain to be journaled', async () =>
      (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => '')).includes('"draining"'),
    );
    run.kill('SIGTERM');
    const r = await run;
    expect(r.exitCode).toBe(130);
    const events = eventsOf(r.stdout);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['draining', 'interrupted']));
    expect(events.find((e) => e.type === 'run-finished')).toMatchObject({ reason: 'interrupted' });
    expect((await readPlan(planPath)).tasks.map(statusOf)).toEqual(['pending', 'pending', 'pending']);
  });
});

describe('an edit to the plan file while a run holds it', () => {
  it('is kept, byte for byte, at the path the run names, and the run goes on with its own plan', async () => {
    const go = join(await signals(), 'go');
    const { repo, journal, planPath } = await repoWithPlan(
      makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, waitForFile: go } })]),
      repos,
    );
    const run = start(repo.dir, journal);
    await waitFor('A to start', () => started(journal, ['A']));
    const mine = (await readFile(planPath, 'utf8')).replace('"goal": "test goal"', '"goal": "the goal as I want it now"');
    expect(mine).toContain('as I want it now');
    await writeFile(planPath, mine);
    await writeFile(go, '');
    const r = await run;
    expect(r.exitCode, r.stderr).toBe(0);
    const warning = eventsOf(r.stdout).find((e) => e.type === 'notice' && String(e.message).includes('was changed while this run holds it'));
    expect(warning).toBeDefined();
    const kept = /kept it, byte for byte, in (\S+\.json)\./.exec(String(warning!.message))?.[1];
    expect(kept).toMatch(/\.design\/plan\.edited-\d{8}T\d{6}Z\.json$/);
    expect(await readFile(kept!, 'utf8')).toBe(mine);
    // The run finished its own plan: archived with the task completed and the goal as it was.
    const archived = (await readdir(join(repo.dir, '.design/history'))).filter((f) => f.endsWith('-plan.json'));
    const history = JSON.parse(await readFile(join(repo.dir, '.design/history', archived[0]!), 'utf8')) as Plan;
    expect(history.goal).toBe('test goal');
    expect(history.tasks[0]!.status).toBe('completed');
  });
});
