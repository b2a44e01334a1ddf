import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, realpath, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Git } from '../../src/adapters/git/repository.ts';
import { type Capture, captureWork, hashedWork, stagedWork } from '../../src/adapters/git/capture.ts';
import { integrate, type Integration, Integrator, parkedTrailers, parkedWork } from '../../src/adapters/git/integrate.ts';
import { awaitingRef, deletePlanRefs, deleteRef, dropParked, foremanRefs, integrationRef, parkedTasks, readRef } from '../../src/adapters/git/refs.ts';
import { openPool, type Slot, type WorktreePool } from '../../src/adapters/git/worktree-pool.ts';
import { describeGitFailure, type GitFailure, parseStatusV2 } from '../../src/core/integration/git-text.ts';
import type { Result } from '../../src/core/result.ts';
import type { CapturedWork } from '../../src/core/attempt/work.ts';
import { afterEachCleanups, runGit, tempGitRepo, type TempGitRepo, withoutMachineGitConfig } from '../support/git-repo.ts';
import { succeeded } from '../support/results.ts';

// Keep the machine's own git configuration (identity, signing, hooks…) out of these tests.
withoutMachineGitConfig();

const cleanups = afterEachCleanups();

async function repo(files: Record<string, string>, opts?: Parameters<typeof tempGitRepo>[1]): Promise<TempGitRepo> {
  const made = await tempGitRepo(files, opts);
  cleanups.push(made.cleanup);
  return made;
}

/** A linked worktree of `r`, outside it, detached at `commit` (default HEAD): an attempt's slot. */
async function slot(r: TempGitRepo, commit = 'HEAD'): Promise<TempGitRepo> {
  const parent = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-slot-')));
  const dir = path.join(parent, 'wt');
  await r.git(['worktree', 'add', '-q', '--detach', dir, commit]);
  const wt = tempGitRepoAt(dir);
  cleanups.push(async () => {
    await rm(parent, { recursive: true, force: true });
  });
  return wt;
}

function tempGitRepoAt(dir: string): TempGitRepo {
  return {
    dir,
    git: (args) => runGit(dir, args),
    write: async (files) => {
      for (const [rel, content] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
        await writeFile(path.join(dir, rel), content);
      }
    },
    cleanup: async () => undefined,
  };
}

const captured = (step: Promise<Result<Capture, GitFailure>>) =>
  step.then((r) => {
    if (!r.ok) throw new Error(describeGitFailure(r.error));
    return r.value;
  });

const rev = async (r: TempGitRepo, what: string) => (await r.git(['rev-parse', what])).trim();
const blobOf = async (r: TempGitRepo, file: string) => (await r.git(['hash-object', '--', file])).trim();
const show = async (r: TempGitRepo, object: string) => r.git(['cat-file', '-p', object]);
/** `mode object path` of every file in `commit`'s tree. */
async function treeOf(r: TempGitRepo, commit: string): Promise<Record<string, string>> {
  const out = await r.git(['ls-tree', '-r', '-z', '--full-tree', commit]);
  const files: Record<string, string> = {};
  for (const rec of out.split('\0').filter(Boolean)) {
    const [meta, file] = rec.split('\t') as [string, string];
    const [mode, , object] = meta.split(' ');
    files[file] = `${mode} ${object}`;
  }
  return files;
}
const fileAt = (r: TempGitRepo, commit: string, file: string) => r.git(['show', `${commit}:${file}`]);

/** A pool of clone slots of `r` (as runs make them), removed after the test. */
async function clonePool(r: TempGitRepo): Promise<WorktreePool> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-clones-')));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return openPool({ repo: r.dir, planId: 'p', root, runSetup: async () => ({ exitCode: 0, timedOut: false, output: '' }) });
}

async function cloneSlot(pool: WorktreePool, commit: string): Promise<{ slot: Slot; wt: TempGitRepo }> {
  const acquired = await pool.acquire(commit);
  if (!acquired.ok) throw new Error(JSON.stringify(acquired.error));
  return { slot: acquired.value, wt: tempGitRepoAt(acquired.value.dir) };
}

/** Whether the person's object store alone (no slot's alternates) holds `object`. */
const inStore = (r: TempGitRepo, object: string) =>
  r.git(['cat-file', '-e', object]).then(
    () => true,
    () => false,
  );

/** Every object `commit` reaches, each checked to be in the person's store, and the repository checked whole. */
async function assertComplete(r: TempGitRepo, commit: string): Promise<void> {
  const objects = (await r.git(['rev-list', '--objects', commit]))
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[0]!);
  expect(objects.length).toBeGreaterThan(2);
  for (const object of objects) expect(await inStore(r, object)).toBe(true);
  await r.git(['fsck', '--connectivity-only', '--no-dangling']);
}

const ODD = ['sp ace.txt', 'ünï ✓.md', 'q"uote\'s.txt', 'src/[id].ts', 'tab\there.txt'];

