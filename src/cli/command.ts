// A small command framework over node:util parseArgs: every subcommand declares its options and
// help text; parsing errors become usage errors (exit 2), never stack traces.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { GitCommandError } from '../adapters/git.ts';
import { describeGitFailure, failureOf } from '../core/git-text.ts';
import { CliError, EXIT, type ExitCode, usageError } from './exit.ts';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & { description: string; valueName?: string };

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
  isTTY: boolean;
  columns: number;
}

export interface Command {
  name: string;
  summary: string;
  /** e.g. `[--plan FILE] [--fix]` */
  usage: string;
  options: Record<string, OptionSpec>;
  /** Not listed in the help: run by foreman itself (`plan gate --serve`). */
  hidden?: boolean;
  /** Words after the command, e.g. a task index. */
  positionals?: { name: string; description: string; required: boolean }[];
  run(args: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] }, io: Io): Promise<ExitCode>;
}

/** `commandLine`: how the person starts this command, e.g. `npx tsx scripts/plan.ts check`. */
export function helpText(commandLine: string, command: Command): string {
  const lines = [`Usage: ${commandLine} ${command.usage}`.trimEnd(), '', command.summary, ''];
  for (const p of command.positionals ?? []) lines.push(`  ${p.name.padEnd(24)} ${p.description}`);
  const opts = { ...command.options, help: { type: 'boolean', description: 'show this help' } as OptionSpec };
  for (const [name, spec] of Object.entries(opts)) {
    const flag = `--${name}${spec.type === 'string' ? ` ${spec.valueName ?? 'VALUE'}` : ''}`;
    lines.push(`  ${flag.padEnd(24)} ${spec.description}`);
  }
  return lines.join('\n');
}

export function parseCommandArgs(command: Command, argv: string[]) {
  const options: Record<string, OptionSpec> = { ...command.options, help: { type: 'boolean', description: 'show this help' } };
  const config = Object.fromEntries(
    Object.entries(options).map(([k, v]) => {
      const { description: _d, valueName: _v, ...spec } = v;
      return [k, spec];
    }),
  ) as NonNullable<ParseArgsConfig['options']>;
  try {
    return parseArgs({ args: argv, options: config, allowPositionals: true, strict: true });
  } catch (e) {
    throw usageError(`${command.name}: ${(e as Error).message.split('\n')[0]} (see --help)`);
  }
}

/** Parse a non-negative integer flag or positional, or fail with a usage error naming it. */
export function intArg(name: string, raw: string | undefined, { min = 0 }: { min?: number } = {}): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw usageError(`${name}: expected an integer ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

export function numberArg(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0) throw usageError(`${name}: expected a positive number, got "${raw}"`);
  return n;
}

/** Run a program of subcommands; returns the exit code. */
export async function runProgram(program: string, commands: Command[], argv: string[], io: Io): Promise<ExitCode> {
  const [name, ...rest] = argv;
  const overview = () =>
    [`Usage: ${program} <command> [options]`, '', 'Commands:', ...commands.filter((c) => c.hidden !== true).map((c) => `  ${c.name.padEnd(12)} ${c.summary}`), '', `Run \`${program} <command> --help\` for a command's options.`].join('\n');
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(overview());
    return name === undefined ? EXIT.invalid : EXIT.ok;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.err(`${program}: unknown command "${name}" (commands: ${commands.filter((c) => c.hidden !== true).map((c) => c.name).join(', ')})`);
    return EXIT.invalid;
  }
  return runCommand(`${program} ${command.name}`, command, rest, io);
}

/** Run one command; `commandLine` is how the person starts it (`npx tsx scripts/execute.ts`, `… plan check`). */
export async function runCommand(commandLine: string, command: Command, argv: string[], io: Io): Promise<ExitCode> {
  try {
    const parsed = parseCommandArgs(command, argv);
    if (parsed.values.help) {
      io.out(helpText(commandLine, command));
      return EXIT.ok;
    }
    const required = (command.positionals ?? []).filter((p) => p.required).length;
    const allowed = (command.positionals ?? []).length;
    if (parsed.positionals.length < required || parsed.positionals.length > allowed) {
      throw usageError(`${command.name}: expected ${allowed === 0 ? 'no arguments' : (command.positionals ?? []).map((p) => p.name).join(' ')}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.join(' ')} (see --help)`);
    }
    return await command.run(parsed as never, io);
  } catch (e) {
    if (e instanceof CliError) {
      for (const line of e.lines) io.err(line);
      return e.code;
    }
    // A git command that failed where no step turned it into a value: still git's failure, not ours.
    if (e instanceof GitCommandError) {
      io.err(`${commandLine}: ${describeGitFailure(failureOf(e))}`);
      return EXIT.gitFailed;
    }
    throw e;
  }
}

export function processIo(): Io {
  return {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    cwd: process.cwd(),
    env: process.env,
    isTTY: Boolean(process.stdout.isTTY),
    columns: process.stdout.columns ?? 80,
  };
}

/** Entry point helper: run, flush, exit. Unexpected exceptions are bugs: one line plus where to report. */
export async function main(run: () => Promise<ExitCode>): Promise<void> {
  try {
    process.exitCode = await run();
  } catch (e) {
    process.stderr.write(`foreman: internal error: ${(e as Error).message}\n${process.env.FOREMAN_DEBUG ? `${(e as Error).stack}\n` : 'Set FOREMAN_DEBUG=1 for a stack trace; please report it.\n'}`);
    process.exitCode = EXIT.internal;
  }
}

export { EXIT };
