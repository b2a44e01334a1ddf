// vitest's global setup: runs once, before any test file, in the process that starts the workers.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { buildScripts } from './script-build.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const dir = await buildScripts(root);
  // The checkout's launcher bundles the sources at its first start after a change: once here,
  // rather than in every test that starts it at once.
  await execa(join(root, 'bin/foreman'), ['plan', '--help'], { stdin: 'ignore' });
  // The workers are started after this and inherit the variable (test/support/execute.ts reads it).
  process.env.FOREMAN_TEST_SCRIPTS = dir;
  // The person's own Claude Code user settings stay out of the tests: their deny rules would reach
  // the workers' rules and the sandbox of every check. A test that means a person's settings writes them.
  const settingsDir = await mkdtemp(join(tmpdir(), 'foreman-test-claude-config-'));
  process.env.CLAUDE_CONFIG_DIR = settingsDir;
  return async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(settingsDir, { recursive: true, force: true });
  };
}