describe('captureWork', () => {
  it('captures modified, new, deleted, symlink, mode change and a declared directory, exactly as git stores them', async () => {
    const r = await repo({ 'mod.txt': 'one\n', 'gone.txt': 'bye\n', 'run.sh': 'echo\n', 'lib/old.ts': 'old\n', 'keep.txt': 'same\n' });
    const wt = await slot(r);
    const base = await rev(wt, 'HEAD');
    await wt.write({ 'mod.txt': 'two\n', 'fresh/deep/new.txt': 'new\n', 'lib/added.ts': 'added\n', 'lib/old.ts': 'changed\n' });
    await unlink(path.join(wt.dir, 'gone.txt'));
    await symlink('mod.txt', path.join(wt.dir, 'link'));
    await chmod(path.join(wt.dir, 'run.sh'), 0o755);

    const declared = ['mod.txt', 'gone.txt', 'run.sh', 'link', 'fresh/deep/new.txt', 'lib/', 'keep.txt', 'never-made.txt', 'nodir/'];
    const capture = await captured(captureWork(wt.dir, declared, []));
    expect(capture.changed).toEqual(['fresh/deep/new.txt', 'gone.txt', 'lib/added.ts', 'lib/old.ts', 'link', 'mod.txt', 'run.sh']);
    expect(capture.outside).toEqual([]);
    expect(capture.work.base).toBe(base);
    expect(capture.work.entries).toEqual([
      { path: 'fresh/deep/new.txt', mode: '100644', object: await blobOf(wt, 'fresh/deep/new.txt') },
      { path: 'gone.txt', deleted: true },
      { path: 'lib/added.ts', mode: '100644', object: await blobOf(wt, 'lib/added.ts') },
      { path: 'lib/old.ts', mode: '100644', object: await blobOf(wt, 'lib/old.ts') },
      // A symlink is stored as a blob of its target.
      { path: 'link', mode: '120000', object: expect.stringMatching(/^[0-9a-f]{40}$/) },
      { path: 'mod.txt', mode: '100644', object: await blobOf(wt, 'mod.txt') },
      { path: 'run.sh', mode: '100755', object: await blobOf(wt, 'run.sh') },
    ]);
    const link = capture.work.entries.find((e) => e.path === 'link')!;
    expect(await show(wt, 'object' in link ? link.object : '')).toBe('mod.txt');
  });

  it('handles paths with spaces, quotes, unicode, tabs and brackets literally', async () => {
    const r = await repo({ 'src/i.ts': 'glob bait\n', 'src/[id].ts': 'x\n' });
    const wt = await slot(r);
    await wt.write(Object.fromEntries(ODD.map((p) => [p, `content of ${p}\n`])));
    await wt.write({ 'src/i.ts': 'changed too\n' });
    const capture = await captured(captureWork(wt.dir, ODD, []));
    // `src/[id].ts` is a name, not a glob matching `src/i.ts`, which is outside.
    expect(capture.outside).toEqual(['src/i.ts']);
    expect(capture.work.entries.map((e) => e.path).sort()).toEqual([...ODD].sort());
    for (const entry of capture.work.entries) {
      expect('object' in entry && (await show(wt, entry.object))).toBe(`content of ${entry.path}\n`);
    }
  });

  it('reports undeclared changes as outside and never captures them', async () => {
    const r = await repo({ 'task.txt': 'a\n', 'README.md': 'readme\n', 'other.txt': 'other\n', 'src/a.ts': 'a\n' });
    const wt = await slot(r);
    await wt.write({ 'task.txt': 'done\n', 'junk/stray.txt': 'stray\n', 'README.md': 'overwritten\n', 'src/ab.ts': 'near miss\n' });
    await unlink(path.join(wt.dir, 'other.txt'));
    // Staged by the worker itself: still outside, still not captured.
    await wt.write({ 'staged.txt': 'staged\n' });
    await wt.git(['add', 'staged.txt']);

    const capture = await captured(captureWork(wt.dir, ['task.txt', 'src/a.ts'], []));
    expect(capture.changed).toEqual(['README.md', 'junk/stray.txt', 'other.txt', 'src/ab.ts', 'staged.txt', 'task.txt']);
    expect(capture.outside).toEqual(['README.md', 'junk/stray.txt', 'other.txt', 'src/ab.ts', 'staged.txt']);
    expect(capture.work.entries.map((e) => e.path)).toEqual(['task.txt']);
  });

  it('does not report ignored files or what provisioning kept', async () => {
    const r = await repo({ '.gitignore': 'dist/\n*.log\n', 'a.txt': 'a\n' });
    const wt = await slot(r);
    await wt.write({ 'dist/out.js': 'built\n', 'debug.log': 'log\n', 'a.txt': 'b\n' });
    // Provisioning: a linked dependency folder, a copied config file, a filled folder.
    await symlink(r.dir, path.join(wt.dir, 'node_modules'));
    await wt.write({ '.env.local': 'SECRET=1\n', 'vendor/lib/x.js': 'vendored\n' });

    const capture = await captured(captureWork(wt.dir, ['a.txt'], ['node_modules/', '.env.local', 'vendor/']));
    expect(capture.changed).toEqual(['a.txt']);
    expect(capture.outside).toEqual([]);
    expect(capture.work.entries.map((e) => e.path)).toEqual(['a.txt']);

    // Without `kept`, the same entries are the worker's and outside.
    const unkept = await captured(captureWork(wt.dir, ['a.txt'], []));
    expect(unkept.outside).toEqual(['.env.local', 'node_modules', 'vendor/lib/x.js']);
  });

  it("leaves out the sandbox's placeholder files a killed sandboxed command left behind, but not a real file at such a name", async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const wt = await slot(r);
    // Empty placeholders (bubblewrap's mount points, as a command killed mid-way leaves them).
    await wt.write({ '.bashrc': '', '.gitconfig': '', '.mcp.json': '', 'a.txt': 'b\n' });
    const capture = await captured(captureWork(wt.dir, ['a.txt'], []));
    expect(capture.changed).toEqual(['a.txt']);
    expect(capture.outside).toEqual([]);
    // One the worker filled is its change (outside when undeclared); a declared one is its work, even empty.
    await wt.write({ '.bashrc': 'alias x=y\n' });
    const filled = await captured(captureWork(wt.dir, ['a.txt', '.mcp.json'], []));
    expect(filled.outside).toEqual(['.bashrc']);
    expect(filled.work.entries.map((e) => e.path)).toEqual(['.mcp.json', 'a.txt']);
  });

  it('what a check writes after the capture does not change what was captured', async () => {
    const r = await repo({ 'snap.txt': 'v1\n' });
    const wt = await slot(r);
    await wt.write({ 'snap.txt': 'worker wrote this\n' });
    const capture = await captured(captureWork(wt.dir, ['snap.txt'], []));
    await wt.write({ 'snap.txt': 'a check rewrote the snapshot\n' });
    const entry = capture.work.entries[0]!;
    expect('object' in entry && (await show(wt, entry.object))).toBe('worker wrote this\n');

    // Integrated, it is the worker's content that lands on the ref.
    const tip = await rev(r, 'HEAD');
    const commit = await succeeded(integrate(r.dir, integrationRef('p'), tip, { tasks: [1], message: 'task 1', trailers: [], works: [capture.work] }));
    expect(await fileAt(r, commit, 'snap.txt')).toBe('worker wrote this\n');
  });

  it('an attempt that changed nothing captures nothing, and untouched or missing declared paths do not fail', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const wt = await slot(r);
    const capture = await captured(captureWork(wt.dir, ['a.txt', 'missing.txt', 'missing-dir/'], []));
    expect(capture).toEqual({ changed: [], outside: [], aside: [], work: { base: await rev(r, 'HEAD'), entries: [] } });
  });

  it('with the start commit given, what the worker committed in its worktree is its work too', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'gone.txt': 'g\n' });
    const wt = await slot(r);
    const base = await rev(wt, 'HEAD');
    await wt.write({ 'a.txt': 'committed by the worker\n', 'c.txt': 'undeclared, committed\n' });
    await wt.git(['add', 'a.txt', 'c.txt']);
    await wt.git(['rm', '-q', 'gone.txt']);
    await wt.git(['commit', '-q', '-m', 'worker commit']);
    await wt.write({ 'b.txt': 'left uncommitted\n' });

    const capture = await captured(captureWork(wt.dir, ['a.txt', 'b.txt', 'gone.txt'], [], base));
    expect(capture.work.base).toBe(base);
    expect(capture.changed).toEqual(['a.txt', 'b.txt', 'c.txt', 'gone.txt']);
    expect(capture.outside).toEqual(['c.txt']);
    expect(capture.work.entries.map((e) => e.path)).toEqual(['a.txt', 'b.txt', 'gone.txt']);
    expect(capture.work.entries[2]).toEqual({ path: 'gone.txt', deleted: true });
  });

  it('captures a deletion the worker staged itself (git rm), and one it re-created', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const wt = await slot(r);
    await wt.git(['rm', '-q', 'a.txt', 'b.txt']);
    await wt.write({ 'b.txt': 'back again\n' });
    const capture = await captured(captureWork(wt.dir, ['a.txt', 'b.txt'], []));
    expect(capture.changed).toEqual(['a.txt', 'b.txt']);
    expect(capture.work.entries).toEqual([
      { path: 'a.txt', deleted: true },
      { path: 'b.txt', mode: '100644', object: await blobOf(wt, 'b.txt') },
    ]);
  });

  it('fails as a value outside a repository', async () => {
    const plain = await mkdtemp(path.join(os.tmpdir(), 'foreman-nogit-'));
    cleanups.push(() => rm(plain, { recursive: true, force: true }));
    const r = await captureWork(plain, ['a'], []);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.step).toBe('status');
  });
});

