// Capture: what an attempt did in its own worktree, taken when its worker exits and before any
// check runs, as the entries (mode, blob, or a deletion) of the task's declared paths.
//
// Nothing here uses the person's index, working tree or hooks. Capture may use the attempt
// worktree's own index (`stagedWork`): that index is foreman's, reset before every attempt. A pool
// slot is a clone that borrows the person's objects (`objects/info/alternates`): its capture
// writes the blobs into the person's object store (where integration and landing read), and
// copies there any entry object only the slot holds (a worker that committed or staged in its
// slot), so the slot can be deleted without a dangling object.
//
// Git calls are counted (test/git/capture-integrate.test.ts checks them). A capture in a slot takes two
// (status with HEAD, `hash-object` of the changed files); when the worker committed, or changed
// something other than files, three or four (status, add, diff-index, and the worker's commits'
// diff-tree), and one or two more to copy objects only its slot holds; never one per file.

import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  byPath,
  type CapturedWork,
  coveredBy,
  err,
  expectObjectId,
  failureOf,
  type GitFailure,
  isCliScratch,
  isObjectId,
  isPlaceholderPath,
  ok,
  parseRaw,
  parseStatusV2,
  type Result,
  splitNul,
  type StatusV2Entry,
  type WorkEntry,
} from '../../core/index.ts';
import { git, type GitCommandError, runGitPipe } from './runner.ts';

export interface Capture {
  /** Every path the attempt changed in its worktree (tracked modified/deleted, new files git does not ignore), sorted; never what `kept` covers. */
  changed: string[];
  /** The changed paths no declared path covers (and not under `kept`): set aside, never integrated. */
  outside: string[];
  /** The declared paths as the worker left them. */
  work: CapturedWork;
  /** The `outside` paths as the worker left them (stored too, so what was set aside can be read back), sorted. */
  aside: WorkEntry[];
}

/** Whether provisioning put `repoPath` there: a kept file, or a kept `dir/` (the directory itself too, as a symlink is listed without its `/`). */
const keptPath = (repoPath: string, kept: readonly string[]): boolean => coveredBy(repoPath, kept) || kept.includes(`${repoPath}/`);

/**
 * What the attempt in worktree `dir` did, taken from the worktree's own `git status` when the
 * worker exits and before any check runs. `declared`: the task's paths (`dir/` for a directory).
 * `kept`: what provisioning put in the worktree (dependency folders, `.worktreeinclude` copies;
 * directories end in `/`): never the worker's, so never reported.
 *
 * Every changed path is written into the object store as it is now (blobs, by `hashedWork` or
 * `stagedWork`): what a check writes afterwards cannot change what was captured. The declared
 * ones are the work; the others (`aside`) are what the attempt changed outside its scope, kept so
 * they can be set aside and read back. Declared paths the worker did not touch, or that match
 * nothing, are simply absent.
 *
 * `base`: the commit the attempt started from, when the caller knows it. A worker that
 * committed in its worktree moved HEAD; its commits then count as its changes (diffed from
 * `base`, not HEAD). Without it, HEAD is the base.
 */
