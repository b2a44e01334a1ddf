// Fields the plan schema does not define, from the outside: a near miss of a defined field is
// refused (exit 2) wherever the plan is loaded, named with its correction, at every level of the
// plan; any other unknown field is a lint warning wherever the lint is shown (`plan check`,
// `--dry-run`, the run's start), acceptable like any; `x-` keys and what foreman writes itself
// never are. Also the check that needs a file nothing makes, as `plan probe` and the run say it.

import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lintPlan, type PlanWarning } from '../../src/core/plan/lint/plan-lint.ts';
import { unknownFields } from '../../src/core/plan/plan-fields.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { SessionRig } from '../support/engine-rig.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';

const { repos } = leftovers();
const validateEvent = new Ajv({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8')),
);

type Json = Record<string, unknown>;

/** A plan using every level the schema defines fields at. */
function fullPlan(): Json {
  return {
    schemaVersion: 3,
    goal: 'Add b',
    context: { testCommand: 'true', setupCommand: 'true' },
    progress: { completedTasks: [], decisions: [] },
    tasks: [
      { subject: 'a', prompt: 'Write a.txt.', blockedBy: [], metadata: { files: { create: ['a.txt'], modify: [] } } },
      {
        subject: 'b',
        prompt: 'Write b.txt.',
        blockedBy: [0],
        gate: 'human-approval',
        metadata: { type: 'implementation', files: { create: ['b.txt'], modify: [], mayChange: [] }, reads: ['a.txt'] },
        agent: {
          model: 'sonnet',
          contextFiles: [{ path: 'a.txt', reason: 'what b builds on' }],
          assumptions: [{ claim: 'a shell', verify: 'true', severity: 'warning' }],
          acceptanceCriteria: [{ criterion: 'b exists', check: 'test -f b.txt' }],
        },
      },
    ],
  };
}

/** The object at `where` (keys and indices from the top) of `plan`. */
const objectAt = (plan: Json, where: Array<string | number>): Json => where.reduce<Json>((o, k) => o[k as string] as Json, plan);

/** `plan` with the key `from` of the object at `where` renamed `to` (or added as a copy of `to`'s value when `keep`). */
function misspelt(where: Array<string | number>, from: string, to: string, keep = false): Json {
  const plan = fullPlan();
  const object = objectAt(plan, where);
  object[to] = object[from];
  if (!keep) delete object[from];
  return plan;
}

const MISSPELT: Array<{ name: string; plan: () => Json; lines: string[] }> = [
  {
    name: 'the top level, a required field in another case',
    plan: () => misspelt([], 'goal', 'Goal'),
    lines: ['plan: missing required field "goal" (is "Goal" a misspelling of it?)'],
  },
  {
    name: 'the top level, an optional field',
    plan: () => {
      const plan = fullPlan();
      plan.acceptedWarning = [];
      return plan;
    },
    lines: ['acceptedWarning: unknown field; did you mean "acceptedWarnings"?'],
  },
  {
    name: 'context, in lower case',
    plan: () => misspelt(['context'], 'testCommand', 'testcommand'),
    lines: ['context.testcommand: unknown field; did you mean "testCommand"?'],
  },
  {
    name: 'context, a letter left out',
    plan: () => misspelt(['context'], 'setupCommand', 'setupComand'),
    lines: ['context.setupComand: unknown field; did you mean "setupCommand"?'],
  },
  {
    name: 'progress',
    plan: () => misspelt(['progress'], 'completedTasks', 'completedTask'),
    lines: ['progress.completedTask: unknown field; did you mean "completedTasks"?'],
  },
  {
    name: 'a task, a required field',
    plan: () => misspelt(['tasks', 1], 'blockedBy', 'blockedby'),
    lines: ['tasks[1]: missing required field "blockedBy" (is "blockedby" a misspelling of it?)'],
  },
  {
    name: 'a task, the prompt (required until it is completed)',
    plan: () => misspelt(['tasks', 1], 'prompt', 'promt'),
    lines: ['tasks[1]: missing required field "prompt" (only completed tasks may omit it) (is "promt" a misspelling of it?)'],
  },
  { name: 'a task, two letters swapped', plan: () => misspelt(['tasks', 1], 'gate', 'gaet'), lines: ['tasks[1].gaet: unknown field; did you mean "gate"?'] },
  {
    name: 'a task, beside the field it misspells',
    plan: () => misspelt(['tasks', 1], 'subject', 'subjet', true),
    lines: ['tasks[1].subjet: unknown field; did you mean "subject"?'],
  },
  {
    name: 'metadata, a required field',
    plan: () => misspelt(['tasks', 1, 'metadata'], 'files', 'file'),
    lines: ['tasks[1].metadata: missing required field "files" (is "file" a misspelling of it?)'],
  },
  {
    name: 'metadata, an optional field',
    plan: () => misspelt(['tasks', 1, 'metadata'], 'reads', 'read'),
    lines: ['tasks[1].metadata.read: unknown field; did you mean "reads"?'],
  },
  {
    name: 'metadata.files, a required field',
    plan: () => misspelt(['tasks', 1, 'metadata', 'files'], 'modify', 'modfy'),
    lines: ['tasks[1].metadata.files: missing required field "modify" (is "modfy" a misspelling of it?)'],
  },
  {
    name: 'metadata.files, an optional field in lower case',
    plan: () => misspelt(['tasks', 1, 'metadata', 'files'], 'mayChange', 'maychange'),
    lines: ['tasks[1].metadata.files.maychange: unknown field; did you mean "mayChange"?'],
  },
  {
    name: 'agent, the acceptance checks',
    plan: () => misspelt(['tasks', 1, 'agent'], 'acceptanceCriteria', 'acceptanceCritera'),
    lines: ['tasks[1].agent.acceptanceCritera: unknown field; did you mean "acceptanceCriteria"?'],
  },
  {
    name: 'agent, the model',
    plan: () => misspelt(['tasks', 1, 'agent'], 'model', 'modle'),
    lines: ['tasks[1].agent.modle: unknown field; did you mean "model"?'],
  },
  {
    name: 'an acceptance check',
    plan: () => misspelt(['tasks', 1, 'agent', 'acceptanceCriteria', 0], 'check', 'chek'),
    lines: ['tasks[1].agent.acceptanceCriteria[0]: missing required field "check" (is "chek" a misspelling of it?)'],
  },
  {
    name: 'an assumption',
    plan: () => misspelt(['tasks', 1, 'agent', 'assumptions', 0], 'severity', 'severty'),
    lines: ['tasks[1].agent.assumptions[0]: missing required field "severity" (is "severty" a misspelling of it?)'],
  },
  {
    name: 'a context file',
    plan: () => misspelt(['tasks', 1, 'agent', 'contextFiles', 0], 'path', 'Path'),
    lines: ['tasks[1].agent.contextFiles[0]: missing required field "path" (is "Path" a misspelling of it?)'],
  },
  {
    name: 'an acceptance of a warning',
    plan: () => {
      const plan = fullPlan();
      plan.acceptedWarnings = [{ warning: 'w', reson: 'r' }];
      return plan;
    },
    lines: ['acceptedWarnings[0]: missing required field "reason" (is "reson" a misspelling of it?)'],
  },
  {
    name: 'two at once, each named',
    plan: () => {
      const plan = misspelt(['tasks', 0], 'blockedBy', 'blockedby');
      objectAt(plan, ['context']).testcommand = 'npm test';
      return plan;
    },
    lines: [
      'tasks[0]: missing required field "blockedBy" (is "blockedby" a misspelling of it?)',
      'context.testcommand: unknown field; did you mean "testCommand"?',
    ],
  },
];

let tmp: string;
let count = 0;

/** `plan` written to a file of its own (a plan outside a repository is checked on its own). */
async function planFile(plan: unknown): Promise<string> {
  const file = path.join(tmp, `plan-${count++}.json`);
  await writeFile(file, JSON.stringify(plan, null, 2));
  return file;
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'foreman-plan-fields-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('a near miss of a defined field', () => {
  it('the plan the table starts from is valid, with no warning', async () => {
    const file = await planFile(fullPlan());
    expect(await runPlanTool(tmp, ['check', '--strict', '--plan', file])).toEqual({ exitCode: 0, stdout: `${file}: valid (2 tasks)`, stderr: '' });
  });

  it.each(MISSPELT.map((c) => [c.name, c] as const))('%s: plan check exits 2, naming it with its correction', async (_, c) => {
    const file = await planFile(c.plan());
    const r = await runPlanTool(tmp, ['check', '--plan', file]);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toEqual([
      `${file}: the plan is invalid (${c.lines.length} problem${c.lines.length === 1 ? '' : 's'}):`,
      ...c.lines.map((l) => `  ${l}`),
    ]);
  });

  it('is refused by every command that loads the plan, with the same line', async () => {
    const { repo, planPath } = await repoWithPlan(misspelt(['tasks', 1, 'agent'], 'acceptanceCriteria', 'acceptanceCritera') as unknown as Plan, repos);
    const line = '  tasks[1].agent.acceptanceCritera: unknown field; did you mean "acceptanceCriteria"?';
    for (const r of [
      await runPlanTool(repo.dir, ['status']),
      await runPlanTool(repo.dir, ['probe']),
      await runPlanTool(repo.dir, ['summary']),
      await runExecute(repo.dir, ['--dry-run']),
      await runExecute(repo.dir, []),
    ]) {
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr.split('\n'), r.stderr).toContain(line);
    }
    // Refused before anything ran: the plan is as it was written.
    expect(JSON.parse(await readFile(planPath, 'utf8')).tasks[1].status).toBeUndefined();
  });
});

