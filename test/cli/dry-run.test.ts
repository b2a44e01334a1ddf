// `execute --dry-run`: with --json, one event per line, each valid against
// schemas/event.schema.json: the plan and its settings, every command the plan runs, each pending
// task's permission rules; as text, the same. In-process; nothing starts, nothing is journaled.

import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { type Io, runCommand } from '../../src/cli/command.ts';
import { executeCommand } from '../../src/cli/execute.ts';
import type { DryRunEvent } from '../../src/core/events.ts';
import { PLAN_WARNING_KINDS } from '../../src/core/plan-lint.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const schema = JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

const { repos } = leftovers();

/** A plan with a finished task, two that overlap on a file, checks of both kinds, a setup command and a test command (the gate). */
function samplePlan() {
  const done = { ...fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check: 'test -f a.txt' }] }), status: 'completed' as const, attempts: 1 };
  return makePlan(
    [
      done,
      fakeTask('B', { modify: ['README.md'], blockedBy: [0], assumptions: [{ claim: 'node runs', verify: 'node --version', severity: 'blocking' }] }),
      fakeTask('C', { modify: ['README.md'], acceptance: [{ criterion: 'README says C', check: 'grep -q C README.md' }] }),
      fakeTask('D', { create: ['d.txt'], blockedBy: [1, 2] }),
    ],
    { context: { setupCommand: 'npm ci', testCommand: 'npm test' } },
  );
}

async function dryRun(dir: string, argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(...t.split('\n')), err: (t) => err.push(t), cwd: dir, env: {}, isTTY: false, columns: 200 };
  const code = await runCommand('execute', executeCommand, ['--dry-run', ...argv], io);
  return { code, out, err };
}