export async function captureWork(dir: string, declared: readonly string[], kept: readonly string[], base?: string): Promise<Result<Capture, GitFailure>> {
  // HEAD and the changes in one git process (`--branch` adds `# branch.oid`).
  const [status, store] = await Promise.all([
    git(dir, ['status', '--porcelain=v2', '--branch', '-z', '-uall', '--no-renames', '--ignore-submodules=none']),
    borrowedStore(dir),
  ]);
  if (!status.ok) return err(failureOf(status.error));
  const parsed = parseStatusV2(status.value);
  if (parsed.head === null) return err({ step: 'status', exitCode: 128, stderr: `fatal: the worktree ${dir} has no commit checked out (HEAD is unborn)` });
  const headCommit = parsed.head;
  const start = base === undefined ? headCommit : expectObjectId(base, 'base');

  const listed = await withoutPlaceholders(dir, parsed.entries, declared);
  const changedSet = new Set(listed.map((entry) => entry.path));
  // What `add` can take: a path on disk or in this index. A deletion already staged (`git rm`,
  // status `D `) is neither, and is already in the index as the worker left it.
  const stageable = new Set(listed.filter((entry) => entry.xy !== 'D ').map((entry) => entry.path));
  if (start !== headCommit) {
    // The worker committed: what its commits changed is its work too.
    const committed = await git(dir, ['diff-tree', '-r', '-z', '--name-only', '--no-renames', start, headCommit]);
    if (!committed.ok) return err(failureOf(committed.error));
    for (const changedPath of splitNul(committed.value)) changedSet.add(changedPath);
  }
  const changed = [...changedSet].filter((changedPath) => !keptPath(changedPath, kept)).sort(byPath);
  const outside = changed.filter((changedPath) => !coveredBy(changedPath, declared));
  // What the worker committed and left alone since is in the index already.
  const toStage = changed.filter((changedPath) => stageable.has(changedPath));

  if (changed.length === 0) return ok({ changed, outside, work: { base: start, entries: [] }, aside: [] });
  // In a slot, new objects go straight into the person's store; the slot's own stays readable.
  const env = store === null ? undefined : { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: store.own };
  // The common case, a worker that changed files and did not commit, in one git process.
  const hashed = start === headCommit ? await hashedWork(dir, listed, changed, env) : null;
  let entries: WorkEntry[];
  if (hashed !== null) {
    if (!hashed.ok) return err(failureOf(hashed.error));
    entries = hashed.value;
  } else {
    const staged = await stagedWork(dir, start, toStage, env);
    if (!staged.ok) return err(failureOf(staged.error));
    // What provisioning put there is never the worker's, even when it staged it itself.
    entries = staged.value.filter((entry) => !keptPath(entry.path, kept));
  }
  entries.sort((a, b) => byPath(a.path, b.path));
  if (store !== null) {
    const shared = await shareObjects(dir, store, entries);
    if (!shared.ok) return err(failureOf(shared.error));
  }
  const work = entries.filter((entry) => coveredBy(entry.path, declared));
  const aside = entries.filter((entry) => !coveredBy(entry.path, declared));
  return ok({ changed, outside, work: { base: start, entries: work }, aside });
}

/**
 * What an attempt did, from a commit holding its worktree as the worker left it (a host's
 * snapshot, fetched here: run/workspace/host.ts), diffed from `base` in the repository at `repo`:
 * the same split as `captureWork`, its objects already here. `kept` (provisioning) and Claude
 * Code's scratch folder are never the worker's.
 */
export async function captureCommit(
  repo: string,
  declared: readonly string[],
  kept: readonly string[],
  base: string,
  commit: string,
): Promise<Result<Capture, GitFailure>> {
  const start = expectObjectId(base, 'base');
  const diffed = await git(repo, ['diff-tree', '-r', '-z', '--raw', '--no-renames', '--full-index', start, expectObjectId(commit, 'snapshot')]);
  if (!diffed.ok) return err(failureOf(diffed.error));
  const entries = parseRaw(diffed.value)
    .filter((entry) => !keptPath(entry.path, kept) && !(isCliScratch(entry.path) && !coveredBy(entry.path, declared)))
    .sort((a, b) => byPath(a.path, b.path));
  const changed = entries.map((entry) => entry.path);
  const outside = changed.filter((changedPath) => !coveredBy(changedPath, declared));
  const work = entries.filter((entry) => coveredBy(entry.path, declared));
  const aside = entries.filter((entry) => !coveredBy(entry.path, declared));
  return ok({ changed, outside, work: { base: start, entries: work }, aside });
}

type ObjectEnv = Record<string, string> | undefined;

/**
 * `listed` without what the sandbox and Claude Code leave that is never a worker's change, when
 * undeclared and untracked: a placeholder file a sandboxed command left behind (its process
 * killed before the sandbox removed it), at a placeholder's name and empty or a device; anything
 * in Claude Code's scratch folder.
 */
