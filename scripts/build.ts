// `npm run build`: the Claude Code plugin in plugin/, made from the sources.
//
// A plugin is installed by copying a folder of a repository, and nothing installs its
// dependencies, so the plugin holds everything it runs: the plan tool and the headless
// orchestrator bundled by esbuild into plugin/dist/*.mjs (plain `node` 20+ runs them, no
// node_modules), the sandbox runtime's CLI, foreman's sandbox host and the runtime itself bundled
// likewise (dist/srt.mjs, dist/sandbox-host.mjs, dist/sandbox-runtime.mjs) with the native helpers the runtime loads by path
// (vendor/), the launcher, the skills and the JSON schemas. No package.json: a
// plugin that has one gets `npm ci` run in it by Claude Code.
//
// Everything in plugin/ but .claude-plugin/plugin.json (the manifest, edited by hand) is made
// here; the build removes it first, so a file deleted from the sources leaves the plugin too.
// The output is deterministic: CI builds again and fails when the committed plugin differs
// (scripts/check-plugin.ts).

import { chmod, copyFile, cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { hostBundleOptions } from '../src/adapters/host/program.ts';
import { writeValidators } from './plan-validator.ts';

export const PLUGIN_DIR = 'plugin';
/** What the build makes inside the plugin folder (everything else there is a source). */
export const GENERATED = ['bin', 'dist', 'hooks', 'schemas', 'skills', 'vendor', 'README.md'] as const;

/** The sandbox runtime's files it reads by path at run time, for the platforms foreman supports
 * (Linux x64 and arm64: the seccomp helper; macOS uses the system's sandbox-exec; any: the Java
 * proxy agent). Windows is not supported by foreman, so srt-win is left out. */
const SANDBOX_VENDOR = [
  'vendor/seccomp/x64/apply-seccomp',
  'vendor/seccomp/arm64/apply-seccomp',
  'vendor/java-proxy-agent/srt-proxy-agent.jar',
  'LICENSE',
] as const;

/** Bundled CommonJS dependencies call `require` for Node's own modules. */
const REQUIRE_BANNER = {
  js: "import { createRequire as __foremanCreateRequire } from 'node:module'; const require = __foremanCreateRequire(import.meta.url);",
};

/** The sandbox runtime as a library, beside the commands that load it (`dist/<this>.mjs`). */
const SANDBOX_RUNTIME_ENTRY = 'sandbox-runtime';

/** The sandbox runtime reads its version from its package.json at start-up; the plugin has none. */
const SRT_VERSION_READ = "createRequire(import.meta.url)('../package.json')";

export interface BuildOutput {
  /** Files written, relative to the plugin folder, sorted. */
  files: string[];
  bytes: number;
}

export async function build(root: string): Promise<BuildOutput> {
  // The sources' generated files first (the schemas' validators): the bundles import them.
  await writeValidators(root);
  const plugin = join(root, PLUGIN_DIR);
  for (const generated of GENERATED) await rm(join(plugin, generated), { recursive: true, force: true });
  await mkdir(join(plugin, 'dist'), { recursive: true });

  const require = createRequire(join(root, 'package.json'));
  const sandboxRoot = dirname(require.resolve('@anthropic-ai/sandbox-runtime/package.json'));
  const sandboxVersion = (JSON.parse(await readFile(join(sandboxRoot, 'package.json'), 'utf8')) as { version: string }).version;
  // `--version` of the plugin: package.json's, which scripts/check-plugin.ts holds equal to the manifest's.
  const ownVersion = (JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string }).version;

  const common: esbuild.BuildOptions = {
    absWorkingDir: root,
    outdir: join(plugin, 'dist'),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Identifiers stay readable (stack traces of bugs, reviews of the committed build); the rest is compacted.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    charset: 'utf8',
    define: { FOREMAN_BUNDLE: 'true', FOREMAN_VERSION: JSON.stringify(ownVersion) },
    logLevel: 'warning',
    write: true,
  };
  // The sandbox runtime once, for all who load it: its CLI (the workers' Bash runs under it), foreman's
  // sandbox host, and the runtime as a library (`sandbox-runtime.mjs`, which the commands load only
  // when a command runs sandboxed), sharing its code in chunks.
  const runtime = await esbuild.build({
    ...common,
    entryPoints: {
      srt: join(sandboxRoot, 'dist/cli.js'),
      'sandbox-host': join(root, 'scripts/sandbox-host.mjs'),
      [SANDBOX_RUNTIME_ENTRY]: join(sandboxRoot, 'dist/index.js'),
    },
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    banner: REQUIRE_BANNER,
    plugins: [
      {
        name: 'sandbox-runtime-version',
        setup(b) {
          b.onLoad({ filter: /sandbox-runtime[\\/]dist[\\/]cli\.js$/ }, async (args) => {
            const text = await readFile(args.path, 'utf8');
            // Fail loudly if a new version reads it differently: the bundle would throw at start-up.
            if (!text.includes(SRT_VERSION_READ)) throw new Error(`${args.path} no longer reads its version as ${SRT_VERSION_READ}; update scripts/build.ts`);
            return { contents: text.replace(SRT_VERSION_READ, JSON.stringify({ version: sandboxVersion })), loader: 'js' };
          });
        },
      },
    ],
  });
  if (runtime.errors.length > 0) throw new Error(runtime.errors.map((e) => e.text).join('\n'));
  // The plan tool and the orchestrator: one file each, with no chunk shared between them. Shared
  // chunks held every export either one used, so `plan status` parsed and ran the orchestrator's
  // share too (start-up 87 -> 104 ms of CPU); the runtime they import is the file above.
  for (const [entry, source] of [
    ['plan', 'scripts/plan.ts'],
    ['execute', 'scripts/execute.ts'],
  ] as const) {
    const command = await esbuild.build({
      ...common,
      entryPoints: { [entry]: join(root, source) },
      banner: REQUIRE_BANNER,
      plugins: [
        {
          name: 'sandbox-runtime-file',
          setup(b) {
            b.onResolve({ filter: /^@anthropic-ai\/sandbox-runtime$/ }, () => ({ path: `./${SANDBOX_RUNTIME_ENTRY}.mjs`, external: true }));
          },
        },
      ],
    });
    if (command.errors.length > 0) throw new Error(command.errors.map((e) => e.text).join('\n'));
  }
  // The worker hook runs before every tool call of a session running a plan: one file of its own,
  // sharing no chunk with the commands, so node parses only what it needs.
  const hook = await esbuild.build({ ...common, entryPoints: { hook: join(root, 'scripts/hook.ts') } });
  if (hook.errors.length > 0) throw new Error(hook.errors.map((e) => e.text).join('\n'));
  // foreman's remote program, sent to a host and run there with the host's node: one file that
  // needs nothing beside it (src/adapters/host/program.ts).
  const host = await esbuild.build({ ...hostBundleOptions(root, ownVersion), outfile: join(plugin, 'dist', 'host.mjs'), write: true });
  if (host.errors.length > 0) throw new Error(host.errors.map((e) => e.text).join('\n'));
  // The scripts' own `#!/usr/bin/env -S npx tsx` line: the bundle runs with plain node.
  for (const entry of ['plan', 'execute', 'srt', 'sandbox-host', 'hook']) {
    const file = join(plugin, 'dist', `${entry}.mjs`);
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.startsWith('#!') ? `#!/usr/bin/env node${text.slice(text.indexOf('\n'))}` : text);
  }

  await cp(join(root, 'skills'), join(plugin, 'skills'), { recursive: true });
  await mkdir(join(plugin, 'schemas'));
  for (const name of (await readdir(join(root, 'schemas'))).filter((n) => n.endsWith('.json')).sort()) {
    await copyFile(join(root, 'schemas', name), join(plugin, 'schemas', name));
  }
  await mkdir(join(plugin, 'hooks'));
  for (const name of ['hooks.json', 'pre-tool-use']) await copyFile(join(root, 'hooks', name), join(plugin, 'hooks', name));
  await chmod(join(plugin, 'hooks/pre-tool-use'), 0o755);
  await mkdir(join(plugin, 'bin'));
  await copyFile(join(root, 'bin/foreman'), join(plugin, 'bin/foreman'));
  await chmod(join(plugin, 'bin/foreman'), 0o755);
  for (const file of SANDBOX_VENDOR) {
    // The runtime looks for vendor/… in the bundle's parent folder, among others.
    const dest = join(plugin, 'vendor', file === 'LICENSE' ? 'sandbox-runtime-LICENSE' : file.slice('vendor/'.length));
    await mkdir(dirname(dest), { recursive: true });
    await copyFile(join(sandboxRoot, file), dest);
    await chmod(dest, file.endsWith('apply-seccomp') ? 0o755 : 0o644);
  }
  await writeFile(join(plugin, 'README.md'), pluginReadme(sandboxVersion));

  const files = (await readdir(plugin, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => relative(plugin, join(e.parentPath, e.name)))
    .sort();
  let bytes = 0;
  for (const f of files) bytes += (await readFile(join(plugin, f))).length;
  return { files, bytes };
}

