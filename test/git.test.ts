import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Git } from '../src/adapters/git.ts';
import { type GitFailure, buildMessage, describeGitFailure, normalizeRepoPath } from '../src/core/git-text.ts';
import type { Result } from '../src/core/failure.ts';
import { tempGitRepo, type TempGitRepo, withoutMachineGitConfig } from './support/git-repo.ts';

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

const read = (r: TempGitRepo, p: string) => readFile(path.join(r.dir, p), 'utf8');
const has = (r: TempGitRepo, p: string) => existsSync(path.join(r.dir, p));
const lines = (s: string) => s.split('\n').filter(Boolean);
const shortStatus = async (r: TempGitRepo) => lines(await r.git(['status', '--porcelain=v1', '-uall'])).sort();

/** The value of a git step these tests expect to succeed. */
async function succeeded<T>(step: Promise<Result<T, GitFailure>>): Promise<T> {
  const r = await step;
  if (!r.ok) throw new Error(describeGitFailure(r.error));
  return r.value;
}
const committed = succeeded;
const restored = succeeded;

const ODD = ['sp ace.txt', 'ünï ✓.md', 'q"uote\'s.txt', 'src/[id].ts', 'tab\there.txt'];

describe('repository basics', () => {
  it('isRepo, root and headCommit', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    const g = new Git(r.dir);
    expect(await g.isRepo()).toBe(true);
    expect(await g.root()).toBe(r.dir);
    expect(await new Git(path.join(r.dir, 'sub')).root()).toBe(r.dir);
    expect(await g.headCommit()).toBe((await r.git(['rev-parse', 'HEAD'])).trim());

    const plain = await mkdtemp(path.join(os.tmpdir(), 'foreman-nogit-'));
    try {
      expect(await new Git(plain).isRepo()).toBe(false);
      await expect(new Git(plain).root()).rejects.toThrow();
    } finally {
      await rm(plain, { recursive: true, force: true });
    }
    expect(await new Git(path.join(plain, 'does-not-exist')).isRepo()).toBe(false);
  });

  it('headCommit is null on an unborn branch', async () => {
    const r = await repo({ 'a.txt': 'a\n' }, { unborn: true });
    const g = new Git(r.dir);
    expect(await g.isRepo()).toBe(true);
    expect(await g.headCommit()).toBeNull();
    expect(await g.existsInHead('a.txt')).toBe(false);
    expect(await g.commitsWithTrailer('Foreman-Tasks')).toEqual([]);
  });

  it('runs concurrent calls independently, failing ones included', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n', 'b.txt': 'b\n' });
    const results = await Promise.all([
      g.commitsWithTrailer('Foreman-Tasks', 'no-such-revision').catch((e: unknown) => e),
      g.headCommit(),
      g.changedPaths(['a.txt', 'b.txt']),
      g.existsInHead('a.txt'),
      g.isTracked('b.txt'),
    ]);
    expect(results[0]).toBeInstanceOf(Error);
    expect(results[1]).toMatch(/^[0-9a-f]{40}$/);
    expect(Object.fromEntries(results[2] as Map<string, string>)).toEqual({ 'a.txt': 'modified', 'b.txt': 'untracked' });
    expect(results.slice(3)).toEqual([true, false]);
  });

  it('refuses paths outside the repository or inside .git', () => {
    for (const bad of ['', '.', './', '..', '../x', 'a/../../x', '/etc/passwd', '.git', '.git/config', '.GIT/hooks/']) {
      expect(() => normalizeRepoPath(bad), bad).toThrow();
    }
    expect(normalizeRepoPath('./a//b/')).toBe('a/b/');
    expect(normalizeRepoPath('a/./b.ts')).toBe('a/b.ts');
    expect(normalizeRepoPath('.github/x.yml')).toBe('.github/x.yml');
  });

  it('a bare path names one file, never a directory (the rule of core/paths.ts coveredBy)', async () => {
    const r = await repo({ 'd/a.txt': 'a\n', 'dd/b.txt': 'b\n' });
    const g = new Git(r.dir);
    await r.write({ 'd/a.txt': 'changed\n', 'd/new.txt': 'new\n', 'dd/b.txt': 'mine\n' });
    expect([...(await g.changedPaths(['d'])).keys()]).toEqual([]);
    expect([...(await g.changedPaths(['d/'])).keys()].sort()).toEqual(['d/a.txt', 'd/new.txt']);
    expect([...(await g.changesOutside(['d'])).keys()].sort()).toEqual(['d/a.txt', 'd/new.txt', 'dd/b.txt']);
    expect(await g.isTracked('d')).toBe(false);
    expect(await g.isTracked('d/')).toBe(true);
    // Neither restore nor commit reaches into the directory through a bare `d`.
    await restored(g.restore(['d']));
    expect(await committed(g.commit({ paths: ['d'], message: 'x' }))).toBeNull();
    expect(await read(r, 'd/a.txt')).toBe('changed\n');
    expect(await read(r, 'd/new.txt')).toBe('new\n');
    await restored(g.restore(['d/']));
    expect(await read(r, 'd/a.txt')).toBe('a\n');
    expect(has(r, 'd/new.txt')).toBe(false);
    expect(await read(r, 'dd/b.txt')).toBe('mine\n');
  });
});

