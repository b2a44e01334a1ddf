import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, readFile, readdir, readlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { land, type LandingStep, type LandRequest, resumeLanding } from '../../src/adapters/git/land.ts';
import { runGit } from '../../src/adapters/git/runner.ts';
import { describeLandingProblem } from '../../src/core/integration/landing.ts';
import { afterEachCleanups, type TempGitRepo, tempRepoIn, withoutMachineGitConfig } from '../support/git-repo.ts';

// Keep the machine's own git configuration out of these tests.
withoutMachineGitConfig();

const cleanups = afterEachCleanups();
const tempRepo = tempRepoIn(cleanups);
/** A temporary repository with foreman's `.design/` folder, ignored as in a real project. */
async function repo(files: Record<string, string>): Promise<TempGitRepo> {
  const r = await tempRepo(files);
  await mkdir(path.join(r.dir, '.design'));
  await writeFile(path.join(r.dir, '.git', 'info', 'exclude'), '.design/\n');
  return r;
}

/** What a tip changes: content, `null` to delete, or a symlink / executable file. */
type Change = string | null | { symlink: string } | { executable: string };

/** A commit on top of `parent` with `changes`, made with a temporary index: the working tree and index are not touched. */
async function commitOnTop(r: TempGitRepo, parent: string, changes: Record<string, Change>, message = 'tip'): Promise<string> {
  const env = { GIT_INDEX_FILE: path.join(r.dir, '.git', 'test-tip.index') };
  const run = async (args: string[], input?: string) => {
    const result = await runGit(args, { cwd: r.dir, env, ...(input === undefined ? {} : { input }) });
    if (!result.ok) throw result.error;
    return result.value.trim();
  };
  await run(['read-tree', parent]);
  for (const [file, change] of Object.entries(changes)) {
    if (change === null) {
      await run(['update-index', '--force-remove', '--', file]);
      continue;
    }
    const [mode, content] = typeof change === 'string' ? ['100644', change] : 'symlink' in change ? ['120000', change.symlink] : ['100755', change.executable];
    const object = await run(['hash-object', '-w', '--stdin'], content);
    await run(['update-index', '--add', '--replace', '--cacheinfo', `${mode},${object},${file}`]);
  }
  const tree = await run(['write-tree']);
  return run(['commit-tree', tree, '-p', parent, '-m', message]);
}

const head = async (r: TempGitRepo) => (await r.git(['rev-parse', 'HEAD'])).trim();
const read = (r: TempGitRepo, file: string) => readFile(path.join(r.dir, file), 'utf8');
const has = (r: TempGitRepo, file: string) => existsSync(path.join(r.dir, file));
/** `git status` lines, sorted. */
const statusLines = async (r: TempGitRepo) => (await r.git(['status', '--porcelain=v1', '-uall'])).split('\n').filter(Boolean).sort();
const intentOf = (r: TempGitRepo) => path.join(r.dir, '.design', 'landing.json');

/** Everything landing could change: HEAD, the branch, the index, and every file (content and mode) outside .git. */
async function snapshot(r: TempGitRepo): Promise<unknown> {
  const files: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(r.dir, dir), { withFileTypes: true })) {
      const relative = dir ? `${dir}/${entry.name}` : entry.name;
      if (relative === '.git') continue;
      const full = path.join(r.dir, relative);
      if (entry.isDirectory()) {
        files[`${relative}/`] = 'dir';
        await walk(relative);
      } else if (entry.isSymbolicLink()) files[relative] = `link:${await readlink(full)}`;
      else files[relative] = `${((await lstat(full)).mode & 0o777).toString(8)}:${await readFile(full, 'utf8')}`;
    }
  };
  await walk('');
  return {
    head: await head(r),
    ref: (await r.git(['symbolic-ref', '-q', 'HEAD']).catch(() => 'detached')).trim(),
    index: await r.git(['ls-files', '-s']),
    status: await r.git(['status', '--porcelain=v1', '-uall']),
    files,
  };
}

