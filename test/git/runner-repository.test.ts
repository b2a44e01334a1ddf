import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Git } from '../../src/adapters/git/repository.ts';
import { GIT_TIME_LIMIT_ENV, gitProcessCount, PREVIOUS_OUTPUT, runGit, runGitSteps } from '../../src/adapters/git/runner.ts';
import { buildMessage, normalizeRepoPath, parseStatus, parseStatusV2 } from '../../src/core/integration/git-text.ts';
import { tempGitRepo, type TempGitRepo, withoutMachineGitConfig } from '../support/git-repo.ts';
import { succeeded } from '../support/results.ts';

// Keep the machine's own git configuration (identity, signing, hooks…) out of these tests.
withoutMachineGitConfig();

const repos: TempGitRepo[] = [];
async function repo(files?: Record<string, string>, opts?: Parameters<typeof tempGitRepo>[1]): Promise<TempGitRepo> {
  const r = await tempGitRepo(files, opts);
  repos.push(r);
  return r;
}
afterEach(async () => {
  await Promise.all(repos.splice(0).map((r) => r.cleanup()));
});

/** Commits every change with `message` and `trailers` (as git's own commit does), returning its hash. */
async function commitAll(r: TempGitRepo, message: string, trailers?: Record<string, string>): Promise<string> {
  await r.git(['add', '-A']);
  await r.git(['commit', '-q', '-m', buildMessage(message, trailers)]);
  return (await r.git(['rev-parse', 'HEAD'])).trim();
}

const ODD = ['sp ace.txt', 'ünï ✓.md', 'q"uote\'s.txt', 'src/[id].ts', 'tab\there.txt'];

describe('repository basics', () => {
  it('isRepo, root and headCommit', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    const g = new Git(r.dir);
    expect(await g.isRepo()).toBe(true);
    expect(await succeeded(g.root())).toBe(r.dir);
    expect(await succeeded(new Git(path.join(r.dir, 'sub')).root())).toBe(r.dir);
    expect(await g.headCommit()).toBe((await r.git(['rev-parse', 'HEAD'])).trim());

    const plain = await mkdtemp(path.join(os.tmpdir(), 'foreman-nogit-'));
    try {
      expect(await new Git(plain).isRepo()).toBe(false);
      // Outside a repository git cannot say: a failure, as git said it.
      expect(await new Git(plain).root()).toEqual({
        ok: false,
        error: expect.objectContaining({ step: 'rev-parse', stderr: expect.stringMatching(/not a git repository/) }),
      });
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
    expect(await new Git(path.join(plain, 'does-not-exist')).isRepo()).toBe(false);
  });

  it('isRepo learns the top in the same git process, a top whose name holds a line break included', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const odd = path.join(await mkdtemp(path.join(os.tmpdir(), 'foreman-odd-')), 'two\nlines');
    try {
      await r.git(['clone', '-q', r.dir, odd]);
      const g = new Git(odd);
      const before = gitProcessCount();
      expect(await g.isRepo()).toBe(true);
      expect(await succeeded(g.root())).toBe(odd);
      expect(gitProcessCount() - before).toBe(1);
      // Inside the git directory is not inside a working tree.
      expect(await new Git(path.join(odd, '.git')).isRepo()).toBe(false);
    } finally {
      await rm(path.dirname(odd), { recursive: true, force: true });
    }
  });

  it('headCommit is null on an unborn branch', async () => {
    const r = await repo({ 'a.txt': 'a\n' }, { unborn: true });
    const g = new Git(r.dir);
    expect(await g.isRepo()).toBe(true);
    expect(await g.headCommit()).toBeNull();
    expect(await succeeded(g.commitsWithTrailer('Foreman-Tasks'))).toEqual([]);
  });

  it('runs concurrent calls independently, failing ones included', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n', 'b.txt': 'b\n' });
    const results = await Promise.all([
      g.commitsWithTrailer('Foreman-Tasks', 'no-such-revision').catch((e: unknown) => e),
      g.headCommit(),
      succeeded(g.allChanges()),
      g.currentBranch(),
    ]);
    expect(results[0]).toBeInstanceOf(Error);
    expect(results[1]).toMatch(/^[0-9a-f]{40}$/);
    expect(Object.fromEntries(results[2] as Map<string, string>)).toEqual({ 'a.txt': 'modified', 'b.txt': 'untracked' });
    expect(results[3]).toBe('main');
  });

  it('git failing is a value of every method that needs its answer; only a bad argument throws', async () => {
    const plain = await mkdtemp(path.join(os.tmpdir(), 'foreman-nogit-'));
    try {
      const g = new Git(plain);
      const failed = { ok: false, error: expect.objectContaining({ step: 'rev-parse', exitCode: 128, stderr: expect.stringMatching(/not a git repository/) }) };
      expect(await g.root()).toEqual(failed);
      expect(await g.operationInProgress()).toEqual(failed);
      expect(await g.allChanges()).toEqual(failed);
      expect(await g.diffNames()).toEqual(failed);
      expect(await g.ignoredPaths(['a.txt'])).toEqual(failed);
      expect(await g.clearStaleIndexLock(0)).toEqual(failed);
      expect(await g.commitsWithTrailer('Foreman-Tasks', undefined, ['HEAD'])).toEqual(failed);
      await expect(g.commitsWithTrailer('bad key')).rejects.toThrow(/invalid trailer key/);
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
  });

  it('refuses paths outside the repository or inside .git', () => {
    for (const bad of ['', '.', './', '..', '../x', 'a/../../x', '/etc/passwd', '.git', '.git/config', '.GIT/hooks/']) {
      expect(() => normalizeRepoPath(bad), bad).toThrow();
    }
    expect(normalizeRepoPath('./a//b/')).toBe('a/b/');
    expect(normalizeRepoPath('a/./b.ts')).toBe('a/b.ts');
    expect(normalizeRepoPath('.github/x.yml')).toBe('.github/x.yml');
  });

  it('validates trailers', () => {
    expect(buildMessage('subject', { A: '1' })).toBe('subject\n\nA: 1\n');
    expect(buildMessage('subject\n\n', undefined)).toBe('subject\n');
    expect(() => buildMessage('s', { 'Bad Key': '1' })).toThrow();
    expect(() => buildMessage('s', { K: 'two\nlines' })).toThrow();
    expect(() => buildMessage('  ', {})).toThrow();
  });
});