describe('execute --dry-run --json', () => {
  it('prints one event per line, each valid against the event schema, and starts nothing', async () => {
    const { repo, planPath, journal } = await repoWithPlan(samplePlan(), repos);
    const before = await readFile(planPath, 'utf8');
    const r = await dryRun(repo.dir, ['--json', '--concurrency', '2', '--max-attempts', '5', '--gate-batch', '3', '--max-cost-usd', '2.50']);
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    const events = r.out.map((line) => JSON.parse(line) as DryRunEvent);
    for (const event of events) expect(validate(event), `${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    // One dry run: one id on every line.
    expect(new Set(events.map((e) => e.runId)).size).toBe(1);

    const [first, ...rest] = events;
    expect(first).toMatchObject({
      type: 'dry-run-plan',
      goal: 'test goal',
      planPath,
      taskCount: 4,
      counts: { completed: 1, pending: 3 },
      maxDepth: 3,
      settings: {
        concurrency: 2,
        schedule: 'continuous',
        maxAttempts: 5,
        permissionMode: 'dontAsk',
        maxCostUsd: 2.5,
        taskBudgetUsd: null,
        gate: { command: 'npm test', batchSize: 3, timeoutMs: 300_000 },
        allowedTools: null,
      },
      // B and C overlap on README.md: one group after the other in the first round; D after both.
      rounds: [[[1], [2]], [[3]]],
    });
    expect(rest.filter((e) => e.type === 'dry-run-command').map(({ runId: _r, at: _a, ...c }) => c)).toEqual([
      { type: 'dry-run-command', kind: 'setup', task: null, command: 'npm ci' },
      { type: 'dry-run-command', kind: 'gate', task: null, command: 'npm test' },
      { type: 'dry-run-command', kind: 'acceptance', task: 0, command: 'test -f a.txt', criterion: 'a exists' },
      { type: 'dry-run-command', kind: 'assumption', task: 1, command: 'node --version', claim: 'node runs', severity: 'blocking' },
      { type: 'dry-run-command', kind: 'acceptance', task: 2, command: 'grep -q C README.md', criterion: 'README says C' },
    ]);
    // The pending tasks' rules, not the finished one's.
    const rules = rest.filter((e) => e.type === 'dry-run-permissions');
    expect(rules.map((e) => e.task)).toEqual([1, 2, 3]);
    expect(rules[0]).toMatchObject({ allow: expect.arrayContaining(['Read', 'Glob', 'Grep', expect.stringMatching(/^Edit\(\/\/.*\/README\.md\)$/), 'Bash(npm test)']) });
    // Events come in order: the plan, the commands, the rules.
    expect(events.map((e) => e.type)).toEqual(['dry-run-plan', ...Array(5).fill('dry-run-command'), ...Array(3).fill('dry-run-permissions')]);

    expect(await readFile(planPath, 'utf8')).toBe(before);
    await expect(readFile(join(repo.dir, '.design/events.jsonl'))).rejects.toThrow();
    await expect(readFile(journal)).rejects.toThrow();
  });

  it('says no gate, no setup command and --allowed-tools as they are', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo } = await repoWithPlan(plan, repos);
    const r = await dryRun(repo.dir, ['--json', '--no-gate', '--allowed-tools', 'Read,Write Bash(make check)', '--no-commit', '--no-probe', '--sandbox', 'off']);
    expect(r.code).toBe(0);
    const events = r.out.map((line) => JSON.parse(line) as DryRunEvent);
    for (const event of events) expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    expect(events[0]).toMatchObject({ settings: { gate: null, allowedTools: ['Read', 'Write', 'Bash(make check)'], commit: false, probe: false, sandbox: 'off' } });
    expect(events.slice(1)).toEqual([expect.objectContaining({ type: 'dry-run-permissions', task: 0, allow: ['Read', 'Write', 'Bash(make check)'], deny: [] })]);
  });

  it("ends with the plan lint's warnings the plan neither fixes nor accepts, against the last commit", async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['src/a.ts'] }),
      fakeTask('B', { modify: ['src/a.ts'] }),
      fakeTask('C', { modify: ['package.json'], blockedBy: [0] }),
    ]);
    const accepted = "tasks[2] modifies package.json but does not declare package-lock.json, which installing its dependencies may rewrite: add package-lock.json to tasks[2].metadata.files.mayChange";
    plan.acceptedWarnings = [{ warning: accepted, reason: 'only its scripts change' }];
    const { repo } = await repoWithPlan(plan, repos, { 'README.md': 'hello\n', 'package.json': '{}\n', 'package-lock.json': '{}\n' });
    const unordered = 'tasks[1] modifies src/a.ts, which tasks[0] creates, but does not depend on it: add 0 to tasks[1].blockedBy';
    const r = await dryRun(repo.dir, ['--json']);
    expect(r.code).toBe(0);
    const events = r.out.map((line) => JSON.parse(line) as DryRunEvent);
    for (const event of events) expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    expect(events.filter((e) => e.type === 'dry-run-warning').map(({ runId: _r, at: _a, ...w }) => w)).toEqual([
      { type: 'dry-run-warning', kind: 'unordered-create', task: 1, others: [0], path: 'src/a.ts', message: unordered },
    ]);
    expect(events.at(-1)!.type).toBe('dry-run-warning');
    const text = await dryRun(repo.dir, []);
    expect(text.out.slice(-3)).toEqual([`Plan warnings (1; fix each in the plan, or accept it with a reason in the plan's "acceptedWarnings"):`, `  ${unordered}`, 'Nothing was started (--dry-run).']);
  });

  it("the schema's warning kinds are the lint's", () => {
    const branch = (schema.oneOf as Array<{ title: string; properties: { kind: { enum: string[] } } }>).find((b) => b.title === 'dry-run-warning')!;
    expect(branch.properties.kind.enum).toEqual([...PLAN_WARNING_KINDS]);
  });

  it('the schema refuses a dry-run event with a field out of place', () => {
    const envelope = { runId: 'r', at: '2026-11-22T01:02:03Z' };
    expect(validate({ type: 'dry-run-command', ...envelope, kind: 'setup', task: null, command: 'npm ci' })).toBe(true);
    expect(validate({ type: 'dry-run-command', ...envelope, kind: 'setup', task: 0, command: 'npm ci' })).toBe(false);
    expect(validate({ type: 'dry-run-command', ...envelope, kind: 'acceptance', task: 0, command: 'x' })).toBe(false);
    expect(validate({ type: 'dry-run-command', ...envelope, kind: 'acceptance', task: 0, command: 'x', criterion: 'c', severity: 'warning' })).toBe(false);
    expect(validate({ type: 'dry-run-permissions', ...envelope, task: 0, allow: [], deny: [], extra: 1 })).toBe(false);
  });
});

describe('execute --dry-run (text)', () => {
  it('says the same: the plan, the rounds, every command with the setup command and the gate, the pending tasks\' rules', async () => {
    const { repo } = await repoWithPlan(samplePlan(), repos);
    const r = await dryRun(repo.dir, []);
    expect(r.code).toBe(0);
    const text = r.out.join('\n');
    expect(text).toContain('Tasks: 4 (max dependency depth 3); 3 pending');
    expect(text).toContain('Round 1:\n  [1] task B\n  [2] task C  (overlaps the group above: runs after it)\nRound 2:\n  [3] task D');
    expect(text).toContain(
      [
        'Commands this plan runs on this machine (with /bin/sh, in the repository):',
        "  setup (in each new worktree, and the probe's checkout): npm ci",
        '  gate (on the starting commit, then on each batch of verified work): npm test',
        '  task 0 acceptance: test -f a.txt',
        '  task 1 assumption (blocking): node --version',
        '  task 2 acceptance: grep -q C README.md',
      ].join('\n'),
    );
    expect(text).not.toContain('task 0 allow');
    expect(text).toMatch(/ {2}task 3 allow: Read {2}Glob {2}Grep {2}Edit\(/);
    expect(r.out.at(-1)).toBe('Nothing was started (--dry-run).');
  });
});
