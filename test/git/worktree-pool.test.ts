import { spawn } from 'node:child_process';
import { NO_HOOKS } from '../../src/core/integration/git-text.ts';
import { openPool, type PoolOptions } from '../../src/adapters/git/worktree-pool.ts';
import { diskUsage, poolDir, removePlanWorktrees, worktreesRoot } from '../../src/adapters/git/pool-slots.ts';
import { DEFAULT_SETUP_INPUTS, describeProvisionFailure, type SetupRun, symlinkDirectoriesOf } from '../../src/adapters/git/provisioning.ts';
import { afterEachCleanups, type TempGitRepo, tempRepoIn } from '../support/git-repo.ts';
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const cleanups = afterEachCleanups();
const tempRepo = tempRepoIn(cleanups);

const exists = async (file: string): Promise<boolean> => (await lstat(file).catch(() => null)) !== null;

async function tempRoot(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-pool-')));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Everything that says what the person's checkout is: HEAD, branch, index, working tree. */
async function personState(repo: TempGitRepo): Promise<string> {
  const parts = await Promise.all([
    repo.git(['rev-parse', 'HEAD']),
    repo.git(['symbolic-ref', 'HEAD']),
    repo.git(['status', '--porcelain=v1', '-uall', '--ignored']),
    repo.git(['diff']),
    repo.git(['diff', '--cached']),
    repo.git(['for-each-ref']),
  ]);
  return parts.join('\n--\n');
}

/** A setup command stand-in: counts its runs and writes what `npm ci` would (an ignored node_modules/). */
function fakeSetup(result: Partial<SetupRun> = {}) {
  const runs: string[] = [];
  const runSetup = async (dir: string, command: string): Promise<SetupRun> => {
    runs.push(dir);
    await mkdir(path.join(dir, 'node_modules', 'dep'), { recursive: true });
    await writeFile(path.join(dir, 'node_modules', 'dep', 'index.js'), `installed by ${command}\n`);
    return { exitCode: 0, timedOut: false, output: 'added 1 package\n', ...result };
  };
  return { runs, runSetup };
}

/** Worktrees git has registered for `repo`, except the main one. */
async function linkedWorktrees(repo: TempGitRepo): Promise<string[]> {
  const out = await repo.git(['worktree', 'list', '--porcelain']);
  return out
    .split('\n')
    .filter((line) => line.startsWith('worktree '))
    .map((line) => line.slice('worktree '.length))
    .filter((dir) => dir !== repo.dir);
}

const BASE_FILES = {
  '.gitignore': 'node_modules/\ndist/\n.env\nconfig/\n',
  'package.json': '{"name":"x"}\n',
  'package-lock.json': '{"lockfileVersion":3}\n',
  'src/a.ts': 'export const a = 1;\n',
};

async function setup(files: Record<string, string> = BASE_FILES, extra: Partial<PoolOptions> = {}) {
  const repo = await tempRepo(files);
  // The person has work in progress: an unstaged edit, a staged file, an untracked file.
  await repo.write({ 'src/a.ts': 'export const a = 2; // editing\n', 'notes.txt': 'mine\n', 'staged.txt': 'staged\n' });
  await repo.git(['add', 'staged.txt']);
  const root = await tempRoot();
  const fake = fakeSetup();
  const options: PoolOptions = { repo: repo.dir, planId: 'plan-1', root, setupCommand: 'npm ci', runSetup: fake.runSetup, ...extra };
  const before = await personState(repo);
  const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
  return { repo, root, fake, options, before, head };
}

/** A commit on no branch (the integration tip stand-in), made with plumbing from HEAD plus `files`. */
async function commitBeside(repo: TempGitRepo, parent: string, files: Record<string, string>): Promise<string> {
  const scratch = await tempRoot();
  const index = path.join(scratch, 'index');
  const env = { ...process.env, GIT_INDEX_FILE: index };
  const run = (args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn('git', args, { cwd: repo.dir, env });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (code: number) => (code === 0 ? resolve(out.trim()) : reject(new Error(`git ${args.join(' ')} exited ${code}`))));
      child.stdin.on('error', () => undefined); // git that reads no stdin closes it early
      child.stdin.end(input ?? '');
    });
  await run(['read-tree', parent]);
  for (const [file, content] of Object.entries(files)) {
    const blob = await run(['hash-object', '-w', '--stdin'], content);
    await run(['update-index', '--add', '--cacheinfo', `100644,${blob},${file}`]);
  }
  const tree = await run(['write-tree']);
  return run(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit-tree', tree, '-p', parent, '-m', 'tip']);
}

