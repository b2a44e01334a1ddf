// A mistyped option is one line in a person's words, naming the option and, when one is near, the
// option meant; exit 2, before the command does anything. In-process, through runCommand /
// runProgram.

import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCommandError } from '../../src/adapters/git/runner.ts';
import { type Command, type Io, runCommand, runProgram } from '../../src/cli/command.ts';
import { executeCommand } from '../../src/cli/execute.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-usage-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function ran(run: (io: Io) => Promise<number>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run({ out: (t) => out.push(t), err: (t) => err.push(t), cwd: dir, env: {}, isTTY: false, columns: 200 });
  return { code, out, err };
}

const execute = (argv: string[]) => ran((io) => runCommand('execute', executeCommand, argv, io));
const plan = (argv: string[]) => ran((io) => runProgram('plan', planCommands, argv, io));

describe('execute: a mistyped option', () => {
  it.each([
    [['--concurency', '2'], 'execute: unknown option --concurency: did you mean --concurrency? (see --help)'],
    [['--dry-rn'], 'execute: unknown option --dry-rn: did you mean --dry-run? (see --help)'],
    [['--stric'], 'execute: unknown option --stric: did you mean --strict? (see --help)'],
    // Begins several options (--no-commit, --no-gate, --no-probe, …): none is guessed.
    [['--no'], 'execute: unknown option --no (see --help)'],
    [['--wibble'], 'execute: unknown option --wibble (see --help)'],
    [['-x'], 'execute: unknown option -x (see --help)'],
    [['--repo'], 'execute: --repo needs a value (DIR) (see --help)'],
    // A number's flag says what it takes and its range, as for a value out of range.
    [['--concurrency'], 'execute: --concurrency needs a value: a whole number from 1 to 64 (see --help)'],
    [
      ['--speculate', '--dry-run'],
      'execute: --speculate needs a value: a whole number from 0 to 16, and the word after it starts with a dash (write --speculate=VALUE for a value that does) (see --help)',
    ],
    [['--json=yes'], 'execute: --json takes no value (see --help)'],
    [
      ['--repo', '--json'],
      'execute: --repo needs a value (DIR), and the word after it starts with a dash (write --repo=VALUE for a value that does) (see --help)',
    ],
  ])('%j → %s, exit 2', async (argv, line) => {
    const r = await execute(argv);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([line]);
    expect(r.out).toEqual([]);
  });
});

