// scripts/check-plugin.ts, which CI runs: it must catch a stale build (a source changed without
// `npm run build`, a built file edited, deleted or added by hand) and disagreeing version fields.

import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../scripts/build.ts';
import { checkBuild, checkVersions } from '../scripts/check-plugin.ts';
import { repoRoot } from './support/real-claude.ts';
import { copyCheckout } from './skills/support.ts';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'foreman-check-plugin-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const git = (cwd: string, args: string[]) => execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd });

describe('checkVersions', () => {
  let n = 0;
  /** The three manifests of the checkout, edited by `edit`. */
  async function manifests(edit: (files: { pkg: any; plugin: any; market: any }) => void = () => {}): Promise<string> {
    const dir = join(tmp, `versions-${n++}`);
    await mkdir(join(dir, '.claude-plugin'), { recursive: true });
    await mkdir(join(dir, 'plugin/.claude-plugin'), { recursive: true });
    const read = async (p: string) => JSON.parse(await readFile(join(repoRoot, p), 'utf8'));
    const files = {
      pkg: await read('package.json'),
      plugin: await read('plugin/.claude-plugin/plugin.json'),
      market: await read('.claude-plugin/marketplace.json'),
    };
    edit(files);
    await writeFile(join(dir, 'package.json'), JSON.stringify(files.pkg));
    await writeFile(join(dir, 'plugin/.claude-plugin/plugin.json'), JSON.stringify(files.plugin));
    await writeFile(join(dir, '.claude-plugin/marketplace.json'), JSON.stringify(files.market));
    return dir;
  }

  it("holds for the repository's own manifests", async () => {
    expect(await checkVersions(repoRoot)).toEqual({ kind: 'ok' });
    expect(await checkVersions(await manifests())).toEqual({ kind: 'ok' });
  });

  it.each([
    ['package.json', (f: any) => (f.pkg.version = '9.9.9'), 'package.json "9.9.9"'],
    ['plugin.json', (f: any) => (f.plugin.version = '9.9.9'), 'plugin/.claude-plugin/plugin.json "9.9.9"'],
    ['marketplace.json', (f: any) => (f.market.plugins[0].version = '9.9.9'), '.claude-plugin/marketplace.json (plugins[name=foreman]) "9.9.9"'],
    ['marketplace.json without a version', (f: any) => delete f.market.plugins[0].version, '.claude-plugin/marketplace.json (plugins[name=foreman]) null'],
  ])('catches a disagreeing %s', async (_name, edit, named) => {
    const outcome = await checkVersions(await manifests(edit));
    expect(outcome.kind).toBe('problems');
    expect(outcome.kind === 'problems' && outcome.lines.join('\n')).toContain(`the version fields disagree: `);
    expect(outcome.kind === 'problems' && outcome.lines.join('\n')).toContain(named);
  });

  it('catches a marketplace that does not point at the plugin folder, or does not list the plugin', async () => {
    const moved = await checkVersions(await manifests((f) => (f.market.plugins[0].source = './')));
    expect(moved).toEqual({ kind: 'problems', lines: [expect.stringContaining(`the plugin's source is "./", not "./plugin"`)] });
    const renamed = await checkVersions(await manifests((f) => (f.plugin.name = 'other')));
    expect(renamed).toEqual({ kind: 'problems', lines: [expect.stringContaining('lists no plugin named "other"')] });
  });

  it('cannot run without the manifests', async () => {
    const dir = await manifests();
    await rm(join(dir, 'plugin'), { recursive: true });
    expect(await checkVersions(dir)).toEqual({ kind: 'cannot-run', message: expect.stringContaining('cannot read plugin/.claude-plugin/plugin.json') });
  });
});

