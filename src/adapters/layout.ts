// Where foreman's own files are. Two layouts run the same code:
// - a checkout: tsx runs the sources, src/adapters/layout.ts is this file, and the sandbox
//   runtime's CLI is in node_modules;
// - the built plugin (`npm run build`, scripts/build.ts): the code is bundled into
//   plugin/dist/*.mjs, which defines FOREMAN_BUNDLE, and the runtime's CLI is bundled beside it
//   as plugin/dist/srt.mjs (its native helpers in plugin/vendor/, where it looks for them).

import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// Replaced by `true` in the bundle (esbuild's `define`); never declared in a checkout.
declare const FOREMAN_BUNDLE: boolean | undefined;

/** True in the built plugin's bundle, false when the sources run under tsx. */
export const bundled: boolean = typeof FOREMAN_BUNDLE !== 'undefined' && FOREMAN_BUNDLE;

/** foreman's launcher in this layout: plugin/bin/foreman beside the bundle, bin/foreman in a checkout. */
export const ownLauncherPath = (): string => fileURLToPath(new URL(bundled ? '../bin/foreman' : '../../bin/foreman', import.meta.url));

/** The sandbox runtime's command-line entry point (`srt`), run with `node`. */
export const sandboxCliPath = (): string =>
  bundled ? fileURLToPath(new URL('./srt.mjs', import.meta.url)) : createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime/dist/cli.js');