describe('where worktrees live', () => {
  it('FOREMAN_WORKTREES, else XDG_CACHE_HOME, else ~/.cache', () => {
    expect(worktreesRoot({ FOREMAN_WORKTREES: '/w', XDG_CACHE_HOME: '/c', HOME: '/h' })).toBe('/w');
    expect(worktreesRoot({ XDG_CACHE_HOME: '/c', HOME: '/h' })).toBe('/c/foreman/worktrees');
    expect(worktreesRoot({ XDG_CACHE_HOME: 'relative', HOME: '/h' })).toBe('/h/.cache/foreman/worktrees');
    expect(worktreesRoot({ HOME: '/h' })).toBe('/h/.cache/foreman/worktrees');
  });

  it('one directory per repository and plan; a plan id that is not a plain name never becomes a path', () => {
    const dir = poolDir('/root', '/home/me/project', 'p1');
    expect(dir).toMatch(/^\/root\/project-[0-9a-f]{10}\/p1$/);
    expect(poolDir('/root', '/other/project', 'p1')).not.toBe(dir);
    for (const planId of ['../escape', 'a/b', '..', '.hidden', '']) {
      const odd = poolDir('/root', '/home/me/project', planId);
      expect(path.dirname(odd)).toBe(path.dirname(dir));
      expect(path.basename(odd)).toMatch(/^plan-[0-9a-f]{16}$/);
    }
  });

  it('the default setup inputs name the usual lock files', () => {
    expect(DEFAULT_SETUP_INPUTS).toEqual(
      expect.arrayContaining(['package-lock.json', 'yarn.lock', 'pnpm-lock.yaml', 'Cargo.lock', 'go.sum', 'poetry.lock', 'uv.lock']),
    );
  });
});

