// Capture and integration: the git plumbing that takes what an attempt did in its own worktree
// and commits verified work onto the ref foreman owns for the plan (`refs/foreman/<planId>`, the
// integration tip), or parks work awaiting approval on a sibling ref.
//
// Nothing here uses the person's index, working tree or hooks. Integration builds its tree in a
// temporary index file inside the repository's git directory (`read-tree`, `update-index`,
// `write-tree`), makes the commit with `commit-tree` and moves the ref with `update-ref`
// (compare-and-swap). Capture does use the attempt worktree's own index: that index is foreman's,
// reset before every attempt. Every command runs with `core.hooksPath=/dev/null` (update-ref
// would otherwise run a `reference-transaction` hook) and GIT_LITERAL_PATHSPECS=1, so
// `src/[id].ts` names that file and is never a glob.
//
// A pool slot is a clone that borrows the person's objects (`objects/info/alternates`): its
// capture writes what it stages into the person's object store (where integration and landing
// read), and copies there any entry object only the slot holds (a worker that committed or staged
// in its slot), so the slot can be deleted without a dangling object.
//
// Git calls are counted (test/git-integration.test.ts checks them): a capture takes four (HEAD
// and status side by side, add, diff-index), in a slot one more (which entry objects the
// person's store lacks) and, only when some are missing, one to copy them; an integration seven (git dir once per repository,
// identity, read-tree, update-index, write-tree, commit-tree, update-ref) plus one diff-tree per
// older base, whatever the number of tasks or files: no per-file calls, so a batch of tasks costs
// what one task costs.

import { randomBytes } from 'node:crypto';
import { readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Result, err, ok } from '../core/failure.ts';
import { type GitFailure, OBJECT_ID, buildMessage, failureOf, parseStatusV2, splitNul } from '../core/git-text.ts';
import { coveredBy } from '../core/paths.ts';
import type { CapturedWork, WorkEntry } from '../core/work.ts';
import { type GitCommandError, identityArgs, runGit } from './git.ts';

/** The plan's integration tip: verified work is committed here, never on the person's branch. */
export const integrationRef = (planId: string) => `refs/foreman/${planId}`;
/** A task's work waiting at a human-approval gate: one commit whose parent is the attempt's base. */
export const awaitingRef = (planId: string, task: number) => `refs/foreman-awaiting/${planId}/${task}`;
/** Verified work waiting in the merge queue: kept here until it integrates (or is found to break the build). */
export const candidateRef = (planId: string, task: number) => `refs/foreman-candidate/${planId}/${task}`;

/** Why work is parked on a ref of its own: awaiting approval, or a candidate in the merge queue. */
export type ParkKind = 'awaiting' | 'candidate';
const parkedRef = (kind: ParkKind, planId: string, task: number): string => (kind === 'awaiting' ? awaitingRef(planId, task) : candidateRef(planId, task));


interface Call {
  env?: Record<string, string>;
  input?: string;
}

/** git in `cwd` (through `runGit`: hooks off, every pathspec literal, a time limit). */
const git = (cwd: string, args: readonly string[], call: Call = {}): Promise<Result<string, GitCommandError>> =>
  runGit(args, { cwd, ...(call.env ? { env: call.env } : {}), ...(call.input !== undefined ? { input: call.input } : {}) });

/** A full object id, checked: callers pass ids git gave them, so anything else is a bug. */
function objectId(id: string, what: string): string {
  if (!OBJECT_ID.test(id)) throw new Error(`${what} must be a full object id, got ${JSON.stringify(id)}`);
  return id;
}

/** The all-zero id of the repository's hash (SHA-1 or SHA-256), as long as `like`. */
const zeroIdLike = (like: string): string => '0'.repeat(like.length);

/** Byte order, as git sorts paths. */
const byPath = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

export interface Capture {
  /** Every path the attempt changed in its worktree (tracked modified/deleted, new files git does not ignore), sorted; never what `kept` covers. */
  changed: string[];
  /** The changed paths no declared path covers (and not under `kept`): the attempt fails with them. */
  outside: string[];
  /** The declared paths as the worker left them. */
  work: CapturedWork;
}

/** Whether provisioning put `repoPath` there: a kept file, or a kept `dir/` (the directory itself too, as a symlink is listed without its `/`). */
const keptPath = (repoPath: string, kept: readonly string[]): boolean => coveredBy(repoPath, kept) || kept.includes(`${repoPath}/`);