async function withoutPlaceholders(dir: string, listed: readonly StatusV2Entry[], declared: readonly string[]): Promise<StatusV2Entry[]> {
  const kept: StatusV2Entry[] = [];
  for (const entry of listed) {
    if (entry.xy === '??' && !coveredBy(entry.path, declared)) {
      if (isCliScratch(entry.path)) continue;
      if (isPlaceholderPath(entry.path)) {
        const info = await lstat(path.join(dir, entry.path)).catch(() => null);
        if (info !== null && ((info.isFile() && info.size === 0) || info.isCharacterDevice())) continue;
      }
    }
    kept.push(entry);
  }
  return kept;
}

/**
 * Any capture: `toStage` staged into the worktree's index (`add -A`, exact paths from status, so
 * it never fails on a declared path that matches nothing; deletions too; on stdin, one call for
 * any number of paths), then the index diffed against `start` (the worker's own commits included).
 */
export async function stagedWork(dir: string, start: string, toStage: readonly string[], env: ObjectEnv): Promise<Result<WorkEntry[], GitCommandError>> {
  if (toStage.length > 0) {
    const added = await git(dir, ['add', '-A', '--pathspec-from-file=-', '--pathspec-file-nul'], { input: `${toStage.join('\0')}\0`, ...(env ? { env } : {}) });
    if (!added.ok) return added;
  }
  const staged = await git(dir, ['diff-index', '--cached', '-z', '--raw', '--no-renames', '--full-index', start, '--']);
  return staged.ok ? ok(parseRaw(staged.value)) : staged;
}

/** Whether git takes the executable bit from the files in the repository at `dir` (`core.fileMode`, as `git clone` wrote it in a slot's own config). */
async function trustsFileMode(dir: string): Promise<boolean> {
  const config = await readFile(path.join(dir, '.git', 'config'), 'utf8').catch(() => '');
  return /^\s*filemode\s*=\s*true\s*$/im.test(config) && !/^\s*\[include/im.test(config);
}

/** A path `--stdin-paths` would not read back as itself: a line break in it, a carriage return (dropped before a newline), or a leading `"` (read as C quoting). */
const unsafeLine = (changedPath: string): boolean => /[\n\r]/.test(changedPath) || changedPath.startsWith('"');

/**
 * The declared changes of a worker that did not commit, without touching the index: each changed
 * file's blob written by one `git hash-object -w --stdin-paths` (the clean filters and line-ending
 * rules `add` applies, applied the same way, by path), its mode from the file, and deletions from
 * status. What `add` then `diff-index` would say, in one process instead of two.
 *
 * Null (the caller takes `stagedWork`) when status or the file system shows anything else: a
 * submodule, a symbolic link, a directory (a nested repository), an unmerged path, a name
 * `--stdin-paths` cannot carry (`unsafeLine`), or a repository whose config this does not read
 * plainly.
 */
export async function hashedWork(
  dir: string,
  listed: readonly StatusV2Entry[],
  paths: readonly string[],
  env: ObjectEnv,
): Promise<Result<WorkEntry[], GitCommandError> | null> {
  if (listed.some((entry) => !entry.ordinary) || paths.some(unsafeLine)) return null;
  if (!(await trustsFileMode(dir))) return null;
  // HEAD's entry at each path (a path deleted in the index and re-created on disk is listed twice).
  const heads = new Map<string, { mode: string; object: string }>();
  for (const entry of listed) if (entry.head !== null) heads.set(entry.path, entry.head);
  const entries: WorkEntry[] = [];
  const files: Array<{ path: string; mode: string }> = [];
  for (const changedPath of paths) {
    const info = await lstat(path.join(dir, changedPath)).catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? null : undefined));
    if (info === undefined) return null;
    if (info === null) {
      // Gone from disk: a deletion when HEAD has it; a file added and removed again is no change.
      if (heads.has(changedPath)) entries.push({ path: changedPath, deleted: true });
      continue;
    }
    if (!info.isFile()) return null;
    // As git stores a regular file's mode: 100755 when its owner may execute it.
    files.push({ path: changedPath, mode: (info.mode & 0o100) !== 0 ? '100755' : '100644' });
  }
  if (files.length > 0) {
    const hashed = await git(dir, ['hash-object', '-w', '--stdin-paths'], { input: `${files.map((file) => file.path).join('\n')}\n`, ...(env ? { env } : {}) });
    if (!hashed.ok) return hashed;
    const ids = hashed.value.split('\n').filter(Boolean);
    if (ids.length !== files.length || !ids.every(isObjectId)) return null;
    files.forEach((file, index) => {
      const head = heads.get(file.path);
      const object = ids[index]!;
      // Changed on disk and changed back (or touched only): nothing to record, as `diff-index` says.
      if (head?.mode !== file.mode || head.object !== object) entries.push({ path: file.path, mode: file.mode, object });
    });
  }
  return ok(entries);
}

