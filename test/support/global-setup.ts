// vitest's global setup: runs once, before any test file, in the process that starts the workers.

import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { processAlive } from '../../src/adapters/processes/processes.ts';
import { buildScripts, SCRIPT_BUILD_DIR } from './script-build.ts';

/** The temporary folder of one test run, `<tmpdir>/foreman-test-run-<pid>`: everything the run makes in the temporary directory goes there. */
const RUN_TMP = /^foreman-test-run-(\d+)$/;

export default async function setup(): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  // Every temporary file and folder of the run — the tests' own, the worktree pools of the runs
  // they start, what the real Claude Code CLI and the sandbox runtime keep there — goes into a
  // folder of this run, removed at its end: a test that leaves something behind (a run it killed
  // on purpose leaves its attempts' TMPDIRs) leaves it there. Folders of runs that are gone (a
  // suite stopped with Ctrl-C) are removed first; runs side by side each keep their own.
  // vitest runs the global setup once per project, in one process: the second time, TMPDIR is
  // this run's folder already, and stays.
  if (RUN_TMP.exec(basename(tmpdir()))?.[1] === String(process.pid)) return async () => undefined;
  const system = tmpdir();
  for (const name of await readdir(system)) {
    const pid = RUN_TMP.exec(name)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await rm(join(system, name), { recursive: true, force: true });
  }
  const runTmp = join(system, `foreman-test-run-${process.pid}`);
  await mkdir(runTmp, { recursive: true });
  // The workers are started after this and inherit these variables (os.tmpdir() reads TMPDIR).
  process.env.TMPDIR = runTmp;
  process.env.FOREMAN_WORKTREES = join(runTmp, 'worktrees');

  const dir = await buildScripts(root);
  // The checkout's launcher bundles the sources at its first start after a change: once here,
  // rather than in every test that starts it at once.
  await execa(join(root, 'bin/foreman'), ['plan', '--help'], { stdin: 'ignore' });
  process.env.FOREMAN_TEST_SCRIPTS = dir;
  // The person's own Claude Code user settings stay out of the tests: their deny rules would reach
  // the workers' rules and the sandbox of every check. A test that means a person's settings writes them.
  const settingsDir = join(runTmp, 'claude-config');
  await mkdir(settingsDir);
  process.env.CLAUDE_CONFIG_DIR = settingsDir;
  return async () => {
    await rm(dir, { recursive: true, force: true });
    // The bundles' folder goes with the last run that used it (another run beside this one keeps it).
    await rmdir(join(root, SCRIPT_BUILD_DIR)).catch(() => undefined);
    await rm(runTmp, { recursive: true, force: true });
  };
}
