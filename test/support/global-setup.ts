// vitest's global setup: runs once, before any test file, in the process that starts the workers.

import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { buildScripts } from './script-build.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const dir = await buildScripts(root);
  // The workers are started after this and inherit the variable (test/support/execute.ts reads it).
  process.env.FOREMAN_TEST_SCRIPTS = dir;
  return () => rm(dir, { recursive: true, force: true });
}