describe('WorktreePool', () => {
  it("makes slots in parallel without lock errors, each a repository of its own at the commit, borrowing the person's objects", async () => {
    const { repo, options, before, head } = await setup();
    const pool = await openPool(options);
    const acquired = await Promise.all([0, 1, 2, 3, 4].map(() => pool.acquire(head)));
    const slots = acquired.map((result) => {
      if (!result.ok) throw new Error(JSON.stringify(result.error));
      return result.value;
    });
    expect(slots.map((slot) => slot.index).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(slots.map((slot) => slot.dir)).size).toBe(5);
    for (const slot of slots) {
      expect(path.dirname(slot.dir)).toBe(pool.dir);
      expect(slot.commit).toBe(head);
      expect(await readFile(path.join(slot.dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
      expect(slot.kept).toEqual(['node_modules/']);
      expect(JSON.parse(await readFile(path.join(pool.dir, `slot-${slot.index}.json`), 'utf8'))).toMatchObject({
        commit: head,
        made: ['node_modules/'],
        kept: ['node_modules/'],
      });
    }
    // Clones, not linked worktrees: the person's repository records none of them, and each slot's
    // common git directory (what Claude Code's sandbox guards) is its own.
    expect(await linkedWorktrees(repo)).toEqual([]);
    expect(await exists(path.join(repo.dir, '.git', 'worktrees'))).toBe(false);
    const personObjects = path.join(repo.dir, '.git', 'objects');
    for (const slot of slots) {
      expect((await lstat(path.join(slot.dir, '.git'))).isDirectory()).toBe(true);
      expect((await repo.git(['-C', slot.dir, 'rev-parse', '--path-format=absolute', '--git-common-dir'])).trim()).toBe(path.join(slot.dir, '.git'));
      expect(await readFile(path.join(slot.dir, '.git', 'objects', 'info', 'alternates'), 'utf8')).toBe(`${personObjects}\n`);
      // No object copied: the commit is read through the alternates.
      expect(await repo.git(['-C', slot.dir, 'count-objects'])).toMatch(/^0 objects/);
      expect(await repo.git(['-C', slot.dir, 'rev-parse', '--abbrev-ref', 'HEAD'])).toBe('HEAD\n');
    }
    // Outside the person's tree.
    expect(pool.dir.startsWith(repo.dir)).toBe(false);
    expect(await personState(repo)).toBe(before);
  });

  it("runs none of the person's hooks in a slot: no template copied, hooks off in the slot's own config", async () => {
    const { repo, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    // Hooks everywhere the person could have them: their repository's hooks folder, a global
    // `core.hooksPath`, and an `init.templateDir` whose hooks every new repository would copy.
    const marks = await tempRoot();
    const hook = (name: string) => `#!/bin/sh\necho ${name} >> "${marks}/ran"\n`;
    const templates = path.join(marks, 'templates');
    const globalHooks = path.join(marks, 'global-hooks');
    for (const dir of [path.join(repo.dir, '.git', 'hooks'), path.join(templates, 'hooks'), globalHooks]) {
      await mkdir(dir, { recursive: true });
      for (const name of ['post-checkout', 'pre-commit', 'post-commit', 'reference-transaction'])
        await writeFile(path.join(dir, name), hook(`${dir}:${name}`), { mode: 0o755 });
    }
    const globalConfig = path.join(marks, 'gitconfig');
    await writeFile(globalConfig, `[init]\n\ttemplateDir = ${templates}\n[core]\n\thooksPath = ${globalHooks}\n[user]\n\tname = t\n\temail = t@t\n`);
    const saved = process.env.GIT_CONFIG_GLOBAL;
    process.env.GIT_CONFIG_GLOBAL = globalConfig;
    try {
      const pool = await openPool(options);
      const slot = await pool.acquire(head);
      if (!slot.ok) throw new Error(JSON.stringify(slot.error));
      expect(await exists(path.join(slot.value.dir, '.git', 'hooks'))).toBe(false);
      expect(await repo.git(['-C', slot.value.dir, 'config', '--local', 'core.hooksPath'])).toBe('/dev/null\n');
      // A worker committing in its slot runs no hook either.
      await writeFile(path.join(slot.value.dir, 'src/a.ts'), 'worker\n');
      await repo.git(['-C', slot.value.dir, 'commit', '-qam', 'worker commit']);
      await repo.git(['-C', slot.value.dir, 'checkout', '-q', '--detach', head]);
      pool.release(slot.value);
      const again = await pool.acquire(head);
      expect(again.ok).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.GIT_CONFIG_GLOBAL;
      else process.env.GIT_CONFIG_GLOBAL = saved;
    }
    expect(await exists(path.join(marks, 'ran'))).toBe(false);
  });

  it("keeps the person's own ignore patterns (.git/info/exclude) in the slot", async () => {
    const { repo, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    await writeFile(path.join(repo.dir, '.git', 'info', 'exclude'), 'scratch-notes/\n');
    const pool = await openPool(options);
    const slot = await pool.acquire(head);
    if (!slot.ok) throw new Error(JSON.stringify(slot.error));
    await mkdir(path.join(slot.value.dir, 'scratch-notes'));
    await writeFile(path.join(slot.value.dir, 'scratch-notes', 'n.txt'), 'n\n');
    expect(await repo.git(['-C', slot.value.dir, 'status', '--porcelain'])).toBe('');
  });

  it('asks git whether a commit exists once per full id, and every time for a name that may move', async () => {
    const { options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    const bin = await tempRoot();
    const realGit = path.join(
      await new Promise<string>((resolve) => {
        const child = spawn('git', ['--exec-path']);
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', () => resolve(out.trim()));
      }),
      'git',
    );
    await writeFile(path.join(bin, 'git'), `#!/bin/sh\necho "$*" >> "${bin}/log"\nexec "${realGit}" "$@"\n`, { mode: 0o755 });
    const savedPath = process.env.PATH;
    process.env.PATH = `${bin}${path.delimiter}${savedPath ?? ''}`;
    try {
      const pool = await openPool(options);
      // Three slots at once for the same commit: one lookup between them.
      const together = await Promise.all([pool.acquire(head), pool.acquire(head), pool.acquire(head)]);
      for (const acquired of together) {
        expect(acquired.ok && acquired.value.commit).toBe(head);
        if (acquired.ok) pool.release(acquired.value);
      }
      for (const target of [head, head, head, 'HEAD', 'HEAD']) {
        const acquired = await pool.acquire(target);
        expect(acquired.ok && acquired.value.commit).toBe(head);
        if (acquired.ok) pool.release(acquired.value);
      }
    } finally {
      process.env.PATH = savedPath;
    }
    // Every command comes through runGit, behind the flags that keep the person's hooks off.
    const hooksOff = `${NO_HOOKS.join(' ')} `;
    const lines = (await readFile(path.join(bin, 'log'), 'utf8')).split('\n').filter(Boolean);
    expect(lines.every((line) => line.startsWith(hooksOff))).toBe(true);
    const asked = lines.map((line) => line.slice(hooksOff.length)).filter((line) => line.startsWith('rev-parse --verify --quiet'));
    expect(asked).toEqual([
      `rev-parse --verify --quiet --end-of-options ${head}^{commit}`,
      'rev-parse --verify --quiet --end-of-options HEAD^{commit}',
      'rev-parse --verify --quiet --end-of-options HEAD^{commit}',
    ]);
  });

  it('gives a busy slot to no one else and reuses the lowest released one', async () => {
    const { options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    const second = await pool.acquire(head);
    if (!first.ok || !second.ok) throw new Error('acquire failed');
    expect([first.value.index, second.value.index]).toEqual([0, 1]);
    pool.release(first.value);
    const third = await pool.acquire(head);
    expect(third.ok && third.value.index).toBe(0);
    expect(pool.slots().map((slot) => [slot.index, slot.busy])).toEqual([
      [0, true],
      [1, true],
    ]);
  });

  it("clears a reused slot of the previous attempt's untracked and ignored output, keeping what the setup made", async () => {
    const { repo, options, fake, before, head } = await setup();
    const tip = await commitBeside(repo, head, { 'src/b.ts': 'export const b = 1;\n' });
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    const dir = first.value.dir;
    // The attempt: a tracked edit, a deletion, a stray file, build output, a cache in an ignored
    // folder, and a file dropped into node_modules/ next to what the setup installed.
    await writeFile(path.join(dir, 'src/a.ts'), 'broken\n');
    await rm(path.join(dir, 'package.json'));
    await writeFile(path.join(dir, 'stray.txt'), 'stray\n');
    await mkdir(path.join(dir, 'dist'), { recursive: true });
    await writeFile(path.join(dir, 'dist/out.js'), 'built\n');
    await mkdir(path.join(dir, 'src/__snapshots__'), { recursive: true });
    await writeFile(path.join(dir, 'src/__snapshots__/a.snap'), 'snap\n');
    await repo.git(['-C', dir, 'add', 'stray.txt']);
    pool.release(first.value);

    const second = await pool.acquire(tip);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(second.value.dir).toBe(dir);
    expect(second.value.commit).toBe(tip);
    expect((await repo.git(['-C', dir, 'rev-parse', 'HEAD'])).trim()).toBe(tip);
    expect(await repo.git(['-C', dir, 'status', '--porcelain', '-uall'])).toBe('');
    expect(await repo.git(['-C', dir, 'status', '--porcelain', '--ignored'])).toBe('!! node_modules/\n');
    expect(await readFile(path.join(dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect(await readFile(path.join(dir, 'src/b.ts'), 'utf8')).toBe('export const b = 1;\n');
    expect(await exists(path.join(dir, 'dist'))).toBe(false);
    expect(await exists(path.join(dir, 'stray.txt'))).toBe(false);
    expect(await readFile(path.join(dir, 'node_modules/dep/index.js'), 'utf8')).toBe('installed by npm ci\n');
    // The lock file did not change: no second install.
    expect(fake.runs).toHaveLength(1);
    expect(await personState(repo)).toBe(before);
  });

  it("moves no branch when the attempt left its slot on one, and never the person's", async () => {
    const { repo, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    await repo.git(['branch', 'side']);
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    const inSlot = (args: string[]) => repo.git(['-C', first.value.dir, ...args]);
    await inSlot(['checkout', '-q', 'side']);
    await writeFile(path.join(first.value.dir, 'src/a.ts'), 'on side\n');
    await inSlot(['commit', '-qam', 'work on side']);
    // The slot's branches are its own: the person's `side` did not move.
    const sideTip = (await inSlot(['rev-parse', 'side'])).trim();
    expect(sideTip).not.toBe(head);
    expect((await repo.git(['rev-parse', 'side'])).trim()).toBe(head);
    pool.release(first.value);

    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect((await inSlot(['rev-parse', 'side'])).trim()).toBe(sideTip);
    expect((await repo.git(['rev-parse', 'side'])).trim()).toBe(head);
    expect((await repo.git(['rev-parse', 'main'])).trim()).toBe(head);
    expect(await inSlot(['rev-parse', '--abbrev-ref', 'HEAD'])).toBe('HEAD\n');
    expect(await readFile(path.join(second.value.dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
  });

  it('re-runs the setup when a setup input changes between commits, and not otherwise', async () => {
    const { repo, options, fake, before, head } = await setup();
    const sameInputs = await commitBeside(repo, head, { 'src/c.ts': 'c\n' });
    const newLock = await commitBeside(repo, sameInputs, { 'package-lock.json': '{"lockfileVersion":3,"packages":{"dep":{}}}\n' });
    const pool = await openPool(options);
    const use = async (commit: string) => {
      const slot = await pool.acquire(commit);
      if (!slot.ok) throw new Error(JSON.stringify(slot.error));
      pool.release(slot.value);
      return slot.value;
    };
    await use(head);
    expect(fake.runs).toHaveLength(1);
    await use(sameInputs);
    expect(fake.runs).toHaveLength(1);
    const relocked = await use(newLock);
    expect(fake.runs).toHaveLength(2);
    expect(await readFile(path.join(relocked.dir, 'node_modules/dep/index.js'), 'utf8')).toBe('installed by npm ci\n');
    await use(newLock);
    expect(fake.runs).toHaveLength(2);
    // Going back to the old lock file is a change too.
    await use(sameInputs);
    expect(fake.runs).toHaveLength(3);
    expect(await personState(repo)).toBe(before);
  });

  it('runs the setup again when the attempt deleted what it made', async () => {
    const { options, fake, head } = await setup();
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    await rm(path.join(first.value.dir, 'node_modules'), { recursive: true });
    pool.release(first.value);
    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(fake.runs).toHaveLength(2);
    expect(await readFile(path.join(second.value.dir, 'node_modules/dep/index.js'), 'utf8')).toBe('installed by npm ci\n');
  });

  it('only the named inputs count: another file changing runs no setup', async () => {
    const { repo, options, fake, head } = await setup(BASE_FILES, { setupInputs: ['deps/'] });
    const lockChanged = await commitBeside(repo, head, { 'package-lock.json': 'changed\n' });
    const depsChanged = await commitBeside(repo, lockChanged, { 'deps/list.txt': 'dep\n' });
    const pool = await openPool(options);
    for (const commit of [head, lockChanged, depsChanged]) {
      const slot = await pool.acquire(commit);
      if (!slot.ok) throw new Error(JSON.stringify(slot.error));
      pool.release(slot.value);
    }
    expect(fake.runs).toHaveLength(2);
  });

  it('restores a .worktreeinclude copy the attempt edited, and drops what it added beside it', async () => {
    const files = { ...BASE_FILES, '.worktreeinclude': '.env\nconfig/secret.json\n' };
    const { repo, options, before, head } = await setup(files, { setupCommand: undefined });
    await repo.write({ '.env': 'TOKEN=original\n', 'config/secret.json': '{"k":1}\n' });
    const stateWithIncludes = await personState(repo);
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    expect(first.value.kept).toEqual(['.env', 'config/secret.json']);
    // The pool shows the slot as it is: nothing it does not know (which of `kept` are copies).
    expect(pool.slots()).toEqual([{ index: 0, dir: first.value.dir, commit: head, kept: ['.env', 'config/secret.json'], busy: true, provisioned: true }]);
    expect(await readFile(path.join(first.value.dir, '.env'), 'utf8')).toBe('TOKEN=original\n');
    await writeFile(path.join(first.value.dir, '.env'), 'TOKEN=changed-by-the-attempt\n');
    await rm(path.join(first.value.dir, 'config/secret.json'));
    await writeFile(path.join(first.value.dir, 'config/cache.json'), 'cache\n');
    pool.release(first.value);

    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(await readFile(path.join(second.value.dir, '.env'), 'utf8')).toBe('TOKEN=original\n');
    expect(await readFile(path.join(second.value.dir, 'config/secret.json'), 'utf8')).toBe('{"k":1}\n');
    expect(await exists(path.join(second.value.dir, 'config/cache.json'))).toBe(false);
    expect(await personState(repo)).toBe(stateWithIncludes);
    expect(before).not.toBe(stateWithIncludes);
  });

  it('keeps what the setup wrote into a folder that also holds a .worktreeinclude copy, and only that', async () => {
    const files = { ...BASE_FILES, '.worktreeinclude': 'config/secret.json\n' };
    const runs: string[] = [];
    const { repo, options, head } = await setup(files, {
      runSetup: async (dir) => {
        runs.push(dir);
        await writeFile(path.join(dir, 'config/generated.json'), 'generated\n');
        return { exitCode: 0, timedOut: false, output: '' };
      },
    });
    await repo.write({ 'config/secret.json': '{"k":1}\n' });
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    expect(first.value.kept).toEqual(['config/generated.json', 'config/secret.json']);
    await writeFile(path.join(first.value.dir, 'config/stray.json'), 'stray\n');
    pool.release(first.value);
    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect((await readdir(path.join(second.value.dir, 'config'))).sort()).toEqual(['generated.json', 'secret.json']);
    expect(runs).toHaveLength(1);
  });

  it("links worktree.symlinkDirectories to the person's folders, and never deletes what they hold", async () => {
    const { repo, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    await repo.write({
      'node_modules/dep/index.js': 'person\n',
      '.claude/settings.json': JSON.stringify({ worktree: { symlinkDirectories: ['node_modules', 'missing'] } }),
    });
    const before = await personState(repo);
    const pool = await openPool({ ...options, symlinkDirectories: await symlinkDirectoriesOf(repo.dir) });
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    const link = path.join(first.value.dir, 'node_modules');
    expect(await readlink(link)).toBe(path.join(repo.dir, 'node_modules'));
    expect(await exists(path.join(first.value.dir, 'missing'))).toBe(false);
    // git sees a link, which a `node_modules/` rule does not ignore: it is kept, by name.
    expect(first.value.kept).toEqual(['node_modules']);
    expect(await repo.git(['-C', first.value.dir, 'status', '--porcelain'])).toBe('?? node_modules\n');
    pool.release(first.value);

    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    // Removed by the attempt: made again.
    await rm(link);
    pool.release(second.value);
    const third = await pool.acquire(head);
    if (!third.ok) throw new Error(JSON.stringify(third.error));
    expect(await readlink(link)).toBe(path.join(repo.dir, 'node_modules'));
    pool.release(third.value);

    await pool.remove();
    expect(await readFile(path.join(repo.dir, 'node_modules/dep/index.js'), 'utf8')).toBe('person\n');
    expect(await personState(repo)).toBe(before);
  });

  it("re-provisioning a slot removes its links, never what the person's folder holds", async () => {
    const { repo, options, fake, head } = await setup(BASE_FILES, { symlinkDirectories: ['vendor'] });
    await repo.write({ 'vendor/lib/keep.txt': 'person\n' });
    const relocked = await commitBeside(repo, head, { 'package-lock.json': 'changed\n' });
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    expect(first.value.kept).toEqual(['node_modules/', 'vendor']);
    pool.release(first.value);
    const second = await pool.acquire(relocked);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(fake.runs).toHaveLength(2);
    expect(await readlink(path.join(second.value.dir, 'vendor'))).toBe(path.join(repo.dir, 'vendor'));
    expect(await readFile(path.join(repo.dir, 'vendor/lib/keep.txt'), 'utf8')).toBe('person\n');
    await pool.remove();
    expect(await readFile(path.join(repo.dir, 'vendor/lib/keep.txt'), 'utf8')).toBe('person\n');
  });

  it('a failed setup is a value with the end of its output; the slot is provisioned again next time', async () => {
    const { repo, options, before, head } = await setup();
    let fail = true;
    let runs = 0;
    const pool = await openPool({
      ...options,
      runSetup: async (dir) => {
        runs++;
        await mkdir(path.join(dir, 'node_modules'), { recursive: true });
        await writeFile(path.join(dir, 'node_modules/partial'), 'half\n');
        if (fail) return { exitCode: 1, timedOut: false, output: `${'x'.repeat(10_000)}\nnpm ERR! could not resolve dep\n` };
        await writeFile(path.join(dir, 'node_modules/done'), 'ok\n');
        return { exitCode: 0, timedOut: false, output: '' };
      },
    });
    const failed = await pool.acquire(head);
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.error).toMatchObject({ kind: 'setup-failed', command: 'npm ci', exitCode: 1, timedOut: false });
    if (failed.error.kind !== 'setup-failed') return;
    expect(failed.error.output.length).toBeLessThan(5000);
    expect(failed.error.output).toMatch(/npm ERR! could not resolve dep\n$/);
    expect(await exists(path.join(pool.dir, 'slot-0.json'))).toBe(false);
    expect(pool.slots()).toEqual([expect.objectContaining({ index: 0, busy: false, provisioned: false })]);

    fail = false;
    const again = await pool.acquire(head);
    if (!again.ok) throw new Error(JSON.stringify(again.error));
    expect(again.value.index).toBe(0);
    expect(runs).toBe(2);
    expect((await readdir(path.join(again.value.dir, 'node_modules'))).sort()).toEqual(['done', 'partial']);
    expect(await exists(path.join(pool.dir, 'slot-0.json'))).toBe(true);
    expect(await personState(repo)).toBe(before);
  });

  it('a setup that changes tracked files is refused with their names, and the slot stays unprovisioned', async () => {
    const { options, head } = await setup();
    const pool = await openPool({
      ...options,
      setupCommand: 'npm install',
      runSetup: async (dir) => {
        await writeFile(path.join(dir, 'package-lock.json'), '{"rewritten":true}\n');
        await rm(path.join(dir, 'src/a.ts'));
        await mkdir(path.join(dir, 'node_modules'));
        return { exitCode: 0, timedOut: false, output: '' };
      },
    });
    const result = await pool.acquire(head);
    expect(!result.ok && result.error).toEqual({ kind: 'setup-changed-files', command: 'npm install', paths: ['package-lock.json', 'src/a.ts'] });
    expect(pool.slots()).toEqual([expect.objectContaining({ index: 0, busy: false, provisioned: false })]);
  });

  it('a timed-out setup is a failure too', async () => {
    const { options, head } = await setup();
    const pool = await openPool({ ...options, runSetup: async () => ({ exitCode: null, timedOut: true, output: 'slow' }) });
    const result = await pool.acquire(head);
    expect(!result.ok && result.error).toMatchObject({ kind: 'setup-failed', exitCode: null, timedOut: true });
  });

  it('an aborted signal is an interruption, not a setup failure', async () => {
    const { options, head } = await setup();
    const controller = new AbortController();
    const pool = await openPool({
      ...options,
      runSetup: async () => {
        controller.abort();
        return { exitCode: null, timedOut: false, output: 'killed' };
      },
    });
    const result = await pool.acquire(head, controller.signal);
    expect(!result.ok && result.error).toEqual({ kind: 'interrupted' });
    expect(await pool.acquire(head, controller.signal)).toEqual({ ok: false, error: { kind: 'interrupted' } });
    expect(pool.slots()).toEqual([expect.objectContaining({ index: 0, busy: false, provisioned: false })]);
  });

  it('an unknown commit is a git failure value', async () => {
    const { options, head } = await setup();
    const pool = await openPool(options);
    const result = await pool.acquire('no-such-ref');
    expect(!result.ok && result.error).toMatchObject({ kind: 'git-failed', doing: 'find the commit no-such-ref' });
    // A well-formed hash of no commit: refused before the slot is touched (not remade).
    const plain = await openPool({ ...options, planId: 'no-setup', setupCommand: undefined });
    const slot = await plain.acquire(head);
    if (!slot.ok) throw new Error(JSON.stringify(slot.error));
    plain.release(slot.value);
    const missing = await plain.acquire('0123456789abcdef0123456789abcdef01234567');
    expect(!missing.ok && missing.error).toMatchObject({ kind: 'git-failed', doing: 'find the commit 0123456789abcdef0123456789abcdef01234567' });
    expect(plain.slots()).toEqual([expect.objectContaining({ index: 0, busy: false, provisioned: true, commit: head })]);
    expect(await readFile(path.join(slot.value.dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
  });

  it('makes a slot again when its checkout was damaged', async () => {
    const { repo, options, fake, head } = await setup();
    const pool = await openPool(options);
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    pool.release(first.value);
    await rm(path.join(first.value.dir, '.git'), { recursive: true });
    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(second.value.dir).toBe(first.value.dir);
    expect((await repo.git(['-C', second.value.dir, 'rev-parse', 'HEAD'])).trim()).toBe(head);
    expect(fake.runs).toHaveLength(2);
    expect(await exists(path.join(second.value.dir, '.git', 'objects', 'info', 'alternates'))).toBe(true);
    expect(await linkedWorktrees(repo)).toEqual([]);
  });

  it('makes a slot again, never touching a repository around it, when its git directory is gone', async () => {
    const { repo, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    // The pool inside another repository (a FOREMAN_WORKTREES under someone's checkout).
    const outer = await tempRepo({ 'keep.txt': 'outer\n' });
    await writeFile(path.join(outer.dir, 'keep.txt'), 'outer, edited\n');
    const pool = await openPool({ ...options, root: path.join(outer.dir, 'pools') });
    const first = await pool.acquire(head);
    if (!first.ok) throw new Error(JSON.stringify(first.error));
    pool.release(first.value);
    await rm(path.join(first.value.dir, '.git'), { recursive: true });
    const second = await pool.acquire(head);
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect((await repo.git(['-C', second.value.dir, 'rev-parse', 'HEAD'])).trim()).toBe(head);
    expect(await readFile(path.join(outer.dir, 'keep.txt'), 'utf8')).toBe('outer, edited\n');
  });

  it('after a crash, reuses the complete slots, removes half-made ones and forgets what is gone; other plans are left alone', async () => {
    const { repo, options, fake, before, head } = await setup();
    const other = await openPool({ ...options, planId: 'other-plan' });
    const otherSlot = await other.acquire(head);
    if (!otherSlot.ok) throw new Error(JSON.stringify(otherSlot.error));

    const crashed = await openPool(options);
    const slots = await Promise.all([0, 1, 2].map(() => crashed.acquire(head)));
    const [zero, one, two] = slots.map((slot) => {
      if (!slot.ok) throw new Error(JSON.stringify(slot.error));
      return slot.value;
    });
    await writeFile(path.join(zero!.dir, 'leftover.txt'), 'from the killed attempt\n');
    // Slot 1: its directory deleted by hand.
    await rm(one!.dir, { recursive: true, force: true });
    // Slot 2: killed during provisioning (no record).
    await rm(path.join(crashed.dir, 'slot-2.json'));
    // Slot 3: `git clone` killed half-way, under its temporary name (a git directory, no alternates yet).
    const halfCloned = path.join(crashed.dir, 'slot-3.clone-0a1b2c3d');
    await mkdir(path.join(halfCloned, '.git', 'objects'), { recursive: true });
    await writeFile(path.join(halfCloned, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    // Slot 5: a linked worktree an older foreman made (registered in the person's repository).
    await repo.git(['worktree', 'add', '-q', '--detach', path.join(crashed.dir, 'slot-5'), head]);
    // Slot 6: a clone whose alternates never got written.
    await mkdir(path.join(crashed.dir, 'slot-6', '.git', 'objects', 'info'), { recursive: true });
    // Slot 4: a directory that is no repository. Slot 7: a record without a slot. And a temporary file.
    await mkdir(path.join(crashed.dir, 'slot-4', 'src'), { recursive: true });
    await writeFile(path.join(crashed.dir, 'slot-4', 'src', 'a.ts'), 'half\n');
    await writeFile(path.join(crashed.dir, 'slot-7.json'), '{}');
    await writeFile(path.join(crashed.dir, 'slot-0.json.tmp-123'), '');
    const setupsBefore = fake.runs.length;

    const reopened = await openPool(options);
    expect(reopened.dir).toBe(crashed.dir);
    expect(reopened.slots().map((slot) => [slot.index, slot.provisioned])).toEqual([
      [0, true],
      [2, false],
    ]);
    expect((await readdir(reopened.dir)).sort()).toEqual(['slot-0', 'slot-0.json', 'slot-2']);
    // The older foreman's worktree is unregistered too: the person's repository records none.
    expect(await linkedWorktrees(repo)).toEqual([]);

    const again = await Promise.all([0, 1, 2].map(() => reopened.acquire(head)));
    const dirs = again.map((slot) => {
      if (!slot.ok) throw new Error(JSON.stringify(slot.error));
      return slot.value.dir;
    });
    expect(dirs).toEqual([zero!.dir, one!.dir, two!.dir]);
    expect(await exists(path.join(zero!.dir, 'leftover.txt'))).toBe(false);
    // Slot 0 was provisioned already: only slots 1 (made again) and 2 (unprovisioned) ran the setup.
    expect(fake.runs.slice(setupsBefore).sort()).toEqual([one!.dir, two!.dir].sort());
    expect(await readFile(path.join(otherSlot.value.dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect(await personState(repo)).toBe(before);
  });

  it("leaves alone the person's own worktrees, even one whose directory is away (an unmounted disk)", async () => {
    const { repo, root, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    const elsewhere = await tempRoot();
    const away = path.join(elsewhere, 'away');
    await repo.git(['worktree', 'add', '-q', '--detach', away, head]);
    await rm(away, { recursive: true, force: true });
    const pool = await openPool(options);
    await pool.acquire(head);
    await pool.remove();
    await removePlanWorktrees(repo.dir, root, 'plan-1');
    expect(await linkedWorktrees(repo)).toEqual([away]);
  });

  it("remove() leaves no directory and nothing in the person's repository; other plans stay", async () => {
    const { repo, root, options, before, head } = await setup();
    const other = await openPool({ ...options, planId: 'other-plan' });
    const otherSlot = await other.acquire(head);
    if (!otherSlot.ok) throw new Error(JSON.stringify(otherSlot.error));
    const pool = await openPool(options);
    await Promise.all([pool.acquire(head), pool.acquire(head)]);
    const gitDirBefore = (await readdir(path.join(repo.dir, '.git'))).sort();
    await pool.remove();
    expect(await exists(pool.dir)).toBe(false);
    expect(await linkedWorktrees(repo)).toEqual([]);
    expect((await readdir(path.join(repo.dir, '.git'))).sort()).toEqual(gitDirBefore);
    expect(await readFile(path.join(otherSlot.value.dir, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect((await repo.git(['-C', otherSlot.value.dir, 'status', '--porcelain', '-uno'])).trim()).toBe('');
    await expect(pool.acquire(head)).rejects.toThrow(/removed/);
    // A second removal has nothing to do and does not throw.
    await pool.remove();

    await removePlanWorktrees(repo.dir, root, 'other-plan');
    expect(await readdir(root)).toEqual([]);
    // The person's repository is whole: nothing of it lived in a slot.
    await repo.git(['fsck', '--connectivity-only', '--no-dangling']);
    expect(await personState(repo)).toBe(before);
  });

  it("removePlanWorktrees removes slots a crashed run left, complete or not, an older foreman's linked worktree too", async () => {
    const { repo, root, options, head } = await setup(BASE_FILES, { setupCommand: undefined });
    const pool = await openPool(options);
    await pool.acquire(head);
    await mkdir(path.join(pool.dir, 'slot-5'));
    await mkdir(path.join(pool.dir, 'slot-6.clone-00ff00ff', '.git'), { recursive: true });
    await repo.git(['worktree', 'add', '-q', '--detach', path.join(pool.dir, 'slot-8'), head]);
    await removePlanWorktrees(repo.dir, root, 'plan-1');
    expect(await exists(pool.dir)).toBe(false);
    expect(await linkedWorktrees(repo)).toEqual([]);
    // Nothing there: nothing to do.
    await removePlanWorktrees(repo.dir, root, 'plan-1');
  });
});

describe('describeProvisionFailure', () => {
  it('says what failed in one line', () => {
    expect(describeProvisionFailure({ kind: 'setup-failed', command: 'npm ci', exitCode: 1, timedOut: false, output: 'x' })).toBe(
      'the setup command `npm ci` exited with code 1 in a new worktree',
    );
    expect(describeProvisionFailure({ kind: 'setup-failed', command: 'npm ci', exitCode: null, timedOut: true, output: '' })).toMatch(/timed out/);
    // What the caller read in its output (the sandbox refused its registry) is said with it.
    expect(
      describeProvisionFailure({ kind: 'setup-failed', command: 'npm ci', exitCode: 1, timedOut: false, output: 'x', note: 'the sandbox refused …' }),
    ).toBe('the setup command `npm ci` exited with code 1 in a new worktree (the sandbox refused …)');
    expect(describeProvisionFailure({ kind: 'setup-changed-files', command: 'npm install', paths: ['package-lock.json'] })).toMatch(
      /changed files git tracks \(package-lock.json\)/,
    );
    expect(describeProvisionFailure({ kind: 'git-failed', doing: 'clean /x', failure: { step: 'clean', exitCode: 128, stderr: 'fatal: nope\n' } })).toBe(
      'could not clean /x: git clean failed (exit 128): fatal: nope',
    );
    expect(describeProvisionFailure({ kind: 'interrupted' })).toBe('interrupted');
  });
});

describe('diskUsage', () => {
  it('counts what a directory holds, not what its links point to; 0 when absent', async () => {
    const dir = await tempRoot();
    expect(await diskUsage(path.join(dir, 'absent'))).toBe(0);
    await mkdir(path.join(dir, 'tree/sub'), { recursive: true });
    await writeFile(path.join(dir, 'tree/sub/big'), Buffer.alloc(200_000, 1));
    await mkdir(path.join(dir, 'elsewhere'));
    await writeFile(path.join(dir, 'elsewhere/huge'), Buffer.alloc(2_000_000, 1));
    const alone = await diskUsage(path.join(dir, 'tree'));
    expect(alone).toBeGreaterThanOrEqual(200_000);
    expect(alone).toBeLessThan(2_000_000);
    await symlink(path.join(dir, 'elsewhere'), path.join(dir, 'tree/link'));
    expect(await diskUsage(path.join(dir, 'tree'))).toBeLessThan(2_000_000);
  });
});

describe('symlinkDirectoriesOf', () => {
  it('reads worktree.symlinkDirectories, settings.local.json winning; nothing when absent or invalid', async () => {
    const dir = await tempRoot();
    expect(await symlinkDirectoriesOf(dir)).toEqual([]);
    await mkdir(path.join(dir, '.claude'));
    await writeFile(path.join(dir, '.claude/settings.json'), '{ not json');
    expect(await symlinkDirectoriesOf(dir)).toEqual([]);
    await writeFile(
      path.join(dir, '.claude/settings.json'),
      JSON.stringify({ worktree: { symlinkDirectories: ['node_modules/', 'node_modules', '.venv', '../out', '/abs', '.git/x', 3] } }),
    );
    expect(await symlinkDirectoriesOf(dir)).toEqual(['node_modules', '.venv']);
    await writeFile(path.join(dir, '.claude/settings.local.json'), JSON.stringify({ worktree: { symlinkDirectories: ['vendor'] } }));
    expect(await symlinkDirectoriesOf(dir)).toEqual(['vendor']);
    await writeFile(path.join(dir, '.claude/settings.local.json'), JSON.stringify({ permissions: {} }));
    expect(await symlinkDirectoriesOf(dir)).toEqual(['node_modules', '.venv']);
    await writeFile(path.join(dir, '.claude/settings.local.json'), JSON.stringify({ worktree: { symlinkDirectories: 'node_modules' } }));
    expect(await symlinkDirectoriesOf(dir)).toEqual(['node_modules', '.venv']);
  });
});