/** A capture from a fresh slot of `r` at `commit` (or from `wt`) after writing `files` (null: delete). */
async function attempt(r: TempGitRepo, commit: string, files: Record<string, string | null>, wt?: TempGitRepo): Promise<CapturedWork> {
  wt ??= await slot(r, commit);
  for (const [file, content] of Object.entries(files)) {
    if (content === null) await unlink(path.join(wt.dir, file));
    else await wt.write({ [file]: content });
  }
  const capture = await captured(captureWork(wt.dir, Object.keys(files), []));
  expect(capture.outside).toEqual([]);
  return capture.work;
}

const batch = (tasks: number[], works: CapturedWork[]): Integration => ({
  tasks,
  message: `foreman: tasks ${tasks.join(', ')}`,
  trailers: [
    ['Foreman-Tasks', tasks.join(',')],
    ['Foreman-Plan', 'plan-1'],
  ],
  works,
});

describe("captureWork in a pool slot (a clone borrowing the person's objects)", () => {
  it("writes what it stages into the person's store: the integration stays whole after the slot is removed", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'lib/b.ts': 'b\n' });
    const start = await rev(r, 'HEAD');
    const pool = await clonePool(r);
    const { wt } = await cloneSlot(pool, start);
    await wt.write({ 'a.txt': 'changed in the slot\n', 'lib/new.ts': 'new in the slot\n' });
    const capture = await captured(captureWork(wt.dir, ['a.txt', 'lib/'], [], start));
    expect(capture.work.entries.map((e) => e.path)).toEqual(['a.txt', 'lib/new.ts']);
    for (const entry of capture.work.entries) expect('object' in entry && (await inStore(r, entry.object))).toBe(true);
    // Nothing went into the slot's own store.
    expect(await wt.git(['count-objects'])).toMatch(/^0 objects/);

    const ref = integrationRef('p');
    const commit = await succeeded(integrate(r.dir, ref, start, batch([1], [capture.work])));
    await pool.remove();
    expect(existsSync(wt.dir)).toBe(false);
    await assertComplete(r, commit);
    expect(await fileAt(r, commit, 'lib/new.ts')).toBe('new in the slot\n');
  });

  it("copies the objects only the slot holds (a worker that committed, or staged, there) into the person's store", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'gone.txt': 'g\n', 'mod.txt': 'm\n' });
    const start = await rev(r, 'HEAD');
    const pool = await clonePool(r);
    const { slot, wt } = await cloneSlot(pool, start);
    await wt.write({ 'a.txt': 'committed by the worker\n', 'sub/c.txt': 'committed too\n' });
    await wt.git(['add', 'a.txt', 'sub/c.txt']);
    await wt.git(['rm', '-q', 'gone.txt']);
    await wt.git(['-c', 'user.name=w', '-c', 'user.email=w@w', 'commit', '-q', '-m', 'worker commit']);
    // Staged by the worker and left so: the blob is in the slot's store, and `add` finds it there.
    await wt.write({ 'b.txt': 'staged by the worker\n' });
    await wt.git(['add', 'b.txt']);
    await wt.write({ 'mod.txt': 'left unstaged\n' });
    const onlyInSlot = [await blobOf(wt, 'a.txt'), await blobOf(wt, 'sub/c.txt'), await blobOf(wt, 'b.txt')];
    for (const object of onlyInSlot) expect(await inStore(r, object)).toBe(false);

    const capture = await captured(captureWork(wt.dir, ['a.txt', 'b.txt', 'gone.txt', 'mod.txt', 'sub/'], [], start));
    expect(capture.work.entries.map((e) => e.path)).toEqual(['a.txt', 'b.txt', 'gone.txt', 'mod.txt', 'sub/c.txt']);
    for (const object of onlyInSlot) expect(await inStore(r, object)).toBe(true);

    const ref = integrationRef('p');
    const commit = await succeeded(integrate(r.dir, ref, start, batch([1], [capture.work])));
    // The slot is reused at the new tip: it reads the integration commit through its alternates.
    pool.release(slot);
    const reused = await pool.acquire(commit);
    if (!reused.ok) throw new Error(JSON.stringify(reused.error));
    expect(reused.value.dir).toBe(wt.dir);
    expect(await readFile(path.join(wt.dir, 'sub/c.txt'), 'utf8')).toBe('committed too\n');
    pool.release(reused.value);

    await pool.remove();
    await assertComplete(r, commit);
    expect(await fileAt(r, commit, 'a.txt')).toBe('committed by the worker\n');
    expect(await fileAt(r, commit, 'b.txt')).toBe('staged by the worker\n');
    expect(await fileAt(r, commit, 'mod.txt')).toBe('left unstaged\n');
  });

  it("integrates a self-committing worker's work after the integrator's kept processes started (their object lists are fixed at start)", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const start = await rev(r, 'HEAD');
    const pool = await clonePool(r);
    const ref = integrationRef('p');
    const integrator = new Integrator(r.dir);
    cleanups.push(async () => integrator.close());
    // A first task integrates: the integrator's cat-file and mktree processes are now running.
    const first = await cloneSlot(pool, start);
    await first.wt.write({ 'a.txt': 'first task\n' });
    const firstWork = await captured(captureWork(first.wt.dir, ['a.txt'], [], start));
    let tip = await succeeded(integrator.integrate(ref, start, batch([0], [firstWork.work])));
    pool.release(first.slot);
    // Then workers that committed in their own slots, captured and integrated one after another
    // with the same integrator: objects only their slots held are copied into the person's store
    // while those processes run.
    for (const [task, file] of [
      [1, 'b.txt'],
      [2, 'c.txt'],
      [3, 'sub/new.txt'],
    ] as const) {
      const { slot, wt } = await cloneSlot(pool, tip);
      await wt.write({ [file]: `task ${task} committed this\n` });
      await wt.git(['add', file]);
      await wt.git(['-c', 'user.name=w', '-c', 'user.email=w@w', 'commit', '-q', '-m', 'wip']);
      const work = await captured(captureWork(wt.dir, [file], [], tip));
      // Copied as loose objects: the person's store gains no pack a running git process would miss.
      expect((await readdir(path.join(r.dir, '.git', 'objects', 'pack'))).filter((name) => name.endsWith('.pack'))).toEqual([]);
      tip = await succeeded(integrator.integrate(ref, tip, batch([task], [work.work])));
      pool.release(slot);
      expect(await fileAt(r, tip, file)).toBe(`task ${task} committed this\n`);
    }
    await pool.remove();
    await assertComplete(r, tip);
    // Only foreman's commits are on the ref: none of the workers' own.
    expect((await r.git(['log', '--format=%s', `${start}..${tip}`])).trim().split('\n')).toEqual([
      'foreman: tasks 3',
      'foreman: tasks 2',
      'foreman: tasks 1',
      'foreman: tasks 0',
    ]);
  });

  it('keeps integrating after the person repacks the repository during the run (git gc moves loose objects into a new pack)', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'dir/b.txt': 'b\n' });
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('p');
    const integrator = new Integrator(r.dir);
    cleanups.push(async () => integrator.close());
    const pool = await clonePool(r);
    let tip = start;
    for (const task of [0, 1, 2]) {
      const { slot, wt } = await cloneSlot(pool, tip);
      await wt.write({ [`dir/t${task}.txt`]: `task ${task}\n` });
      const work = await captured(captureWork(wt.dir, [`dir/t${task}.txt`], [], tip));
      tip = await succeeded(integrator.integrate(ref, tip, batch([task], [work.work])));
      pool.release(slot);
      // What `git gc` does to loose objects: packed into a pack the kept processes did not list.
      await r.git(['repack', '-a', '-d', '-q']);
      await r.git(['prune-packed']);
    }
    await pool.remove();
    await assertComplete(r, tip);
    expect(Object.keys(await treeOf(r, tip)).sort()).toEqual(['a.txt', 'dir/b.txt', 'dir/t0.txt', 'dir/t1.txt', 'dir/t2.txt']);
  });

  it('parks work captured in a slot whole too (the gate and approval read it later)', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const start = await rev(r, 'HEAD');
    const pool = await clonePool(r);
    const { wt } = await cloneSlot(pool, start);
    await wt.write({ 'a.txt': 'awaiting approval\n' });
    await wt.git(['-c', 'user.name=w', '-c', 'user.email=w@w', 'commit', '-qam', 'worker']);
    const capture = await captured(captureWork(wt.dir, ['a.txt'], [], start));
    const parked = await succeeded(new Integrator(r.dir).park('p', 1, capture.work, 'parked'));
    await pool.remove();
    await assertComplete(r, parked);
    expect(await succeeded(parkedWork(r.dir, 'p', 1))).toEqual(capture.work);
  });
});

