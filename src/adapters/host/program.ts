// foreman's remote program (src/host/), as the bytes a host receives: the plugin's built
// `dist/host.mjs`, or in a checkout the sources bundled in memory once per process. It is one
// file with no package to resolve on the host; it carries the sandbox runtime, for the commands
// it runs sandboxed (src/host/sandboxed.ts). Kept there under a version that is foreman's
// version and the bundle's hash, so a changed program is never mistaken for the one kept.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hostProgramPath, ownRootPath, ownVersion } from '../layout.ts';

export interface HostProgram {
  bytes: Buffer;
  /** `<foreman version>-<12 hex digits of its hash>`: the folder it is kept in on a host. */
  version: string;
}

/** esbuild's options for the program (scripts/build.ts writes it into the plugin with them). */
export function hostBundleOptions(root: string, version: string) {
  return {
    absWorkingDir: root,
    entryPoints: [join(root, 'src', 'host', 'entry.ts')],
    bundle: true,
    platform: 'node' as const,
    format: 'esm' as const,
    target: 'node20',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none' as const,
    charset: 'utf8' as const,
    define: { FOREMAN_HOST_VERSION: JSON.stringify(version) },
    // The sandbox host the program also is (src/host/entry.ts): foreman's own, bundled in.
    alias: { '@foreman/sandbox-host': join(root, 'scripts', 'sandbox-host.mjs') },
    // The sandbox runtime's bundled CommonJS dependencies call `require` for Node's own modules.
    // The program runs from a data: URL (the bootstrap's loader), which createRequire does not
    // take: node's own path resolves Node's modules as well as any.
    banner: { js: "import { createRequire as __foremanCreateRequire } from 'node:module'; const require = __foremanCreateRequire(process.execPath);" },
    logLevel: 'silent' as const,
  };
}

let program: Promise<HostProgram> | null = null;

async function bundleSources(): Promise<Buffer> {
  // Named, not written out, so a bundle of foreman does not try to take esbuild in.
  const name = 'esbuild';
  const esbuild = (await import(name)) as typeof import('esbuild');
  const result = await esbuild.build({ ...hostBundleOptions(ownRootPath(), ownVersion()), write: false });
  const file = result.outputFiles[0];
  if (file === undefined) throw new Error('esbuild made no host program');
  return Buffer.from(file.contents);
}

/** The program a host runs, made once per process. */
export function hostProgram(): Promise<HostProgram> {
  program ??= (async () => {
    const path = hostProgramPath();
    const bytes = path === null ? await bundleSources() : await readFile(path);
    return { bytes, version: `${ownVersion()}-${createHash('sha256').update(bytes).digest('hex').slice(0, 12)}` };
  })();
  return program;
}
