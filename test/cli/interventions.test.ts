import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import { approveTasks, rejectTasks, retryTasks, skipTasks } from '../../src/core/attempt/interventions.ts';
import { type Plan, statusOf, type Task } from '../../src/core/plan/plan.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';

const task = (subject: string, blockedBy: number[] = [], extra: Partial<Task> = {}): Task => ({
  subject,
  blockedBy,
  metadata: { files: { create: [`src/${subject.replace(/\W+/g, '-')}.ts`], modify: [] } },
  prompt: `Do ${subject}.`,
  status: 'pending',
  attempts: 0,
  ...extra,
});

/**
 * 0 gate (awaiting approval) ← 1 ← 2
 * 3 failed ← 4 (skipped by 3) ← 5 (skipped by 3); 6 ← 3 and 7 (7 failed): 6 skipped by 3
 * 8 pending, 9 completed, 10 blocked ← 11 (skipped by 10)
 */
function fixture(): Plan {
  return {
    schemaVersion: 3,
    goal: 'intervene',
    tasks: [
      task('gate', [], { status: 'awaiting_approval', gate: 'human-approval', attempts: 1, result: 'done, please look' }),
      task('after gate', [0]),
      task('after after gate', [1]),
      task('flaky', [], {
        status: 'failed',
        attempts: 3,
        result: 'tests failed',
        usage: { costUsd: 1, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0 },
      }),
      task('needs flaky', [3], { status: 'skipped', skippedBy: 3, result: 'skipped: depends on task 3' }),
      task('needs needs flaky', [4], { status: 'skipped', skippedBy: 3, result: 'skipped: depends on task 3 (through task 4)' }),
      task('needs flaky and broken', [3, 7], { status: 'skipped', skippedBy: 3, result: 'skipped: depends on task 3' }),
      task('broken', [], { status: 'failed', attempts: 3, result: 'nope' }),
      task('plain', []),
      task('finished', [], { status: 'completed', attempts: 1, result: 'ok' }),
      task('stuck', [], { status: 'blocked', attempts: 1, result: 'BLOCKED: no key' }),
      task('needs stuck', [10], { status: 'skipped', skippedBy: 10, result: 'skipped: depends on task 10' }),
    ],
  };
}

