// The operator's tools on real runs (fake worker): every event a run emits fits
// schemas/event.schema.json, the journal records the run, and report, history, status and the
// approve/reject/retry commands work on what the run left.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../../src/adapters/store/journal.ts';
import type { RunEvent } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { leftovers } from '../support/fake-run.ts';

const schema = JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
const expectValid = (events: unknown[]) => {
  for (const e of events) expect(validate(e), `${JSON.stringify(e)}\n${JSON.stringify(validate.errors)}`).toBe(true);
};

const { repos } = leftovers();

async function setup(plan: Plan) {
  const repo = await tempGitRepo({ 'README.md': 'hello\n' });
  repos.push(repo);
  return { repo, planPath: await writePlan(repo.dir, plan) };
}

const journalOf = (dir: string) => parseJournal(readFileSync(join(dir, '.design/events.jsonl'), 'utf8'));

describe('operator tools on a real run', () => {
  it('a run with a retry, a failure and a cascade: valid events, a journal, a report, history', async () => {
    const plan = makePlan([
      fakeTask('A', { subject: 'Make a: the first #1; really', create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, costUsd: 0.02 } }),
      fakeTask('B', { create: ['b.txt'], fake: { attempts: [{ status: 'FAILED: nope' }, { status: 'FAILED: still nope' }] } }),
      fakeTask('C', { create: ['c.txt'], blockedBy: [1], fake: { write: { 'c.txt': 'c\n' } } }),
    ]);
    const { repo } = await setup(plan);
    const r = await runExecute(repo.dir, ['--json', '--max-attempts', '2']);
    expect(r.exitCode).toBe(1);
    const streamed = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RunEvent);
    expectValid(streamed);
    expect(streamed.some((e) => e.type === 'task-activity')).toBe(true);

    const journal = journalOf(repo.dir);
    expect(journal).toMatchObject({ skipped: 0, torn: false });
    expectValid(journal.events);
    expect(journal.events).toEqual(streamed.filter((e) => e.type !== 'task-activity'));
    expect(journal.events.map((e) => e.type)).toContain('task-skipped');
    expect(journal.events.at(-1)!.type).toBe('run-finished');
    // The run's own count of the git processes it started (validated by the schema above).
    const finished = journal.events.at(-1) as Extract<RunEvent, { type: 'run-finished' }>;
    expect(finished.gitProcesses).toBeGreaterThan(0);

    const report = await runPlanTool(repo.dir, ['report']);
    expect(report.exitCode).toBe(0);
    expect(report.stdout).toMatch(/^# foreman run /);
    expect(report.stdout).toMatch(/\| 0 \| Make a: the first #1; really \| completed \| 1 \|/);
    expect(report.stdout).toMatch(/\| 1 \| task B \| failed \| 2 \|/);
    expect(report.stdout).toContain('the worker reported FAILED: still nope');
    expect(report.stdout).toContain('section 0 Make a： the first ＃1； really');
    expect(report.stdout).toMatch(/attempt 2 failed \S+ :crit, t1a2, \d{13}, \d{13}/);

    const history = await runPlanTool(repo.dir, ['history', '--json']);
    expect(history.exitCode).toBe(0);
    const runs = JSON.parse(history.stdout).runs as Array<{ runId: string; outcome: string; costUsd: number }>;
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ runId: journal.events[0]!.runId, outcome: 'incomplete' });
    expect(runs[0]!.costUsd).toBeGreaterThan(0);

    // retry B: C comes back too; the next run completes both.
    const retry = await runPlanTool(repo.dir, ['retry', '1']);
    expect(retry.exitCode).toBe(0);
    expect(retry.stdout).toContain('task 2 (task C): skipped → pending');
    const after = await readPlan(join(repo.dir, '.design/plan.json'));
    expect(after.tasks.map((t) => t.status)).toEqual(['completed', 'pending', 'pending']);

    const status = await runPlanTool(repo.dir, ['status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ lock: null, running: [], run: null });
  }, 120_000);

  it('a task that needs approval: awaiting approval, then approve and a second run commits it', async () => {
    const plan = makePlan([
      fakeTask('G', { create: ['g.txt'], gate: 'human-approval', fake: { write: { 'g.txt': 'g\n' } } }),
      fakeTask('H', { create: ['h.txt'], blockedBy: [0], fake: { write: { 'h.txt': 'h\n' } } }),
    ]);
    const { repo, planPath } = await setup(plan);
    const first = await runExecute(repo.dir, ['--json']);
    expect(first.exitCode).toBe(1);
    expectValid(
      first.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    );
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('awaiting_approval');

    expect((await runPlanTool(repo.dir, ['retry', '0'])).exitCode).toBe(2);
    const approve = await runPlanTool(repo.dir, ['approve', '0']);
    expect(approve.exitCode).toBe(0);
    // Its parked work is integrated and landed at once.
    expect(approve.stdout).toMatch(
      /^task 0 \(task G\): awaiting_approval → completed — approved; its work was integrated \(([0-9a-f]{12})\)\nlanded 1 file on main \(\1\): g\.txt$/,
    );
    expect(readFileSync(join(repo.dir, 'g.txt'), 'utf8')).toBe('g\n');

    const second = await runExecute(repo.dir, ['--json']);
    expect(second.exitCode).toBe(0);
    expectValid(
      second.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    );
    // A finished plan is archived.
    const archives = readdirSync(join(repo.dir, '.design/history')).filter((f) => f.endsWith('-plan.json'));
    expect(archives).toHaveLength(1);
    const done = await readPlan(join(repo.dir, '.design/history', archives[0]!));
    expect(done.tasks.map((t) => t.status)).toEqual(['completed', 'completed']);
    expect(done.tasks[0]!.commit).toMatch(/^[0-9a-f]{40}$/);

    // The report of the last run uses the archived plan.
    const report = await runPlanTool(repo.dir, ['report']);
    expect(report.exitCode).toBe(0);
    expect(report.stdout).toContain(`- **Plan:** .design/history/${archives[0]} (archived)`);
    expect(report.stdout).toContain('- **Outcome:** completed (all-done)');
    expect(report.stdout).toMatch(/\| 1 \| task H \| completed \| 1 \|/);
    const archivedReport = await runPlanTool(repo.dir, ['report', '--archived', `.design/history/${archives[0]}`]);
    expect(archivedReport.stdout).toBe(report.stdout);

    const history = JSON.parse((await runPlanTool(repo.dir, ['history', '--json'])).stdout).runs as Array<{ outcome: string }>;
    expect(history.map((h) => h.outcome).filter((o) => o !== 'archived')).toEqual(['incomplete', 'completed']);
  }, 120_000);
});
