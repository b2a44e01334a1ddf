// Where a plan's worktrees live and what each slot's record holds: the pool's folder names, the
// `slot-<n>.json` records, a slot's own clone told from a stray directory, and removing slots and
// pools (worktree-pool.ts uses them; `plan clean` and `plan status` too).

import { createHash } from 'node:crypto';
import { copyFile, lstat, mkdir, readFile, readdir, realpath, rm, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ownCacheDir } from '../layout.ts';
import { isObjectId, normalizeRepoPath } from '../../core/index.ts';
import { runGit } from './runner.ts';

/**
 * Where every plan's worktrees live: `$FOREMAN_WORKTREES`, else `$XDG_CACHE_HOME/foreman/worktrees`,
 * else `~/.cache/foreman/worktrees`. A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
 */
export function worktreesRoot(env: NodeJS.ProcessEnv): string {
  if (env.FOREMAN_WORKTREES) return path.resolve(env.FOREMAN_WORKTREES);
  return path.join(ownCacheDir(env), 'worktrees');
}

export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A plan id usable as one directory name; any other id is named by its hash, never a path. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The pool directory of one plan of one repository: `<root>/<name>-<10 hex>/<planId>`. */
export function poolDir(root: string, repoRealPath: string, planId: string): string {
  const repoDir = `${path.basename(repoRealPath)}-${sha256(repoRealPath).slice(0, 10)}`;
  const planDir = SAFE_NAME.test(planId) ? planId : `plan-${sha256(planId).slice(0, 16)}`;
  return path.join(root, repoDir, planDir);
}

/** What `slot-<n>.json` holds. */
export interface SlotRecord {
  /** The commit the slot was provisioned at. */
  commit: string;
  setupCommand: string | null;
  /** Hash of the setup inputs' blob ids at `commit` (null without a setup command). */
  setupInputs: string | null;
  /** What the setup command made (part of `kept`): when one is gone, the setup runs again. */
  made: string[];
  kept: string[];
}

export const SLOT_NAME = /^slot-(0|[1-9][0-9]*)$/;
export const RECORD_NAME = /^slot-(0|[1-9][0-9]*)\.json$/;
export const recordPath = (pool: string, index: number): string => path.join(pool, `slot-${index}.json`);

/** A repository path usable as a pathspec or exclude, or null when it is not one. */
export function repoPathOrNull(entry: string): string | null {
  try {
    return normalizeRepoPath(entry);
  } catch {
    return null;
  }
}

/** `git clean -e` pattern naming exactly `entry` (anchored, glob characters escaped). */
export function excludePattern(entry: string): string {
  const bare = entry.endsWith('/') ? entry.slice(0, -1) : entry;
  return `/${bare.replace(/[\\*?[\]]/g, (c) => `\\${c}`).replace(/ $/, '\\ ')}`;
}

/** Whether every entry exists in `dir` (a link counts, whatever it points to). */
export async function allPresent(dir: string, entries: readonly string[]): Promise<boolean> {
  for (const entry of entries) if ((await lstat(path.join(dir, entry)).catch(() => null)) === null) return false;
  return true;
}

export function parseRecord(text: string): SlotRecord | null {
  try {
    const value = JSON.parse(text) as Partial<SlotRecord>;
    const stringOrNull = (x: unknown): x is string | null => x === null || typeof x === 'string';
    if (typeof value.commit !== 'string' || !isObjectId(value.commit)) return null;
    if (!stringOrNull(value.setupCommand) || !stringOrNull(value.setupInputs)) return null;
    const entries = (list: unknown): list is string[] =>
      Array.isArray(list) && list.every((entry) => typeof entry === 'string' && repoPathOrNull(entry) !== null);
    if (!entries(value.kept) || !entries(value.made)) return null;
    return { commit: value.commit, setupCommand: value.setupCommand, setupInputs: value.setupInputs, made: value.made, kept: value.kept };
  } catch {
    return null;
  }
}

/**
 * The person's `info/exclude` (their own ignore patterns, beside `.gitignore`) copied into the new
 * clone at `dir`, as a linked worktree shared it: a file they ignore stays ignored in the slot.
 * Their repository's git directory is where the clone's alternates point (`<git dir>/objects`).
 */
export async function copyExcludes(dir: string): Promise<void> {
  const alternates = await readFile(path.join(dir, '.git', 'objects', 'info', 'alternates'), 'utf8').catch(() => '');
  const store = alternates.split('\n').find((line) => path.isAbsolute(line));
  if (store === undefined) return;
  const source = path.join(path.dirname(store), 'info', 'exclude');
  if ((await stat(source).catch(() => null))?.isFile() !== true) return;
  await mkdir(path.join(dir, '.git', 'info'), { recursive: true });
  await copyFile(source, path.join(dir, '.git', 'info', 'exclude')).catch(() => undefined);
}

/**
 * Whether `dir` is a slot this pool made: a repository of its own (its `.git` a directory) that
 * borrows objects through alternates. A slot from an older foreman (a linked worktree: `.git` is
 * a file) or a damaged directory is not.
 */
export async function isSlotClone(dir: string): Promise<boolean> {
  const gitDir = await lstat(path.join(dir, '.git')).catch(() => null);
  if (gitDir === null || !gitDir.isDirectory()) return false;
  return (await lstat(path.join(dir, '.git', 'objects', 'info', 'alternates')).catch(() => null))?.isFile() === true;
}

/**
 * Deletes the slot at `dir`; never fails. A symlink in it is removed, never followed. A linked
 * worktree an older foreman made there is unregistered from the person's repository first.
 */
export async function destroySlot(repo: string, dir: string): Promise<void> {
  if ((await lstat(path.join(dir, '.git')).catch(() => null))?.isFile() === true) {
    await runGit(['worktree', 'remove', '--force', '--force', dir], { cwd: repo }).catch(() => undefined);
  }
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

/** Removes every slot of the pool at `dir`, its records and the directory. Never throws. */
export async function removePoolAt(repo: string, dir: string): Promise<void> {
  try {
    const real = await realpath(dir).catch(() => null);
    if (real === null) return;
    for (const entry of await readdir(real)) if (SLOT_NAME.test(entry)) await destroySlot(repo, path.join(real, entry));
    await rm(real, { recursive: true, force: true });
    // The repository's folder goes too once its last plan is gone.
    await rmdir(path.dirname(real)).catch(() => undefined);
  } catch {
    // Nothing to report: what is left, the next `openPool` or `removePlanWorktrees` clears.
  }
}

/** Bytes `dir` takes on disk, not following symlinks, each hard-linked file once; 0 when absent. */
export async function diskUsage(dir: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const info = await lstat(current).catch(() => null);
    if (info === null) continue;
    const key = `${info.dev}:${info.ino}`;
    if (seen.has(key)) continue;
    seen.add(key);
    total += typeof info.blocks === 'number' ? info.blocks * 512 : info.size;
    if (info.isDirectory()) {
      const names = await readdir(current).catch(() => [] as string[]);
      for (const name of names) pending.push(path.join(current, name));
    }
  }
  return total;
}

/** Removes the plan's pool (every slot and its directory); for `plan clean` and a finished plan. Never throws. */
export async function removePlanWorktrees(repo: string, root: string, planId: string): Promise<void> {
  const real = await realpath(repo).catch(() => repo);
  await removePoolAt(real, poolDir(root, real, planId));
}
