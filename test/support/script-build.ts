// The scripts the end-to-end tests spawn (scripts/execute.ts, scripts/plan.ts), bundled once per
// test run, so each spawn starts plain node instead of tsx compiling the sources again (about
// 0.3 s against 1 s a start on a 2-core machine; the e2e files start hundreds). The same bundle
// as the checkout's launcher runs (scripts/checkout-bundle.mjs: it runs as the sources do under
// tsx, hints naming `npx tsx scripts/…` included), in a folder of this test run's own, made
// before any test by vitest's global setup. What only tsx can prove (that the README's
// `npx tsx scripts/…` commands start) keeps tests of its own.

import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../../src/adapters/processes/processes.ts';
import { BUNDLED_SCRIPTS, bundleScripts } from '../../scripts/checkout-bundle.mjs';

/** The folder under the repository's top the bundles go to (ignored by git). */
export const SCRIPT_BUILD_DIR = '.test-build';

/** The scripts bundled, by the name of their file in scripts/. */
export const BUILT_SCRIPTS = BUNDLED_SCRIPTS;

/**
 * Bundles the scripts into `<root>/.test-build/run-<pid>/` (a folder of this test run's own, so
 * runs side by side never share one) and returns it. Folders of runs whose process is gone are
 * removed.
 */
export async function buildScripts(root: string): Promise<string> {
  const top = join(root, SCRIPT_BUILD_DIR);
  await mkdir(top, { recursive: true });
  for (const name of await readdir(top)) {
    const pid = /^run-(\d+)$/.exec(name)?.[1];
    if (pid === undefined || !processAlive(Number(pid))) await rm(join(top, name), { recursive: true, force: true });
  }
  const dir = join(top, `run-${process.pid}`);
  await bundleScripts(root, dir);
  return dir;
}
