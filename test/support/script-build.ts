// The scripts the end-to-end tests spawn (scripts/execute.ts, scripts/plan.ts), bundled once per
// test run by esbuild, so each spawn starts plain node instead of tsx compiling the sources
// again (about 0.3 s against 1 s a start on a 2-core machine; the e2e files start hundreds).
//
// The bundle is of the sources as they are (vitest's global setup makes it before any test), with
// the packages but the sandbox runtime in it, one file a script (no chunks: its code must sit two
// folders below the repository's top, `.test-build/run-<pid>/`, where the sources' own layout
// finds the checkout, src/adapters/layout.ts): it runs as the checkout runs under tsx, hints naming `npx tsx scripts/…` included. What only tsx can prove (that the
// README's `npx tsx scripts/…` commands start) keeps tests of its own.

import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { processAlive } from '../../src/adapters/processes.ts';

/** The folder under the repository's top the bundles go to (ignored by git). */
export const SCRIPT_BUILD_DIR = '.test-build';

/** The scripts bundled, by the name of their file in scripts/. */
export const BUILT_SCRIPTS = ['execute', 'plan'] as const;

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
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(BUILT_SCRIPTS.map((name) => [name, join(root, 'scripts', `${name}.ts`)])),
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The packages are bundled too: resolving them in node_modules at every start cost 0.1 s of
    // CPU. All but the sandbox runtime, which finds its helpers (vendor/) beside its own files.
    external: ['@anthropic-ai/sandbox-runtime'],
    // Bundled CommonJS dependencies call `require` for Node's own modules.
    banner: { js: "import { createRequire as __foremanCreateRequire } from 'node:module'; const require = __foremanCreateRequire(import.meta.url);" },
    // A linked map costs nothing at start-up; `node --enable-source-maps` reads it when a stack trace needs it.
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(result.errors.map((error) => error.text).join('\n'));
  return dir;
}
