// Provisioning a worktree of the pool (worktree-pool.ts): the `.worktreeinclude` copies, the
// `worktree.symlinkDirectories` links Claude Code's settings name, the setup command's inputs and
// how its failure is told.

import { copyFile, lstat, mkdir, readFile, readlink, realpath, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { assertNever, describeGitFailure, describeTimeLimitHit, type GitFailure, type TimeLimit } from '../../core/index.ts';
import type { Git } from './repository.ts';
import { repoPathOrNull } from './pool-slots.ts';

/** The file at the repository's top listing the ignored files a new worktree gets a copy of (gitignore syntax, as Claude Code reads it). */
export const WORKTREE_INCLUDE = '.worktreeinclude';

/** Files whose change (at the repository's top) re-runs the setup command on a reused slot. */
export const DEFAULT_SETUP_INPUTS: readonly string[] = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
  'requirements.txt',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'Gemfile.lock',
  'go.sum',
  'Cargo.lock',
  'composer.lock',
];

/** How much of a failed setup command's output is kept (its end, where the error is). */
export const SETUP_OUTPUT_TAIL = 4000;

export interface SetupRun {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
  /** The limit the caller ran it under, named when it was hit. */
  timeLimit?: TimeLimit;
  /** What the caller found in its output worth saying with the failure (the sandbox refused its network). */
  note?: string;
}

export type ProvisionFailure =
  | { kind: 'setup-failed'; command: string; exitCode: number | null; timedOut: boolean; timeLimit?: TimeLimit; output: string; note?: string }
  /**
   * The setup command changed files git tracks (`npm install` rewriting the lock file): every
   * attempt in the slot would be charged with them. The slot is left unprovisioned.
   */
  | { kind: 'setup-changed-files'; command: string; paths: string[] }
  | { kind: 'git-failed'; doing: string; failure: GitFailure }
  /** The signal was aborted: nothing failed, the slot was released. */
  | { kind: 'interrupted' };

/** One line saying why a slot could not be prepared (a setup's output follows, when there is one). */
export function describeProvisionFailure(failure: ProvisionFailure): string {
  switch (failure.kind) {
    case 'setup-failed': {
      const note = failure.note === undefined ? '' : ` (${failure.note})`;
      if (failure.timedOut && failure.timeLimit !== undefined)
        return `in a new worktree, the setup command ${describeTimeLimitHit(failure.command, failure.timeLimit)}${note}`;
      const how = failure.timedOut ? 'timed out' : failure.exitCode === null ? 'was killed' : `exited with code ${failure.exitCode}`;
      return `the setup command \`${failure.command}\` ${how} in a new worktree${note}`;
    }
    case 'setup-changed-files':
      return `the setup command \`${failure.command}\` changed files git tracks (${failure.paths.join(', ')}); use one that leaves them as committed (e.g. \`npm ci\`, not \`npm install\`)`;
    case 'git-failed':
      return `could not ${failure.doing}: ${describeGitFailure(failure.failure)}`;
    case 'interrupted':
      return 'interrupted';
    default:
      return assertNever(failure, 'provision failure');
  }
}

/**
 * Copies into `dir` the files of `repo` that `.worktreeinclude` lists and git ignores. Nothing
 * when the file is absent. Symbolic links are copied as links.
 */
export async function copyIncluded(git: Git, repo: string, dir: string): Promise<string[]> {
  const listFile = path.join(repo, WORKTREE_INCLUDE);
  if ((await lstat(listFile).catch(() => null))?.isFile() !== true) return [];
  const files = await git.ignoredFilesListedIn(listFile);
  for (const file of files) {
    const from = path.join(repo, file);
    const to = path.join(dir, file);
    await mkdir(path.dirname(to), { recursive: true });
    const st = await lstat(from).catch(() => null);
    if (st === null) continue;
    if (st.isSymbolicLink()) await symlink(await readlink(from), to).catch(() => undefined);
    else if (st.isFile()) await copyFile(from, to);
  }
  return files.sort();
}

/**
 * `worktree.symlinkDirectories` from `<repo>/.claude/settings.json`, then `settings.local.json`
 * (the later one wins when it sets it): repository paths, without a trailing `/`. Entries that
 * are not repository paths are dropped; an absent, unreadable or invalid file counts as not
 * setting it.
 */
export async function symlinkDirectoriesOf(repo: string): Promise<string[]> {
  let found: string[] = [];
  for (const name of ['settings.json', 'settings.local.json']) {
    const text = await readFile(path.join(repo, '.claude', name), 'utf8').catch(() => null);
    if (text === null) continue;
    let settings: unknown;
    try {
      settings = JSON.parse(text);
    } catch {
      continue;
    }
    const worktree = typeof settings === 'object' && settings !== null ? (settings as { worktree?: unknown }).worktree : undefined;
    const list = typeof worktree === 'object' && worktree !== null ? (worktree as { symlinkDirectories?: unknown }).symlinkDirectories : undefined;
    if (!Array.isArray(list)) continue;
    found = [...new Set(list.flatMap((entry) => (typeof entry === 'string' ? (repoPathOrNull(entry)?.replace(/\/$/, '') ?? []) : [])))];
  }
  return found;
}

/**
 * Makes each of `entries` (`symlinkDirectories`) in the slot at `dir` a link to the person's
 * `<repo>/<entry>` when that is a directory there and nothing is at the entry in the slot.
 * Returns the entries that are such links now (made here or before).
 */
export async function linkSymlinkDirectories(repo: string, dir: string, entries: readonly string[]): Promise<string[]> {
  const linked: string[] = [];
  const top = await realpath(dir);
  for (const entry of entries) {
    const source = path.join(repo, entry);
    const target = path.join(dir, entry);
    const present = await lstat(target).catch(() => null);
    if (present !== null) {
      if (present.isSymbolicLink() && (await readlink(target).catch(() => null)) === source) linked.push(entry);
      continue;
    }
    if ((await stat(source).catch(() => null))?.isDirectory() !== true) continue;
    await mkdir(path.dirname(target), { recursive: true });
    // Never through a link the checkout holds: the link goes inside the slot or nowhere.
    const parent = await realpath(path.dirname(target));
    if (parent !== top && !parent.startsWith(`${top}${path.sep}`)) continue;
    await symlink(source, target, 'dir');
    linked.push(entry);
  }
  return linked;
}