describe('changedPaths', () => {
  it('detects modified, deleted, added and untracked files, for files and dir/ paths', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'd/one.txt': '1\n', 'd/sub/two.txt': '2\n', 'other.txt': 'o\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n', 'd/sub/two.txt': 'TWO\n', 'd/new/deep/n.txt': 'n\n', 'c.txt': 'c\n', 'staged.txt': 's\n', 'other.txt': 'O\n' });
    await unlink(path.join(r.dir, 'b.txt'));
    await unlink(path.join(r.dir, 'd/one.txt'));
    await r.git(['add', 'staged.txt']);

    const m = await g.changedPaths(['a.txt', 'b.txt', 'c.txt', 'staged.txt', 'd/', 'missing.txt']);
    expect(Object.fromEntries(m)).toEqual({
      'a.txt': 'modified',
      'b.txt': 'deleted',
      'c.txt': 'untracked',
      'staged.txt': 'added',
      'd/one.txt': 'deleted',
      'd/sub/two.txt': 'modified',
      'd/new/deep/n.txt': 'untracked', // -uall: the file, not the directory
    });
    expect(m.has('other.txt')).toBe(false);
    expect((await g.changedPaths([])).size).toBe(0);
  });

  it('reports staged modifications and deletions', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n' });
    await r.git(['add', 'a.txt']);
    await r.git(['rm', '-q', 'b.txt']);
    expect(Object.fromEntries(await g.changedPaths(['a.txt', 'b.txt']))).toEqual({ 'a.txt': 'modified', 'b.txt': 'deleted' });
    // Deleted in the index and re-created on disk: a modification.
    await r.write({ 'b.txt': 'again\n' });
    expect((await g.changedPaths(['b.txt'])).get('b.txt')).toBe('modified');
  });

  it('works on an unborn branch', async () => {
    const r = await repo({ 'staged.txt': 's\n', 'd/u.txt': 'u\n' }, { unborn: true });
    const g = new Git(r.dir);
    await r.git(['add', 'staged.txt']);
    expect(Object.fromEntries(await g.changedPaths(['staged.txt', 'd/']))).toEqual({
      'staged.txt': 'added',
      'd/u.txt': 'untracked',
    });
  });

  it('handles odd file names and treats them literally (no globbing)', async () => {
    const r = await repo(Object.fromEntries(ODD.map((p) => [p, 'x\n'])));
    const g = new Git(r.dir);
    await r.write({ ...Object.fromEntries(ODD.map((p) => [p, 'changed\n'])), 'src/i.ts': 'glob bait\n', 'new ✓ file.txt': 'n\n' });
    const m = await g.changedPaths([...ODD, 'new ✓ file.txt']);
    expect(Object.fromEntries(m)).toEqual({ ...Object.fromEntries(ODD.map((p) => [p, 'modified'])), 'new ✓ file.txt': 'untracked' });
    expect(m.has('src/i.ts')).toBe(false);
  });

  it('ignores gitignored files and lists everything with allChanges/diffNames/changesOutside', async () => {
    const r = await repo({ '.gitignore': 'dist/\n', 'a.txt': 'a\n', 'src/x.ts': 'x\n' });
    const g = new Git(r.dir);
    await r.write({ 'dist/out.js': 'o\n', 'a.txt': 'A\n', 'src/x.ts': 'X\n', 'src/y.ts': 'y\n', 'notes.md': 'n\n' });
    expect(await g.diffNames()).toEqual(['a.txt', 'notes.md', 'src/x.ts', 'src/y.ts']);
    expect(Object.fromEntries(await g.changesOutside(['src/', 'a.txt']))).toEqual({ 'notes.md': 'untracked' });
    expect((await g.changedPaths(['dist/'])).size).toBe(0);
  });
});