describe('integrate', () => {
  it('two attempts from the same base on different files integrate in one commit on a new ref', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('plan-1');
    const one = await attempt(r, start, { 'a.txt': 'A\n', 'new/dir/n.txt': 'n\n' });
    const two = await attempt(r, start, { 'b.txt': null });
    expect(await succeeded(readRef(r.dir, ref))).toBeNull();

    const commit = await succeeded(integrate(r.dir, ref, start, batch([1, 2], [one, two])));
    expect(await succeeded(readRef(r.dir, ref))).toBe(commit);
    expect((await r.git(['rev-list', '--parents', '-n', '1', commit])).trim()).toBe(`${commit} ${start}`);
    expect(Object.keys(await treeOf(r, commit)).sort()).toEqual(['a.txt', 'c.txt', 'new/dir/n.txt']);
    expect(await fileAt(r, commit, 'a.txt')).toBe('A\n');
    expect((await r.git(['log', '-1', '--format=%B', commit])).trim()).toBe('foreman: tasks 1, 2\n\nForeman-Tasks: 1,2\nForeman-Plan: plan-1');
    expect((await r.git(['log', '-1', '--format=%an <%ae>', commit])).trim()).toBe('Test Person <person@example.com>');
    expect(await r.git(['reflog', 'show', '--format=%gs', ref])).toContain('foreman: integrate tasks 1, 2');

    // Resume reads the tasks from the ref, before anything landed on the branch.
    const git = new Git(r.dir);
    expect(await succeeded(git.commitsWithTrailer('Foreman-Tasks'))).toEqual([]);
    const found = await succeeded(git.commitsWithTrailer('Foreman-Tasks', undefined, [ref, 'HEAD']));
    expect(found.map((c) => [c.hash, c.values])).toEqual([[commit, ['1,2']]]);
    expect(await succeeded(git.commitsWithTrailer('Foreman-Tasks', start, [ref, 'HEAD']))).toHaveLength(1);
    expect(await succeeded(git.commitsWithTrailer('Foreman-Tasks', commit, [ref, 'HEAD']))).toEqual([]);
    // A ref not made yet is skipped; a mistyped `since` is still an error.
    expect(await succeeded(git.commitsWithTrailer('Foreman-Tasks', undefined, [integrationRef('other'), 'HEAD']))).toEqual([]);
    await expect(git.commitsWithTrailer('Foreman-Tasks', 'no-such-revision', [ref])).rejects.toThrow(/no-such-revision/);
  });

  it('keeps modes and symlinks, and lets a file replace a directory', async () => {
    const r = await repo({ 'run.sh': 'echo\n', 'd/inner.txt': 'i\n' });
    const start = await rev(r, 'HEAD');
    const wt = await slot(r, start);
    await chmod(path.join(wt.dir, 'run.sh'), 0o755);
    await symlink('run.sh', path.join(wt.dir, 'link'));
    await rm(path.join(wt.dir, 'd'), { recursive: true });
    await wt.write({ d: 'now a file\n' });
    const capture = await captured(captureWork(wt.dir, ['run.sh', 'link', 'd', 'd/'], []));
    const commit = await succeeded(integrate(r.dir, integrationRef('p'), start, batch([3], [capture.work])));
    const tree = await treeOf(r, commit);
    expect(Object.keys(tree).sort()).toEqual(['d', 'link', 'run.sh']);
    expect(tree['run.sh']).toMatch(/^100755 /);
    expect(tree.link).toMatch(/^120000 /);
    expect(await fileAt(r, commit, 'd')).toBe('now a file\n');
  });

  it('an attempt from an older base integrates onto a newer tip', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('plan-1');
    const first = await attempt(r, start, { 'a.txt': 'first\n' });
    const late = await attempt(r, start, { 'b.txt': 'late\n' });
    const tip1 = await succeeded(integrate(r.dir, ref, start, batch([1], [first])));
    const tip2 = await succeeded(integrate(r.dir, ref, tip1, batch([2], [late])));
    expect((await r.git(['rev-parse', `${tip2}^`])).trim()).toBe(tip1);
    expect(await fileAt(r, tip2, 'a.txt')).toBe('first\n');
    expect(await fileAt(r, tip2, 'b.txt')).toBe('late\n');
    expect(await succeeded(readRef(r.dir, ref))).toBe(tip2);
  });

  it('detects a conflict: a path another change reached since the attempt started', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'dir/x.txt': 'x\n' });
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('plan-1');
    const first = await attempt(r, start, { 'a.txt': 'first\n', 'dir/y.txt': 'y\n' });
    const tip = await succeeded(integrate(r.dir, ref, start, batch([1], [first])));

    const stale = await attempt(r, start, { 'a.txt': 'second\n', 'b.txt': 'fine\n' });
    expect(await integrate(r.dir, ref, tip, batch([2], [stale]))).toEqual({ ok: false, error: { kind: 'conflict', paths: ['a.txt'] } });
    expect(await succeeded(readRef(r.dir, ref))).toBe(tip);

    // Two works of one batch changing the same path conflict too.
    const x1 = await attempt(r, tip, { 'b.txt': 'one\n' });
    const x2 = await attempt(r, tip, { 'b.txt': 'two\n' });
    expect(await integrate(r.dir, ref, tip, batch([3, 4], [x1, x2]))).toEqual({ ok: false, error: { kind: 'conflict', paths: ['b.txt'] } });
    expect(await succeeded(readRef(r.dir, ref))).toBe(tip);

    // The temporary index never stays behind.
    const gitDir = path.join(r.dir, '.git');
    expect((await readdir(gitDir)).filter((f) => f.startsWith('foreman-'))).toEqual([]);
  });

  it('finds a conflict among many long paths (more than one command line of them)', async () => {
    const long = `${'deep-directory-name-'.repeat(12)}/`;
    const files = Array.from({ length: 400 }, (_, i) => `${long}file-with-a-long-name-${String(i).padStart(4, '0')}.txt`);
    const r = await repo(Object.fromEntries(files.map((f) => [f, 'old\n'])));
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('plan-1');
    const last = files[files.length - 1]!;
    const first = await attempt(r, start, { [last]: 'first\n' });
    const tip = await succeeded(integrate(r.dir, ref, start, batch([1], [first])));
    const stale = await attempt(r, start, Object.fromEntries(files.map((f) => [f, 'stale\n'])));
    expect(await integrate(r.dir, ref, tip, batch([2], [stale]))).toEqual({ ok: false, error: { kind: 'conflict', paths: [last] } });
  });

  it('fails with moved when the ref is not where the caller thought', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const start = await rev(r, 'HEAD');
    const ref = integrationRef('plan-1');
    const one = await attempt(r, start, { 'a.txt': 'one\n' });
    const two = await attempt(r, start, { 'b.txt': 'two\n' });
    const tip = await succeeded(integrate(r.dir, ref, start, batch([1], [one])));

    // A caller still holding the start commit as the tip.
    expect(await integrate(r.dir, ref, start, batch([2], [two]))).toEqual({ ok: false, error: { kind: 'moved', expected: start, actual: tip } });
    expect(await succeeded(readRef(r.dir, ref))).toBe(tip);

    // Another run created the ref of a plan this caller thought new.
    const other = integrationRef('plan-2');
    await r.git(['update-ref', other, tip]);
    const elsewhere = await attempt(r, tip, { 'b.txt': 'elsewhere\n' });
    const created = await integrate(r.dir, other, start, batch([2], [elsewhere]));
    expect(created).toEqual({ ok: false, error: { kind: 'moved', expected: start, actual: tip } });
  });

  it('an integration with nothing to record returns the tip and makes no commit', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const start = await rev(r, 'HEAD');
    const nothing = await attempt(r, start, {});
    expect(await integrate(r.dir, integrationRef('p'), start, batch([1], [nothing]))).toEqual({ ok: true, value: start });
    expect(await succeeded(foremanRefs(r.dir))).toEqual([]);
  });

  it("never uses the person's index, working tree, HEAD, branch or hooks", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'mine.txt': 'mine\n' });
    const start = await rev(r, 'HEAD');
    // The person is working: a staged change, an unstaged one, an untracked file.
    await r.write({ 'mine.txt': 'staged edit\n' });
    await r.git(['add', 'mine.txt']);
    await r.write({ 'a.txt': 'unstaged edit\n', 'notes.txt': 'untracked\n' });
    // The slots are made first: `git worktree add` (the test's, not foreman's) runs post-checkout.
    const slots = [await slot(r, start), await slot(r, start)];
    const marker = path.join(await realpath(os.tmpdir()), `foreman-hook-ran-${process.pid}-${Date.now()}`);
    cleanups.push(() => rm(marker, { force: true }));
    const hooks = path.join(r.dir, '.git', 'hooks');
    await mkdir(hooks, { recursive: true });
    for (const hook of ['pre-commit', 'post-commit', 'commit-msg', 'prepare-commit-msg', 'reference-transaction', 'post-index-change', 'post-checkout']) {
      await writeFile(path.join(hooks, hook), `#!/bin/sh\necho ${hook} >> '${marker}'\n`, { mode: 0o755 });
    }
    // An fsmonitor hook is a script git runs from status, add and the index commands.
    const fsmonitor = path.join(hooks, 'fsmonitor-probe');
    await writeFile(fsmonitor, `#!/bin/sh\necho fsmonitor >> '${marker}'\nexit 1\n`, { mode: 0o755 });
    await r.git(['config', 'core.fsmonitor', fsmonitor]);
    // The hooks do run for ordinary git commands in this repository.
    const probe = await repo({ 'x.txt': 'x\n' });
    const probeMarker = `${marker}-probe`;
    cleanups.push(() => rm(probeMarker, { force: true }));
    await writeFile(path.join(probe.dir, '.git', 'hooks', 'reference-transaction'), `#!/bin/sh\necho rt >> '${probeMarker}'\n`, { mode: 0o755 });
    await probe.git(['update-ref', 'refs/heads/probe', 'HEAD']);
    expect(existsSync(probeMarker)).toBe(true);

    // The test's own look at the repository must not run the fsmonitor hook either.
    const look = (args: string[]) => r.git(['-c', 'core.fsmonitor=false', '--no-optional-locks', ...args]);
    const before = {
      status: await look(['status', '--porcelain=v1', '-uall']),
      index: await look(['ls-files', '-s']),
      head: await look(['rev-parse', 'HEAD']),
      branch: await look(['symbolic-ref', 'HEAD']),
      a: await look(['diff']),
    };
    const ref = integrationRef('plan-1');
    const one = await attempt(r, start, { 'a.txt': 'task one\n' }, slots[0]);
    const two = await attempt(r, start, { 'b.txt': 'task two\n' }, slots[1]);
    const tip = await succeeded(integrate(r.dir, ref, start, batch([1], [one])));
    await succeeded(new Integrator(r.dir).park('plan-1', 2, two, 'task 2 awaiting approval'));
    await succeeded(dropParked(r.dir, 'plan-1', 2));
    await succeeded(deleteRef(r.dir, ref, tip));

    expect(existsSync(marker) ? await readFile(marker, 'utf8') : 'no hook ran').toBe('no hook ran');
    expect({
      status: await look(['status', '--porcelain=v1', '-uall']),
      index: await look(['ls-files', '-s']),
      head: await look(['rev-parse', 'HEAD']),
      branch: await look(['symbolic-ref', 'HEAD']),
      a: await look(['diff']),
    }).toEqual(before);
  });

  it('commits with foreman as the identity when none is configured', async () => {
    const r = await repo({ 'a.txt': 'a\n' }, { identity: false });
    const start = await rev(r, 'HEAD');
    const work = await attempt(r, start, { 'a.txt': 'b\n' });
    const commit = await succeeded(integrate(r.dir, integrationRef('p'), start, batch([1], [work])));
    expect((await r.git(['log', '-1', '--format=%an <%ae>|%cn <%ce>', commit])).trim()).toBe('foreman <foreman@localhost>|foreman <foreman@localhost>');
  });
});

