// Every number a command takes: a bad one (negative, zero where not allowed, a fraction where a
// whole number is needed, garbage, too large) is one line naming it, what it takes and its range,
// and exit 2, before the command does anything. In-process, through runCommand / runProgram.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Io, runCommand, runProgram } from '../../src/cli/command.ts';
import { executeCommand } from '../../src/cli/execute.ts';
import { MAX_SECONDS, parseNumber, RANGES } from '../../src/cli/numeric-flags.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';

const WORKERS = 'a whole number from 1 to 64';
const ATTEMPTS = 'a whole number from 1 to 20';
const BATCH = 'a whole number from 1 to 64';
const LEVELS = 'a whole number from 0 to 16';
const SECONDS = 'a whole number of seconds from 1 to 604800 (7 days)';
const WAIT = 'a whole number of seconds from 0 to 604800 (7 days)';
const DOLLARS = 'a number of dollars above 0, at most 1000000';
const TASK = 'a whole number from 0 to 99999';

/** Bad values for each kind of number: negative, zero (where 0 is refused), fraction, garbage, too large. */
const badWhole = (min: number, max: number) => [
  '-1',
  ...(min > 0 ? ['0'] : []),
  '1.5',
  'abc',
  '',
  '0x10',
  '1e3',
  ' 4',
  String(max + 1),
  '99999999999999999999',
];
const badDollars = ['-1', '-0.5', '0', '0.0', 'abc', '', '1e3', 'Infinity', '1000000.01', '99999999999999999999'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-numbers-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function ran(run: (io: Io) => Promise<number>, env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run({ out: (t) => out.push(t), err: (t) => err.push(t), cwd: dir, env, isTTY: false, columns: 200 });
  return { code, out, err };
}

const execute = (argv: string[], env: NodeJS.ProcessEnv = {}) => ran((io) => runCommand('execute', executeCommand, argv, io), env);
const plan = (argv: string[], env: NodeJS.ProcessEnv = {}) => ran((io) => runProgram('plan', planCommands, argv, io), env);

/** Each value, given both as `--flag VALUE` and `--flag=VALUE` (a negative number reaches the check either way). */
const cases = (flags: Array<[string, string, string[]]>) =>
  flags.flatMap(([flag, takes, values]) =>
    values.flatMap((value) => [[flag, takes, value, [flag, value]] as const, [flag, takes, value, [`${flag}=${value}`]] as const]),
  );

describe('execute: every numeric flag', () => {
  it.each(
    cases([
      ['--concurrency', WORKERS, badWhole(1, 64)],
      ['--max-attempts', ATTEMPTS, badWhole(1, 20)],
      ['--gate-batch', BATCH, badWhole(1, 64)],
      ['--speculate', LEVELS, badWhole(0, 16)],
      ['--task-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['--check-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['--gate-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['--probe-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['--max-cost-usd', DOLLARS, badDollars],
      ['--task-budget-usd', DOLLARS, badDollars],
    ]),
  )('%s (%s) refuses %j', async (flag, takes, value, argv) => {
    const r = await execute([...argv, '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.out).toEqual([]);
    expect(r.err).toEqual([`execute: ${flag} expects ${takes}, got "${value}" (see --help)`]);
  });

  it.each(['abc', '-5', '1.5', '', '3600001', '99999999999999999999'])('FOREMAN_BACKOFF_MS refuses %j like a flag', async (value) => {
    const r = await execute(['--dry-run'], { FOREMAN_BACKOFF_MS: value });
    expect(r.code).toBe(2);
    expect(r.err).toEqual([`execute: FOREMAN_BACKOFF_MS expects a whole number of milliseconds from 0 to 3600000 (1 hour), got "${value}"`]);
  });

  it.each(['abc', '0', '-5', '1.5', '', ' 4', '604801', '99999999999999999999'])('FOREMAN_GIT_TIMEOUT refuses %j like a flag', async (value) => {
    const r = await execute(['--dry-run'], { FOREMAN_GIT_TIMEOUT: value });
    expect(r.code).toBe(2);
    expect(r.err).toEqual([`execute: FOREMAN_GIT_TIMEOUT expects ${SECONDS}, got "${value}"`]);
  });

  it('--speculate with --no-speculate is refused, naming both', async () => {
    const r = await execute(['--speculate', '2', '--no-speculate', '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual(['execute: --speculate and --no-speculate contradict each other: choose one (see --help)']);
  });

  it('a flag without its number, or a number that is not one, still says which flag', async () => {
    const missing = await execute(['--concurrency']);
    expect(missing.code).toBe(2);
    expect(missing.err).toHaveLength(1);
    expect(missing.err[0]).toMatch(/--concurrency/);
    // Not a number: left to parseArgs, which says the flag needs its value.
    const dashed = await execute(['--concurrency', '--dry-run']);
    expect(dashed.code).toBe(2);
    expect(dashed.err[0]).toMatch(/--concurrency/);
  });

  it('the help states each range', async () => {
    const r = await execute(['--help']);
    const help = r.out.join('\n');
    expect(help).toContain(`workers at once (default 4; with hosts, their slots together, which it may lower but not exceed); ${WORKERS}`);
    expect(help).toMatch(new RegExp(`--max-cost-usd N +stop starting work once the run's cost reaches N dollars; ${DOLLARS}`));
  });
});

describe('plan tool: every numeric flag and task index', () => {
  // Step commands (setup, next, finalize, commit) answer in JSON on stdout, as for any of their problems.
  const steps = new Set(['setup', 'next', 'finalize', 'commit']);

  it.each(
    [
      ['setup', '--concurrency', WORKERS, badWhole(1, 64)],
      ['setup', '--max-attempts', ATTEMPTS, badWhole(1, 20)],
      ['setup', '--check-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['setup', '--gate-batch', BATCH, badWhole(1, 64)],
      ['setup', '--speculate', LEVELS, badWhole(0, 16)],
      ['setup', '--gate-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['setup', '--wait', WAIT, badWhole(0, MAX_SECONDS)],
      ['next', '--concurrency', WORKERS, badWhole(1, 64)],
      ['finalize', '--max-attempts', ATTEMPTS, badWhole(1, 20)],
      ['finalize', '--check-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['commit', '--wait', WAIT, badWhole(0, MAX_SECONDS)],
      ['probe', '--check-timeout', SECONDS, badWhole(1, MAX_SECONDS)],
      ['probe', '--timeout', SECONDS, badWhole(1, MAX_SECONDS)],
    ].flatMap(([command, flag, takes, values]) => (values as string[]).map((value) => [command as string, flag as string, takes as string, value] as const)),
  )('%s %s (%s) refuses %j', async (command, flag, takes, value) => {
    const line = `${flag} expects ${takes}, got "${value}" (see --help)`;
    const r = await plan([command, flag, value]);
    expect(r.code).toBe(2);
    // Said as every flag error is, after the command's name; a step also answers in JSON.
    expect(r.err).toEqual([`plan ${command}: ${line}`]);
    if (steps.has(command)) {
      expect(r.out.map((o) => JSON.parse(o))).toEqual([{ error: { kind: 'usage', message: line, details: [] } }]);
    } else {
      expect(r.out).toEqual([]);
    }
    // The `=` form says the same.
    expect((await plan([command, `${flag}=${value}`])).err).toEqual(r.err);
  });

  it.each(['approve', 'reject', 'retry', 'skip'].flatMap((command) => badWhole(0, 99_999).map((value) => [command, value] as const)))(
    '%s N refuses %j',
    async (command, value) => {
      const reason = command === 'reject' || command === 'skip' ? ['--reason', 'why'] : [];
      const r = await plan([command, value, ...reason]);
      expect(r.code).toBe(2);
      expect(r.out).toEqual([]);
      expect(r.err).toEqual([`plan ${command}: N (the task index) expects ${TASK}, got "${value}" (see --help)`]);
    },
  );

  it('a negative task index after the flags, or after `--`, is a task index too', async () => {
    for (const argv of [
      ['retry', '--plan', 'x.json', '-3'],
      ['retry', '--', '-3'],
      ['skip', '--reason', 'r', '-3'],
    ]) {
      const r = await plan(argv);
      expect(r.err, argv.join(' ')).toEqual([`plan ${argv[0]}: N (the task index) expects ${TASK}, got "-3" (see --help)`]);
    }
  });

  it.each(planCommands.filter((command) => command.hidden !== true).map((command) => command.name))(
    'plan %s refuses a bad FOREMAN_GIT_TIMEOUT before it runs',
    async (name) => {
      const command = planCommands.find((c) => c.name === name)!;
      // Its required words, so that what is refused is the setting.
      const words = (command.positionals ?? []).filter((p) => p.required).map((p) => (p.range === undefined ? 'x' : '0'));
      const line = `FOREMAN_GIT_TIMEOUT expects ${SECONDS}, got "1.5"`;
      const r = await plan([name, ...words], { FOREMAN_GIT_TIMEOUT: '1.5' });
      expect(r.code).toBe(2);
      expect(r.err).toEqual([`plan ${name}: ${line}`]);
      if (steps.has(name)) expect(r.out.map((o) => JSON.parse(o))).toEqual([{ error: { kind: 'usage', message: line, details: [] } }]);
      else expect(r.out).toEqual([]);
    },
  );

  it('the help states the range', async () => {
    const r = await plan(['retry', '--help']);
    expect(r.out.join('\n')).toContain(`the task index; ${TASK}`);
  });
});

describe('parseNumber', () => {
  it.each([
    ['--concurrency', '1', RANGES.workers, 1],
    ['--concurrency', '64', RANGES.workers, 64],
    ['--concurrency', '007', RANGES.workers, 7],
    ['--wait', '0', RANGES.waitSeconds, 0],
    ['--task-timeout', String(MAX_SECONDS), RANGES.timeoutSeconds, MAX_SECONDS],
    ['--max-cost-usd', '0.01', RANGES.dollars, 0.01],
    ['--max-cost-usd', '2.', RANGES.dollars, 2],
    ['--max-cost-usd', '.5', RANGES.dollars, 0.5],
    ['--max-cost-usd', '1000000', RANGES.dollars, 1_000_000],
    ['FOREMAN_BACKOFF_MS', '0', RANGES.backoffMs, 0],
    ['FOREMAN_GIT_TIMEOUT', '1', RANGES.timeoutSeconds, 1],
  ] as const)('%s %j → %d', (name, raw, range, value) => {
    expect(parseNumber(name, raw, range)).toBe(value);
  });

  it('not given is undefined', () => {
    expect(parseNumber('--concurrency', undefined, RANGES.workers)).toBeUndefined();
  });

  it('keeps every time limit within what a Node timer can wait', () => {
    // Above 2^31-1 ms a timer fires at once; the back-off doubles up to 6 times (64 times the first).
    expect(RANGES.timeoutSeconds.max * 1000).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(RANGES.waitSeconds.max * 1000).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(RANGES.timeoutMs.max).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(RANGES.backoffMs.max * 2 ** 6).toBeLessThanOrEqual(2 ** 31 - 1);
  });
});
