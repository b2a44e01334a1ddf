// Scratch worktrees: a throwaway checkout of one commit, outside the person's working tree, for
// running commands that must not see or touch their files (the probe's checks; attempts and the
// gate use the worktree pool, src/adapters/worktree-pool.ts).
//
// `git worktree add --detach` under a new directory in the OS temporary directory: it writes only
// that directory and the worktree's own record under `.git/worktrees/`, never the person's tree,
// index or branch. Hooks are off (a `post-checkout` hook would run the person's code for our
// checkout). Ignored files the commands need (`.env`) are copied in when `.worktreeinclude` (at
// the repository's top, gitignore syntax, as Claude Code reads it) lists them: only files that are
// both listed there and ignored by git, as Claude Code does. The worktree is always removed
// (`git worktree remove --force`, then `git worktree prune`), even when the work fails or throws.

import { copyFile, lstat, mkdir, mkdtemp, readlink, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Result, err, ok } from '../core/failure.ts';
import { Git } from './git.ts';

export const SCRATCH_PREFIX = 'foreman-scratch-';
export const WORKTREE_INCLUDE = '.worktreeinclude';

export interface ScratchWorktree {
  /** The checkout's top directory. */
  dir: string;
  /** The commit checked out. */
  commit: string;
  /** Ignored files copied in from the person's tree because `.worktreeinclude` lists them. */
  included: string[];
}

export type ScratchProblem =
  | { kind: 'no-commit' }
  | { kind: 'git-failed'; doing: string; message: string };

/**
 * Checks out `commit` (default HEAD) of the repository at `repo` in a scratch worktree, runs `use`
 * in it and removes it whatever happens. A failure to create it is a value; what `use` throws is
 * rethrown after the removal.
 */
export async function withScratchWorktree<T>(repo: string, use: (scratch: ScratchWorktree) => Promise<T>, commit = 'HEAD'): Promise<Result<T, ScratchProblem>> {
  const git = new Git(repo);
  const sha = await git.commitOf(commit);
  if (sha === null) return err({ kind: 'no-commit' });
  await git.pruneWorktrees();
  const parent = await mkdtemp(join(await realpath(tmpdir()), SCRATCH_PREFIX));
  const dir = join(parent, 'tree');
  try {
    const added = await git.addDetachedWorktree(dir, sha);
    if (!added.ok) return err({ kind: 'git-failed', doing: `check out ${sha.slice(0, 12)} in a scratch worktree`, message: added.error.stderr.trim() });
    const included = await copyIncluded(git, repo, dir);
    return ok(await use({ dir, commit: sha, included }));
  } finally {
    await removeScratch(git, dir);
    await rm(parent, { recursive: true, force: true });
  }
}

/** Removes a scratch worktree and its record; never fails (what is left, `git worktree prune` drops later). */
export async function removeScratch(git: Git, dir: string): Promise<void> {
  await git.removeWorktree(dir);
  await rm(dir, { recursive: true, force: true });
  await git.pruneWorktrees();
}

/**
 * Copies into `dir` the files of `repo` that `.worktreeinclude` lists and git ignores. Nothing
 * when the file is absent. Symbolic links are copied as links.
 */
export async function copyIncluded(git: Git, repo: string, dir: string): Promise<string[]> {
  const listFile = join(repo, WORKTREE_INCLUDE);
  if ((await lstat(listFile).catch(() => null))?.isFile() !== true) return [];
  const files = await git.ignoredFilesListedIn(listFile);
  for (const file of files) {
    const from = join(repo, file);
    const to = join(dir, file);
    await mkdir(dirname(to), { recursive: true });
    const st = await lstat(from).catch(() => null);
    if (st === null) continue;
    if (st.isSymbolicLink()) await symlink(await readlink(from), to).catch(() => undefined);
    else if (st.isFile()) await copyFile(from, to);
  }
  return files.sort();
}