describe('allChanges', () => {
  it('detects modified, deleted, added and untracked files, for files and dir/ paths', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'd/one.txt': '1\n', 'd/sub/two.txt': '2\n', 'other.txt': 'o\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n', 'd/sub/two.txt': 'TWO\n', 'd/new/deep/n.txt': 'n\n', 'c.txt': 'c\n', 'staged.txt': 's\n', 'other.txt': 'O\n' });
    await unlink(path.join(r.dir, 'b.txt'));
    await unlink(path.join(r.dir, 'd/one.txt'));
    await r.git(['add', 'staged.txt']);

    const m = await succeeded(g.allChanges());
    expect(Object.fromEntries(m)).toEqual({
      'other.txt': 'modified',
      'a.txt': 'modified',
      'b.txt': 'deleted',
      'c.txt': 'untracked',
      'staged.txt': 'added',
      'd/one.txt': 'deleted',
      'd/sub/two.txt': 'modified',
      'd/new/deep/n.txt': 'untracked', // -uall: the file, not the directory
    });
  });

  it('reports staged modifications and deletions', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n' });
    await r.git(['add', 'a.txt']);
    await r.git(['rm', '-q', 'b.txt']);
    expect(Object.fromEntries(await succeeded(g.allChanges()))).toEqual({ 'a.txt': 'modified', 'b.txt': 'deleted' });
    // Deleted in the index and re-created on disk: a modification.
    await r.write({ 'b.txt': 'again\n' });
    expect((await succeeded(g.allChanges())).get('b.txt')).toBe('modified');
  });

  it('works on an unborn branch', async () => {
    const r = await repo({ 'staged.txt': 's\n', 'd/u.txt': 'u\n' }, { unborn: true });
    const g = new Git(r.dir);
    await r.git(['add', 'staged.txt']);
    expect(Object.fromEntries(await succeeded(g.allChanges()))).toEqual({
      'staged.txt': 'added',
      'd/u.txt': 'untracked',
    });
  });

  it('handles odd file names and treats them literally (no globbing)', async () => {
    const r = await repo(Object.fromEntries(ODD.map((p) => [p, 'x\n'])));
    const g = new Git(r.dir);
    await r.write({ ...Object.fromEntries(ODD.map((p) => [p, 'changed\n'])), 'src/i.ts': 'glob bait\n', 'new ✓ file.txt': 'n\n' });
    const m = await succeeded(g.allChanges());
    expect(Object.fromEntries(m)).toEqual({ ...Object.fromEntries(ODD.map((p) => [p, 'modified'])), 'new ✓ file.txt': 'untracked', 'src/i.ts': 'untracked' });
  });

  it('ignores gitignored files; diffNames lists the changed paths, sorted', async () => {
    const r = await repo({ '.gitignore': 'dist/\n', 'a.txt': 'a\n', 'src/x.ts': 'x\n' });
    const g = new Git(r.dir);
    await r.write({ 'dist/out.js': 'o\n', 'a.txt': 'A\n', 'src/x.ts': 'X\n', 'src/y.ts': 'y\n', 'notes.md': 'n\n' });
    expect(await succeeded(g.diffNames())).toEqual(['a.txt', 'notes.md', 'src/x.ts', 'src/y.ts']);
    expect((await succeeded(g.allChanges())).has('dist/out.js')).toBe(false);
  });
});

