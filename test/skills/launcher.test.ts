// bin/foreman, which never installs anything: the built plugin's copy (plugin/bin/foreman) runs the
// bundle with plain node from a copy that has no node_modules — what a plugin install or a
// project-skill install looks like — even with no npm on PATH; a checkout's copy runs the sources
// (a bundle of them made again whenever one changed, else the checkout's tsx), and says to run
// `npm ci` when node_modules is missing; without node, both say what to install.

import { existsSync } from 'node:fs';
import { access, cp, mkdir, mkdtemp, readFile, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandHint } from '../../src/core/command-hint.ts';
import { repoRoot } from '../support/real-claude.ts';
import { copyCheckout } from './support.ts';

/**
 * The realistic sample plan, copied outside any repository: inside foreman's own, `plan check`
 * would check it against foreman's files, which are not the files it is written for.
 */
let sample: string;

let tmp: string;
/** The plugin folder copied into a project's .claude/ folder, as the project-skill install does. */
let pack: string;
/** The launcher reached the way a project skill reaches it: `${CLAUDE_SKILL_DIR}/../../bin/foreman`. */
let viaSkillDir: string;
/** A checkout as git gives it, without node_modules. */
let checkout: string;

/** A folder of links to the given commands only, for a PATH that holds nothing else. */
async function pathOf(commands: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmp, 'path-'));
  for (const c of commands) {
    const { stdout } = await execa('bash', ['-c', `command -v ${c}`]);
    await symlink(stdout.trim(), join(dir, c));
  }
  return dir;
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'foreman-launcher-'));
  sample = join(tmp, 'realistic.json');
  await cp(join(repoRoot, 'test/plans/valid/realistic.json'), sample);
  pack = join(tmp, 'project/.claude');
  await mkdir(dirname(pack), { recursive: true });
  await cp(join(repoRoot, 'plugin'), pack, { recursive: true });
  viaSkillDir = join(pack, 'skills/design/../../bin/foreman');
  checkout = join(tmp, 'checkout');
  await mkdir(checkout);
  await copyCheckout(checkout);
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const run = (bin: string, args: string[], cwd = tmp, env?: Record<string, string>) =>
  execa(bin, args, { cwd, reject: false, timeout: 120_000, stdin: 'ignore', ...(env ? { env, extendEnv: false } : {}) });