describe('plan: a mistyped option', () => {
  it('a plan command says it the same way', async () => {
    const r = await plan(['check', '--fx']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual(['plan check: unknown option --fx: did you mean --fix? (see --help)']);
  });

  it('a step (JSON on stdout) names itself once, on stderr and in the JSON', async () => {
    const r = await plan(['next', '--jsn']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual(['plan next: unknown option --jsn (see --help)']);
    expect(r.out.map((line) => JSON.parse(line))).toEqual([{ error: { kind: 'usage', message: 'unknown option --jsn (see --help)', details: [] } }]);

    const extra = await plan(['finalize', '0']);
    expect(extra.code).toBe(2);
    expect(extra.err).toEqual(['plan finalize: expected no arguments, got 0 (see --help)']);
  });
});

describe('every flag error starts the one way: the command, the problem, (see --help)', () => {
  it.each([
    [['--concurrency', '0'], 'execute: --concurrency expects a whole number from 1 to 64, got "0" (see --help)'],
    [['--schedule', 'sometimes'], 'execute: --schedule expects one of continuous, rounds, got "sometimes" (see --help)'],
    [['--land', 'never'], 'execute: --land expects one of end, continuous, got "never" (see --help)'],
    [
      ['--permission-mode', 'yolo'],
      'execute: --permission-mode expects one of acceptEdits, auto, bypassPermissions, default, dontAsk, manual, plan, got "yolo" (see --help)',
    ],
    [['--sandbox', 'maybe'], 'execute: --sandbox expects one of auto, on, off, got "maybe" (see --help)'],
    [['--gate', ' '], 'execute: --gate expects a command, got an empty one (use --no-gate for no gate) (see --help)'],
    [['--gate', 'npm test', '--no-gate'], 'execute: --gate and --no-gate contradict each other: choose one (see --help)'],
    [['extra'], 'execute: expected no arguments, got extra (see --help)'],
  ])('execute %j', async (argv, line) => {
    const r = await execute(argv);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([line]);
  });

  it.each<[string[], string]>([
    [['skip', '2'], 'plan skip: --reason "…" is required (say why; it is recorded in the plan) (see --help)'],
    // A command taking several task numbers names its usage, `N…`, and what it takes.
    ...['retry', 'skip', 'approve', 'reject'].map((command): [string[], string] => [
      [command],
      `plan ${command}: expected N… (one or more task numbers), got none (see --help)`,
    ]),
    [['declare'], 'plan declare: expected N [PATH…], got none (see --help)'],
    [['probe', '--sandbox', 'maybe'], 'plan probe: --sandbox expects one of auto, on, off, got "maybe" (see --help)'],
    [['status', '--wat'], 'plan status: unknown option --wat (see --help)'],
    // The gate's flags are execute's, checked the same way.
    [['setup', '--gate', ' '], 'plan setup: --gate expects a command, got an empty one (use --no-gate for no gate) (see --help)'],
    [['setup', '--gate', 'npm test', '--no-gate'], 'plan setup: --gate and --no-gate contradict each other: choose one (see --help)'],
  ])('plan %j', async (argv, line) => {
    const r = await plan(argv);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([line]);
  });
});

describe('plan: a mistyped command', () => {
  const commands =
    'check, status, graph, ready, report, history, approve, revise, reject, retry, skip, declare, summary, archive, setup, next, finalize, commit, probe, land, clean, drain';
  it.each([
    // Within two edits of one command, or the beginning of only one: named, as a mistyped option is.
    ['chek', 'check'],
    ['stauts', 'status'],
    ['retyr', 'retry'],
    ['sum', 'summary'],
    ['hist', 'history'],
  ])('%s → did you mean %s? exit 2, nothing run', async (given, meant) => {
    const r = await plan([given]);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([`plan: unknown command "${given}": did you mean ${meant}? (commands: ${commands})`]);
    expect(r.out).toEqual([]);
  });

  it.each([
    // Near nothing, or the beginning of several (report, reject, retry, ready): no guess.
    ['frobnicate'],
    ['re'],
    // A hidden command (the gate process foreman starts itself) is never the guess.
    ['gat'],
  ])('%s → no guess, the commands listed, exit 2', async (given) => {
    const r = await plan([given]);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([`plan: unknown command "${given}" (commands: ${commands})`]);
  });
});

describe('-h is --help, everywhere', () => {
  it.each([[['check']], [['next']], [['retry']]])('plan %j -h → its help, exit 0, as with --help', async ([name]) => {
    const short = await plan([name!, '-h']);
    const long = await plan([name!, '--help']);
    expect(short.code).toBe(0);
    expect(short.err).toEqual([]);
    expect(short.out).toEqual(long.out);
    expect(short.out[0]).toMatch(new RegExp(`^Usage: plan ${name} `));
    expect(short.out.join('\n')).toMatch(/^ {2}-h, --help +show this help$/m);
  });

  it('execute -h → its help, exit 0', async () => {
    const r = await execute(['-h']);
    expect(r.code).toBe(0);
    expect(r.out.join('\n')).toMatch(/^Usage: execute \[options\]/);
    expect(r.out).toEqual((await execute(['--help'])).out);
  });

  it('plan -h → the list of commands', async () => {
    const r = await plan(['-h']);
    expect(r.code).toBe(0);
    expect(r.out.join('\n')).toMatch(/^Usage: plan <command> \[options\]\n\nCommands:\n/);
  });
});

describe('--version', () => {
  const version = (JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version;

  it.each([[['--version']], [['check', '--version']], [['status', '--version']]])('plan %j → foreman and its version, exit 0', async (argv) => {
    const r = await plan(argv);
    expect(r).toEqual({ code: 0, out: [`foreman ${version}`], err: [] });
  });

  it('execute --version → the same, exit 0, nothing run', async () => {
    expect(await execute(['--version'])).toEqual({ code: 0, out: [`foreman ${version}`], err: [] });
  });

  it('takes no value', async () => {
    const r = await execute(['--version=2']);
    expect(r.code).toBe(2);
    expect(r.err).toEqual(['execute: --version takes no value (see --help)']);
  });
});

describe('a git failure no command turned into a value', () => {
  it('is a bug, as any exception: not turned into exit 4 (commands say git failures themselves)', async () => {
    const failing: Command = {
      name: 'failing',
      summary: 'throws what git said',
      usage: '',
      options: {},
      run: async () => {
        throw new GitCommandError(['status'], 128, 'fatal: not a git repository');
      },
    };
    await expect(ran((io) => runCommand('failing', failing, [], io))).rejects.toBeInstanceOf(GitCommandError);
  });
});