describe('repository state', () => {
  it('operationInProgress finds a merge, rebase, cherry-pick, revert or bisect, in a linked worktree too', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    expect(await succeeded(g.operationInProgress())).toBeNull();
    const gitDir = path.join(r.dir, '.git');
    const head = (await r.git(['rev-parse', 'HEAD'])).trim();
    for (const [marker, operation] of [
      ['MERGE_HEAD', 'merge'],
      ['CHERRY_PICK_HEAD', 'cherry-pick'],
      ['REVERT_HEAD', 'revert'],
      ['BISECT_LOG', 'bisect'],
      ['rebase-merge/', 'rebase'],
      ['rebase-apply/', 'rebase'],
    ] as const) {
      const at = path.join(gitDir, marker);
      if (marker.endsWith('/')) await mkdir(at);
      else await writeFile(at, `${head}\n`);
      expect(await succeeded(g.operationInProgress()), marker).toBe(operation);
      await rm(at, { recursive: true });
    }
    const linked = `${r.dir}-linked`;
    await r.git(['worktree', 'add', '-q', '-b', 'side', linked]);
    try {
      const w = new Git(linked);
      const linkedGitDir = (await r.git(['-C', linked, 'rev-parse', '--absolute-git-dir'])).trim();
      await writeFile(path.join(linkedGitDir, 'MERGE_HEAD'), `${head}\n`);
      expect(await succeeded(w.operationInProgress())).toBe('merge');
      expect(await succeeded(g.operationInProgress())).toBeNull();
    } finally {
      await rm(linked, { recursive: true, force: true });
    }
  });

  it('currentBranch: the branch, also unborn; null when detached', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    expect(await new Git(r.dir).currentBranch()).toBe('main');
    await r.git(['checkout', '-q', '--detach']);
    expect(await new Git(r.dir).currentBranch()).toBeNull();
    const u = await repo({}, { unborn: true });
    expect(await new Git(u.dir).currentBranch()).toBe('main');
  });

  it('ignoredPaths names the rule, skips tracked files and negated rules', async () => {
    const r = await repo({ '.gitignore': '.env\nbuild/\n*.log\n!keep.log\n', 'tracked.log': 'x\n' }, {});
    await r.git(['add', '-f', 'tracked.log']);
    const g = new Git(r.dir);
    expect(await succeeded(g.ignoredPaths(['.env', 'build/', 'build/out.js', 'keep.log', 'tracked.log', 'src/a.ts', 'sp ace.log']))).toEqual([
      { path: '.env', rule: '.gitignore:1:.env' },
      { path: 'build/', rule: '.gitignore:2:build/' },
      { path: 'build/out.js', rule: '.gitignore:2:build/' },
      { path: 'sp ace.log', rule: '.gitignore:3:*.log' },
    ]);
    expect(await succeeded(g.ignoredPaths([]))).toEqual([]);
    expect(await succeeded(g.ignoredPaths(['src/a.ts']))).toEqual([]);
  });
});

