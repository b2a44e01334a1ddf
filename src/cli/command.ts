// A small command framework over node:util parseArgs: every subcommand declares its options and
// help text; parsing errors become usage errors (exit 2), never stack traces. Numeric options and
// positionals declare their range, and are checked here, before the command runs.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { endGitSessions, endStarter, GIT_TIME_LIMIT_ENV, ownVersion } from '../adapters/index.ts';
import { closestName } from '../core/index.ts';
import { CliError, EXIT, type ExitCode, usageError, UsageError } from './exit.ts';
import { describeRange, fitsRange, type NumberRange, parseNumber, RANGES } from './numeric-flags.ts';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>[string] & {
  description: string;
  valueName?: string;
  /** A number in this range: checked before the command runs, and given to it in `numbers`. */
  range?: NumberRange;
};

export interface PositionalSpec {
  name: string;
  description: string;
  required: boolean;
  /** As for an option: checked, and given in `numbers` under `name`. */
  range?: NumberRange;
  /** The last positional only: it takes every argument left (none or more). */
  rest?: boolean;
  /** A required rest positional: what one or more of it are, for the usage error (`task numbers`). */
  several?: string;
}

/** The positionals as a usage writes them, e.g. `N [PATH…]`, and what a required rest one takes: `N… (one or more task numbers)`. */
function positionalUsage(specs: readonly PositionalSpec[]): string {
  return specs
    .map((p) => {
      const word = p.rest === true ? `${p.name}…` : p.name;
      if (!p.required) return `[${word}]`;
      return p.rest === true && p.several !== undefined ? `${word} (one or more ${p.several})` : word;
    })
    .join(' ');
}

/** The numeric options and positionals given, checked and parsed, by name (without `--`). */
export type Numbers = Readonly<Record<string, number | undefined>>;

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  cwd: string;
  env: NodeJS.ProcessEnv;
  isTTY: boolean;
  /** The terminal's width, which tables fit; unbounded when stdout is a pipe or a file, which keeps every cell whole. */
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
  /** One of the steps `/foreman:execute` runs in a session (`plan setup`, `next`…): the help lists them apart from a person's commands. */
  sessionStep?: boolean;
  /** Words after the command, e.g. a task index. */
  positionals?: PositionalSpec[];
  /** How it says a problem with its arguments found before it runs (default: the lines on stderr). */
  reportUsageError?(error: CliError, io: Io): void;
  run(args: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[]; numbers: Numbers }, io: Io): Promise<ExitCode>;
}

/** The options every command takes besides its own: `--help` (also `-h`) and `--version`. */
const COMMON_OPTIONS: Record<string, OptionSpec> = {
  help: { type: 'boolean', short: 'h', description: 'show this help' },
  version: { type: 'boolean', description: "print foreman's version" },
};

/** What `--version` prints: `foreman 0.1.0`. */
export const versionLine = (): string => `foreman ${ownVersion()}`;

/** `commandLine`: how the person starts this command, e.g. `bin/foreman plan check`. */
export function helpText(commandLine: string, command: Command): string {
  const lines = [`Usage: ${commandLine} ${command.usage}`.trimEnd(), '', command.summary, ''];
  const withRange = (spec: { description: string; range?: NumberRange }) =>
    spec.range ? `${spec.description}; ${describeRange(spec.range)}` : spec.description;
  for (const p of command.positionals ?? []) lines.push(`  ${p.name.padEnd(24)} ${withRange(p)}`);
  for (const [name, spec] of Object.entries({ ...command.options, ...COMMON_OPTIONS })) {
    const flag = `${spec.short === undefined ? '' : `-${spec.short}, `}--${name}${spec.type === 'string' ? ` ${spec.valueName ?? 'VALUE'}` : ''}`;
    lines.push(`  ${flag.padEnd(24)} ${withRange(spec)}`);
  }
  return lines.join('\n');
}

export function parseCommandArgs(command: Command, argv: string[]) {
  const options: Record<string, OptionSpec> = { ...command.options, ...COMMON_OPTIONS };
  const config = Object.fromEntries(
    Object.entries(options).map(([k, v]) => {
      const { description: _d, valueName: _v, range: _r, ...spec } = v;
      return [k, spec];
    }),
  ) as NonNullable<ParseArgsConfig['options']>;
  try {
    return parseArgs({ args: negativeNumbersAsValues(argv, config), options: config, allowPositionals: true, strict: true });
  } catch (e) {
    throw usageError(describeParseError(e as Error & { code?: string }, options));
  }
}