describe('refs', () => {
  it('park, parkedWork and dropParked round-trip; foremanRefs lists per plan', async () => {
    const r = await repo({ 'a.txt': 'a\n', 'gone.txt': 'g\n', 'run.sh': 'x\n' });
    const start = await rev(r, 'HEAD');
    const wt = await slot(r, start);
    await wt.write({ 'a.txt': 'changed\n', 'n e w/[id].ts': 'new\n' });
    await unlink(path.join(wt.dir, 'gone.txt'));
    await chmod(path.join(wt.dir, 'run.sh'), 0o755);
    await symlink('a.txt', path.join(wt.dir, 'link'));
    const work = (await captured(captureWork(wt.dir, ['a.txt', 'gone.txt', 'run.sh', 'link', 'n e w/'], []))).work;
    expect(work.entries).toHaveLength(5);

    expect(await succeeded(parkedWork(r.dir, 'plan-1', 4))).toBeNull();
    const parked = await succeeded(new Integrator(r.dir).park('plan-1', 4, work, 'task 4: awaiting approval'));
    expect(await succeeded(readRef(r.dir, awaitingRef('plan-1', 4)))).toBe(parked);
    expect((await r.git(['rev-parse', `${parked}^`])).trim()).toBe(start);
    expect(await succeeded(parkedWork(r.dir, 'plan-1', 4))).toEqual(work);

    // Approving integrates the parked work.
    const tip = await succeeded(integrate(r.dir, integrationRef('plan-1'), start, batch([4], [(await succeeded(parkedWork(r.dir, 'plan-1', 4)))!])));
    expect(await treeOf(r, tip)).toEqual(await treeOf(r, parked));

    await r.git(['update-ref', integrationRef('plan-10'), start]);
    await succeeded(new Integrator(r.dir).park('plan-10', 1, work, 'other plan'));
    // Sorted as git sorts refs: `refs/foreman-awaiting/` before `refs/foreman/`.
    expect(await succeeded(foremanRefs(r.dir, 'plan-1'))).toEqual([awaitingRef('plan-1', 4), integrationRef('plan-1')]);
    expect(await succeeded(foremanRefs(r.dir))).toEqual([
      awaitingRef('plan-1', 4),
      awaitingRef('plan-10', 1),
      integrationRef('plan-1'),
      integrationRef('plan-10'),
    ]);

    await succeeded(dropParked(r.dir, 'plan-1', 4));
    expect(await succeeded(parkedWork(r.dir, 'plan-1', 4))).toBeNull();
    await succeeded(dropParked(r.dir, 'plan-1', 4)); // nothing parked: fine
    expect(await succeeded(foremanRefs(r.dir, 'plan-1'))).toEqual([integrationRef('plan-1')]);
  });

  it('git failing to read refs or parked work is a value, never a throw', async () => {
    const plain = await mkdtemp(path.join(os.tmpdir(), 'foreman-nogit-'));
    cleanups.push(() => rm(plain, { recursive: true, force: true }));
    const notARepository = { ok: false, error: expect.objectContaining({ exitCode: 128, stderr: expect.stringMatching(/not a git repository/) }) };
    expect(await readRef(plain, integrationRef('p'))).toEqual(notARepository);
    expect(await foremanRefs(plain, 'p')).toEqual(notARepository);
    expect(await parkedTasks(plain, 'p', 'candidate')).toEqual(notARepository);
    expect(await parkedWork(plain, 'p', 1)).toEqual(notARepository);
    expect(await parkedTrailers(plain, 'p', 1, 'candidate')).toEqual(notARepository);
    expect(await deletePlanRefs(plain, 'p')).toEqual(notARepository);

    // Parked work whose commit has no parent (a ref foreman did not write) cannot be read: a failure, said.
    const r = await repo({ 'a.txt': 'a\n' });
    const root = (await r.git(['commit-tree', `${await rev(r, 'HEAD')}^{tree}`, '-m', 'no parent'])).trim();
    await r.git(['update-ref', awaitingRef('p', 2), root]);
    expect(await parkedWork(r.dir, 'p', 2)).toEqual({
      ok: false,
      error: { step: 'rev-parse', exitCode: 1, stderr: `${awaitingRef('p', 2)} is at ${root}, which has no parent: no work foreman parked` },
    });
  });

  it('deletePlanRefs stops at the first ref git cannot delete, the integration ref last, so the plan can still be found', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const head = await rev(r, 'HEAD');
    await r.git(['update-ref', integrationRef('p'), head]);
    await r.git(['update-ref', awaitingRef('p', 1), head]);
    // Someone else's git holds the parked ref's lock.
    await writeFile(path.join(r.dir, '.git', `${awaitingRef('p', 1)}.lock`), '');
    const deleted = await deletePlanRefs(r.dir, 'p');
    expect(deleted.ok).toBe(false);
    expect(await succeeded(foremanRefs(r.dir, 'p'))).toEqual([awaitingRef('p', 1), integrationRef('p')]);
    await rm(path.join(r.dir, '.git', `${awaitingRef('p', 1)}.lock`));
    await succeeded(deletePlanRefs(r.dir, 'p'));
    expect(await succeeded(foremanRefs(r.dir, 'p'))).toEqual([]);
  });

  it('deleteRef honours the expected value', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const head = await rev(r, 'HEAD');
    await r.write({ 'a.txt': 'b\n' });
    await r.git(['commit', '-qam', 'second']);
    const second = await rev(r, 'HEAD');
    const ref = integrationRef('p');
    await r.git(['update-ref', ref, second]);
    const refused = await deleteRef(r.dir, ref, head);
    expect(refused.ok).toBe(false);
    expect(await succeeded(readRef(r.dir, ref))).toBe(second);
    await succeeded(deleteRef(r.dir, ref, second));
    expect(await succeeded(readRef(r.dir, ref))).toBeNull();
    await succeeded(deleteRef(r.dir, ref));
  });
});