const request = (r: TempGitRepo, to: string, extra: Partial<LandRequest> = {}): LandRequest => ({
  repo: r.dir,
  to,
  branch: 'refs/heads/main',
  mode: 'commit',
  intentPath: intentOf(r),
  ...extra,
});

const BASE = {
  'keep.txt': 'keep\n',
  'edit.txt': 'old\n',
  'gone.txt': 'bye\n',
  'run.sh': 'echo hi\n',
  'mine.txt': 'mine\n',
  'staged.txt': 'staged before\n',
};

/** A repository with BASE committed and a tip that adds, modifies and deletes files of every kind. */
async function repoWithTip(): Promise<{ r: TempGitRepo; from: string; tip: string }> {
  const r = await repo(BASE);
  const from = await head(r);
  const tip = await commitOnTop(r, from, {
    'edit.txt': 'new\n',
    'gone.txt': null,
    'run.sh': { executable: 'echo hi\n' },
    'new/deep/file.txt': 'nested\n',
    link: { symlink: 'keep.txt' },
  });
  return { r, from, tip };
}

describe('land, commit mode', () => {
  it("fast-forwards added, modified and deleted files, a new nested directory, a symlink and an exec bit; the person's other changes stay as they were", async () => {
    const { r, from, tip } = await repoWithTip();
    // The person's unrelated work: a staged change and an unstaged edit.
    await r.write({ 'staged.txt': 'staged now\n' });
    await r.git(['add', 'staged.txt']);
    await r.write({ 'mine.txt': 'edited, not staged\n', 'notes.txt': 'untracked\n' });
    const stagedDiff = await r.git(['diff', '--cached']);
    const unstagedDiff = await r.git(['diff']);

    const landed = await land(request(r, tip));
    expect(landed).toEqual({ ok: true, value: { from, to: tip, paths: ['edit.txt', 'gone.txt', 'link', 'new/deep/file.txt', 'run.sh'], upToDate: false } });

    expect(await head(r)).toBe(tip);
    expect((await r.git(['symbolic-ref', 'HEAD'])).trim()).toBe('refs/heads/main');
    expect(await read(r, 'edit.txt')).toBe('new\n');
    expect(has(r, 'gone.txt')).toBe(false);
    expect(await read(r, 'new/deep/file.txt')).toBe('nested\n');
    expect(await readlink(path.join(r.dir, 'link'))).toBe('keep.txt');
    expect((await lstat(path.join(r.dir, 'run.sh'))).mode & 0o100).toBe(0o100);
    // Exactly the person's changes remain, staged ones staged and unstaged ones unstaged.
    expect(await statusLines(r)).toEqual([' M mine.txt', 'M  staged.txt', '?? notes.txt'].sort());
    expect(await r.git(['diff', '--cached'])).toBe(stagedDiff);
    expect(await r.git(['diff'])).toBe(unstagedDiff);
    expect(await r.git(['reflog', '-1', '--format=%gs', 'refs/heads/main'])).toContain('foreman: land');
    expect(has(r, '.design/landing.json')).toBe(false);
  });

  it('an edit to a path that differs blocks the landing, names the path, and changes nothing', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'edit.txt': "the person's edit\n" });
    await r.write({ 'staged.txt': 'staged now\n' });
    await r.git(['add', 'staged.txt']);
    const before = await snapshot(r);

    const landed = await land(request(r, tip));
    expect(landed).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'edit.txt', why: 'modified' }] } });
    expect(await snapshot(r)).toEqual(before);
    expect(has(r, '.design/landing.json')).toBe(false);
    if (!landed.ok) expect(describeLandingProblem(landed.error, 'refs/foreman/p', { kind: 'checkout' })[0]).toContain('edit.txt (modified)');
  });

  it('lists every blocking path: staged, deleted, and an executable bit the person set', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'edit.txt': 'staged edit\n' });
    await r.git(['add', 'edit.txt']);
    await unlink(path.join(r.dir, 'run.sh'));
    await unlink(path.join(r.dir, 'gone.txt')); // deleted by the tip as well: nothing lost, no block
    await chmod(path.join(r.dir, 'keep.txt'), 0o755); // not a differing path: no block
    const tip2 = await commitOnTop(r, tip, { 'keep.txt': 'keep\n', 'mine.txt': 'tip mine\n' });
    await chmod(path.join(r.dir, 'mine.txt'), 0o755);
    const before = await snapshot(r);

    const landed = await land(request(r, tip2));
    expect(landed).toEqual({
      ok: false,
      error: {
        kind: 'local-changes',
        paths: [
          { path: 'edit.txt', why: 'staged' },
          { path: 'mine.txt', why: 'modified' },
          { path: 'run.sh', why: 'deleted' },
        ],
      },
    });
    expect(await snapshot(r)).toEqual(before);
  });

  it('an untracked file where the tip adds one blocks', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'new/deep/file.txt': "the person's own\n" });
    const before = await snapshot(r);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'new/deep/file.txt', why: 'untracked' }] } });
    expect(await snapshot(r)).toEqual(before);
  });

  it('an untracked file where the tip needs a directory blocks, and is kept', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ new: 'a file named like the new directory\n' });
    const before = await snapshot(r);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'new', why: 'untracked' }] } });
    expect(await snapshot(r)).toEqual(before);
  });

  it("an untracked file with the tip's content counts as landed", async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'new/deep/file.txt': 'nested\n' });
    const landed = await land(request(r, tip));
    expect(landed.ok).toBe(true);
    expect(await head(r)).toBe(tip);
    expect(await r.git(['status', '--porcelain=v1', '-uall'])).toBe('');
  });

  it('lands paths with spaces, quotes, non-ASCII letters, tabs and newlines, and leading dashes', async () => {
    const odd = ['sp ace.txt', 'ünï ✓.md', 'q"uote\'s.txt', 'tab\there.txt', 'new\nline.txt', '-dash.txt', 'src/[id].ts'];
    const r = await repo(Object.fromEntries(odd.map((file) => [file, `old ${file}\n`])));
    const tip = await commitOnTop(r, await head(r), Object.fromEntries(odd.map((file, index) => [file, index % 2 === 0 ? `new ${file}\n` : null])));
    await r.write({ 'src/[id].ts': "the person's edit\n" });
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'src/[id].ts', why: 'modified' }] } });
    await r.write({ 'src/[id].ts': 'old src/[id].ts\n' });
    expect((await land(request(r, tip))).ok).toBe(true);
    for (const [index, file] of odd.entries()) {
      if (index % 2 === 0) expect(await read(r, file)).toBe(`new ${file}\n`);
      else expect(has(r, file)).toBe(false);
    }
    expect(await r.git(['status', '--porcelain=v1', '-uall'])).toBe('');
  });

  it('replaces a file by a directory and a directory by a file', async () => {
    const r = await repo({ a: 'file a\n', 'd/x.txt': 'x\n', 'd/sub/y.txt': 'y\n' });
    const from = await head(r);
    const tip = await commitOnTop(r, from, { a: null, 'a/b.txt': 'b\n', 'd/x.txt': null, 'd/sub/y.txt': null, d: 'file d\n' });
    const landed = await land(request(r, tip));
    expect(landed.ok).toBe(true);
    expect(await read(r, 'a/b.txt')).toBe('b\n');
    expect(await read(r, 'd')).toBe('file d\n');
    expect(await r.git(['status', '--porcelain=v1', '-uall'])).toBe('');
  });

  it('a directory the tip replaces by a file blocks when it holds an untracked file', async () => {
    const r = await repo({ 'd/x.txt': 'x\n' });
    const tip = await commitOnTop(r, await head(r), { 'd/x.txt': null, d: 'file d\n' });
    await r.write({ 'd/mine.txt': 'mine\n' });
    const before = await snapshot(r);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'd', why: 'untracked' }] } });
    expect(await snapshot(r)).toEqual(before);
  });

  it("applies the repository's filters when comparing and writing (eol=crlf)", async () => {
    const r = await repo({ '.gitattributes': '*.txt text eol=crlf\n', 'a.txt': 'one\n' });
    expect(await read(r, 'a.txt')).toBe('one\n'); // written before the attributes applied
    await unlink(path.join(r.dir, 'a.txt'));
    await r.git(['checkout', '--', 'a.txt']);
    expect(await read(r, 'a.txt')).toBe('one\r\n');
    const tip = await commitOnTop(r, await head(r), { 'a.txt': 'two\n' });
    const landed = await land(request(r, tip));
    expect(landed.ok).toBe(true);
    expect(await read(r, 'a.txt')).toBe('two\r\n');
    expect(await r.git(['status', '--porcelain=v1'])).toBe('');
  });

  it('diverged: the person committed meanwhile; nothing changes', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'mine.txt': 'committed by the person\n' });
    await r.git(['commit', '-qam', 'mine']);
    const before = await snapshot(r);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'diverged', head: await head(r), tip } });
    expect(await snapshot(r)).toEqual(before);
  });

  it('branch switched: nothing changes', async () => {
    const { r, tip } = await repoWithTip();
    await r.git(['switch', '-q', '-c', 'other']);
    const before = await snapshot(r);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'branch-switched', expected: 'refs/heads/main', actual: 'refs/heads/other' } });
    await r.git(['switch', '-q', '--detach']);
    expect(await land(request(r, tip))).toEqual({ ok: false, error: { kind: 'branch-switched', expected: 'refs/heads/main', actual: null } });
    await r.git(['switch', '-q', 'other']);
    expect(await snapshot(r)).toEqual(before);
  });

  it('a detached HEAD lands by moving HEAD, and no branch moves', async () => {
    const { r, from, tip } = await repoWithTip();
    await r.git(['switch', '-q', '--detach']);
    const landed = await land(request(r, tip, { branch: null }));
    expect(landed.ok).toBe(true);
    expect(await head(r)).toBe(tip);
    expect((await r.git(['rev-parse', 'refs/heads/main'])).trim()).toBe(from);
    expect(await r.git(['status', '--porcelain=v1', '-uall'])).toBe('');
  });

  it('up to date', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const commit = await head(r);
    expect(await land(request(r, commit))).toEqual({ ok: true, value: { from: commit, to: commit, paths: [], upToDate: true } });
    expect(has(r, '.design/landing.json')).toBe(false);
  });

  it("runs none of the person's hooks", async () => {
    const { r, tip } = await repoWithTip();
    const marker = path.join(r.dir, '..', `${path.basename(r.dir)}-hook-ran`);
    cleanups.push(async () => unlink(marker).catch(() => undefined));
    for (const hook of ['post-checkout', 'post-merge', 'reference-transaction', 'post-index-change', 'pre-commit']) {
      await writeFile(path.join(r.dir, '.git', 'hooks', hook), `#!/bin/sh\necho ${hook} >> '${marker}'\n`, { mode: 0o755 });
    }
    // The hooks work: a porcelain ref update runs reference-transaction.
    await r.git(['branch', 'probe']);
    expect(existsSync(marker)).toBe(true);
    await unlink(marker);
    expect((await land(request(r, tip))).ok).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it("the person's index locked by another git process: git-failed, nothing changes, no record left", async () => {
    const { r, tip } = await repoWithTip();
    const lock = path.join(r.dir, '.git', 'index.lock');
    await writeFile(lock, '');
    const before = await snapshot(r);
    const landed = await land(request(r, tip));
    expect(landed.ok).toBe(false);
    if (!landed.ok) {
      expect(landed.error.kind).toBe('git-failed');
      expect(describeLandingProblem(landed.error, 'refs/foreman/p', { kind: 'checkout' }).join('\n')).toMatch(/index\.lock/);
    }
    await unlink(lock);
    expect(await snapshot(r)).toEqual(before);
    expect(has(r, '.design/landing.json')).toBe(false);
    // Once the lock is gone, landing works.
    expect((await land(request(r, tip))).ok).toBe(true);
  });
});