/**
 * parseArgs's complaint in a person's words: its own text tells how to pass a positional that
 * starts with a dash, which no command here takes, and says nothing of the flag that was meant.
 * Text it words differently (another Node version) is passed on as it is.
 */
export function describeParseError(error: Error & { code?: string }, options: Readonly<Record<string, Pick<OptionSpec, 'range' | 'valueName'>>>): string {
  const optionNames = Object.keys(options);
  const said = error.message.split('\n')[0] ?? '';
  const unknown = /^Unknown option '([^']+)'/.exec(said);
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    const meant = closestName(unknown[1]!.replace(/^--?/, '').replace(/=.*$/, ''), optionNames);
    return `unknown option ${unknown[1]}${meant === null ? '' : `: did you mean --${meant}?`}`;
  }
  const option = /^Option '(--?[^' ]+)/.exec(said)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option !== undefined) {
    if (said.endsWith('argument missing')) return `${option} needs a value${valueWords(options[option.replace(/^--?/, '')])}`;
    if (said.endsWith('does not take an argument')) return `${option} takes no value`;
    if (said.includes('is ambiguous'))
      return `${option} needs a value${valueWords(options[option.replace(/^--?/, '')])}, and the word after it starts with a dash (write ${option}=VALUE for a value that does)`;
  }
  return said;
}

/** What an option takes, for a message that it is missing: `: a whole number from 1 to 64`, `: FILE`. */
function valueWords(spec: Pick<OptionSpec, 'range' | 'valueName'> | undefined): string {
  if (spec?.range) return `: ${describeRange(spec.range)}`;
  return spec?.valueName ? ` (${spec.valueName})` : '';
}

/** `-1`, `-0.5`, `-.5`: parseArgs would take it for an option; it is a (bad) number. */
const NEGATIVE_NUMBER = /^-\.?\d/;

/**
 * parseArgs reads `--concurrency -1` as a flag without its value ("argument is ambiguous") and
 * `retry -1` as an unknown option `-1`. Both are numbers that belong to the range check: the
 * value is joined to its flag (`--concurrency=-1`) and positionals go after `--`, in order.
 */
function negativeNumbersAsValues(argv: readonly string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  if (!argv.some((token) => NEGATIVE_NUMBER.test(token))) return [...argv];
  const flags: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (NEGATIVE_NUMBER.test(token) || !token.startsWith('-')) {
      positionals.push(token);
      continue;
    }
    const takesValue = token.startsWith('--') && !token.includes('=') && options[token.slice(2)]?.type === 'string';
    const value = argv[i + 1];
    if (takesValue && value !== undefined && (NEGATIVE_NUMBER.test(value) || !value.startsWith('-'))) {
      flags.push(`${token}=${value}`);
      i++;
    } else {
      flags.push(token);
    }
  }
  return positionals.length > 0 ? [...flags, '--', ...positionals] : flags;
}

/** Every numeric option and positional given, checked against its range (a usage error naming it). */
function numbersOf(command: Command, parsed: { values: Record<string, unknown>; positionals: string[] }): Numbers {
  const numbers: Record<string, number | undefined> = {};
  for (const [name, spec] of Object.entries(command.options)) {
    const raw = parsed.values[name];
    if (spec.range && typeof raw === 'string') numbers[name] = parseNumber(`--${name}`, raw, spec.range);
  }
  (command.positionals ?? []).forEach((spec, i) => {
    if (!spec.range) return;
    const name = `${spec.name} (${spec.description})`;
    // A rest positional's every value is checked, and every bad one named; `numbers` has its first.
    if (spec.rest === true) checkEach(name, parsed.positionals.slice(i), spec.range);
    numbers[spec.name] = parseNumber(name, parsed.positionals[i], spec.range);
  });
  return numbers;
}

/** Each of `values` in `range`, or one usage error naming every one that is not. */
function checkEach(name: string, values: readonly string[], range: NumberRange): void {
  const bad = values.filter((raw) => !fitsRange(raw, range));
  if (bad.length > 0) throw usageError(`${name} expects ${describeRange(range)}, got ${bad.map((raw) => `"${raw}"`).join(', ')}`);
}