describe('commitsWithTrailer', () => {
  it('finds commits carrying the trailer, newest first, optionally since a commit', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    const base = await g.headCommit();
    await r.write({ 'a.txt': '1\n' });
    const c1 = await commitAll(r, 'round 1', { 'Foreman-Tasks': '0,1', 'Foreman-Plan': 'p1' });
    await r.write({ 'a.txt': '2\n' });
    // Mentions the key in the body but has no trailer block: not a match.
    await commitAll(r, 'manual\n\nForeman-Tasks: mentioned here\n\nbut not as a trailer.');
    await r.write({ 'a.txt': '3\n' });
    const c3 = await commitAll(r, 'round 2', { 'Foreman-Tasks': '2', 'Foreman-Plan': 'p1' });

    const found = await succeeded(g.commitsWithTrailer('Foreman-Tasks'));
    expect(found).toEqual([
      {
        hash: c3,
        subject: 'round 2',
        values: ['2'],
        trailers: [
          { key: 'Foreman-Tasks', value: '2' },
          { key: 'Foreman-Plan', value: 'p1' },
        ],
      },
      {
        hash: c1,
        subject: 'round 1',
        values: ['0,1'],
        trailers: [
          { key: 'Foreman-Tasks', value: '0,1' },
          { key: 'Foreman-Plan', value: 'p1' },
        ],
      },
    ]);
    expect((await succeeded(g.commitsWithTrailer('foreman-tasks'))).map((c) => c.hash)).toEqual([c3, c1]);
    expect((await succeeded(g.commitsWithTrailer('Foreman-Tasks', c1!))).map((c) => c.hash)).toEqual([c3]);
    expect((await succeeded(g.commitsWithTrailer('Foreman-Tasks', base!))).length).toBe(2);
    expect(await succeeded(g.commitsWithTrailer('Other-Key'))).toEqual([]);
    await expect(g.commitsWithTrailer('bad key')).rejects.toThrow();
  });
});