describe('repository state', () => {
  it('operationInProgress finds a merge, rebase, cherry-pick, revert or bisect, in a linked worktree too', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    expect(await g.operationInProgress()).toBeNull();
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
      expect(await g.operationInProgress(), marker).toBe(operation);
      await rm(at, { recursive: true });
    }
    const linked = `${r.dir}-linked`;
    await r.git(['worktree', 'add', '-q', '-b', 'side', linked]);
    try {
      const w = new Git(linked);
      const linkedGitDir = (await r.git(['-C', linked, 'rev-parse', '--absolute-git-dir'])).trim();
      await writeFile(path.join(linkedGitDir, 'MERGE_HEAD'), `${head}\n`);
      expect(await w.operationInProgress()).toBe('merge');
      expect(await g.operationInProgress()).toBeNull();
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
});

describe('isTracked / existsInHead', () => {
  it('tells index and HEAD apart', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'd/x.txt': 'x\n', 'sp ace.txt': 's\n' });
    const g = new Git(r.dir);
    await r.write({ 'new.txt': 'n\n', 'untracked.txt': 'u\n' });
    await r.git(['add', 'new.txt']);
    expect(await g.isTracked('a.txt')).toBe(true);
    expect(await g.isTracked('new.txt')).toBe(true);
    expect(await g.isTracked('untracked.txt')).toBe(false);
    expect(await g.isTracked('d/')).toBe(true);
    expect(await g.existsInHead('a.txt')).toBe(true);
    expect(await g.existsInHead('sp ace.txt')).toBe(true);
    expect(await g.existsInHead('new.txt')).toBe(false);
    expect(await g.existsInHead('d/')).toBe(true);
    expect(await g.existsInHead('d/nope.txt')).toBe(false);
    expect(await g.existsInHead('nope/')).toBe(false);
  });
});