/** The entries of `git diff-index`/`diff-tree -z --raw` output: `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0`. */
function parseRaw(output: string): WorkEntry[] {
  const records = splitNul(output);
  const entries: WorkEntry[] = [];
  for (let index = 0; index + 1 < records.length; index += 2) {
    const fields = records[index]!.replace(/^:/, '').split(' ');
    const [, mode = '', , object = '', status = ''] = fields;
    const entryPath = records[index + 1]!;
    entries.push(status.startsWith('D') ? { path: entryPath, deleted: true } : { path: entryPath, mode, object });
  }
  return entries;
}

/**
 * What the attempt in worktree `dir` did, taken from the worktree's own `git status` when the
 * worker exits and before any check runs. `declared`: the task's paths (`dir/` for a directory).
 * `kept`: what provisioning put in the worktree (dependency folders, `.worktreeinclude` copies;
 * directories end in `/`): never the worker's, so never reported.
 *
 * The declared paths that changed are staged into the worktree's index, which stores their
 * contents as git objects: what a check writes afterwards cannot change what was captured.
 * Declared paths the worker did not touch, or that match nothing, are simply absent.
 *
 * `base`: the commit the attempt started from, when the caller knows it. A worker that
 * committed in its worktree moved HEAD; its commits then count as its changes (diffed from
 * `base`, not HEAD). Without it, HEAD is the base.
 */