/** Run the plan tool (a program of subcommands, each said as `plan <command>` in its problems); returns the exit code. */
export async function runProgram(program: string, commands: Command[], argv: string[], io: Io): Promise<ExitCode> {
  const [name, ...rest] = argv;
  const listed = commands.filter((c) => c.hidden !== true);
  const rows = (group: readonly Command[]) => group.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`);
  const steps = listed.filter((c) => c.sessionStep === true);
  const overview = () =>
    [
      `Usage: ${program} <command> [options]`,
      '',
      'Commands:',
      ...rows(listed.filter((c) => c.sessionStep !== true)),
      ...(steps.length === 0 ? [] : ['', "The /foreman:execute skill's steps (it runs them in a Claude Code session; you do not need to):", ...rows(steps)]),
      '',
      `Run \`${program} <command> --help\` (or -h) for a command's options, \`${program} --version\` for foreman's version.`,
    ].join('\n');
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.out(overview());
    return name === undefined ? EXIT.invalid : EXIT.ok;
  }
  if (name === '--version') {
    io.out(versionLine());
    return EXIT.ok;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    const meant = closestName(
      name,
      listed.map((c) => c.name),
    );
    io.err(`${program}: unknown command "${name}"${meant === null ? '' : `: did you mean ${meant}?`} (commands: ${listed.map((c) => c.name).join(', ')})`);
    return EXIT.invalid;
  }
  return runCommand(`${program} ${command.name}`, command, rest, io, `plan ${command.name}`);
}

/**
 * The settings in the environment that every command may use, checked before it runs, as its
 * flags are: `FOREMAN_GIT_TIMEOUT` (each git command's time limit; any command may run git). A
 * typo must not silently leave the limit at its default.
 */
function checkEnvironment(env: NodeJS.ProcessEnv): void {
  parseNumber(GIT_TIME_LIMIT_ENV, env[GIT_TIME_LIMIT_ENV], RANGES.timeoutSeconds);
}

/**
 * Run one command; `commandLine` is how the person starts it (`bin/foreman execute`,
 * `… plan check`), `label` how its problems name it (`execute`, `plan check`).
 */
export async function runCommand(commandLine: string, command: Command, argv: string[], io: Io, label = command.name): Promise<ExitCode> {
  let args: Parameters<Command['run']>[0];
  try {
    const parsed = parseCommandArgs(command, argv);
    if (parsed.values.help) {
      io.out(helpText(commandLine, command));
      return EXIT.ok;
    }
    if (parsed.values.version) {
      io.out(versionLine());
      return EXIT.ok;
    }
    const required = (command.positionals ?? []).filter((p) => p.required).length;
    const allowed = (command.positionals ?? []).at(-1)?.rest === true ? Number.POSITIVE_INFINITY : (command.positionals ?? []).length;
    if (parsed.positionals.length < required || parsed.positionals.length > allowed) {
      throw usageError(
        `expected ${allowed === 0 ? 'no arguments' : positionalUsage(command.positionals ?? [])}, got ${parsed.positionals.length === 0 ? 'none' : parsed.positionals.join(' ')}`,
      );
    }
    args = { ...parsed, numbers: numbersOf(command, parsed) } as never;
    checkEnvironment(io.env);
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    if (command.reportUsageError) command.reportUsageError(e, io);
    else sayProblem(label, e, io);
    return e.code;
  }
  try {
    return await command.run(args, io);
  } catch (e) {
    if (e instanceof CliError) {
      sayProblem(label, e, io);
      return e.code;
    }
    throw e;
  }
}

/**
 * A bad flag or argument, as every command says it: `--concurrency expects … (see --help)`, after
 * the command's name. A bad environment variable (`FOREMAN_BACKOFF_MS expects …`) is not in --help.
 */
export const describeUsageError = (error: UsageError): string =>
  /^[A-Z][A-Z0-9]*_[A-Z0-9_]* /.test(error.problem) ? error.problem : `${error.problem} (see --help)`;

/** A command's problem on stderr: a usage error as one line naming the command, anything else as its lines. */
function sayProblem(label: string, error: CliError, io: Io): void {
  if (error instanceof UsageError) io.err(`${label}: ${describeUsageError(error)}`);
  else for (const line of error.lines) io.err(line);
}

export function processIo(): Io {
  return {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    cwd: process.cwd(),
    env: process.env,
    isTTY: Boolean(process.stdout.isTTY),
    columns: process.stdout.isTTY ? (process.stdout.columns ?? 80) : Number.POSITIVE_INFINITY,
  };
}

/** Entry point helper: run, flush, exit. Unexpected exceptions are bugs: one line plus where to report. */
export async function main(run: () => Promise<ExitCode>): Promise<void> {
  try {
    process.exitCode = await run();
  } catch (e) {
    process.stderr.write(
      `foreman: internal error: ${(e as Error).message}\n${process.env.FOREMAN_DEBUG ? `${(e as Error).stack}\n` : 'Set FOREMAN_DEBUG=1 for a stack trace; please report it.\n'}`,
    );
    process.exitCode = EXIT.internal;
  } finally {
    await Promise.all([endGitSessions(), endStarter()]);
  }
}

export { EXIT };
