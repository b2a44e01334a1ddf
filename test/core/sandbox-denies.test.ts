// The person's Read and Edit deny rules as a worker's sandbox settings (src/core/sandbox/sandbox-denies.ts):
// which paths each rule names, and which rules the sandbox runtime could not hold exactly. That
// the runtime then refuses the reads and writes is test/cli/hook.test.ts's.

import { describe, expect, it } from 'vitest';
import { heldDenies, pathsToResolve, rulePaths, runtimeWritable, sandboxDenies } from '../../src/core/sandbox/sandbox-denies.ts';

const repo = '/r/repo';
const worktree = `${repo}/.claude/worktrees/agent-a1`;
const home = '/home/me';
const ctx = { roots: [repo, worktree], home, writable: [worktree, '/cache/tmp/a1', ...runtimeWritable(home)] };

describe('rulePaths', () => {
  it('reads a path as Claude Code’s sandbox does: // from the root, ~/ in the home folder, anything else under each root', () => {
    expect(rulePaths('//etc/secret', ctx)).toEqual({ ok: true, value: ['/etc/secret'] });
    expect(rulePaths('//etc/../var/x/', ctx)).toEqual({ ok: true, value: ['/var/x'] });
    expect(rulePaths('~/.aws/credentials', ctx)).toEqual({ ok: true, value: ['/home/me/.aws/credentials'] });
    expect(rulePaths('~', ctx)).toEqual({ ok: true, value: ['/home/me'] });
    for (const spec of ['./.env', '.env', '/.env']) expect(rulePaths(spec, ctx), spec).toEqual({ ok: true, value: [`${repo}/.env`, `${worktree}/.env`] });
    expect(rulePaths('**/*.pem', ctx)).toEqual({ ok: true, value: [`${repo}/**/*.pem`, `${worktree}/**/*.pem`] });
    // A trailing slash goes: the runtime refuses a deny glob ending in one.
    expect(rulePaths('build/*/', ctx)).toEqual({ ok: true, value: [`${repo}/build/*`, `${worktree}/build/*`] });
  });

  it('refuses what the runtime would not read as the rule means', () => {
    for (const spec of ['', ' .env', '.env ', '\\[id\\].ts', '~root/x']) expect(rulePaths(spec, ctx).ok, JSON.stringify(spec)).toBe(false);
  });
});

describe('sandboxDenies', () => {
  it('takes Read deny rules into denyRead, globs included, and leaves the rules of other tools out', () => {
    expect(sandboxDenies(['Read(./.env)', 'Read(**/*.pem)', 'Read(~/.ssh/**)', 'Bash(rm:*)', 'WebFetch', 'mcp__x'], ctx)).toEqual({
      ok: true,
      value: { denyRead: [`${repo}/.env`, `${worktree}/.env`, `${repo}/**/*.pem`, `${worktree}/**/*.pem`, '/home/me/.ssh/**'], denyWrite: [] },
    });
  });

  it('takes Edit, Write and NotebookEdit deny rules into denyWrite where the worker may write; elsewhere nothing is writable anyway', () => {
    expect(
      sandboxDenies(
        [
          'Edit(./package-lock.json)',
          'Write(dist/**)',
          'NotebookEdit(//r/repo/.claude/worktrees/agent-a1/n.ipynb)',
          'Edit(~/.bashrc)',
          'Edit(~/.config/*)',
          'Edit(//etc/**)',
        ],
        ctx,
      ),
    ).toEqual({
      ok: true,
      value: { denyRead: [], denyWrite: [`${worktree}/package-lock.json`, `${worktree}/dist`, `${worktree}/n.ipynb`] },
    });
    // The runtime's own writable folders count as the worker's.
    expect(sandboxDenies(['Edit(~/.npm/_logs/x.log)'], ctx)).toEqual({ ok: true, value: { denyRead: [], denyWrite: ['/home/me/.npm/_logs/x.log'] } });
  });

  it('names the first rule the runtime could not hold exactly, and why', () => {
    const cases: Array<[string, RegExp]> = [
      ['Read', /every file/],
      ['Edit', /every file/],
      ['Read(//**/*.pem)', /the whole file system/],
      ['Read(//*)', /the whole file system/],
      ['Edit(**/*.lock)', /a pattern, which the sandbox runtime cannot deny writes to/],
      ['Edit(//**/*.lock)', /a pattern, which the sandbox runtime cannot deny writes to/],
      ['Edit(//r/repo/**)', /a folder holding the worker's own/],
      ['Edit(~/.claude/**)', /a folder holding the worker's own/],
      ['Read(~other/x)', /another user/],
    ];
    for (const [rule, why] of cases) {
      const denies = sandboxDenies(['Read(./.env)', rule], ctx);
      expect(denies.ok, rule).toBe(false);
      if (!denies.ok) expect(denies.error, rule).toMatch(why);
    }
  });
});

describe('through symlinks', () => {
  // `/home/me` is a link to `/data/me`; the repository is named by its real path, under it.
  const realRepo = '/data/me/repo';
  const realWorktree = `${realRepo}/.claude/worktrees/agent-a1`;
  const linked = { roots: [realRepo, realWorktree], home, writable: [realWorktree, '/cache/tmp/a1'] };
  const real = new Map([
    ['/home/me/repo', realRepo],
    ['/home/me/repo/.claude/worktrees/agent-a1/locked.txt', `${realWorktree}/locked.txt`],
    ['/home/me/.aws', '/data/me/.aws'],
  ]);

  it('names the folders whose real paths the decision needs: each rule’s literal base, and where the worker may write', () => {
    expect(pathsToResolve(['Edit(~/repo/**)', 'Read(~/.aws/**)', 'Read(**/*.pem)', 'Bash(rm:*)', 'Read'], linked)).toEqual([
      '/home/me/repo',
      '/home/me/.aws',
      realRepo,
      realWorktree,
      '/cache/tmp/a1',
    ]);
  });

  it('compares a rule spelled through a symlink by its real path: a folder holding the worktree is not "outside what the worker may write"', () => {
    expect(sandboxDenies(['Edit(~/repo/**)'], linked)).toEqual({ ok: true, value: { denyRead: [], denyWrite: [] } });
    const denies = sandboxDenies(['Edit(~/repo/**)'], { ...linked, real });
    expect(denies.ok).toBe(false);
    if (!denies.ok) expect(denies.error).toMatch(/a folder holding the worker's own/);
    expect(sandboxDenies(['Edit(~/repo/.claude/worktrees/agent-a1/locked.txt)', 'Read(~/.aws/**)'], { ...linked, real })).toEqual({
      ok: true,
      value: { denyRead: ['/data/me/.aws/**'], denyWrite: [`${realWorktree}/locked.txt`] },
    });
  });
});

describe('heldDenies', () => {
  it('gives the entries of every rule the sandbox holds, and names each one it cannot hold, once', () => {
    expect(heldDenies(['Read(~/.aws/**)', 'Read', 'Edit(**/*.lock)', 'Read(//**/*.pem)', 'Edit(./package-lock.json)', 'Read(~/.aws/**)'], ctx)).toEqual({
      denies: { denyRead: ['/home/me/.aws/**'], denyWrite: [`${worktree}/package-lock.json`] },
      unheld: [
        'Read: every file',
        'Edit(**/*.lock): a pattern, which the sandbox runtime cannot deny writes to (on Linux it binds whole paths only)',
        'Read(//**/*.pem): a pattern over the whole file system',
      ],
    });
  });
});