describe('any other field the schema does not define', () => {
  const unknown = (where: string, key: string) =>
    `${where}: unknown field, kept but not read by foreman: remove it, or rename it "x-${key}" to keep it as your own data`;

  /** The table's plan with fields of a person's own: some unknown, some `x-`. */
  function withOwnFields(): Json {
    const plan = fullPlan();
    plan.notes = 'kept for the team';
    plan['x-notes'] = 'silent';
    objectAt(plan, ['tasks', 1]).estimate = '30m';
    objectAt(plan, ['tasks', 1, 'metadata']).owner = 'data team';
    objectAt(plan, ['tasks', 1, 'agent', 'acceptanceCriteria', 0])['x-why'] = 'silent too';
    return plan;
  }

  it('is a warning of plan check, each with its fix (exit 0; --strict exits 2), and is accepted like any warning', async () => {
    const file = await planFile(withOwnFields());
    const warnings = [unknown('notes', 'notes'), unknown('tasks[1].estimate', 'estimate'), unknown('tasks[1].metadata.owner', 'owner')];
    const how = 'to accept a warning instead of fixing it, add {"warning": "<its line>", "reason": "<why>"} to the plan\'s "acceptedWarnings"';
    expect(await runPlanTool(tmp, ['check', '--plan', file])).toEqual({
      exitCode: 0,
      stdout: [`${file}: valid (2 tasks), with 3 warnings:`, ...warnings.map((w) => `  ${w}`), how].join('\n'),
      stderr: '',
    });
    expect((await runPlanTool(tmp, ['check', '--strict', '--plan', file])).exitCode).toBe(2);
    const accepted = { ...withOwnFields(), acceptedWarnings: warnings.map((warning) => ({ warning, reason: 'our own tooling reads them' })) };
    await writeFile(file, JSON.stringify(accepted));
    expect(await runPlanTool(tmp, ['check', '--strict', '--plan', file])).toEqual({
      exitCode: 0,
      stdout: `${file}: valid (2 tasks, 3 warnings accepted)`,
      stderr: '',
    });
  });

  it('is said by --dry-run and once at the start of a run, as the other warnings are', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })], { notes: 'mine' } as Partial<Plan>);
    const { repo, env } = await repoWithPlan(plan, repos);
    const line = unknown('notes', 'notes');
    const dry = await runExecute(repo.dir, ['--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stdout.split('\n')).toContain(`  ${line}`);
    // As an event: a field outside the tasks names no task and no file.
    const events = (await runExecute(repo.dir, ['--dry-run', '--json'])).stdout.split('\n').map((l) => JSON.parse(l) as Json);
    const warning = events.find((e) => e.type === 'dry-run-warning');
    expect(warning).toMatchObject({ kind: 'unknown-field', task: null, others: [], path: null, message: line });
    expect(validateEvent(warning), JSON.stringify(validateEvent.errors)).toBe(true);
    const run = await runExecute(repo.dir, ['--no-probe'], env);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout.split('\n').filter((l) => l.includes('plan warning:'))).toEqual([expect.stringContaining(`plan warning: ${line}`)]);
  });
});