export async function captureWork(dir: string, declared: readonly string[], kept: readonly string[], base?: string): Promise<Result<Capture, GitFailure>> {
  // HEAD and the changes in one git process (`--branch` adds `# branch.oid`).
  const [status, store] = await Promise.all([git(dir, ['status', '--porcelain=v2', '--branch', '-z', '-uall', '--no-renames', '--ignore-submodules=none']), borrowedStore(dir)]);
  if (!status.ok) return err(failureOf(status.error));
  const parsed = parseStatusV2(status.value);
  if (parsed.head === null) return err({ step: 'status', exitCode: 128, stderr: `fatal: the worktree ${dir} has no commit checked out (HEAD is unborn)` });
  const headCommit = parsed.head;
  const start = base === undefined ? headCommit : objectId(base, 'base');

  const listed = parsed.entries;
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
  const declaredChanges = changed.filter((changedPath) => coveredBy(changedPath, declared));
  // What the worker committed and left alone since is in the index already.
  const toStage = declaredChanges.filter((changedPath) => stageable.has(changedPath));

  if (declaredChanges.length === 0) return ok({ changed, outside, work: { base: start, entries: [] } });
  // Exact paths from status, so `add` never fails on a declared path that matches nothing; -A
  // stages deletions too. On stdin: one call for any number of paths.
  if (toStage.length > 0) {
    // In a slot, new objects go straight into the person's store; the slot's own stays readable.
    const env = store === null ? undefined : { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: store.own };
    const added = await git(dir, ['add', '-A', '--pathspec-from-file=-', '--pathspec-file-nul'], { input: `${toStage.join('\0')}\0`, ...(env ? { env } : {}) });
    if (!added.ok) return err(failureOf(added.error));
  }
  const staged = await git(dir, ['diff-index', '--cached', '-z', '--raw', '--no-renames', '--full-index', start, '--']);
  if (!staged.ok) return err(failureOf(staged.error));
  // The worker may have staged undeclared files itself: only declared ones are its work.
  const entries = parseRaw(staged.value)
    .filter((entry) => coveredBy(entry.path, declared) && !keptPath(entry.path, kept))
    .sort((a, b) => byPath(a.path, b.path));
  if (store !== null) {
    const shared = await shareObjects(dir, store, entries);
    if (!shared.ok) return err(failureOf(shared.error));
  }
  return ok({ changed, outside, work: { base: start, entries } });
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
 * --batch-check` against that store alone, then one `pack-objects` writing a pack there).
 * Gitlinks (a submodule's commit) are not objects of this repository and are skipped.
 */
async function shareObjects(dir: string, store: BorrowedStore, entries: readonly WorkEntry[]): Promise<Result<void, GitCommandError>> {
  const objects = [...new Set(entries.flatMap((entry) => ('deleted' in entry || entry.mode === '160000' ? [] : [entry.object])))];
  // The slot's own store is empty unless its worker committed or staged there: then every object
  // the capture wrote is in the shared store already, and there is nothing to ask git.
  if (objects.length === 0 || (await storeIsEmpty(store.own))) return ok(undefined);
  const input = `${objects.join('\n')}\n`;
  const checked = await git(dir, ['cat-file', '--batch-check=%(objectname) %(objecttype)'], { input, env: { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: '' } });
  if (!checked.ok) return checked;
  const missing = checked.value.split('\n').flatMap((line) => (line.endsWith(' missing') ? [line.slice(0, -' missing'.length)] : []));
  if (missing.length === 0) return ok(undefined);
  // Run with the shared store as the object directory, so pack-objects' temporary files are made
  // beside the pack it renames them to (a slot may be on another file system).
  const packed = await git(dir, ['pack-objects', '-q', path.join(store.shared, 'pack', 'pack')], {
    input: `${missing.join('\n')}\n`,
    env: { GIT_OBJECT_DIRECTORY: store.shared, GIT_ALTERNATE_OBJECT_DIRECTORIES: store.own },
  });
  return packed.ok ? ok(undefined) : packed;
}

export interface Integration {
  /** The tasks whose work this commit records (for the reflog message). */
  tasks: number[];
  message: string;
  /** The commit's trailer block (`Foreman-Tasks`, `Foreman-Plan`…), in order. */
  trailers: Array<[string, string]>;
  works: CapturedWork[];
}

export type IntegrationFailure =
  /** The ref is not where the caller thought (compare-and-swap failed). */
  | { kind: 'moved'; expected: string | null; actual: string | null }
  /** Paths whose tip entry differs from the attempt's base entry: another change reached them meanwhile (or two works of the batch both changed them). */
  | { kind: 'conflict'; paths: string[] }
  | { kind: 'git-failed'; failure: GitFailure };

const gitDirs = new Map<string, Promise<Result<string, GitCommandError>>>();

/** The repository's git directory (absolute), asked once per repository. */
function gitDirOf(repo: string): Promise<Result<string, GitCommandError>> {
  let found = gitDirs.get(repo);
  if (!found) {
    found = git(repo, ['rev-parse', '--git-path', 'foreman']).then((r) => (r.ok ? ok(path.dirname(path.resolve(repo, r.value.replace(/\n$/, '')))) : r));
    // A failure is not cached: the next call asks again.
    void found.then((r) => (r.ok ? undefined : gitDirs.delete(repo)));
    gitDirs.set(repo, found);
  }
  return found;
}

let temporaryIndexes = 0;

/**
 * A tree: `start`'s tree with `entries` applied, built in a temporary index file in the git
 * directory, which is always removed. Deletions go first, so a file may replace a directory.
 */
async function treeWith(repo: string, start: string, entries: readonly WorkEntry[]): Promise<Result<string, GitCommandError>> {
  const gitDir = await gitDirOf(repo);
  if (!gitDir.ok) return gitDir;
  const indexFile = path.join(gitDir.value, `foreman-index-${process.pid}-${++temporaryIndexes}-${randomBytes(4).toString('hex')}`);
  const env = { GIT_INDEX_FILE: indexFile };
  try {
    const read = await git(repo, ['read-tree', start], { env });
    if (!read.ok) return read;
    if (entries.length > 0) {
      const zero = zeroIdLike(start);
      const lines = [
        ...entries.flatMap((entry) => ('deleted' in entry ? [`0 ${zero}\t${entry.path}\0`] : [])),
        ...entries.flatMap((entry) => ('deleted' in entry ? [] : [`${entry.mode} ${entry.object}\t${entry.path}\0`])),
      ];
      const updated = await git(repo, ['update-index', '-z', '--index-info'], { env, input: lines.join('') });
      if (!updated.ok) return updated;
    }
    const tree = await git(repo, ['write-tree'], { env });
    return tree.ok ? ok(tree.value.trim()) : tree;
  } finally {
    await rm(indexFile, { force: true });
    await rm(`${indexFile}.lock`, { force: true });
  }
}

/** A commit of `tree` with parent `parent`; the repository's identity, or foreman's when none is configured. */
async function commitTree(repo: string, tree: string, parent: string, message: string, identity: string[]): Promise<Result<string, GitCommandError>> {
  const made = await git(repo, [...identity, 'commit-tree', tree, '-p', parent], { input: message });
  return made.ok ? ok(made.value.trim()) : made;
}

/**
 * `paths` in slices whose command line stays well under the system's limit (ARG_MAX is 2 MiB on
 * Linux, less elsewhere): one slice for any task of ordinary size.
 */
function commandLineChunks(paths: readonly string[], maxBytes = 96 * 1024): string[][] {
  const slices: string[][] = [];
  let slice: string[] = [];
  let bytes = 0;
  for (const item of paths) {
    const size = Buffer.byteLength(item) + 1;
    if (slice.length > 0 && bytes + size > maxBytes) {
      slices.push(slice);
      slice = [];
      bytes = 0;
    }
    slice.push(item);
    bytes += size;
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}

/** Paths among `paths` whose entries differ between `base` and `tip` (a directory's files too). */
async function changedSince(repo: string, base: string, tip: string, paths: readonly string[]): Promise<Result<string[], GitCommandError>> {
  const found: string[] = [];
  // diff-tree takes no pathspec file: the paths go on the command line.
  for (const chunk of commandLineChunks(paths)) {
    const diff = await git(repo, ['diff-tree', '-r', '-z', '--name-only', '--no-renames', base, tip, '--', ...chunk]);
    if (!diff.ok) return diff;
    found.push(...splitNul(diff.value));
  }
  return ok(found);
}

/**
 * Commits `works` on top of `tip` and moves `ref` there: a compare-and-swap from `tip` (when
 * `ref` does not exist yet, `tip` is the commit it starts from and the ref is created, failing if
 * someone else created it meanwhile). Returns the new commit.
 *
 * Each work's entries are applied over the tip's tree; a path whose entry at the tip differs from
 * the work's base (another task's work reached it since the attempt started), or that two works
 * both change, is a conflict and nothing is committed. Works from an older base integrate as long
 * as their own paths did not move.
 *
 * An integration with no entries at all records nothing: no commit is made and `tip` is returned
 * unchanged (the ref is not touched).
 *
 * `tip` and each work's base are full commit ids (as `readRef` and `captureWork` give them).
 * With `ref` null nothing moves: the commit is returned for the gate to test.
 */
export async function integrate(repo: string, ref: string | null, tip: string, integration: Integration): Promise<Result<string, IntegrationFailure>> {
  objectId(tip, 'tip');
  const gitFailed = (error: GitCommandError): Result<never, IntegrationFailure> => err({ kind: 'git-failed', failure: failureOf(error) });
  const message = buildMessage(integration.message, integration.trailers);

  const entries: WorkEntry[] = [];
  const seen = new Set<string>();
  const twice = new Set<string>();
  const pathsByBase = new Map<string, string[]>();
  for (const work of integration.works) {
    objectId(work.base, 'base');
    for (const entry of work.entries) {
      if (seen.has(entry.path)) twice.add(entry.path);
      seen.add(entry.path);
      entries.push(entry);
      if (work.base !== tip) pathsByBase.set(work.base, [...(pathsByBase.get(work.base) ?? []), entry.path]);
    }
  }
  if (twice.size > 0) return err({ kind: 'conflict', paths: [...twice].sort(byPath) });
  if (entries.length === 0) return ok(tip);

  // The conflict checks, the tree and the identity are independent: asked side by side.
  const identity = identityArgs(repo);
  const [moved, tree] = await Promise.all([
    Promise.all([...pathsByBase].map(([base, paths]) => changedSince(repo, base, tip, paths))),
    treeWith(repo, tip, entries),
  ]);
  const conflicts = new Set<string>();
  for (const found of moved) {
    if (!found.ok) return gitFailed(found.error);
    for (const conflicted of found.value) conflicts.add(conflicted);
  }
  if (conflicts.size > 0) return err({ kind: 'conflict', paths: [...conflicts].sort(byPath) });
  if (!tree.ok) return gitFailed(tree.error);

  const commit = await commitTree(repo, tree.value, tip, message, await identity);
  if (!commit.ok) return gitFailed(commit.error);
  // No ref: a candidate stack for the gate to test, reachable from nothing until it integrates.
  if (ref === null) return ok(commit.value);
  const reason = `foreman: integrate task${integration.tasks.length === 1 ? '' : 's'} ${integration.tasks.join(', ')}`;
  const swapped = await compareAndSwap(repo, ref, commit.value, tip, reason);
  return swapped.ok ? ok(commit.value) : err(swapped.error);
}

/** Moves `ref` from `expected` to `next`; when `ref` does not exist, creates it (only if still absent). */
async function compareAndSwap(repo: string, ref: string, next: string, expected: string, reason: string): Promise<Result<void, IntegrationFailure>> {
  // --create-reflog: refs outside refs/heads get none by default; this one lets the person see
  // (and recover) every integration with `git reflog <ref>`.
  const moved = await git(repo, ['update-ref', '--create-reflog', '-m', reason, ref, next, expected]);
  if (moved.ok) return ok(undefined);
  const actual = await readRef(repo, ref);
  if (actual !== null) return err(actual === expected ? { kind: 'git-failed', failure: failureOf(moved.error) } : { kind: 'moved', expected, actual });
  // The first integration of the plan: the ref starts here. An empty old value means "must not exist".
  const created = await git(repo, ['update-ref', '--create-reflog', '-m', reason, ref, next, '']);
  if (created.ok) return ok(undefined);
  const now = await readRef(repo, ref);
  return err(now === null ? { kind: 'git-failed', failure: failureOf(created.error) } : { kind: 'moved', expected: null, actual: now });
}

/**
 * The commit `ref` points at, or null when it does not exist. Throws when git cannot answer at
 * all (`repo` is not a repository): a caller's bug, not a state of the ref.
 */
export async function readRef(repo: string, ref: string): Promise<string | null> {
  const found = await git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  if (found.ok) return found.value.trim() || null;
  if (found.error.exitCode === 1) return null;
  throw found.error;
}

/** Deletes `ref` (when `expected` is given, only if it is still there). Deleting a ref that does not exist succeeds. */
export async function deleteRef(repo: string, ref: string, expected?: string): Promise<Result<void, GitFailure>> {
  const deleted = await git(repo, ['update-ref', '-m', 'foreman: clean up', '-d', ref, ...(expected === undefined ? [] : [objectId(expected, 'expected')])]);
  return deleted.ok ? ok(undefined) : err(failureOf(deleted.error));
}

/**
 * Parks `work` awaiting approval: a commit whose parent is the work's base, on
 * `awaitingRef(planId, task)` (replacing any earlier parked work of the task). It holds no
 * worktree; approving integrates `parkedWork`, rejecting drops it. Returns the commit.
 */
export async function park(repo: string, planId: string, task: number, work: CapturedWork, message: string, kind: ParkKind = 'awaiting'): Promise<Result<string, GitFailure>> {
  const base = objectId(work.base, 'base');
  const [tree, identity] = await Promise.all([treeWith(repo, base, work.entries), identityArgs(repo)]);
  if (!tree.ok) return err(failureOf(tree.error));
  const commit = await commitTree(repo, tree.value, base, buildMessage(message, undefined), identity);
  if (!commit.ok) return err(failureOf(commit.error));
  const moved = await git(repo, ['update-ref', '-m', `foreman: park task ${task}`, parkedRef(kind, planId, task), commit.value]);
  return moved.ok ? ok(commit.value) : err(failureOf(moved.error));
}

/** The work parked for `task`, read back from its commit (parent..commit, no renames), or null when none is parked. */
export async function parkedWork(repo: string, planId: string, task: number, kind: ParkKind = 'awaiting'): Promise<CapturedWork | null> {
  const ref = parkedRef(kind, planId, task);
  const commit = await readRef(repo, ref);
  if (commit === null) return null;
  const parent = await git(repo, ['rev-parse', '--verify', '--quiet', `${commit}^1`]);
  if (!parent.ok) throw parent.error; // every parked commit has its base as parent
  const base = parent.value.trim();
  const diff = await git(repo, ['diff-tree', '-r', '-z', '--raw', '--no-renames', '--full-index', base, commit]);
  if (!diff.ok) throw diff.error;
  return { base, entries: parseRaw(diff.value).sort((a, b) => byPath(a.path, b.path)) };
}

/** Drops the work parked for `task` (rejected, or integrated). Nothing parked is fine. */
export function dropParked(repo: string, planId: string, task: number, kind: ParkKind = 'awaiting'): Promise<Result<void, GitFailure>> {
  return deleteRef(repo, parkedRef(kind, planId, task));
}

/** The tasks of a plan with work parked as `kind`. */
export async function parkedTasks(repo: string, planId: string, kind: ParkKind): Promise<number[]> {
  const prefix = kind === 'awaiting' ? `refs/foreman-awaiting/${planId}/` : `refs/foreman-candidate/${planId}/`;
  const listed = await git(repo, ['for-each-ref', '--format=%(refname)', prefix]);
  if (!listed.ok) throw listed.error;
  return listed.value.split('\n').flatMap((ref) => (/^\d+$/.test(ref.slice(prefix.length)) ? [Number(ref.slice(prefix.length))] : [])).sort((a, b) => a - b);
}

/** foreman's refs in `repo` (of one plan, when `planId` is given): the integration tips and parked work. */
export async function foremanRefs(repo: string, planId?: string): Promise<string[]> {
  const patterns = planId === undefined ? ['refs/foreman/', 'refs/foreman-awaiting/', 'refs/foreman-candidate/'] : [integrationRef(planId), `refs/foreman-awaiting/${planId}/`, `refs/foreman-candidate/${planId}/`];
  const listed = await git(repo, ['for-each-ref', '--format=%(refname)', ...patterns]);
  if (!listed.ok) throw listed.error;
  return listed.value.split('\n').filter(Boolean).sort(byPath);
}