describe("the plugin's bin/foreman, in a copy without node_modules", () => {
  it('runs the bundle with node alone — no npm on PATH, nothing installed, nothing on stderr', async () => {
    // Only what the launcher itself uses, and node: a package manager cannot be reached.
    const path = await pathOf(['node', 'bash', 'dirname', 'readlink']);
    const r = await run(viaSkillDir, ['plan', 'check', '--plan', sample], '/', { PATH: path, HOME: tmp });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${sample}: valid (8 tasks)`);
    expect(r.stderr).toBe('');
    await expect(access(join(pack, 'node_modules'))).rejects.toThrow();
    expect((await readdir(pack)).sort()).toEqual(['.claude-plugin', 'README.md', 'bin', 'dist', 'hooks', 'schemas', 'skills', 'vendor']);
  });

  it('runs through a symlink and keeps stdout for the command', async () => {
    const link = join(tmp, 'foreman');
    await symlink(join(pack, 'bin/foreman'), link);
    const viaLink = await run(link, ['plan', 'ready', '--plan', sample, '--json']);
    expect(viaLink.exitCode, viaLink.stderr).toBe(0);
    expect(JSON.parse(viaLink.stdout)).toHaveProperty('ready');
    const help = await run(link, ['execute', '--help']);
    expect(help.exitCode).toBe(0);
    // Its help names the command as it is run here: through the launcher of the copy.
    expect(help.stdout).toContain(`Usage: ${commandHint('execute', '[options]', { kind: 'plugin', launcher: join(pack, 'bin/foreman') })}`);
  });

  it('`plan summary` names the launcher of the copy it runs from', async () => {
    const r = await run(join(pack, 'bin/foreman'), ['plan', 'summary', '--plan', sample]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain(`\`${commandHint('execute', '', { kind: 'plugin', launcher: join(pack, 'bin/foreman') })}\``);
  });

  it.skipIf(process.platform !== 'linux' || !existsSync('/usr/bin/bwrap'))(
    'the bundled sandbox runtime finds its seccomp helper in the copy and confines a command',
    async () => {
      const settings = join(tmp, 'srt.json');
      await writeFile(
        settings,
        JSON.stringify({ filesystem: { allowWrite: [tmp], denyWrite: [], denyRead: [] }, network: { allowedDomains: [], deniedDomains: [] } }),
      );
      const r = await run('node', [
        join(pack, 'dist/srt.mjs'),
        '--debug',
        '--settings',
        settings,
        '-c',
        `touch ${join(tmp, 'inside')} && ! touch /etc/foreman-outside`,
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
      expect(r.stderr).toContain(`Found apply-seccomp binary: ${join(pack, 'vendor/seccomp', arch, 'apply-seccomp')}`);
      await expect(access(join(tmp, 'inside'))).resolves.toBeUndefined();
    },
  );

  it.skipIf(process.platform !== 'linux' || !existsSync('/usr/bin/bwrap'))(
    'the bundled orchestrator loads the sandbox runtime from the copy and runs a sandboxed test command with it',
    async () => {
      const repo = join(tmp, 'sandboxed-repo');
      await mkdir(join(repo, '.design'), { recursive: true });
      await cp(sample, join(repo, '.design/plan.json'));
      for (const args of [
        ['init', '-q'],
        ['-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '--allow-empty', '-m', 'start'],
      ])
        await execa('git', args, { cwd: repo });
      // A cache of its own: no remembered answer, so the runtime is loaded and asked.
      const cache = join(tmp, 'sandboxed-cache');
      const r = await run(join(pack, 'bin/foreman'), ['execute', '--dry-run', '--sandbox', 'on', '--claude-bin', '/bin/true'], repo, {
        ...(process.env as Record<string, string>),
        XDG_CACHE_HOME: cache,
      });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^Sandbox: on \(--sandbox on\)/m);
      // The answer it remembers: a sandboxed `true` ran through the runtime the copy holds.
      expect(JSON.parse(await readFile(join(cache, 'foreman/sandbox-support.json'), 'utf8'))).toHaveProperty('checkedAt');
    },
  );

  it('without node on PATH, says what to install and exits 3', async () => {
    const path = await pathOf(['bash', 'dirname', 'readlink']);
    const r = await run(join(pack, 'bin/foreman'), ['plan', 'status'], tmp, { PATH: path, HOME: tmp });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/^foreman: Node\.js 20 or later is needed and `node` is not on PATH: install it \(https:\/\/nodejs\.org/);
    expect(r.stdout).toBe('');
  });

  it('with a node older than 20, names the version found and exits 3', async () => {
    const path = await pathOf(['bash', 'dirname', 'readlink']);
    // A node that answers --version as Node 18 does, and fails loudly if the launcher runs it for anything else.
    await writeFile(join(path, 'node'), '#!/bin/bash\n[ "$1" = --version ] && { echo v18.19.0; exit 0; }\necho "ran node $*" >&2; exit 99\n', { mode: 0o755 });
    const r = await run(join(pack, 'bin/foreman'), ['plan', 'status'], tmp, { PATH: path, HOME: tmp });
    expect(r.exitCode).toBe(3);
    expect(r.stderr.trim()).toBe('foreman: Node.js 20 or later is needed (found v18.19.0): install a newer one (https://nodejs.org)');
    expect(r.stdout).toBe('');
  });

  it("--version prints the plugin's version (its manifest's, built into the bundle), exit 0, from the copy without its manifest too", async () => {
    const { version } = JSON.parse(await readFile(join(repoRoot, 'plugin/.claude-plugin/plugin.json'), 'utf8')) as { version: string };
    const bare = join(tmp, 'bare');
    await cp(pack, bare, { recursive: true });
    await rm(join(bare, '.claude-plugin'), { recursive: true });
    for (const bin of [viaSkillDir, join(bare, 'bin/foreman')]) {
      for (const argv of [['--version'], ['plan', '--version'], ['execute', '--version']]) {
        const r = await run(bin, argv);
        expect({ argv, code: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({ argv, code: 0, stdout: `foreman ${version}`, stderr: '' });
      }
    }
  });

  it('refuses a first word other than plan or execute with exit 2', async () => {
    const r = await run(viaSkillDir, ['install']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^foreman: expected `plan` or `execute`/);
  });

  it('with no command at all, says one is needed and shows the usage, exit 2', async () => {
    const r = await run(viaSkillDir, []);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^foreman: a command is needed: `plan` or `execute`\nUsage: .* plan <command>/);
    expect(r.stdout).toBe('');
  });

  it('a copy missing its bundle is refused with exit 3, naming what to copy', async () => {
    const partial = join(tmp, 'partial');
    await cp(pack, partial, { recursive: true });
    await rm(join(partial, 'dist'), { recursive: true });
    const r = await run(join(partial, 'bin/foreman'), ['plan', 'status']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('not a complete foreman plugin (dist/plan.mjs is missing)');
  });
});

describe("a checkout's bin/foreman", () => {
  it('runs the sources when the checkout has its node_modules', async () => {
    const r = await run(join(repoRoot, 'bin/foreman'), ['plan', 'check', '--plan', sample]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${sample}: valid (8 tasks)`);
  });

  it('runs a bundle of the sources, made again as soon as one changes; sources that do not build run through tsx, which says why', async () => {
    const live = join(tmp, 'live-checkout');
    await mkdir(live);
    await copyCheckout(live);
    await symlink(join(repoRoot, 'node_modules'), join(live, 'node_modules'));
    const bin = join(live, 'bin/foreman');
    const bundleOf = async () => realpath(join(live, '.build/checkout'));

    const first = await run(bin, ['plan', 'check', '--plan', sample]);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toBe(`${sample}: valid (8 tasks)`);
    expect(first.stderr).toBe('');
    const made = await bundleOf();
    expect(await readdir(made)).toEqual(expect.arrayContaining(['.stamp', 'plan.mjs', 'execute.mjs']));
    // Nothing changed: the same bundle runs.
    expect((await run(bin, ['plan', 'check', '--plan', sample])).stdout).toBe(`${sample}: valid (8 tasks)`);
    expect(await bundleOf()).toBe(made);

    // An edit: the next start runs it.
    const check = join(live, 'src/cli/plan/check.ts');
    const source = await readFile(check, 'utf8');
    await writeFile(check, source.replaceAll(': valid (', ': VALID ('));
    const edited = await run(bin, ['plan', 'check', '--plan', sample]);
    expect(edited.exitCode, edited.stderr).toBe(0);
    expect(edited.stdout).toBe(`${sample}: VALID (8 tasks)`);
    expect(await bundleOf()).not.toBe(made);

    // A source that does not compile: not the last bundle, but tsx, whose error names the file.
    await writeFile(check, `${source}\nexport const broken = ;\n`);
    const broken = await run(bin, ['plan', 'check', '--plan', sample]);
    expect(broken.exitCode).not.toBe(0);
    expect(broken.stdout).toBe('');
    expect(broken.stderr).toContain('check.ts');
  });

  it("names itself in the commands it prints, from the checkout's top folder too (where `npx tsx scripts/…` would also run)", async () => {
    const bin = join(repoRoot, 'bin/foreman');
    for (const help of ['--help', '-h']) {
      const r = await run(bin, ['plan', 'graph', help], repoRoot);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.split('\n')[0]).toBe(`Usage: ${bin} plan graph [--plan FILE]`);
    }
    const overview = await run(bin, ['plan', '--help'], repoRoot);
    expect(overview.stdout.split('\n')[0]).toBe(`Usage: ${bin} plan <command> [options]`);
    const summary = await run(bin, ['plan', 'summary', '--plan', sample], repoRoot);
    expect(summary.stdout).toContain(`- headless, from a terminal: \`${bin} execute\` (watch it with \`${bin} plan status\`)`);
  });

  it('--version, plan --version and execute --version print the version of package.json, exit 0', async () => {
    const { version } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    for (const argv of [['--version'], ['plan', '--version'], ['execute', '--version']]) {
      const r = await run(join(repoRoot, 'bin/foreman'), argv);
      expect({ argv, code: r.exitCode, stdout: r.stdout, stderr: r.stderr }).toEqual({ argv, code: 0, stdout: `foreman ${version}`, stderr: '' });
    }
  });

  it('without node_modules, says to run `npm ci` (exit 3) and installs nothing', async () => {
    const r = await run(join(checkout, 'bin/foreman'), ['plan', 'check', '--plan', sample]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain(`run \`npm ci\` in ${checkout}`);
    expect(r.stderr).toContain(join(checkout, 'plugin/bin/foreman'));
    await expect(access(join(checkout, 'node_modules'))).rejects.toThrow();
  });
});