describe('checkBuild', () => {
  let repo: string;
  beforeAll(async () => {
    // A copy of the checkout in a git repository of its own, its plugin freshly built and committed.
    repo = join(tmp, 'repo');
    await mkdir(repo);
    await copyCheckout(repo);
    await symlink(join(repoRoot, 'node_modules'), join(repo, 'node_modules'));
    await git(repo, ['init', '--quiet']);
    await build(repo);
    await git(repo, ['add', '-A', '.']);
    await git(repo, ['commit', '--quiet', '-m', 'built']);
  }, 120_000);

  const reset = async () => {
    await git(repo, ['reset', '--quiet', '--hard']);
    await git(repo, ['clean', '--quiet', '-fd', '--', 'plugin', 'skills']);
  };

  it('holds when the committed plugin is what the sources build (the build is deterministic)', async () => {
    expect(await checkBuild(repo)).toEqual({ kind: 'ok' });
  }, 120_000);

  it('catches a skill changed without a build', async () => {
    await writeFile(join(repo, 'skills/design/SKILL.md'), `${await readFile(join(repo, 'skills/design/SKILL.md'), 'utf8')}\nA new line.\n`);
    const outcome = await checkBuild(repo);
    expect(outcome).toEqual({
      kind: 'problems',
      lines: [expect.stringContaining('run `npm run build` and commit plugin/'), '   M plugin/skills/design/SKILL.md'],
    });
    await reset();
  }, 120_000);

  it('catches code changed without a build, and a new skill file', async () => {
    const file = join(repo, 'src/cli/plan/summary.ts');
    const text = await readFile(file, 'utf8');
    expect(text).toContain("usage: '[--plan FILE]'");
    await writeFile(file, text.replace("usage: '[--plan FILE]'", "usage: '[--plan PATH]'"));
    await writeFile(join(repo, 'skills/execute/extra.md'), 'more\n');
    const outcome = await checkBuild(repo);
    expect(outcome.kind).toBe('problems');
    const lines = outcome.kind === 'problems' ? outcome.lines : [];
    expect(lines).toContain('  ?? plugin/skills/execute/extra.md');
    expect(lines.some((l) => /^ {2}.. plugin\/dist\//.test(l))).toBe(true);
    await reset();
  }, 120_000);

  it('catches a schema changed without its validator generated again', async () => {
    const file = join(repo, 'schemas/session.schema.json');
    const schema = JSON.parse(await readFile(file, 'utf8'));
    schema.properties.concurrency = { type: 'integer', minimum: 2 };
    await writeFile(file, `${JSON.stringify(schema, null, 2)}\n`);
    const outcome = await checkBuild(repo);
    expect(outcome.kind).toBe('problems');
    const lines = outcome.kind === 'problems' ? outcome.lines : [];
    expect(lines).toContain('   M plugin/schemas/session.schema.json');
    expect(lines).toContain('   M src/run/session/session-schema.generated.ts');
    // The plan tool's code holds the validator: its bundle, or the chunk it shares with execute, is built anew.
    expect(lines.some((line) => /^ {2}.. plugin\/dist\//.test(line))).toBe(true);
    await git(repo, ['checkout', '--quiet', '--', 'schemas', 'src']);
    await reset();
  }, 120_000);

  it('catches a built file edited, deleted or added by hand (the build puts it back or removes it)', async () => {
    await writeFile(join(repo, 'plugin/dist/plan.mjs'), 'edited by hand\n');
    await rm(join(repo, 'plugin/schemas/plan.schema.json'));
    await writeFile(join(repo, 'plugin/dist/stray.mjs'), 'left over\n');
    // The build restores the first two: the check must still fail, since the commit had them wrong.
    await git(repo, ['add', '-A', 'plugin']);
    await git(repo, ['commit', '--quiet', '-m', 'a hand-edited build']);
    const outcome = await checkBuild(repo);
    expect(outcome).toEqual({
      kind: 'problems',
      lines: [expect.any(String), '   M plugin/dist/plan.mjs', '   D plugin/dist/stray.mjs', '  ?? plugin/schemas/plan.schema.json'],
    });
    await git(repo, ['reset', '--quiet', '--hard', 'HEAD~1']);
    await reset();
  }, 120_000);

  it('the command fails with exit 1 on a stale build and exit 0 on a fresh one', async () => {
    const script = join(repo, 'scripts/check-plugin.ts');
    const fresh = await execa('node', ['--import', 'tsx', script], { cwd: repo, reject: false });
    expect(fresh.exitCode, fresh.stderr).toBe(0);
    expect(fresh.stdout).toBe('check-plugin: versions: ok\ncheck-plugin: build: ok');
    await cp(join(repo, 'schemas/plan.schema.json'), join(repo, 'schemas/copy.schema.json'));
    const stale = await execa('node', ['--import', 'tsx', script, 'build'], { cwd: repo, reject: false });
    expect(stale.exitCode).toBe(1);
    expect(stale.stderr).toContain('check-plugin: build:   ?? plugin/schemas/copy.schema.json');
    const unknown = await execa('node', ['--import', 'tsx', script, 'typos'], { cwd: repo, reject: false });
    expect(unknown.exitCode).toBe(2);
    await rm(join(repo, 'schemas/copy.schema.json'));
    await reset();
  }, 120_000);
});
