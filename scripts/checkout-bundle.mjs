// @ts-check
// The scripts of a checkout (scripts/execute.ts, scripts/plan.ts) bundled by esbuild, as they
// are: what the checkout's launcher (bin/foreman) runs while no source is newer than the bundle,
// and what the tests spawn (test/support/script-build.ts). Plain node starts a bundle in about a
// quarter of the CPU tsx takes to load the sources (0.25 against 0.9 s a step on a 2-core
// machine). Plain JavaScript, since it runs before anything can compile TypeScript.
//
// A checkout's bundle behaves as the sources do under tsx: FOREMAN_BUNDLE is not defined, and the
// files sit two folders below the checkout's top, where src/adapters/layout.ts finds the checkout
// (its launcher, its schemas, the sandbox runtime in its node_modules). One file a script, no
// chunks, for the same reason.
//
// `node scripts/checkout-bundle.mjs` makes the launcher's: `.build/checkout-<random>/`, stamped
// before esbuild reads a source (an edit made meanwhile is newer than the stamp, so the next
// start bundles again), then `.build/checkout` is pointed at it in one rename. Exit 0 when made;
// 1, silently, when not (the launcher then runs the sources through tsx, which says what is wrong).

import { chmodSync, closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, realpathSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The scripts bundled, by the name of their file in scripts/. */
export const BUNDLED_SCRIPTS = /** @type {const} */ (['execute', 'plan']);

/** Where the launcher's bundle is, under the checkout's top (bin/foreman spells it too): a link to the newest `checkout-*` folder. */
const CHECKOUT_BUNDLE = join('.build', 'checkout');

/** The file whose time says when the bundle's sources were read (bin/foreman spells it too): a source newer than it is not in the bundle. */
const BUNDLE_STAMP = '.stamp';

/** Older bundles are removed once no start can still be reading them. */
const KEEP_OLD_BUNDLE_MS = 60 * 60 * 1000;

/**
 * Bundles the checkout at `root` into `outdir` (made if needed); throws esbuild's messages when
 * the sources do not build.
 * @param {string} root
 * @param {string} outdir
 */
export async function bundleScripts(root, outdir) {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(BUNDLED_SCRIPTS.map((name) => [name, join(root, 'scripts', `${name}.ts`)])),
    outdir,
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
    logLevel: 'silent',
  });
  if (result.errors.length > 0) throw new Error(result.errors.map((error) => error.text).join('\n'));
}

/**
 * The launcher's bundle of the checkout at `root`, made afresh and put in place.
 * @param {string} root
 */
export async function makeCheckoutBundle(root) {
  const top = join(root, '.build');
  mkdirSync(top, { recursive: true });
  // A folder of its own, never one a start may be running from (a pid of the past would be).
  const outdir = mkdtempSync(join(top, 'checkout-'));
  const name = basename(outdir);
  // mkdtemp makes it private: readable like the rest of the checkout, as mkdir would have made it.
  chmodSync(outdir, 0o755);
  closeSync(openSync(join(outdir, BUNDLE_STAMP), 'w'));
  try {
    await bundleScripts(root, outdir);
  } catch (error) {
    rmSync(outdir, { recursive: true, force: true });
    throw error;
  }
  // A link renamed over the old one: a start sees the old bundle or the new one, never neither.
  const link = join(top, `checkout.${process.pid}.link`);
  rmSync(link, { force: true });
  symlinkSync(name, link);
  renameSync(link, join(root, CHECKOUT_BUNDLE));
  for (const entry of readdirSync(top)) {
    // Older bundles, and links a start that was killed left before renaming them.
    if (entry === name || !/^checkout(-\w+|\.\d+\.link)$/.test(entry)) continue;
    const old = join(top, entry);
    if (Date.now() - lstatSync(old).mtimeMs > KEEP_OLD_BUNDLE_MS) rmSync(old, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    await makeCheckoutBundle(root);
  } catch {
    process.exitCode = 1;
  }
}
