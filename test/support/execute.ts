// Running the real orchestrator (scripts/execute.ts) and plan tool (scripts/plan.ts): their commands in this process, or a script as a process of its own.

import { execa } from 'execa';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ownLayout } from '../../src/adapters/layout.ts';
import { type Io, runCommand, runProgram } from '../../src/cli/command.ts';
import { EXIT } from '../../src/cli/exit.ts';
import { executeCommand } from '../../src/cli/execute.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import { programName } from '../../src/core/command-hint.ts';
import { BUILT_SCRIPTS } from './script-build.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const fakeWorker = join(repoRoot, 'test/fixtures/fake-worker.mjs');
export const executeScript = join(repoRoot, 'scripts/execute.ts');
export const planScript = join(repoRoot, 'scripts/plan.ts');
/** tsx's loader by absolute URL, so scripts run from any working directory (a test repository). */
export const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;

/**
 * `node`'s arguments that run `script` (one of scripts/): this test run's bundle of it when
 * vitest's global setup made one (test/support/script-build.ts), else the sources under tsx.
 */
export function nodeArgsFor(script: string): string[] {
  const built = process.env.FOREMAN_TEST_SCRIPTS;
  const name = basename(script, '.ts');
  if (built && script === join(repoRoot, 'scripts', `${name}.ts`) && (BUILT_SCRIPTS as readonly string[]).includes(name)) return [join(built, `${name}.mjs`)];
  return ['--import', tsxLoader, script];
}

export interface ExecuteRun {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/**
 * A command of `program` run in this process, as its script would run it in `cwd`: the
 * environment (this process's, with `env` over it) and a plain (non-terminal) output, returning
 * what it printed and its exit code as the script's process would (an unexpected exception is
 * exit 70, here with its stack). What is saved is a node start, and the sandbox hosts it would
 * start again, per run.
 */
async function inProcess(run: (io: Io) => Promise<number>, cwd: string, env: Record<string, string | undefined>): Promise<ExecuteRun> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (text) => out.push(text), err: (text) => err.push(text), cwd, env: { ...process.env, ...env }, isTTY: false, columns: 80 };
  let exitCode: number;
  try {
    exitCode = await run(io);
  } catch (e) {
    err.push(`foreman: internal error: ${(e as Error).message}`, (e as Error).stack ?? '');
    exitCode = EXIT.internal;
  }
  // As a process's output reads: lines ended by newlines, the last newline dropped.
  return { exitCode, stdout: out.join('\n'), stderr: err.join('\n') };
}

/**
 * `scripts/execute.ts …` in `cwd` with the fake worker unless a bin is given, run in this process
 * (`inProcess`). The workers, git and the checks are real processes. Tests that signal or kill a
 * run, or that need a process environment of its own, use `runExecuteProcess`.
 */
export function runExecute(cwd: string, args: string[] = [], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  return inProcess((io) => runCommand(programName('execute', ownLayout()), executeCommand, withFakeWorker(args), io), cwd, { ...EXECUTE_ENV, ...env });
}

/** `script …` (one of scripts/) as a process of its own (bundled, or under tsx: `nodeArgsFor`) in `cwd`, with `env` over this process's. */
async function asProcess(script: string, cwd: string, args: string[], env: Record<string, string | undefined>, timeoutMs: number): Promise<ExecuteRun> {
  const r = await execa('node', [...nodeArgsFor(script), ...args], { cwd, reject: false, env, timeout: timeoutMs, stdin: 'ignore' });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

/** `scripts/execute.ts …` as a process of its own, as `runExecute` otherwise. */
export function runExecuteProcess(cwd: string, args: string[] = [], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  return asProcess(executeScript, cwd, withFakeWorker(args), { ...EXECUTE_ENV, ...env }, 120_000);
}

/** What every test run of the orchestrator gets: a short back-off between retries, no colour. */
const EXECUTE_ENV = { FOREMAN_BACKOFF_MS: '50', NO_COLOR: '1' };

const withFakeWorker = (args: string[]) => (args.includes('--claude-bin') ? args : ['--claude-bin', fakeWorker, ...args]);

/** `scripts/plan.ts …` in `cwd`, run in this process (`inProcess`). */
export function runPlanTool(cwd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  return inProcess((io) => runProgram(programName('plan', ownLayout()), planCommands, args, io), cwd, env);
}

/** `scripts/plan.ts …` as a process of its own: for what reads this process's own state (the sandbox's tools found on its PATH). */
export function runPlanToolProcess(cwd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  return asProcess(planScript, cwd, args, env, 60_000);
}
