// Running the real orchestrator (scripts/execute.ts) as a child process, as a user would.

import { execa } from 'execa';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const fakeWorker = join(repoRoot, 'test/fixtures/fake-worker.mjs');
export const executeScript = join(repoRoot, 'scripts/execute.ts');
export const planScript = join(repoRoot, 'scripts/plan.ts');
/** tsx's loader by absolute URL, so scripts run from any working directory (a test repository). */
export const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;

export interface ExecuteRun {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/** `node --import tsx scripts/execute.ts …` in `cwd` with the fake worker unless a bin is given. */
export async function runExecute(cwd: string, args: string[] = [], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  const withBin = args.includes('--claude-bin') ? args : ['--claude-bin', fakeWorker, ...args];
  const r = await execa('node', ['--import', tsxLoader, executeScript, ...withBin], {
    cwd,
    reject: false,
    env: { FOREMAN_BACKOFF_MS: '50', NO_COLOR: '1', ...env },
    timeout: 120_000,
    stdin: 'ignore',
  });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

export async function runPlanTool(cwd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<ExecuteRun> {
  const r = await execa('node', ['--import', tsxLoader, planScript, ...args], { cwd, reject: false, env, timeout: 60_000, stdin: 'ignore' });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}