describe('land, worktree mode (--no-commit)', () => {
  it('twice in a row (the base moves): the changes are left unstaged and HEAD and the index are unchanged', async () => {
    const { r, from, tip } = await repoWithTip();
    await r.write({ 'staged.txt': 'staged now\n' });
    await r.git(['add', 'staged.txt']);
    const index = await r.git(['ls-files', '-s']);

    const first = await land(request(r, tip, { mode: 'worktree' }));
    expect(first).toEqual({ ok: true, value: { from, to: tip, paths: ['edit.txt', 'gone.txt', 'link', 'new/deep/file.txt', 'run.sh'], upToDate: false } });
    expect(await head(r)).toBe(from);
    expect(await r.git(['ls-files', '-s'])).toBe(index);
    expect(await read(r, 'edit.txt')).toBe('new\n');
    expect(has(r, 'gone.txt')).toBe(false);
    expect(await readlink(path.join(r.dir, 'link'))).toBe('keep.txt');
    expect((await lstat(path.join(r.dir, 'run.sh'))).mode & 0o100).toBe(0o100);

    // Without the base the second landing sees the first one's files as the person's changes.
    const tip2 = await commitOnTop(r, tip, { 'edit.txt': 'newer\n', 'new/deep/file.txt': null, 'more.txt': 'more\n' });
    const withoutBase = await land(request(r, tip2, { mode: 'worktree' }));
    expect(withoutBase.ok).toBe(false);

    const second = await land(request(r, tip2, { mode: 'worktree', base: tip }));
    expect(second).toEqual({ ok: true, value: { from: tip, to: tip2, paths: ['edit.txt', 'more.txt', 'new/deep/file.txt'], upToDate: false } });
    expect(await head(r)).toBe(from);
    expect(await r.git(['ls-files', '-s'])).toBe(index);
    expect(await read(r, 'edit.txt')).toBe('newer\n');
    expect(await read(r, 'more.txt')).toBe('more\n');
    expect(has(r, 'new')).toBe(false);
    expect(await statusLines(r)).toEqual([' D gone.txt', ' M edit.txt', ' M run.sh', '?? link', '?? more.txt', 'M  staged.txt'].sort());
    expect(has(r, '.design/landing.json')).toBe(false);
  });

  it('a staged change to a path it would write blocks; nothing changes', async () => {
    const { r, tip } = await repoWithTip();
    await r.write({ 'edit.txt': 'staged\n' });
    await r.git(['add', 'edit.txt']);
    await r.write({ 'edit.txt': 'old\n' }); // the file is back at base's content; the index is not
    const before = await snapshot(r);
    expect(await land(request(r, tip, { mode: 'worktree' }))).toEqual({
      ok: false,
      error: { kind: 'local-changes', paths: [{ path: 'edit.txt', why: 'staged' }] },
    });
    expect(await snapshot(r)).toEqual(before);
  });
});

