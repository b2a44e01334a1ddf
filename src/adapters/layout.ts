// Where foreman's own files are. Two layouts run the same code:
// - a checkout: the sources run under tsx, or bundled as they are into .build/checkout/ by the
//   checkout's launcher (scripts/checkout-bundle.mjs, two folders below the top, as this file is
//   here), and the sandbox runtime's CLI is in node_modules;
// - the built plugin (`npm run build`, scripts/build.ts): the code is bundled into
//   plugin/dist/*.mjs, which defines FOREMAN_BUNDLE, and the runtime's CLI is bundled beside it
//   as plugin/dist/srt.mjs (its native helpers in plugin/vendor/, where it looks for them), and
//   so is foreman's sandbox host (scripts/sandbox-host.mjs, as plugin/dist/sandbox-host.mjs).

import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Layout } from '../core/index.ts';

// Replaced by `true` in the bundle (esbuild's `define`); never declared in a checkout.
declare const FOREMAN_BUNDLE: boolean | undefined;
// Replaced by package.json's version in the bundle (scripts/build.ts); never declared in a checkout.
declare const FOREMAN_VERSION: string | undefined;

/** True in the built plugin's bundle, false when the sources run (under tsx, or a checkout's bundle of them). */
export const bundled: boolean = typeof FOREMAN_BUNDLE !== 'undefined' && FOREMAN_BUNDLE;

/** The plugin folder (bundled: this code is in dist/ or dist/chunks/) or the checkout (src/adapters/). */
function ownRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (!bundled) return join(here, '..', '..');
  return basename(here) === 'chunks' ? join(here, '..', '..') : join(here, '..');
}

/** foreman's launcher in this layout: the plugin's bin/foreman, or the checkout's. */
export const ownLauncherPath = (): string => join(ownRoot(), 'bin', 'foreman');

/**
 * How a person runs this copy of foreman, from where this process runs: for the commands its
 * messages name (core/command-hint.ts). A checkout started by its launcher (bin/foreman names
 * itself as the process's `argv0`: `exec -a`) is named by it; started as `npx tsx scripts/…`, that
 * runs only in its top folder, and from anywhere else its launcher does.
 */
export function ownLayout(argv0: string = process.argv0): Layout {
  if (bundled) return { kind: 'plugin', launcher: ownLauncherPath() };
  return argv0 !== ownLauncherPath() && inOwnRoot() ? { kind: 'checkout' } : { kind: 'checkout', launcher: ownLauncherPath() };
}

/**
 * This copy's version: the plugin's, built into its bundle (package.json's, which
 * scripts/check-plugin.ts holds equal to the plugin's manifest), or a checkout's package.json.
 */
export function ownVersion(): string {
  if (bundled && typeof FOREMAN_VERSION === 'string') return FOREMAN_VERSION;
  return (JSON.parse(readFileSync(join(ownRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The plan format's reference shipped with every copy of foreman (the design skill's), for a person writing a plan by hand. */
export const ownPlanFormatPath = (): string => join(ownRoot(), 'skills', 'design', 'plan-format.md');

/** Whether this process runs in the checkout's top folder, through symbolic links; not when its current folder is gone. */
function inOwnRoot(): boolean {
  try {
    return realpathSync(process.cwd()) === realpathSync(ownRoot());
  } catch {
    return false;
  }
}

/** The sandbox runtime's command-line entry point (`srt`), run with `node`. */
export const sandboxCliPath = (): string =>
  bundled ? join(ownRoot(), 'dist', 'srt.mjs') : createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime/dist/cli.js');

/**
 * The sandbox host foreman starts to wrap its own commands (scripts/sandbox-host.mjs): bundled
 * beside the runtime's CLI in the plugin, run as it is in a checkout, whose node_modules hold the
 * runtime.
 */
export const sandboxHostPath = (): string => (bundled ? join(ownRoot(), 'dist', 'sandbox-host.mjs') : join(ownRoot(), 'scripts', 'sandbox-host.mjs'));

/**
 * The sandbox runtime's seccomp helper for `arch` (`x64`, `arm64`): in the plugin's vendor/ (the
 * build copies it there), in a checkout the runtime's package.
 */
export const sandboxHelperPath = (arch: string): string =>
  join(
    bundled ? ownRoot() : dirname(createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime/package.json')),
    'vendor',
    'seccomp',
    arch,
    'apply-seccomp',
  );

/**
 * foreman's folder in the person's cache: `$XDG_CACHE_HOME/foreman`, else `~/.cache/foreman`. A
 * relative XDG_CACHE_HOME is ignored, as the XDG spec says.
 */
export function ownCacheDir(env: NodeJS.ProcessEnv): string {
  const cache = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(env.HOME || homedir(), '.cache');
  return join(cache, 'foreman');
}

/** foreman's remote program as the plugin ships it (`dist/host.mjs`); null in a checkout, which bundles the sources when a host needs it. */
export const hostProgramPath = (): string | null => (bundled ? join(ownRoot(), 'dist', 'host.mjs') : null);

/** The checkout's top folder (in the plugin, the plugin's). */
export const ownRootPath = (): string => ownRoot();