describe('what foreman writes into the plan', () => {
  it('a plan a real run left (completed, set aside, failed, retried, skipped, approved, rejected) has no field the schema lacks', async () => {
    const plan = makePlan(
      [
        fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a', 'stray.txt': 'not declared' } } }),
        fakeTask('B', {
          create: ['b.txt'],
          acceptance: [{ criterion: 'b says yes', check: 'grep -q yes b.txt' }],
          fallback: 'say yes',
          fake: { write: { 'b.txt': 'no' } },
        }),
        fakeTask('C', { create: ['c.txt'], blockedBy: [1], fake: { write: { 'c.txt': 'c' } } }),
        fakeTask('D', { create: ['d.txt'], gate: 'human-approval', fake: { write: { 'd.txt': 'd' } } }),
        fakeTask('E', { create: ['e.txt'], gate: 'human-approval', fake: { write: { 'e.txt': 'e' } } }),
      ],
      { context: { testCommand: 'true' } },
    );
    const { repo, planPath, env } = await repoWithPlan(plan, repos);
    const run = await runExecute(repo.dir, ['--no-probe', '--max-attempts', '2'], env);
    expect(run.exitCode, run.stdout).toBe(1);
    expect((await runPlanTool(repo.dir, ['approve', '3'])).exitCode).toBe(0);
    expect((await runPlanTool(repo.dir, ['reject', '4', '--reason', 'not what we want'])).exitCode).toBe(0);
    const left = await readPlan(planPath);
    // The run wrote what the test is about: otherwise it would prove nothing.
    expect(left.tasks.map((t) => t.status)).toEqual(['completed', 'failed', 'skipped', 'completed', 'failed']);
    expect(typeof left.planId).toBe('string');
    expect(left.progress?.completedTasks).toContain(0);
    expect(left.tasks[0]!.setAside?.paths).toEqual(['stray.txt']);
    expect(left.tasks[1]!).toMatchObject({ attempts: 2, result: expect.stringContaining('grep -q yes b.txt') });
    expect(left.tasks[2]!.skippedBy).toBe(1);
    expect(left.tasks[3]!.approvedAt).toEqual(expect.any(String));
    expect(left.tasks[4]!.rejectedAt).toEqual(expect.any(String));
    expect(unknownFields(left)).toEqual([]);
    const fieldWarnings = (lint: { warnings: PlanWarning[] }) => lint.warnings.filter((w) => w.kind === 'unknown-field');
    expect(fieldWarnings(lintPlan(left, new Set()))).toEqual([]);
    const checked = await runPlanTool(repo.dir, ['check']);
    expect(checked.exitCode, checked.stderr).toBe(0);
    expect(checked.stdout).not.toContain('unknown field');
  });
});