let dir: string;
let planPath: string;
let out: string[];
let errs: string[];
const io = (): Io => ({ out: (t) => out.push(t), err: (t) => errs.push(t), cwd: dir, env: {}, isTTY: false, columns: 100 });
const run = (...argv: string[]) => runProgram('plan.ts', planCommands, argv, io());
const readPlan = (): Plan => JSON.parse(readFileSync(planPath, 'utf8')) as Plan;
const statuses = () => readPlan().tasks.map((t) => t.status);

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'foreman-intervene-'));
  await mkdir(path.join(dir, '.design'));
  planPath = path.join(dir, '.design', 'plan.json');
  writeFileSync(planPath, `${JSON.stringify(fixture(), null, 2)}\n`);
  out = [];
  errs = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('plan.ts approve', () => {
  it('completes a task awaiting approval and records when', async () => {
    expect(await run('approve', '0')).toBe(0);
    const plan = readPlan();
    expect(plan.tasks[0]).toMatchObject({ status: 'completed', result: 'done, please look' });
    expect(Date.parse(plan.tasks[0]!.approvedAt as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(plan.progress?.completedTasks).toEqual([0]);
    expect(out).toEqual(['task 0 (gate): awaiting_approval → completed — approved; the next run commits its work']);
    expect(parsePlan(readFileSync(planPath, 'utf8')).ok).toBe(true);
    expect(existsSync(path.join(dir, '.design', 'plan.lock'))).toBe(false); // released
  });

  it('refuses a task in another state with exit 2, leaving the plan alone', async () => {
    const before = readFileSync(planPath, 'utf8');
    expect(await run('approve', '8')).toBe(2);
    expect(errs).toEqual(['approve: cannot approve task 8 (plain): it is pending; only a task that is awaiting_approval can be approved']);
    expect(await run('approve', '42')).toBe(2);
    expect(errs[1]).toBe('approve: task 42 does not exist (the plan has 12 tasks: 0–11)');
    expect(await run('approve', 'x')).toBe(2);
    expect(readFileSync(planPath, 'utf8')).toBe(before);
  });
});

describe('plan.ts reject', () => {
  it('fails the task with the reason and skips its dependants', async () => {
    expect(await run('reject', '0', '--reason', 'wrong approach')).toBe(0);
    const plan = readPlan();
    expect(plan.tasks[0]).toMatchObject({ status: 'failed', result: 'rejected: wrong approach' });
    expect(plan.tasks[1]).toMatchObject({ status: 'skipped', skippedBy: 0 });
    expect(plan.tasks[2]).toMatchObject({ status: 'skipped', skippedBy: 0 });
    expect(out).toEqual([
      'task 0 (gate): awaiting_approval → failed — rejected: wrong approach',
      'task 1 (after gate): pending → skipped — depends on task 0',
      'task 2 (after after gate): pending → skipped — depends on task 0',
    ]);
    expect(parsePlan(readFileSync(planPath, 'utf8')).ok).toBe(true);
  });

  it('needs a reason', async () => {
    expect(await run('reject', '0')).toBe(2);
    expect(errs[0]).toMatch(/--reason/);
    expect(await run('reject', '0', '--reason', '  ')).toBe(2);
    expect(readPlan().tasks[0]!.status).toBe('awaiting_approval');
  });
});

describe('plan.ts revise', () => {
  it('refuses a task not awaiting approval with exit 2, saying what to do instead', async () => {
    const before = readFileSync(planPath, 'utf8');
    expect(await run('revise', '8', '--feedback', 'also handle the empty string')).toBe(2);
    expect(errs).toEqual([
      'revise: cannot revise task 8 (plain): it is pending; only a task that is awaiting_approval can be revised: it has no work to review yet: run the plan, and revise it once its work awaits approval',
    ]);
    errs = [];
    expect(await run('revise', '3', '--feedback', 'x')).toBe(2);
    expect(errs[0]).toContain('`plan retry N` puts it back to pending');
    errs = [];
    expect(await run('revise', '9', '--feedback', 'x')).toBe(2);
    expect(errs[0]).toContain('its work was accepted; to change it further, add a task to the plan');
    expect(readFileSync(planPath, 'utf8')).toBe(before);
  });

  it('needs the words, from --feedback or --feedback-file, not both', async () => {
    expect(await run('revise', '0')).toBe(2);
    expect(errs[0]).toContain('--feedback "…" or --feedback-file FILE is required');
    errs = [];
    writeFileSync(path.join(dir, 'words.txt'), 'rename it\n');
    expect(await run('revise', '0', '--feedback', 'x', '--feedback-file', 'words.txt')).toBe(2);
    expect(errs[0]).toContain('give --feedback or --feedback-file, not both');
    errs = [];
    expect(await run('revise', '0', '--feedback-file', 'missing.txt')).toBe(2);
    expect(errs[0]).toContain(`--feedback-file: cannot read ${path.join(dir, 'missing.txt')} (ENOENT)`);
    errs = [];
    expect(await run('revise', '0', '--feedback', '   ')).toBe(2);
    expect(errs[0]).toBe('revise: revise needs the reviewer\'s words (--feedback "…" or --feedback-file FILE)');
    errs = [];
    expect(await run('revise', '0', '--feedback', 'x', '--max-rounds', '0')).toBe(2);
    expect(errs[0]).toContain('--max-rounds');
  });

  it('refuses a task with no parked work (a plan outside git: nothing was parked)', async () => {
    expect(await run('revise', '0', '--feedback', 'also handle the empty string')).toBe(2);
    expect(errs).toEqual([
      "revise: cannot revise task 0 (gate): none of its work is parked (an older run's approval), so there is nothing to revise: approve or reject it",
    ]);
    expect(readPlan().tasks[0]!.status).toBe('awaiting_approval');
  });
});

describe('plan.ts retry', () => {
  it('puts a failed task back to pending with attempts reset, and un-skips what it caused', async () => {
    expect(await run('retry', '3')).toBe(0);
    const plan = readPlan();
    expect(plan.tasks[3]).toMatchObject({ status: 'pending', attempts: 0 });
    expect(plan.tasks[3]!.result).toBeUndefined();
    expect(plan.tasks[3]!.usage).toMatchObject({ costUsd: 1 }); // money spent stays spent
    for (const i of [4, 5]) {
      expect(plan.tasks[i]!.status).toBe('pending');
      expect(plan.tasks[i]!.result).toBeUndefined();
      expect(plan.tasks[i]!.skippedBy).toBeUndefined();
    }
    // Task 6 also depends on the failed task 7: still skipped, now because of 7.
    expect(plan.tasks[6]).toMatchObject({ status: 'skipped', skippedBy: 7 });
    expect(plan.tasks[11]).toMatchObject({ status: 'skipped', skippedBy: 10 }); // unrelated
    expect(out).toEqual([
      'task 3 (flaky): failed → pending — attempts reset to 0',
      'task 4 (needs flaky): skipped → pending — was skipped because of task 3',
      'task 5 (needs needs flaky): skipped → pending — was skipped because of task 3',
      'task 6 (needs flaky and broken): skipped → skipped — still skipped: depends on task 7',
    ]);
    expect(parsePlan(readFileSync(planPath, 'utf8')).ok).toBe(true);
  });

  it('retries a blocked task', async () => {
    expect(await run('retry', '10')).toBe(0);
    expect(statuses()[10]).toBe('pending');
    expect(statuses()[11]).toBe('pending');
  });

  it('refuses tasks that are not failed or blocked', async () => {
    expect(await run('retry', '4')).toBe(2);
    expect(errs).toEqual(['retry: cannot retry task 4 (needs flaky): it is skipped; only a task that is failed or blocked can be retried']);
  });
});

describe('plan.ts skip', () => {
  it('skips a pending task with the reason, and its dependants', async () => {
    expect(await run('skip', '1', '--reason', 'not needed')).toBe(0);
    const plan = readPlan();
    expect(plan.tasks[1]).toMatchObject({ status: 'skipped', result: 'skipped by hand: not needed' });
    expect(plan.tasks[1]!.skippedBy).toBeUndefined();
    expect(plan.tasks[2]).toMatchObject({ status: 'skipped', skippedBy: 1 });
    expect(out).toEqual(['task 1 (after gate): pending → skipped — not needed', 'task 2 (after after gate): pending → skipped — depends on task 1']);
  });

  it('skips a failed task', async () => {
    expect(await run('skip', '7', '--reason', 'later')).toBe(0);
    expect(statuses()[7]).toBe('skipped');
  });

  it('refuses completed and awaiting tasks, and needs a reason', async () => {
    expect(await run('skip', '9', '--reason', 'x')).toBe(2);
    expect(errs[0]).toBe('skip: cannot skip task 9 (finished): it is completed; only a task that is pending, failed or blocked can be skipped');
    expect(await run('skip', '0', '--reason', 'x')).toBe(2);
    expect(await run('skip', '8')).toBe(2);
    expect(statuses()[8]).toBe('pending');
  });
});

describe('several task numbers: all or nothing', () => {
  it('retry 3 10 puts both back, with what was skipped because of either, in one write', async () => {
    expect(await run('retry', '3', '10')).toBe(0);
    const plan = readPlan();
    for (const i of [3, 4, 5, 10, 11]) expect(plan.tasks[i]!.status, `task ${i}`).toBe('pending');
    expect(plan.tasks[6]).toMatchObject({ status: 'skipped', skippedBy: 7 });
    expect(out).toEqual([
      'task 3 (flaky): failed → pending — attempts reset to 0',
      'task 10 (stuck): blocked → pending — attempts reset to 0',
      'task 4 (needs flaky): skipped → pending — was skipped because of task 3',
      'task 5 (needs needs flaky): skipped → pending — was skipped because of task 3',
      'task 6 (needs flaky and broken): skipped → skipped — still skipped: depends on task 7',
      'task 11 (needs stuck): skipped → pending — was skipped because of task 10',
    ]);
    expect(parsePlan(readFileSync(planPath, 'utf8')).ok).toBe(true);
  });

  it('retry 3 7 brings back a task skipped because of both', async () => {
    expect(await run('retry', '3', '7')).toBe(0);
    expect(readPlan().tasks[6]!.status).toBe('pending');
  });

  it('one task that cannot be changed refuses them all: exit 2, each bad one named, the plan byte for byte as it was', async () => {
    const before = readFileSync(planPath, 'utf8');
    expect(await run('retry', '3', '4', '42', '10')).toBe(2);
    expect(errs).toEqual([
      'retry: cannot retry task 4 (needs flaky): it is skipped; only a task that is failed or blocked can be retried',
      'retry: task 42 does not exist (the plan has 12 tasks: 0–11)',
      'retry: nothing was changed (tasks 3, 4, 42 and 10: all of them or none)',
    ]);
    expect(out).toEqual([]);
    expect(readFileSync(planPath, 'utf8')).toBe(before);
    expect(existsSync(path.join(dir, '.design', 'plan.lock'))).toBe(false);
  });

  it('a number out of range is a usage error naming each, before the plan is read', async () => {
    const before = readFileSync(planPath, 'utf8');
    expect(await run('retry', '3', 'x', '-1')).toBe(2);
    expect(errs).toEqual(['plan retry: N (the task index) expects a whole number from 0 to 99999, got "x", "-1" (see --help)']);
    expect(readFileSync(planPath, 'utf8')).toBe(before);
  });

  it('skip 1 2 skips a task and its dependant, both by hand', async () => {
    expect(await run('skip', '2', '1', '--reason', 'not needed')).toBe(0);
    const plan = readPlan();
    for (const i of [1, 2]) {
      expect(plan.tasks[i]).toMatchObject({ status: 'skipped', result: 'skipped by hand: not needed' });
      expect(plan.tasks[i]!.skippedBy).toBeUndefined();
    }
    expect(out).toEqual(['task 2 (after after gate): pending → skipped — not needed', 'task 1 (after gate): pending → skipped — not needed']);
  });

  it('approve and reject take several tasks too', async () => {
    const gated = fixture();
    gated.tasks[8] = { ...gated.tasks[8]!, status: 'awaiting_approval', gate: 'human-approval', attempts: 1 };
    writeFileSync(planPath, `${JSON.stringify(gated, null, 2)}\n`);
    expect(await run('approve', '0', '8', '0')).toBe(0);
    expect(statuses()[0]).toBe('completed');
    expect(statuses()[8]).toBe('completed');
    expect(readPlan().progress?.completedTasks).toEqual([0, 8]);
    writeFileSync(planPath, `${JSON.stringify(gated, null, 2)}\n`);
    out = [];
    expect(await run('reject', '8', '0', '--reason', 'wrong')).toBe(0);
    expect(out).toEqual([
      'task 8 (plain): awaiting_approval → failed — rejected: wrong',
      'task 0 (gate): awaiting_approval → failed — rejected: wrong',
      'task 1 (after gate): pending → skipped — depends on task 0',
      'task 2 (after after gate): pending → skipped — depends on task 0',
    ]);
  });
});

describe('while a run holds the lock', () => {
  it('every intervention refuses with exit 3 and says who holds it', async () => {
    const lock = { pid: process.pid, host: os.hostname(), startedAt: '2026-11-22T01:02:03.000Z', command: 'execute' };
    writeFileSync(path.join(dir, '.design', 'plan.lock'), JSON.stringify(lock));
    const before = readFileSync(planPath, 'utf8');
    for (const argv of [
      ['approve', '0'],
      ['revise', '0', '--feedback', 'also handle the empty string'],
      ['reject', '0', '--reason', 'r'],
      ['retry', '3'],
      ['skip', '8', '--reason', 'r'],
    ]) {
      errs = [];
      expect(await run(...argv), argv.join(' ')).toBe(3);
      expect(errs).toEqual([
        `${argv[0]}: a run (pid ${process.pid} on host ${os.hostname()}, started 2026-11-22T01:02:03.000Z) holds the lock; stop it first or wait`,
      ]);
    }
    expect(readFileSync(planPath, 'utf8')).toBe(before);
    expect(JSON.parse(readFileSync(path.join(dir, '.design', 'plan.lock'), 'utf8'))).toEqual(lock); // untouched
  });

  it('a lock left by a dead process does not stop them', async () => {
    writeFileSync(path.join(dir, '.design', 'plan.lock'), JSON.stringify({ pid: 2 ** 22 + 12345, host: os.hostname(), startedAt: '2026-11-22T01:02:03Z' }));
    expect(await run('approve', '0')).toBe(0);
  });
});

describe('pure interventions', () => {
  it('never touch their input', () => {
    const plan = fixture();
    const copy = structuredClone(plan);
    approveTasks(plan, [0], 'now');
    rejectTasks(plan, [0], 'r');
    retryTasks(plan, [3, 7]);
    skipTasks(plan, [8, 1], 'r');
    expect(plan).toEqual(copy);
  });

  it('return one line per task that cannot be changed', () => {
    const r = retryTasks(fixture(), [-1, 3, 4]);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error).toHaveLength(2);
      for (const line of r.error) expect(line).not.toContain('\n');
    }
    const s = skipTasks(fixture(), [8], '');
    expect(s).toEqual({ ok: false, error: ['skip needs a reason (--reason "…")'] });
    expect(retryTasks(fixture(), [])).toEqual({ ok: false, error: ['name a task to retry'] });
  });

  it('all or nothing, for any list of numbers: refused exactly when one cannot be changed, naming each such task once; else as one at a time', () => {
    const base = fixture();
    const retriable = (i: number) => i >= 0 && i < base.tasks.length && ['failed', 'blocked'].includes(statusOf(base.tasks[i]!));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -2, max: 13 }), { minLength: 1, maxLength: 6 }), (indices) => {
        const result = retryTasks(base, indices);
        const bad = new Set(indices.filter((i) => !retriable(i)));
        if (bad.size > 0) {
          expect(result.ok).toBe(false);
          if (!result.ok) expect(result.error).toHaveLength(bad.size);
          return;
        }
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        let inTurn = base;
        for (const i of new Set(indices)) {
          const one = retryTasks(inTurn, [i]);
          if (!one.ok) throw new Error(one.error.join('; '));
          inTurn = one.value.plan;
        }
        expect(result.value.plan).toEqual(inTurn);
      }),
    );
  });

  it('decide on several tasks as on each in turn, a task named twice once', () => {
    const both = retryTasks(fixture(), [3, 10, 3]);
    const one = retryTasks(fixture(), [3]);
    expect(both.ok && one.ok).toBe(true);
    if (!both.ok || !one.ok) return;
    const inTurn = retryTasks(one.value.plan, [10]);
    expect(inTurn.ok).toBe(true);
    if (inTurn.ok) expect(both.value.plan).toEqual(inTurn.value.plan);
    expect(both.value.changes.map((c) => c.task)).toEqual([3, 10, 4, 5, 6, 11]);
  });
});
