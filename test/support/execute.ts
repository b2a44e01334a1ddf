// Running the real orchestrator (scripts/execute.ts) as a child process, as a user would.

import { execa } from 'execa';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

/** `scripts/execute.ts …` in `cwd` (bundled, or under tsx: `nodeArgsFor`) with the fake worker unless a bin is given. */
export async function runExecute(cwd: string, args: string[] = [], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  const withBin = args.includes('--claude-bin') ? args : ['--claude-bin', fakeWorker, ...args];
  const r = await execa('node', [...nodeArgsFor(executeScript), ...withBin], {
    cwd,
    reject: false,
    env: { FOREMAN_BACKOFF_MS: '50', NO_COLOR: '1', ...env },
    timeout: 120_000,
    stdin: 'ignore',
  });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

export async function runPlanTool(cwd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  const r = await execa('node', [...nodeArgsFor(planScript), ...args], { cwd, reject: false, env, timeout: 60_000, stdin: 'ignore' });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}