describe('what the in-session steps write into the plan', () => {
  it('a plan the steps left (completed, failed after a retry, skipped) has no field the schema lacks', async () => {
    const task = (marker: string, blockedBy: number[] = []) => fakeTask(marker, { create: [`${marker}.txt`], blockedBy });
    const rig = new SessionRig(makePlan([task('A'), task('B'), task('C', [1]), task('D')]), { maxAttempts: 2, concurrency: 4 });
    await rig.setup();
    expect((await rig.next()).sort()).toEqual([0, 1, 3]);
    await rig.finalize([
      [0, 'COMPLETED: made A'],
      [1, 'FAILED: cannot make B'],
      [3, 'COMPLETED: made D'],
    ]);
    await rig.commit();
    expect(await rig.next()).toEqual([1]);
    await rig.finalize([[1, 'FAILED: still cannot make B']]);
    await rig.commit();
    const left = await readPlan(rig.planPath);
    expect(left.tasks.map((t) => t.status)).toEqual(['completed', 'failed', 'skipped', 'completed']);
    expect(left.tasks[1]!.attempts).toBe(2);
    expect(unknownFields(left)).toEqual([]);
  });
});

describe('a check that needs a file no task creates and the last commit lacks', () => {
  it('plan probe says it before it runs the checks (the check fails before the work, as a sound one does)', async () => {
    const plan = makePlan([
      fakeTask('A', {
        create: ['src/a.mjs'],
        acceptance: [
          { criterion: 'built', check: 'test -f dist/x.mjs' },
          { criterion: 'written', check: 'test -f src/a.mjs' },
        ],
      }),
    ]);
    const { repo } = await repoWithPlan(plan, repos);
    const line =
      "tasks[0].agent.acceptanceCriteria[0].check needs dist/x.mjs, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add dist/x.mjs to tasks[0].metadata.files.create";
    const probed = await runPlanTool(repo.dir, ['probe', '--json', '--sandbox', 'off']);
    expect(probed.exitCode, probed.stderr).toBe(0);
    expect(JSON.parse(probed.stdout).tasks[0].checks.map((c: { outcome: string }) => c.outcome)).toEqual(['failed', 'failed']);
    expect(probed.stderr.split('\n')).toContain(`plan probe: plan warning: ${line}`);
    const checked = await runPlanTool(repo.dir, ['check']);
    expect(checked.stdout.split('\n')).toContain(`  ${line}`);
    const dry = await runExecute(repo.dir, ['--dry-run']);
    expect(dry.stdout.split('\n')).toContain(`  ${line}`);
  });
});
