// The ignore file a worker's own git commands read (adapters/git/excludes.ts): the person's global
// patterns kept, the sandbox's placeholder files hidden, nothing written in the repository. In the
// real sandbox: without it, `git status` inside a sandboxed command lists the placeholders and
// `git add -A` fails on them; with it, neither.

import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runShell } from '../../src/adapters/sandbox/checks.ts';
import { writeWorkerExcludes } from '../../src/adapters/git/excludes.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { excludesFileEnv, SANDBOX_PLACEHOLDERS } from '../../src/core/sandbox/sandbox-placeholders.ts';
import { afterEachCleanups, runGit, tempGitRepo, withoutMachineGitConfig } from '../support/git-repo.ts';

withoutMachineGitConfig();
const cleanups = afterEachCleanups();
const support = await sandboxSupport();

async function tempDir(name: string): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), `foreman-${name}-`)));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('excludesFileEnv', () => {
  it('sets core.excludesFile through GIT_CONFIG_COUNT, after any settings the environment already carries', () => {
    expect(excludesFileEnv({}, '/x')).toEqual({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.excludesFile', GIT_CONFIG_VALUE_0: '/x' });
    expect(excludesFileEnv({ GIT_CONFIG_COUNT: '2' }, '/x')).toEqual({
      GIT_CONFIG_COUNT: '3',
      GIT_CONFIG_KEY_2: 'core.excludesFile',
      GIT_CONFIG_VALUE_2: '/x',
    });
  });

  it('lists every placeholder file, each anchored at the top of the checkout', async () => {
    const home = await tempDir('excludes-home');
    const repo = await tempGitRepo({ 'a.txt': 'a\n' });
    cleanups.push(repo.cleanup);
    const file = await writeWorkerExcludes(repo.dir, path.join(home, 'git-excludes'), { HOME: home });
    for (const name of SANDBOX_PLACEHOLDERS) expect(await readFile(file, 'utf8')).toContain(`\n/${name}\n`);
  });
});

describe('writeWorkerExcludes', () => {
  it("keeps the person's own global patterns: core.excludesFile when set, else the XDG default", async () => {
    const home = await tempDir('excludes-home');
    const repo = await tempGitRepo({ 'a.txt': 'a\n' });
    cleanups.push(repo.cleanup);
    await mkdir(path.join(home, 'xdg', 'git'), { recursive: true });
    await writeFile(path.join(home, 'xdg', 'git', 'ignore'), '*.xdg-ignored');
    const byDefault = await writeWorkerExcludes(repo.dir, path.join(home, 'one'), { HOME: home, XDG_CONFIG_HOME: path.join(home, 'xdg') });
    expect(await readFile(byDefault, 'utf8')).toMatch(/^\*\.xdg-ignored\n# foreman: /);

    await writeFile(path.join(home, 'mine.ignore'), '*.secret\n');
    await repo.git(['config', 'core.excludesFile', path.join(home, 'mine.ignore')]);
    const configured = await writeWorkerExcludes(repo.dir, path.join(home, 'two'), { HOME: home });
    expect(await readFile(configured, 'utf8')).toMatch(/^\*\.secret\n# foreman: /);
  });
});

describe.runIf(support.ok)("a sandboxed command's git", () => {
  it("sees no placeholder and adds everything else, in a clone slot and in a linked worktree, with the person's patterns still applied and their .git untouched", async () => {
    const home = await tempDir('excludes-home');
    const repo = await tempGitRepo({ 'a.txt': 'a\n' });
    cleanups.push(repo.cleanup);
    await writeFile(path.join(home, 'mine.ignore'), '*.secret\n');
    await repo.git(['config', 'core.excludesFile', path.join(home, 'mine.ignore')]);
    const excludeBefore = await readFile(path.join(repo.dir, '.git', 'info', 'exclude'), 'utf8').catch(() => null);
    const file = await writeWorkerExcludes(repo.dir, path.join(home, 'git-excludes'), { HOME: home });
    const places = await tempDir('excludes-places');
    const slot = path.join(places, 'slot');
    await runGit(places, ['clone', '-q', '--shared', repo.dir, slot]);
    const linked = path.join(places, 'linked');
    await repo.git(['worktree', 'add', '-q', '--detach', linked]);

    for (const dir of [slot, linked]) {
      await writeFile(path.join(dir, 'new.txt'), 'new\n');
      await writeFile(path.join(dir, 'key.secret'), 'shh\n');
      // The clone slot's git directory is inside it (writable); a linked worktree's is the person's (read-only in the sandbox).
      const add = dir === slot ? ' && git add -A && echo ADDED' : '';
      const command = `git status --porcelain${add}`;
      const sandbox = { writable: [dir], allowedDomains: [] };
      const bare = await runShell(command, { cwd: dir, timeoutMs: 60_000, sandbox });
      // Without it, the sandbox's placeholders show (the failure this guards against).
      expect(bare.output, dir).toMatch(/\?\? \.bashrc/);
      const hidden = await runShell(command, { cwd: dir, timeoutMs: 60_000, sandbox, env: excludesFileEnv(process.env, file) });
      expect(hidden.exitCode, hidden.output).toBe(0);
      const listed = hidden.output.split('\n').filter((line) => line.startsWith('??') || line.startsWith('A '));
      expect(listed, dir).toEqual(['?? new.txt']);
      if (dir === slot) expect(hidden.output).toContain('ADDED');
    }
    expect(await readFile(path.join(repo.dir, '.git', 'info', 'exclude'), 'utf8').catch(() => null)).toBe(excludeBefore);
  });
});