describe('runGit, the one git runner', () => {
  it("runs none of the person's hooks, reads pathspecs literally, and counts its processes", async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    await r.write({ 'src/[id].ts': 'x\n', 'src/i.ts': 'glob bait\n' });
    // A global hook path of the person's: runGit overrides it.
    await r.git(['config', 'core.hooksPath', path.join(r.dir, 'hooks')]);
    await mkdir(path.join(r.dir, 'hooks'));
    await writeFile(path.join(r.dir, 'hooks', 'reference-transaction'), '#!/bin/sh\necho ran > "$(git rev-parse --show-toplevel)/hook-ran"\nexit 1\n', {
      mode: 0o755,
    });
    const before = gitProcessCount();
    const listed = await runGit(['ls-files', '--others', '--', 'src/[id].ts'], { cwd: r.dir });
    expect(listed.ok && listed.value).toBe('src/[id].ts\n');
    const head = (await r.git(['rev-parse', 'HEAD'])).trim();
    // update-ref runs the reference-transaction hook, which would refuse it.
    expect((await runGit(['update-ref', 'refs/foreman/probe', head], { cwd: r.dir })).ok).toBe(true);
    expect(gitProcessCount() - before).toBe(2);
    expect(existsSync(path.join(r.dir, 'hook-ran'))).toBe(false);
  });

  it('one status --porcelain=v2 --branch says what rev-parse HEAD and a v1 status say together', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'gone.txt': 'g\n', 'sp ace/b.txt': 'b\n' });
    await r.write({ 'a.txt': 'A\n', 'sp ace/b.txt': 'B\n', 'new ✓ file.txt': 'n\n', 'staged.txt': 's\n' });
    await unlink(path.join(r.dir, 'gone.txt'));
    await r.git(['add', 'staged.txt']);
    const flags = ['-z', '-uall', '--no-renames', '--ignore-submodules=none'];
    const v1 = await runGit(['status', '--porcelain=v1', ...flags], { cwd: r.dir });
    const v2 = await runGit(['status', '--porcelain=v2', '--branch', ...flags], { cwd: r.dir });
    const parsed = parseStatusV2(v2.ok ? v2.value : '');
    expect(parsed.head).toBe((await r.git(['rev-parse', 'HEAD'])).trim());
    const byPath = (a: { path: string }, b: { path: string }) => a.path.localeCompare(b.path);
    expect(parsed.entries.map(({ path, xy }) => ({ path, xy })).sort(byPath)).toEqual(parseStatus(v1.ok ? v1.value : '').sort(byPath));
    expect(parsed.entries.length).toBe(5);
  });

  it('ends a git command that outlives its time limit, naming it and the setting', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const saved = process.env[GIT_TIME_LIMIT_ENV];
    process.env[GIT_TIME_LIMIT_ENV] = '1';
    try {
      const ran = await runGit(['-c', 'alias.hang=!sleep 60', 'hang'], { cwd: r.dir });
      expect(ran.ok).toBe(false);
      expect(!ran.ok && ran.error.stderr).toMatch(
        /^`git hang` timed out after 1s \(the limit set by FOREMAN_GIT_TIMEOUT, in seconds\); its process group was ended$/,
      );
    } finally {
      if (saved === undefined) delete process.env[GIT_TIME_LIMIT_ENV];
      else process.env[GIT_TIME_LIMIT_ENV] = saved;
    }
  }, 20_000);

  it("runs steps one after another from one shell: each word as given, the last step's output, each step counted", async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const value = `it's "odd" $HOME \`x\` \\ ; end\nsecond line`;
    const before = gitProcessCount();
    const ran = await runGitSteps(
      [
        ['config', 'foreman.probe', value],
        ['config', '--get', 'foreman.probe'],
      ],
      { cwd: r.dir },
    );
    expect(ran).toEqual({ ok: true, value: `${value}\n` });
    expect(gitProcessCount() - before).toBe(2);
  });

  it('stops steps at the first that fails, with its own command, exit code and error; nothing after it runs', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const ran = await runGitSteps(
      [
        ['checkout', '-q', '--detach', 'no-such-commit'],
        ['config', 'foreman.after', 'ran'],
      ],
      { cwd: r.dir },
    );
    expect(ran.ok).toBe(false);
    if (ran.ok) return;
    expect(ran.error.args).toEqual(['checkout', '-q', '--detach', 'no-such-commit']);
    expect(ran.error.exitCode).toBe(128);
    expect(ran.error.stderr).toMatch(/no-such-commit/);
    expect(ran.error.stderr).not.toContain('foreman-failed-step');
    await expect(r.git(['config', '--get', 'foreman.after'])).rejects.toThrow();
    const last = await runGitSteps(
      [
        ['status', '-s'],
        ['rev-parse', '--verify', 'no-such-commit'],
      ],
      { cwd: r.dir },
    );
    expect(!last.ok && last.error.args[0]).toBe('rev-parse');
  });

  it("gives a step the previous step's output, stdin to the first, and keeps what ran before a failure", async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const idOf = async (content: string) => {
      const hashed = await runGit(['hash-object', '--stdin'], { cwd: r.dir, input: content });
      return hashed.ok ? hashed.value.trim() : '';
    };
    const written = await runGitSteps(
      [
        ['hash-object', '-w', '--stdin'],
        ['cat-file', '-p', PREVIOUS_OUTPUT],
      ],
      { cwd: r.dir, input: 'from stdin' },
    );
    expect(written).toEqual({ ok: true, value: `${await idOf('from stdin')}\nfrom stdin\n` });
    // The second step fails (the ref is not at the id given): its failure, and the first step's output.
    const failed = await runGitSteps(
      [
        ['hash-object', '-w', '--stdin'],
        ['update-ref', 'refs/foreman-test/x', PREVIOUS_OUTPUT, 'f'.repeat(40)],
      ],
      { cwd: r.dir, input: 'kept' },
    );
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.error.args).toEqual(['update-ref', 'refs/foreman-test/x', PREVIOUS_OUTPUT, 'f'.repeat(40)]);
    expect(failed.error.stdout).toBe(`${await idOf('kept')}\n`);
    expect(failed.error.stderr).toMatch(/refs\/foreman-test\/x/);
  });

  it('ends steps that outlive their time limit, naming them', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const saved = process.env[GIT_TIME_LIMIT_ENV];
    process.env[GIT_TIME_LIMIT_ENV] = '1';
    try {
      const ran = await runGitSteps(
        [
          ['status', '-s'],
          ['-c', 'alias.hang=!sleep 60', 'hang'],
        ],
        { cwd: r.dir },
      );
      expect(!ran.ok && ran.error.stderr).toMatch(
        /^`git status` then `git hang` timed out after 2s \(the limit set by FOREMAN_GIT_TIMEOUT, in seconds\); its process group was ended$/,
      );
    } finally {
      if (saved === undefined) delete process.env[GIT_TIME_LIMIT_ENV];
      else process.env[GIT_TIME_LIMIT_ENV] = saved;
    }
  }, 20_000);

  it('says plainly when git cannot be started, as a failure value', async () => {
    const ran = await runGit(['status'], { cwd: path.join(os.tmpdir(), `foreman-no-such-directory-${process.pid}-${Date.now()}`) });
    expect(ran.ok).toBe(false);
    expect(!ran.ok && ran.error.stderr).toMatch(/^could not run git: /);
  });
});