describe('restore', () => {
  it('restores modified and created files and leaves everything else alone', async () => {
    const r = await repo({ 'task.txt': 'orig\n', 'gone.txt': 'g\n', 'mine.txt': 'mine\n', 'staged-mine.txt': 'sm\n', 'keep/x.txt': 'x\n' });
    const g = new Git(r.dir);
    // The task's changes.
    await r.write({ 'task.txt': 'task edit\n', 'created.txt': 'c\n', 'created-staged.txt': 'cs\n' });
    await r.git(['add', 'created-staged.txt']);
    await unlink(path.join(r.dir, 'gone.txt'));
    // A person's own work, elsewhere.
    await r.write({ 'mine.txt': 'my uncommitted edit\n', 'staged-mine.txt': 'my staged edit\n', 'my-new.txt': 'mine too\n' });
    await r.git(['add', 'staged-mine.txt']);

    await restored(g.restore(['task.txt', 'created.txt', 'created-staged.txt', 'gone.txt', 'never-existed.txt']));

    expect(await read(r, 'task.txt')).toBe('orig\n');
    expect(await read(r, 'gone.txt')).toBe('g\n');
    expect(has(r, 'created.txt')).toBe(false);
    expect(has(r, 'created-staged.txt')).toBe(false);
    expect(await read(r, 'mine.txt')).toBe('my uncommitted edit\n');
    expect(await read(r, 'staged-mine.txt')).toBe('my staged edit\n');
    expect(await read(r, 'my-new.txt')).toBe('mine too\n');
    expect(await shortStatus(r)).toEqual([' M mine.txt', '?? my-new.txt', 'M  staged-mine.txt']);
  });

  it('restores a staged modification of a declared file in the index too', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    await r.write({ 'a.txt': 'staged\n' });
    await r.git(['add', 'a.txt']);
    await r.write({ 'a.txt': 'worktree\n' });
    await restored(new Git(r.dir).restore(['a.txt']));
    expect(await read(r, 'a.txt')).toBe('a\n');
    expect(await shortStatus(r)).toEqual([]);
  });

  it('restores a dir/ path: files of HEAD back, new files (and emptied directories) gone', async () => {
    const r = await repo({ 'd/a.txt': 'a\n', 'd/sub/b.txt': 'b\n', 'd2/z.txt': 'z\n', 'dd.txt': 'dd\n' });
    const g = new Git(r.dir);
    await r.write({ 'd/a.txt': 'A\n', 'd/new/deeper/n.txt': 'n\n', 'd/staged-new.txt': 's\n', 'd2/z.txt': 'mine\n', 'dd.txt': 'mine\n' });
    await r.git(['add', 'd/staged-new.txt']);
    await rm(path.join(r.dir, 'd/sub'), { recursive: true });

    await restored(g.restore(['d/']));

    expect(await read(r, 'd/a.txt')).toBe('a\n');
    expect(await read(r, 'd/sub/b.txt')).toBe('b\n');
    expect(has(r, 'd/staged-new.txt')).toBe(false);
    expect(has(r, 'd/new')).toBe(false);
    expect(await shortStatus(r)).toEqual([' M d2/z.txt', ' M dd.txt']);
  });

  it('removes a created directory entirely, and never an ignored file, even one named exactly', async () => {
    const r = await repo({ '.gitignore': '*.log\n.env\n', 'a.txt': 'a\n' });
    await r.write({ 'pkg/src/index.ts': 'x\n', 'pkg/debug.log': 'ignored, not named\n', 'named.log': 'named\n', '.env': 'SECRET=1\n' });
    await restored(new Git(r.dir).restore(['pkg/', 'named.log', '.env']));
    expect(has(r, 'pkg/src')).toBe(false);
    expect(await read(r, 'pkg/debug.log')).toBe('ignored, not named\n');
    expect(await read(r, 'named.log')).toBe('named\n');
    expect(await read(r, '.env')).toBe('SECRET=1\n');
  });

  it('never removes a file through a symlinked directory inside the repository', async () => {
    const r = await repo({ 'real/kept.txt': 'tracked\n', 'a.txt': 'a\n' });
    const { symlink } = await import('node:fs/promises');
    await symlink('real', path.join(r.dir, 'alias'));
    await r.git(['add', 'alias']);
    await r.git(['commit', '-q', '-m', 'alias']);
    await r.write({ 'real/untracked.txt': 'mine\n' });
    // `alias/kept.txt` is not a file git knows; through the link it is real/kept.txt.
    await restored(new Git(r.dir).restore(['alias/kept.txt', 'alias/untracked.txt', 'alias/']));
    expect(await read(r, 'real/kept.txt')).toBe('tracked\n');
    expect(await read(r, 'real/untracked.txt')).toBe('mine\n');
    expect((await stat(path.join(r.dir, 'alias'))).isDirectory()).toBe(true);
  });

  it('restores a tracked symlink itself, never what it points to', async () => {
    const r = await repo({ 'target.txt': 'precious\n' });
    const { symlink, readlink } = await import('node:fs/promises');
    await symlink('target.txt', path.join(r.dir, 'link.txt'));
    await r.git(['add', 'link.txt']);
    await r.git(['commit', '-q', '-m', 'link']);
    await rm(path.join(r.dir, 'link.txt'));
    await writeFile(path.join(r.dir, 'link.txt'), 'a task replaced the link\n');
    await restored(new Git(r.dir).restore(['link.txt']));
    expect(await readlink(path.join(r.dir, 'link.txt'))).toBe('target.txt');
    expect(await read(r, 'target.txt')).toBe('precious\n');
  });

  it('ignoredPaths names the rule, skips tracked files and negated rules', async () => {
    const r = await repo({ '.gitignore': '.env\nbuild/\n*.log\n!keep.log\n', 'tracked.log': 'x\n' }, {});
    await r.git(['add', '-f', 'tracked.log']);
    const g = new Git(r.dir);
    expect(await g.ignoredPaths(['.env', 'build/', 'build/out.js', 'keep.log', 'tracked.log', 'src/a.ts', 'sp ace.log'])).toEqual([
      { path: '.env', rule: '.gitignore:1:.env' },
      { path: 'build/', rule: '.gitignore:2:build/' },
      { path: 'build/out.js', rule: '.gitignore:2:build/' },
      { path: 'sp ace.log', rule: '.gitignore:3:*.log' },
    ]);
    expect(await g.ignoredPaths([])).toEqual([]);
    expect(await g.ignoredPaths(['src/a.ts'])).toEqual([]);
  });

  it('works on an unborn branch', async () => {
    const r = await repo({ 'mine.txt': 'mine\n' }, { unborn: true });
    await r.git(['add', 'mine.txt']);
    await r.write({ 'created.txt': 'c\n', 'staged.txt': 's\n', 'd/x.txt': 'x\n' });
    await r.git(['add', 'staged.txt']);
    await restored(new Git(r.dir).restore(['created.txt', 'staged.txt', 'd/']));
    expect(has(r, 'created.txt')).toBe(false);
    expect(has(r, 'staged.txt')).toBe(false);
    expect(has(r, 'd')).toBe(false);
    expect(await shortStatus(r)).toEqual(['A  mine.txt']);
  });

  it('handles odd names literally: restoring src/[id].ts leaves src/i.ts alone', async () => {
    const r = await repo(Object.fromEntries(ODD.map((p) => [p, 'orig\n'])));
    await r.write({ ...Object.fromEntries(ODD.map((p) => [p, 'changed\n'])), 'src/i.ts': 'mine\n', 'new ✓.txt': 'n\n' });
    await restored(new Git(r.dir).restore([...ODD, 'new ✓.txt']));
    for (const p of ODD) expect(await read(r, p), p).toBe('orig\n');
    expect(has(r, 'new ✓.txt')).toBe(false);
    expect(await read(r, 'src/i.ts')).toBe('mine\n');
  });

  it('never follows a symlink out of the repository', async () => {
    const outside = await mkdtemp(path.join(os.tmpdir(), 'foreman-outside-'));
    try {
      await writeFile(path.join(outside, 'precious.txt'), 'keep me\n');
      const r = await repo({ 'a.txt': 'a\n' });
      const { symlink } = await import('node:fs/promises');
      await symlink(outside, path.join(r.dir, 'link'));
      await restored(new Git(r.dir).restore(['link/precious.txt']));
      expect(await readFile(path.join(outside, 'precious.txt'), 'utf8')).toBe('keep me\n');
      await expect(restored(new Git(r.dir).restore(['../' + path.basename(outside) + '/precious.txt']))).rejects.toThrow();
      await expect(restored(new Git(r.dir).restore(['.git/HEAD']))).rejects.toThrow();
      expect(await stat(path.join(r.dir, '.git/HEAD'))).toBeTruthy();
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});

describe('commit', () => {
  const headFiles = async (r: TempGitRepo) => lines(await r.git(['show', '--name-status', '--format=', 'HEAD'])).sort();

  it('commits exactly the declared paths with trailers; other staged and unstaged work is untouched', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'gone.txt': 'g\n', 'mine.txt': 'm\n', 'staged-mine.txt': 's\n', 'd/x.txt': 'x\n' });
    const g = new Git(r.dir);
    const before = await g.headCommit();
    await r.write({ 'a.txt': 'A\n', 'new.txt': 'n\n', 'd/x.txt': 'X\n', 'd/sub/y.txt': 'y\n' });
    await unlink(path.join(r.dir, 'gone.txt'));
    await r.write({ 'mine.txt': 'my edit\n', 'staged-mine.txt': 'my staged edit\n', 'my-new.txt': 'mine\n' });
    await r.git(['add', 'staged-mine.txt']);

    const hash = await committed(g.commit({
      paths: ['a.txt', 'new.txt', 'gone.txt', 'd/', 'declared-but-never-created.txt'],
      message: 'foreman: round 1\n\nDid things.',
      trailers: { 'Foreman-Tasks': '0,2,5', 'Foreman-Plan': 'abc123' },
    }));
    expect(hash).toMatch(/^[0-9a-f]{40}$/);
    expect(hash).toBe((await r.git(['rev-parse', 'HEAD'])).trim());
    expect((await r.git(['rev-parse', 'HEAD^'])).trim()).toBe(before);
    expect(await headFiles(r)).toEqual(['A\td/sub/y.txt', 'A\tnew.txt', 'D\tgone.txt', 'M\ta.txt', 'M\td/x.txt']);
    expect(await r.git(['log', '-1', '--format=%(trailers:key=Foreman-Tasks,valueonly)'])).toBe('0,2,5\n\n');
    expect(await r.git(['log', '-1', '--format=%(trailers:key=Foreman-Plan,valueonly)'])).toBe('abc123\n\n');
    expect(await r.git(['log', '-1', '--format=%B'])).toBe('foreman: round 1\n\nDid things.\n\nForeman-Tasks: 0,2,5\nForeman-Plan: abc123\n\n');
    // The person's work: still staged / still modified / still untracked, and not in the commit.
    expect(await shortStatus(r)).toEqual([' M mine.txt', '?? my-new.txt', 'M  staged-mine.txt']);
    expect(await r.git(['diff', '--cached'])).toContain('+my staged edit');
    expect(await read(r, 'staged-mine.txt')).toBe('my staged edit\n');
    // Kept the repository's identity.
    expect((await r.git(['log', '-1', '--format=%an <%ae>|%cn <%ce>'])).trim()).toBe('Test Person <person@example.com>|Test Person <person@example.com>');
  });

  it('returns null when there is nothing to commit', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    await r.write({ 'other.txt': 'o\n' });
    const head = await g.headCommit();
    expect(await committed(g.commit({ paths: ['a.txt', 'missing.txt'], message: 'x' }))).toBeNull();
    expect(await committed(g.commit({ paths: [], message: 'x' }))).toBeNull();
    // Added then deleted before committing: nothing.
    await r.write({ 'tmp.txt': 't\n' });
    await r.git(['add', 'tmp.txt']);
    await unlink(path.join(r.dir, 'tmp.txt'));
    expect(await committed(g.commit({ paths: ['tmp.txt'], message: 'x' }))).toBeNull();
    expect(await g.headCommit()).toBe(head);
    expect(await shortStatus(r)).toEqual(['?? other.txt']);
  });

  it('commits a staged deletion and a file the task staged itself', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const g = new Git(r.dir);
    await r.git(['rm', '-q', 'a.txt']);
    await r.write({ 'b.txt': 'B\n' });
    await r.git(['add', 'b.txt']);
    await r.write({ 'b.txt': 'B2\n' });
    expect(await committed(g.commit({ paths: ['a.txt', 'b.txt'], message: 'x' }))).not.toBeNull();
    expect(await headFiles(r)).toEqual(['D\ta.txt', 'M\tb.txt']);
    expect(await r.git(['show', 'HEAD:b.txt'])).toBe('B2\n'); // the working tree, not the older staged copy
    expect(await shortStatus(r)).toEqual([]);
  });

  it('commits on an unborn branch, leaving the person’s staged file staged', async () => {
    const r = await repo({ 'mine.txt': 'mine\n' }, { unborn: true });
    const g = new Git(r.dir);
    await r.git(['add', 'mine.txt']);
    await r.write({ 'out.txt': 'o\n' });
    const hash = await committed(g.commit({ paths: ['out.txt'], message: 'first', trailers: [['Foreman-Tasks', '0']] }));
    expect(hash).not.toBeNull();
    expect(await headFiles(r)).toEqual(['A\tout.txt']);
    expect(await shortStatus(r)).toEqual(['A  mine.txt']);
  });

  it('commits odd file names', async () => {
    const r = await repo({ 'src/i.ts': 'i\n' });
    const g = new Git(r.dir);
    await r.write({ ...Object.fromEntries(ODD.map((p) => [p, 'x\n'])), 'src/i.ts': 'mine\n' });
    expect(await committed(g.commit({ paths: ODD, message: 'odd' }))).not.toBeNull();
    const inCommit = lines(await r.git(['show', '-z', '--name-only', '--format=', 'HEAD']).then((s) => s.replaceAll('\0', '\n')));
    expect(inCommit.sort()).toEqual([...ODD].sort());
    expect(await shortStatus(r)).toEqual([' M src/i.ts']);
  });

  it('uses foreman’s identity only when the repository has none', async () => {
    const r = await repo({ 'a.txt': 'a\n' }, { identity: false });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n' });
    expect(await committed(g.commit({ paths: ['a.txt'], message: 'x' }))).not.toBeNull();
    expect((await r.git(['log', '-1', '--format=%an <%ae>|%cn <%ce>'])).trim()).toBe('foreman <foreman@localhost>|foreman <foreman@localhost>');
    // Configuring does not stick to the repository.
    await expect(r.git(['config', 'user.name'])).rejects.toThrow();

    // Only the missing half is filled in.
    await r.git(['config', 'user.name', 'Half Configured']);
    await r.write({ 'a.txt': 'AA\n' });
    await committed(g.commit({ paths: ['a.txt'], message: 'y' }));
    expect((await r.git(['log', '-1', '--format=%an <%ae>'])).trim()).toBe('Half Configured <foreman@localhost>');
  });

  it('runs commit hooks unless verify is false', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    const hook = path.join(r.dir, '.git/hooks/pre-commit');
    await mkdir(path.dirname(hook), { recursive: true });
    await writeFile(hook, '#!/bin/sh\necho "hook says no" >&2\nexit 1\n', { mode: 0o755 });
    await r.write({ 'a.txt': 'A\n' });
    const refused = await g.commit({ paths: ['a.txt'], message: 'x' });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(describeGitFailure(refused.error)).toMatch(/^git commit failed \(exit 1\): hook says no/);
    expect(await shortStatus(r)).toEqual([' M a.txt']); // nothing left staged
    expect(await committed(g.commit({ paths: ['a.txt'], message: 'x', verify: false }))).not.toBeNull();
  });

  it('runs no hook at all when verify is false: a failing prepare-commit-msg does not stop it', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    const hook = path.join(r.dir, '.git/hooks/prepare-commit-msg');
    await mkdir(path.dirname(hook), { recursive: true });
    await writeFile(hook, `#!/bin/sh\ntouch "${r.dir}/hook-ran"\necho "prepare says no" >&2\nexit 1\n`, { mode: 0o755 });
    await r.write({ 'a.txt': 'A\n' });
    // Plain git runs it even with --no-verify (what foreman did before).
    await expect(r.git(['commit', '--no-verify', '-q', '-am', 'plain'])).rejects.toThrow(/prepare says no/);
    await r.git(['reset', '-q']);
    await rm(path.join(r.dir, 'hook-ran'), { force: true });
    expect(await committed(g.commit({ paths: ['a.txt'], message: 'x', trailers: { 'Foreman-Tasks': '0' }, verify: false }))).not.toBeNull();
    expect(has(r, 'hook-ran')).toBe(false);
    expect(await r.git(['log', '-1', '--format=%(trailers:key=Foreman-Tasks,valueonly)'])).toContain('0');
    const refused = await g.commit({ paths: ['a.txt'], message: 'y' });
    expect(refused.ok).toBe(true); // nothing left to commit: the hook was not even needed
  });

  it('a failed commit leaves nothing staged: index entries go back to what they were, the person’s staged work stays', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'gone.txt': 'g\n', 'mine.txt': 'm\n' });
    const g = new Git(r.dir);
    // Signing that cannot work: a realistic way for `git commit` itself to fail.
    await r.git(['config', 'commit.gpgsign', 'true']);
    await r.git(['config', 'gpg.program', 'false']);
    await r.write({ 'a.txt': 'A\n', 'new.txt': 'n\n', 'mine.txt': 'my staged edit\n' });
    await r.git(['add', 'mine.txt']);
    await unlink(path.join(r.dir, 'gone.txt'));
    const indexBefore = await r.git(['ls-files', '-s']);
    const statusBefore = await shortStatus(r);

    const failed = await g.commit({ paths: ['a.txt', 'new.txt', 'gone.txt'], message: 'x', verify: false });
    expect(failed.ok).toBe(false);
    if (!failed.ok) {
      expect(failed.error.step).toBe('commit');
      expect(describeGitFailure(failed.error)).toMatch(/^git commit failed \(exit \d+\): .*gpg/);
    }
    expect(await r.git(['ls-files', '-s'])).toBe(indexBefore);
    expect(await shortStatus(r)).toEqual(statusBefore);
    expect(await read(r, 'a.txt')).toBe('A\n');
    expect(await read(r, 'new.txt')).toBe('n\n');

    // Once signing is fixed, the same commit goes through.
    await r.git(['config', 'commit.gpgsign', 'false']);
    expect(await committed(g.commit({ paths: ['a.txt', 'new.txt', 'gone.txt'], message: 'x', verify: false }))).not.toBeNull();
    expect(await shortStatus(r)).toEqual(['M  mine.txt']);
  });

  it('a locked index is a failure value, and nothing is staged', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    await r.write({ 'a.txt': 'A\n', 'b.txt': 'b\n' });
    await writeFile(path.join(r.dir, '.git/index.lock'), '');
    const failed = await g.commit({ paths: ['a.txt', 'b.txt'], message: 'x', verify: false });
    expect(failed.ok).toBe(false);
    if (!failed.ok) expect(describeGitFailure(failed.error)).toMatch(/^git add failed .*index\.lock/);
    await rm(path.join(r.dir, '.git/index.lock'));
    expect(await shortStatus(r)).toEqual([' M a.txt', '?? b.txt']);
  });

  it('validates trailers', () => {
    expect(buildMessage('subject', { A: '1' })).toBe('subject\n\nA: 1\n');
    expect(buildMessage('subject\n\n', undefined)).toBe('subject\n');
    expect(() => buildMessage('s', { 'Bad Key': '1' })).toThrow();
    expect(() => buildMessage('s', { K: 'two\nlines' })).toThrow();
    expect(() => buildMessage('  ', {})).toThrow();
  });
});