describe('resumeLanding', () => {
  it('null when no landing was recorded', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    expect(await resumeLanding(r.dir, intentOf(r))).toBeNull();
  });

  it('an unreadable record is reported and left', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    await writeFile(intentOf(r), '{"mode": "commit"');
    const resumed = await resumeLanding(r.dir, intentOf(r));
    expect(resumed).toMatchObject({ ok: false, error: { kind: 'bad-intent', intentPath: intentOf(r) } });
    expect(has(r, '.design/landing.json')).toBe(true);
  });

  const crashes: LandingStep[] = ['intent-written', 'index-updated', 'files-written', 'ref-updated'];
  for (const step of crashes) {
    it(`commit mode: a crash after ${step} is completed by resumeLanding`, async () => {
      const { r, from, tip } = await repoWithTip();
      await r.write({ 'staged.txt': 'staged now\n' });
      await r.git(['add', 'staged.txt']);
      await r.write({ 'mine.txt': 'edited\n' });
      const crash = new Error('crash');
      await expect(
        land(request(r, tip), {
          afterStep: (reached) => {
            if (reached === step) throw crash;
          },
        }),
      ).rejects.toBe(crash);
      expect(JSON.parse(await read(r, '.design/landing.json'))).toMatchObject({ mode: 'commit', branch: 'refs/heads/main', from, to: tip });

      const resumed = await resumeLanding(r.dir, intentOf(r));
      expect(resumed).toMatchObject({ ok: true, value: { from, to: tip } });
      expect(await head(r)).toBe(tip);
      expect(await read(r, 'edit.txt')).toBe('new\n');
      expect(has(r, 'gone.txt')).toBe(false);
      expect(await readlink(path.join(r.dir, 'link'))).toBe('keep.txt');
      expect(await statusLines(r)).toEqual([' M mine.txt', 'M  staged.txt'].sort());
      expect(has(r, '.design/landing.json')).toBe(false);
      expect(await resumeLanding(r.dir, intentOf(r))).toBeNull();
    });
  }

  it('commit mode: a crash after the index update, then the person edits a landing path: reported, the record kept', async () => {
    const { r, tip } = await repoWithTip();
    const crash = new Error('crash');
    await expect(
      land(request(r, tip), {
        afterStep: (reached) => {
          if (reached === 'index-updated') throw crash;
        },
      }),
    ).rejects.toBe(crash);
    await r.write({ 'edit.txt': "the person's edit\n" });
    const before = await snapshot(r);
    expect(await resumeLanding(r.dir, intentOf(r))).toEqual({ ok: false, error: { kind: 'local-changes', paths: [{ path: 'edit.txt', why: 'modified' }] } });
    expect(await snapshot(r)).toEqual(before);
    expect(has(r, '.design/landing.json')).toBe(true);
  });

  it('commit mode: the branch moved elsewhere since the crash: reported, the record kept', async () => {
    const { r, tip } = await repoWithTip();
    const crash = new Error('crash');
    await expect(
      land(request(r, tip), {
        afterStep: (reached) => {
          if (reached === 'intent-written') throw crash;
        },
      }),
    ).rejects.toBe(crash);
    await r.git(['commit', '-q', '--allow-empty', '-m', "the person's"]);
    expect(await resumeLanding(r.dir, intentOf(r))).toEqual({ ok: false, error: { kind: 'diverged', head: await head(r), tip } });
    expect(has(r, '.design/landing.json')).toBe(true);
  });

  for (const step of ['intent-written', 'files-written'] as const)
    it(`worktree mode: a crash after ${step} is completed, HEAD and index unchanged`, async () => {
      const { r, from, tip } = await repoWithTip();
      const index = await r.git(['ls-files', '-s']);
      const crash = new Error('crash');
      await expect(
        land(request(r, tip, { mode: 'worktree' }), {
          afterStep: (reached) => {
            if (reached === step) throw crash;
          },
        }),
      ).rejects.toBe(crash);
      expect(has(r, '.design/landing.json')).toBe(true);
      const resumed = await resumeLanding(r.dir, intentOf(r));
      expect(resumed).toMatchObject({ ok: true, value: { from, to: tip } });
      expect(await head(r)).toBe(from);
      expect(await r.git(['ls-files', '-s'])).toBe(index);
      expect(await read(r, 'new/deep/file.txt')).toBe('nested\n');
      expect(has(r, '.design/landing.json')).toBe(false);
    });
});