/** A repository's own object directory and the one it borrows from through alternates. */
interface BorrowedStore {
  own: string;
  shared: string;
}

/**
 * Where the repository at `dir` borrows objects from: the first entry of its
 * `objects/info/alternates` (a pool slot's is the person's object directory), or null for a
 * repository with none, or a linked worktree (its objects are the main repository's already).
 */
async function borrowedStore(dir: string): Promise<BorrowedStore | null> {
  const own = path.join(dir, '.git', 'objects');
  const listed = await readFile(path.join(own, 'info', 'alternates'), 'utf8').catch(() => null);
  if (listed === null) return null;
  // Git's format: one directory a line, `#` comments, relative ones relative to `own`.
  const first = listed.split('\n').find((line) => line.trim() !== '' && !line.startsWith('#'));
  return first === undefined ? null : { own, shared: path.resolve(own, first.trim()) };
}

/** Whether an object directory holds no object (loose or packed). */
async function storeIsEmpty(objectsDir: string): Promise<boolean> {
  for (const name of await readdir(objectsDir).catch(() => [] as string[])) {
    if (name === 'info') continue;
    const inside = await readdir(path.join(objectsDir, name)).catch(() => [] as string[]);
    if (name === 'pack' ? inside.some((file) => file.endsWith('.pack')) : inside.length > 0) return false;
  }
  return true;
}

/**
 * Copies into the shared store every entry object it does not hold (one `cat-file
 * --batch-check` against that store alone, then `pack-objects --stdout` into `unpack-objects`
 * there). Gitlinks (a submodule's commit) are not objects of this repository and are skipped.
 *
 * Copied as loose objects, never as a new pack: git processes kept running against the person's
 * repository (the integrator's `mktree --batch` and `cat-file --batch`) read the list of packs
 * when they start, and `mktree` never looks for packs made after that (it checks its entries
 * with git's "quick" lookup), while a loose object is found by its file at every lookup.
 */
async function shareObjects(dir: string, store: BorrowedStore, entries: readonly WorkEntry[]): Promise<Result<void, GitCommandError>> {
  const objects = [...new Set(entries.flatMap((entry) => ('deleted' in entry || entry.mode === '160000' ? [] : [entry.object])))];
  // The slot's own store is empty unless its worker committed or staged there: then every object
  // the capture wrote is in the shared store already, and there is nothing to ask git.
  if (objects.length === 0 || (await storeIsEmpty(store.own))) return ok(undefined);
  const input = `${objects.join('\n')}\n`;
  const checked = await git(dir, ['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
    input,
    env: { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: '' },
  });
  if (!checked.ok) return checked;
  const missing = checked.value.split('\n').flatMap((line) => (line.endsWith(' missing') ? [line.slice(0, -' missing'.length)] : []));
  if (missing.length === 0) return ok(undefined);
  // pack-objects reads the slot's store and, through its alternates, the shared one; unpack-objects
  // writes into the shared store alone (without the slot's store beside it, which already holds
  // every one of these objects and would make it skip them).
  const copied = await runGitPipe(
    ['pack-objects', '-q', '--stdout'],
    ['unpack-objects', '-q'],
    { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: '' },
    { cwd: dir, input: `${missing.join('\n')}\n` },
  );
  return copied.ok ? ok(undefined) : copied;
}
