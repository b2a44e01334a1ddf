// bin/foreman from a copy of the checkout without node_modules — what a plugin installed by
// cloning, or a project-skill install, looks like. The first use installs the runtime
// dependencies into the copy (from the npm registry), once, even when two sessions start at the
// same moment; later uses start at once.

import { access, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/real-claude.ts';
import { copyCheckout } from './support.ts';

const INSTALLING = /^foreman: installing its runtime dependencies into .+ \(first use\)…$/m;
const sample = join(repoRoot, 'test/plans/valid/realistic.json');

let tmp: string;
/** The pack copied into a project's .claude/ folder, as the project-skill install does. */
let pack: string;
/** The launcher reached the way a project skill reaches it: `${CLAUDE_SKILL_DIR}/../../bin/foreman`. */
let viaSkillDir: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'foreman-launcher-'));
  pack = join(tmp, 'project/.claude');
  await mkdir(pack, { recursive: true });
  await copyCheckout(pack);
  viaSkillDir = join(pack, 'skills/design/../../bin/foreman');
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const run = (bin: string, args: string[], cwd = tmp) => execa(bin, args, { cwd, reject: false, timeout: 300_000, stdin: 'ignore' });

describe('bin/foreman in a checkout without node_modules', () => {
  it('installs the runtime dependencies on first use — once, though two sessions start together — then runs the command', async () => {
    await expect(access(join(pack, 'node_modules'))).rejects.toThrow();
    const [a, b] = await Promise.all([run(viaSkillDir, ['plan', 'check', '--plan', sample]), run(viaSkillDir, ['plan', 'check', '--plan', sample])]);
    for (const r of [a, b]) {
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${sample}: valid (8 tasks)`);
    }
    const installs = [a, b].filter((r) => INSTALLING.test(r.stderr));
    expect(installs).toHaveLength(1);
    expect(installs[0]!.stderr).toContain(pack);
    // Only the runtime dependencies: no test runner, no Claude Code CLI.
    const modules = await readdir(join(pack, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['tsx', 'ajv', 'execa', 'simple-git', 'p-limit']));
    expect(modules).not.toContain('vitest');
    // The sandbox runtime is a runtime dependency; the Claude Code CLI (a dev dependency) is not there.
    expect(await readdir(join(pack, 'node_modules', '@anthropic-ai'))).toEqual(['sandbox-runtime']);
  }, 300_000);

  it('does not install again, runs from any directory and through a symlink, and keeps stdout for the command', async () => {
    const again = await run(viaSkillDir, ['plan', 'check', '--plan', sample], '/');
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toBe('');
    const link = join(tmp, 'foreman');
    await symlink(join(pack, 'bin/foreman'), link);
    const viaLink = await run(link, ['plan', 'ready', '--plan', sample, '--json']);
    expect(viaLink.exitCode, viaLink.stderr).toBe(0);
    expect(JSON.parse(viaLink.stdout)).toHaveProperty('ready');
    const help = await run(link, ['execute', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Usage: execute.ts');
  });

  it('refuses a first word other than plan or execute with exit 2', async () => {
    const r = await run(viaSkillDir, ['install']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/^foreman: expected `plan` or `execute`/);
  });
});
