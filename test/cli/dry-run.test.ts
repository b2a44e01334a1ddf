// `execute --dry-run`: with --json, one event per line, each valid against
// schemas/event.schema.json: the plan and its settings, every command the plan runs, each pending
// task's permission rules; as text, the same. In-process; nothing starts, nothing is journaled.

import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { type Io, runCommand } from '../../src/cli/command.ts';
import { executeCommand } from '../../src/cli/execute.ts';
import type { DryRunEvent } from '../../src/core/report/events.ts';
import { PLAN_WARNING_KINDS } from '../../src/core/plan/lint/plan-lint.ts';
import { fakeWorker } from '../support/execute.ts';
import { describeSandboxUse } from '../../src/core/sandbox/sandbox-words.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const schema = JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

const { repos } = leftovers();

/** A plan with a finished task, two that overlap on a file, checks of both kinds, a setup command and a test command (the gate). */
function samplePlan() {
  const done = {
    ...fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check: 'test -f a.txt' }] }),
    status: 'completed' as const,
    attempts: 1,
  };
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
  // The dry run refuses what the run refuses, a missing Claude Code CLI included: the fake one answers for it.
  const code = await runCommand('execute', executeCommand, ['--dry-run', '--claude-bin', fakeWorker, ...argv], io);
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
    expect(rules[0]).toMatchObject({
      allow: expect.arrayContaining(['Read', 'Glob', 'Grep', expect.stringMatching(/^Edit\(\/\/.*\/README\.md\)$/), 'Bash(npm test)']),
    });
    // Events come in order: the plan, the commands, the rules.
    expect(events.map((e) => e.type)).toEqual(['dry-run-plan', ...Array(5).fill('dry-run-command'), ...Array(3).fill('dry-run-permissions')]);

    expect(await readFile(planPath, 'utf8')).toBe(before);
    await expect(readFile(join(repo.dir, '.design/events.jsonl'))).rejects.toThrow();
    await expect(readFile(journal)).rejects.toThrow();
  });

  it('says no gate, no setup command and --allowed-tools as they are', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo } = await repoWithPlan(plan, repos);
    const r = await dryRun(repo.dir, [
      '--json',
      '--no-gate',
      '--allowed-tools',
      'Read,Write Bash(make check)',
      '--no-commit',
      '--no-probe',
      '--sandbox',
      'off',
    ]);
    expect(r.code).toBe(0);
    const events = r.out.map((line) => JSON.parse(line) as DryRunEvent);
    for (const event of events) expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    expect(events[0]).toMatchObject({
      settings: { gate: null, allowedTools: ['Read', 'Write', 'Bash(make check)'], commit: false, probe: false, sandbox: 'off' },
    });
    expect(events.slice(1)).toEqual([
      expect.objectContaining({ type: 'dry-run-permissions', task: 0, allow: ['Read', 'Write', 'Bash(make check)'], deny: [] }),
    ]);
  });

  it("ends with the plan lint's warnings the plan neither fixes nor accepts, against the last commit", async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['src/a.ts'] }),
      fakeTask('B', { modify: ['src/a.ts'] }),
      fakeTask('C', { modify: ['package.json'], blockedBy: [0] }),
    ]);
    const accepted =
      'tasks[2] modifies package.json but does not declare package-lock.json, which installing its dependencies may rewrite: add package-lock.json to tasks[2].metadata.files.mayChange';
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
    expect(text.out.slice(-3)).toEqual([
      `Plan warnings (1; fix each in the plan, or accept it with a reason in the plan's "acceptedWarnings"):`,
      `  ${unordered}`,
      'Nothing was started (--dry-run).',
    ]);
  });

  it('shows a task in a review round: where its next attempt starts, and the words', async () => {
    const review = {
      at: '2026-11-29T11:00:00.000Z',
      feedback: 'also handle the empty string',
      commit: 'c'.repeat(40),
      base: 'b'.repeat(40),
      outcome: 'open' as const,
      attemptsBefore: 1,
    };
    const plan = makePlan([{ ...fakeTask('A', { create: ['a.txt'], gate: 'human-approval' }), reviews: [review] }]);
    const { repo } = await repoWithPlan(plan, repos);
    const json = await dryRun(repo.dir, ['--json']);
    expect(json.code).toBe(0);
    const events = json.out.map((line) => JSON.parse(line) as DryRunEvent);
    const shown = events.filter((e) => e.type === 'dry-run-review');
    expect(shown).toEqual([expect.objectContaining({ task: 0, round: 1, feedback: review.feedback, commit: review.commit, base: review.base })]);
    expect(validate(shown[0]), JSON.stringify(validate.errors)).toBe(true);
    const text = await dryRun(repo.dir, []);
    expect(text.out).toContain(
      `Task 0, review round 1: its next attempt starts from its parked work (commit cccccccccccc, its work counted from bbbbbbbbbbbb), asked: "also handle the empty string"`,
    );
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
  it("says the same: the plan, the rounds, every command with the setup command and the gate, the pending tasks' rules", async () => {
    const { repo } = await repoWithPlan(samplePlan(), repos);
    const r = await dryRun(repo.dir, []);
    expect(r.code).toBe(0);
    const text = r.out.join('\n');
    expect(text).toContain('Tasks: 4 (max dependency depth 3); 3 pending');
    expect(text).toContain('Round 1:\n  [1] task B\n  [2] task C  (overlaps the group above: runs after it)\nRound 2:\n  [3] task D');
    // Where each command runs: never in the person's tree, sandboxed as --sandbox comes to here.
    const sandboxed = (await sandboxSupport()).ok;
    expect(text).toContain(
      [
        `Commands this plan runs on this machine (with bash in the sandbox, /bin/sh without it; never in your working tree; sandbox: ${sandboxed ? 'on' : 'off'}, as above):`,
        "  setup, in each new worktree and in the probe's checkout of HEAD: npm ci",
        '  gate, in a worktree of its own: on the starting commit, then on each batch of verified work on the integration tip: npm test',
        "  task 0 acceptance, in the attempt's worktree after its worker: test -f a.txt",
        '  task 1 assumption (blocking), in a worktree of the integration tip before any worker starts: node --version',
        "  task 2 acceptance, in the attempt's worktree after its worker: grep -q C README.md",
      ].join('\n'),
    );
    expect(text).not.toContain('task 0 allow');
    // The rules as the worker gets them: anchored at its worktree, not at the checkout.
    expect(text).toContain("//<worktree> is its worktree's real path:");
    expect(text).toContain('  task 3 allow: Read  Glob  Grep  Edit(//<worktree>/d.txt)');
    expect(text).not.toContain(`Edit(/${repo.dir}`);
    expect(r.out.at(-1)).toBe('Nothing was started (--dry-run).');
  });

  it('shows every setting its --json form has, in the words of their flags', async () => {
    const { repo, planPath } = await repoWithPlan(samplePlan(), repos);
    const flags = [
      '--concurrency',
      '3',
      '--max-attempts',
      '2',
      '--task-timeout',
      '900',
      '--check-timeout',
      '120',
      '--gate-timeout',
      '240',
      '--gate-batch',
      '5',
      '--speculate',
      '2',
      '--land',
      'continuous',
      '--no-commit',
      '--sandbox',
      'on',
      '--strict',
      '--strict-scope',
      '--widen',
      'src/** docs/*.md',
      '--probe-timeout',
      '60',
      '--limit-wait',
      '600',
      '--max-cost-usd',
      '4',
      '--task-budget-usd',
      '0.5',
      '--schedule',
      'rounds',
      '--permission-mode',
      'acceptEdits',
    ];
    const json = JSON.parse((await dryRun(repo.dir, ['--json', ...flags])).out[0]!) as Extract<DryRunEvent, { type: 'dry-run-plan' }>;
    const text = (await dryRun(repo.dir, flags)).out.join('\n');
    // What each setting of the JSON form reads as in the text; a setting added to one form only fails here.
    const shown: Record<keyof typeof json.settings, string[]> = {
      concurrency: ['up to 3 at once'],
      schedule: ['rounds scheduling'],
      maxAttempts: ['2 attempts per task'],
      permissionMode: ['permission mode acceptEdits'],
      taskTimeoutMs: ['900 s each (--task-timeout)'],
      checkTimeoutMs: ['Checks: 120 s each (--check-timeout)'],
      land: ['after every integration and when the run stops (--land continuous)'],
      commit: ['as uncommitted changes in your files (--no-commit)'],
      sandbox: ['--sandbox on'],
      probe: ["the pending tasks' acceptance checks probed before any worker starts"],
      probeTimeoutMs: ['60 s in all (--probe-timeout)'],
      strict: ['a vacuous task refusing the run (--strict)'],
      strictScope: ["a change outside a task's declared files fails its attempt (--strict-scope)"],
      limitWaitMs: ['waits up to 600 s for a usage limit to reset', '(--limit-wait)'],
      widen: ['a task may be widened to files it needs matching src/** docs/*.md (--widen)'],
      speculate: ['up to 2 levels (--speculate)'],
      maxCostUsd: ['spent $4.00 (--max-cost-usd)'],
      taskBudgetUsd: ['$0.50 per worker whose task sets none (--task-budget-usd)'],
      gate: ['Gate: `npm test` on batches of up to 5, 240 s each (--gate-timeout)'],
      allowedTools: ['Worker permission rules, as each worker gets them'],
    };
    expect(Object.keys(shown).sort()).toEqual(Object.keys(json.settings).sort());
    for (const [key, fragments] of Object.entries(shown)) for (const fragment of fragments) expect(text, key).toContain(fragment);
    expect(text).toContain(`Plan: ${planPath}`);
    expect(json.worktree).toMatch(/\/slot-<n>$/);
    expect(text).toContain(`each in a worktree of its own, ${json.worktree}`);
  });

  it("carries the person's deny rules as the worker gets them: at the checkout and at its worktree", async () => {
    const { repo } = await repoWithPlan(makePlan([fakeTask('A', { create: ['a.txt'] })]), repos);
    await mkdir(join(repo.dir, '.claude'), { recursive: true });
    await writeFile(join(repo.dir, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(./.env)'] } }));
    const text = (await dryRun(repo.dir, [])).out.join('\n');
    const deny = text.split('\n').find((line) => line.startsWith('  task 0 deny:'))!;
    expect(deny).toContain('Read(//<worktree>/.env)');
    expect(deny).toContain(`Read(/${await realpath(repo.dir)}/.env)`);
    expect(deny).toContain('Edit(//<worktree>/a.txt/*)');
  });
});

describe('execute --dry-run: the sandbox line', () => {
  it('says once what --sandbox comes to here: whether checks, the setup command, the gate and the workers run sandboxed, and with what network', async () => {
    const plan = samplePlan();
    plan.context = { ...plan.context, checkNetwork: ['registry.npmjs.org'], setupNetwork: ['npm.example.com'] };
    const { repo } = await repoWithPlan(plan, repos);
    const json = JSON.parse((await dryRun(repo.dir, ['--json'])).out[0]!) as Extract<DryRunEvent, { type: 'dry-run-plan' }>;
    const support = await sandboxSupport();
    expect(json.sandbox).toEqual({
      mode: 'auto',
      sandboxed: support.ok,
      unavailable: support.ok ? null : support.error,
      install: support.ok ? null : expect.any(String),
      commands: ['checks', 'setup', 'gate', 'workers'],
      checkNetwork: ['registry.npmjs.org'],
      setupNetwork: { registries: true, hosts: ['npm.example.com'] },
    });
    const text = (await dryRun(repo.dir, [])).out;
    // The run's own line, once, as a setting.
    const lines = text.filter((line) => /^Sandbox: /.test(line));
    expect(lines).toEqual([`S${describeSandboxUse(json.sandbox).slice(1)}`]);
    if (support.ok)
      expect(lines[0]).toBe(
        "Sandbox: on (--sandbox auto): checks, the gate and the workers' Bash commands run in it, reaching only registry.npmjs.org (context.checkNetwork) and their own loopback; the setup command runs in it, reaching the package registries (npm's, yarn's, PyPI, crates.io, Go's and your npm registry) and npm.example.com (context.setupNetwork)",
      );
  });

  it('--sandbox off: everything runs without it, and no gate or setup command is named when the plan has none', async () => {
    const { repo } = await repoWithPlan(makePlan([fakeTask('A', { create: ['a.txt'] })]), repos);
    const r = await dryRun(repo.dir, ['--sandbox', 'off', '--no-gate']);
    expect(r.code).toBe(0);
    expect(r.out.filter((line) => /^Sandbox: /.test(line))).toEqual([
      "Sandbox: off (--sandbox off): checks and the workers' Bash commands run without it, with this machine's network and files, and the workers' Bash stays limited to the commands their tasks are judged by",
    ]);
  });
});