describe('commitsWithTrailer', () => {
  it('finds commits carrying the trailer, newest first, optionally since a commit', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const g = new Git(r.dir);
    const base = await g.headCommit();
    await r.write({ 'a.txt': '1\n' });
    const c1 = await committed(g.commit({ paths: ['a.txt'], message: 'round 1', trailers: { 'Foreman-Tasks': '0,1', 'Foreman-Plan': 'p1' } }));
    await r.write({ 'a.txt': '2\n' });
    // Mentions the key in the body but has no trailer block: not a match.
    await committed(g.commit({ paths: ['a.txt'], message: 'manual\n\nForeman-Tasks: mentioned here\n\nbut not as a trailer.' }));
    await r.write({ 'a.txt': '3\n' });
    const c3 = await committed(g.commit({ paths: ['a.txt'], message: 'round 2', trailers: { 'Foreman-Tasks': '2', 'Foreman-Plan': 'p1' } }));

    const found = await g.commitsWithTrailer('Foreman-Tasks');
    expect(found).toEqual([
      { hash: c3, subject: 'round 2', values: ['2'], trailers: [{ key: 'Foreman-Tasks', value: '2' }, { key: 'Foreman-Plan', value: 'p1' }] },
      { hash: c1, subject: 'round 1', values: ['0,1'], trailers: [{ key: 'Foreman-Tasks', value: '0,1' }, { key: 'Foreman-Plan', value: 'p1' }] },
    ]);
    expect((await g.commitsWithTrailer('foreman-tasks')).map((c) => c.hash)).toEqual([c3, c1]);
    expect((await g.commitsWithTrailer('Foreman-Tasks', c1!)).map((c) => c.hash)).toEqual([c3]);
    expect((await g.commitsWithTrailer('Foreman-Tasks', base!)).length).toBe(2);
    expect(await g.commitsWithTrailer('Other-Key')).toEqual([]);
    await expect(g.commitsWithTrailer('bad key')).rejects.toThrow();
  });
});