describe('git calls', () => {
  /** Runs `body` with every git command it spawns written to a log; returns the commands. */
  /** A logged call's command word, after the runner's `-c` options. */
  const command = (call: string) => call.replace(/^(-c \S+ )+/, '').split(' ')[0];

  async function gitCalls(body: () => Promise<unknown>): Promise<string[]> {
    const shims = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-git-shim-')));
    cleanups.push(() => rm(shims, { recursive: true, force: true }));
    // git's own binary sits in its exec path.
    const realGit = path.join((await runGit(shims, ['--exec-path'])).trim(), 'git');
    const log = path.join(shims, 'calls.log');
    await writeFile(path.join(shims, 'git'), `#!/bin/sh\necho "$*" >> '${log}'\nexec '${realGit}' "$@"\n`, { mode: 0o755 });
    const savedPath = process.env.PATH;
    process.env.PATH = `${shims}:${savedPath ?? ''}`;
    try {
      await body();
    } finally {
      process.env.PATH = savedPath;
    }
    return existsSync(log) ? (await readFile(log, 'utf8')).split('\n').filter(Boolean) : [];
  }

  it('capture and integration take a fixed number of git calls, however many files', async () => {
    const many = Object.fromEntries(Array.from({ length: 450 }, (_, i) => [`src/f${i}.ts`, `export const v${i} = ${i};\n`]));
    const r = await repo({ 'a.txt': 'a\n', ...Object.fromEntries(Object.keys(many).map((f) => [f, 'old\n'])) });
    const start = await rev(r, 'HEAD');
    const small = await slot(r, start);
    const large = await slot(r, start);
    await small.write({ 'a.txt': 'one file\n' });
    await large.write({ ...many, 'src/new/added.ts': 'new\n' });

    let smallWork: CapturedWork | undefined;
    let largeWork: CapturedWork | undefined;
    const captureSmall = await gitCalls(async () => (smallWork = (await captured(captureWork(small.dir, ['a.txt'], []))).work));
    const captureLarge = await gitCalls(async () => (largeWork = (await captured(captureWork(large.dir, ['src/'], []))).work));
    expect(largeWork!.entries).toHaveLength(451);
    // status (HEAD with it: --branch), add, diff-index.
    expect(captureSmall).toHaveLength(3);
    expect(captureSmall.some((call) => call.includes('rev-parse'))).toBe(false);
    expect(captureLarge).toHaveLength(captureSmall.length);

    const ref = integrationRef('p');
    const first = await gitCalls(() => succeeded(integrate(r.dir, ref, start, batch([1], [smallWork!]))));
    const tip = (await succeeded(readRef(r.dir, ref)))!;
    // A batch from an older base: the same calls plus one conflict check.
    const second = await gitCalls(() => succeeded(integrate(r.dir, ref, tip, batch([2, 3], [largeWork!]))));
    expect(Object.keys(await treeOf(r, (await succeeded(readRef(r.dir, ref)))!))).toHaveLength(452);
    // The tree builder's two processes (cat-file --batch, mktree --batch), the identity (config,
    // var), the commit writer (hash-object, kept), update-ref, and (the ref being new) a look at
    // the ref and its creation.
    expect(first.map(command)).toEqual(['cat-file', 'mktree', 'config', 'var', 'hash-object', 'update-ref', 'rev-parse', 'update-ref']);
    // A one-off integration starts its own; one diff-tree for the older base.
    expect(second.map(command).sort()).toEqual(['cat-file', 'config', 'diff-tree', 'hash-object', 'mktree', 'update-ref', 'var']);
  });
  it("a run's integrator asks for the identity once, keeps its tree builder, and asks git about an older base only when its own commits since set one of the paths", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const start = await rev(r, 'HEAD');
    const scratch = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-integrator-')));
    cleanups.push(() => rm(scratch, { recursive: true, force: true }));
    const integrator = new Integrator(r.dir);
    cleanups.push(async () => integrator.close());
    const ref = integrationRef('p');
    let blobs = 0;
    const work = async (file: string, content: string, base: string): Promise<CapturedWork> => {
      const source = path.join(scratch, `blob-${blobs++}`);
      await writeFile(source, content);
      return { base, entries: [{ path: file, mode: '100644', object: (await r.git(['hash-object', '-w', source])).trim() }] };
    };

    const a1 = await work('a.txt', 'A\n', start);
    const first = await gitCalls(() => succeeded(integrator.integrate(ref, start, batch([1], [a1]))));
    expect(first.filter((call) => / config /.test(call))).toHaveLength(1);
    const tip1 = (await succeeded(readRef(r.dir, ref)))!;
    // From the tip it made: no identity, no tree read or process started (the builder and the
    // commit writer keep theirs); and a work from the older base whose path none of its commits
    // set needs no diff-tree: the ref's move is the one process.
    const b2 = await work('b.txt', 'B\n', start);
    const second = await gitCalls(() => succeeded(integrator.integrate(ref, tip1, batch([2], [b2]))));
    expect(second.map(command)).toEqual(['update-ref']);
    const tip2 = (await succeeded(readRef(r.dir, ref)))!;
    // A path one of its commits set since the base: git is asked, and finds the conflict.
    const a3 = await work('a.txt', 'other\n', start);
    const conflict = await gitCalls(async () =>
      expect(await integrator.integrate(ref, tip2, batch([3], [a3]))).toMatchObject({ ok: false, error: { kind: 'conflict', paths: ['a.txt'] } }),
    );
    expect(conflict.filter((call) => call.includes('diff-tree'))).toHaveLength(1);
    // Set back since (a.txt as at the base again): git says no conflict, so it integrates.
    const back = await succeeded(integrator.integrate(ref, tip2, batch([4], [await work('a.txt', 'a\n', tip2)])));
    await succeeded(integrator.integrate(ref, back, batch([5], [await work('a.txt', 'fine\n', start)])));
    expect(await r.git(['show', `${ref}:a.txt`])).toBe('fine\n');
    expect(await r.git(['show', `${ref}:b.txt`])).toBe('B\n');
    // Side by side: one at a time through the one tree builder, each on the tip the other made.
    const now = (await succeeded(readRef(r.dir, ref)))!;
    const [x, y] = await Promise.all([
      integrator.integrate(null, now, batch([6], [await work('b.txt', 'x\n', now)])),
      integrator.integrate(null, now, batch([7], [await work('c.txt', 'y\n', now)])),
    ]);
    expect(await r.git(['show', `${await succeeded(Promise.resolve(x))}:c.txt`])).toBe('c\n');
    expect(await r.git(['show', `${await succeeded(Promise.resolve(y))}:b.txt`])).toBe('B\n');
    expect(await r.git(['show', `${await succeeded(Promise.resolve(y))}:c.txt`])).toBe('y\n');
  });

  it("capture in a clone slot asks nothing more while the slot holds no objects of its own, and copies only what the person's store lacks", async () => {
    const r = await repo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const start = await rev(r, 'HEAD');
    const pool = await clonePool(r);
    const { wt: plain } = await cloneSlot(pool, start);
    const { wt: committed } = await cloneSlot(pool, start);
    await plain.write({ 'a.txt': 'edited\n' });
    await committed.write({ 'a.txt': 'committed\n' });
    await committed.git(['-c', 'user.name=w', '-c', 'user.email=w@w', 'commit', '-qam', 'worker']);
    const plainCalls = await gitCalls(() => captured(captureWork(plain.dir, ['a.txt'], [], start)));
    const committedCalls = await gitCalls(() => captured(captureWork(committed.dir, ['a.txt'], [], start)));
    // status (HEAD with it) and hash-object: the slot's own store is empty, so nothing to look up.
    expect(plainCalls).toHaveLength(2);
    expect(plainCalls[1]).toMatch(/ hash-object -w --stdin-paths$/);
    expect(plainCalls.filter((call) => command(call)!.endsWith('pack-objects'))).toEqual([]);
    // diff-tree for the worker's commits, nothing to add (it is in the index), and the copy: one
    // pack-objects piped into one unpack-objects (loose objects, never a new pack).
    expect(committedCalls.filter((call) => command(call) === 'pack-objects')).toHaveLength(1);
    expect(committedCalls.filter((call) => command(call) === 'unpack-objects')).toHaveLength(1);
  });
});

