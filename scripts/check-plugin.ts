// `npm run check:plugin` (CI runs it): the committed plugin is what the sources build, and the
// three version fields agree.
//
//   versions  package.json, plugin/.claude-plugin/plugin.json and the marketplace's entry for the
//             plugin (.claude-plugin/marketplace.json) carry the same version: Claude Code keys its
//             plugin cache by version, so a release that forgets one is not picked up.
//   build     builds the plugin again (scripts/build.ts) and fails when the plugin folder, or the
//             schemas' validators it generates in src/core/, then differs from the commit (changed,
//             deleted or new files): a source was changed without `npm run build`, or the build
//             was edited by hand. It rewrites plugin/ in place, as `npm run build` does.
//
// Exit 0 when both hold, 1 when one does not (each problem on its own line), 2 on bad usage,
// 3 when it cannot run (not a git checkout, a manifest missing or unreadable).

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { assertNever } from '../src/core/result.ts';
import { build, PLUGIN_DIR } from './build.ts';
import { GENERATED_VALIDATORS } from './plan-validator.ts';

const run = promisify(execFile);

export type CheckOutcome = { kind: 'ok' } | { kind: 'problems'; lines: string[] } | { kind: 'cannot-run'; message: string };

const MANIFESTS = { package: 'package.json', plugin: `${PLUGIN_DIR}/.claude-plugin/plugin.json`, marketplace: '.claude-plugin/marketplace.json' } as const;

/** The fields of package.json, plugin.json and marketplace.json this check reads (unchecked JSON). */
interface Manifest {
  name?: unknown;
  version?: unknown;
  plugins?: Array<{ name?: unknown; source?: unknown; version?: unknown }>;
}

async function readJson(root: string, path: string): Promise<{ ok: true; value: Manifest } | { ok: false; message: string }> {
  try {
    return { ok: true, value: JSON.parse(await readFile(join(root, path), 'utf8')) as Manifest };
  } catch (e) {
    return { ok: false, message: `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** The three version fields agree, and the marketplace points at the plugin folder. */
export async function checkVersions(root: string): Promise<CheckOutcome> {
  const pkg = await readJson(root, MANIFESTS.package);
  const plugin = await readJson(root, MANIFESTS.plugin);
  const market = await readJson(root, MANIFESTS.marketplace);
  if (!pkg.ok) return { kind: 'cannot-run', message: pkg.message };
  if (!plugin.ok) return { kind: 'cannot-run', message: plugin.message };
  if (!market.ok) return { kind: 'cannot-run', message: market.message };
  const name = plugin.value.name;
  const entry = (market.value.plugins ?? []).find((p: { name?: unknown }) => p.name === name);
  if (entry === undefined) return { kind: 'problems', lines: [`${MANIFESTS.marketplace} lists no plugin named "${name}" (the name in ${MANIFESTS.plugin})`] };
  const lines: string[] = [];
  if (entry.source !== `./${PLUGIN_DIR}`)
    lines.push(`${MANIFESTS.marketplace}: the plugin's source is ${JSON.stringify(entry.source)}, not "./${PLUGIN_DIR}" (the built plugin)`);
  const versions = {
    [MANIFESTS.package]: pkg.value.version,
    [MANIFESTS.plugin]: plugin.value.version,
    [`${MANIFESTS.marketplace} (plugins[name=${name}])`]: entry.version,
  };
  if (new Set(Object.values(versions)).size !== 1) {
    lines.push(
      `the version fields disagree: ${Object.entries(versions)
        .map(([file, v]) => `${file} ${JSON.stringify(v ?? null)}`)
        .join(', ')}`,
    );
  }
  return lines.length === 0 ? { kind: 'ok' } : { kind: 'problems', lines };
}

/** Builds again; the plugin folder must then be exactly as committed. */
export async function checkBuild(root: string): Promise<CheckOutcome> {
  const inside = await run('git', ['rev-parse', '--show-toplevel'], { cwd: root }).catch(() => null);
  if (inside === null) return { kind: 'cannot-run', message: `${root} is not a git checkout: the build is compared with the commit` };
  try {
    await build(root);
  } catch (e) {
    return { kind: 'problems', lines: [`the build failed: ${e instanceof Error ? e.message : String(e)}`] };
  }
  const { stdout } = await run(
    'git',
    ['status', '--porcelain', '--untracked-files=all', '--no-renames', '--', PLUGIN_DIR, ...GENERATED_VALIDATORS.map((g) => g.file)],
    {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const changed = stdout.split('\n').filter(Boolean);
  if (changed.length === 0) return { kind: 'ok' };
  return {
    kind: 'problems',
    lines: [`the committed plugin is not what the sources build (run \`npm run build\` and commit ${PLUGIN_DIR}/):`, ...changed.map((l) => `  ${l}`)],
  };
}

const CHECKS = { versions: checkVersions, build: checkBuild } as const;
type CheckName = keyof typeof CHECKS;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const args = process.argv.slice(2);
  const names = (args.length === 0 ? Object.keys(CHECKS) : args) as CheckName[];
  const unknown = names.find((n) => !(n in CHECKS));
  if (unknown !== undefined) {
    process.stderr.write(`check-plugin: unknown check "${unknown}" (checks: ${Object.keys(CHECKS).join(', ')})\n`);
    process.exit(2);
  }
  let code = 0;
  for (const name of names) {
    const outcome = await CHECKS[name](root);
    switch (outcome.kind) {
      case 'ok':
        process.stdout.write(`check-plugin: ${name}: ok\n`);
        break;
      case 'problems':
        for (const line of outcome.lines) process.stderr.write(`check-plugin: ${name}: ${line}\n`);
        code = Math.max(code, 1);
        break;
      case 'cannot-run':
        process.stderr.write(`check-plugin: ${name}: ${outcome.message}\n`);
        code = 3;
        break;
      default:
        assertNever(outcome, 'check outcome');
    }
  }
  process.exit(code);
}