function pluginReadme(sandboxVersion: string): string {
  return `# foreman, the Claude Code plugin

Made by \`npm run build\` (scripts/build.ts) from the repository's sources: do not edit these files,
edit the sources and build again. Only \`.claude-plugin/plugin.json\` is edited here.

- \`bin/foreman\`: the launcher the skills run; it runs \`dist/plan.mjs\` or \`dist/execute.mjs\`
  with \`node\` (20 or later) and never installs anything.
- \`dist/\`: the plan tool, the headless orchestrator and the sandbox runtime's CLI
  (@anthropic-ai/sandbox-runtime ${sandboxVersion}), bundled by esbuild with their dependencies.
- \`vendor/\`: the sandbox runtime's helpers it loads by path (the seccomp filter for Linux x64
  and arm64, the Java proxy agent) and its licence.
- \`hooks/\`: the PreToolUse hook that holds in-session workers to their tasks' files and runs
  their commands in the sandbox (\`dist/hook.mjs\`, reached through \`hooks/pre-tool-use\`).
- \`skills/\`, \`schemas/\`: copies of the repository's.

See the repository's README.md, "Using it inside Claude Code".
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  try {
    const out = await build(root);
    process.stdout.write(`built ${PLUGIN_DIR}/: ${out.files.length} files, ${(out.bytes / 1024 / 1024).toFixed(1)} MB\n`);
  } catch (e) {
    process.stderr.write(`build: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