describe('capture in one git process (hashedWork)', () => {
  it('records exactly what staging and diffing the index records (stagedWork), file by file', async () => {
    const r = await repo({
      '.gitattributes': '*.txt text eol=lf\n*.bin -text\n',
      'mod.txt': 'one\n',
      'gone.txt': 'bye\n',
      'tool.sh': 'echo\n',
      'was-exec.sh': 'x\n',
      'back.txt': 'same\n',
      'restaged.txt': 'restaged\n',
      'raw.bin': 'raw\n',
      'dir/sp ace ✓.txt': 'odd\n',
    });
    await chmod(path.join(r.dir, 'was-exec.sh'), 0o755);
    await r.git(['add', 'was-exec.sh']);
    await r.git(['commit', '-qm', 'exec']);
    const start = await rev(r, 'HEAD');
    const { wt } = await cloneSlot(await clonePool(r), start);
    // Edits, a new file in a new folder, a deletion, modes both ways, CRLF the attributes convert
    // and binary they do not, a change made and undone after staging, a staged deletion
    // re-created, a file added and removed again.
    await wt.write({
      'mod.txt': 'two\r\nlines\r\n',
      'new/deep/file.txt': 'new\n',
      'raw.bin': 'raw\r\n',
      'dir/sp ace ✓.txt': 'odder\n',
      'back.txt': 'changed\n',
    });
    await unlink(path.join(wt.dir, 'gone.txt'));
    await chmod(path.join(wt.dir, 'tool.sh'), 0o755);
    await chmod(path.join(wt.dir, 'was-exec.sh'), 0o644);
    await wt.git(['add', 'back.txt']);
    await wt.write({ 'back.txt': 'same\n' });
    await wt.git(['rm', '-q', '--cached', 'restaged.txt']);
    await wt.write({ 'restaged.txt': 'restaged, changed\n', 'fleeting.txt': 'f\n' });
    await wt.git(['add', 'fleeting.txt']);
    await unlink(path.join(wt.dir, 'fleeting.txt'));

    const status = await runGit(wt.dir, ['status', '--porcelain=v2', '--branch', '-z', '-uall', '--no-renames', '--ignore-submodules=none']);
    const listed = parseStatusV2(status).entries;
    const paths = [...new Set(listed.map((entry) => entry.path))];
    const hashed = await hashedWork(wt.dir, listed, paths, undefined);
    expect(hashed).not.toBeNull();
    const fast = await succeeded(Promise.resolve(hashed!));
    const stageable = listed.filter((entry) => entry.xy !== 'D ').map((entry) => entry.path);
    const general = await succeeded(stagedWork(wt.dir, start, [...new Set(stageable)], undefined));
    const byName = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : 1);
    expect(fast.sort(byName)).toEqual(general.sort(byName));
    expect(fast.map((entry) => entry.path)).toEqual([
      'dir/sp ace ✓.txt',
      'gone.txt',
      'mod.txt',
      'new/deep/file.txt',
      'raw.bin',
      'restaged.txt',
      'tool.sh',
      'was-exec.sh',
    ]);
  });

  it('leaves to staging what it cannot hash plainly: a symbolic link, names --stdin-paths cannot carry, a linked worktree', async () => {
    const r = await repo({ 'a.txt': 'a\n' });
    const start = await rev(r, 'HEAD');
    const { wt } = await cloneSlot(await clonePool(r), start);
    await symlink('a.txt', path.join(wt.dir, 'link'));
    const listed = parseStatusV2(await runGit(wt.dir, ['status', '--porcelain=v2', '-z', '-uall'])).entries;
    expect(await hashedWork(wt.dir, listed, ['link'], undefined)).toBeNull();
    // Names `--stdin-paths` would read otherwise: a leading quote (C quoting), a carriage return.
    await wt.write({ '"quoted.txt': 'q\n', 'cr\r.txt': 'r\n' });
    const odd = parseStatusV2(await runGit(wt.dir, ['status', '--porcelain=v2', '-z', '-uall'])).entries;
    expect(await hashedWork(wt.dir, odd, ['"quoted.txt'], undefined)).toBeNull();
    expect(await hashedWork(wt.dir, odd, ['cr\r.txt'], undefined)).toBeNull();
    const captured = await succeeded(captureWork(wt.dir, ['"quoted.txt', 'cr\r.txt'], []));
    expect(captured.work.entries.map((entry) => entry.path).sort()).toEqual(['"quoted.txt', 'cr\r.txt']);
    // A linked worktree's config is the main repository's: not read here, so staged.
    const linked = await slot(r);
    await linked.write({ 'a.txt': 'b\n' });
    const linkedListed = parseStatusV2(await runGit(linked.dir, ['status', '--porcelain=v2', '-z', '-uall'])).entries;
    expect(await hashedWork(linked.dir, linkedListed, ['a.txt'], undefined)).toBeNull();
  });
});
