// Scratch worktrees: a throwaway checkout of one commit, outside the person's working tree, for
// running commands that must not see or touch their files (the probe's checks; later, attempts).
//
// `git worktree add --detach` under a new directory in the OS temporary directory: it writes only
// that directory and the worktree's own record under `.git/worktrees/`, never the person's tree,
// index or branch. Hooks are off (a `post-checkout` hook would run the person's code for our
// checkout). Ignored files the commands need (`.env`) are copied in when `.worktreeinclude` (at
// the repository's top, gitignore syntax, as Claude Code reads it) lists them: only files that are
// both listed there and ignored by git, as Claude Code does. The worktree is always removed
// (`git worktree remove --force`, then `git worktree prune`), even when the work fails or throws.

import { execFile } from 'node:child_process';
import { copyFile, lstat, mkdir, mkdtemp, readlink, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type Result, err, ok } from '../core/failure.ts';

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

interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

function git(cwd: string, args: string[]): Promise<GitRun> {
  return new Promise((resolve) => {
    execFile('git', ['-c', 'core.hooksPath=/dev/null', ...args], { cwd, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : 1;
      resolve({ code, stdout, stderr: stderr || (error?.message ?? '') });
    });
  });
}

/**
 * Checks out `commit` (default HEAD) of the repository at `repo` in a scratch worktree, runs `use`
 * in it and removes it whatever happens. A failure to create it is a value; what `use` throws is
 * rethrown after the removal.
 */
export async function withScratchWorktree<T>(repo: string, use: (scratch: ScratchWorktree) => Promise<T>, commit = 'HEAD'): Promise<Result<T, ScratchProblem>> {
  const resolved = await git(repo, ['rev-parse', '--verify', '--quiet', `${commit}^{commit}`]);
  if (resolved.code !== 0) return err({ kind: 'no-commit' });
  const sha = resolved.stdout.trim();
  // Registrations of scratch worktrees whose directory is gone (a run killed with -9) are dropped.
  await git(repo, ['worktree', 'prune']);
  const parent = await mkdtemp(join(await realpath(tmpdir()), SCRATCH_PREFIX));
  const dir = join(parent, 'tree');
  try {
    const added = await git(repo, ['worktree', 'add', '--detach', dir, sha]);
    if (added.code !== 0) return err({ kind: 'git-failed', doing: `check out ${sha.slice(0, 12)} in a scratch worktree`, message: added.stderr.trim() });
    const included = await copyIncluded(repo, dir);
    return ok(await use({ dir, commit: sha, included }));
  } finally {
    await removeScratch(repo, dir);
    await rm(parent, { recursive: true, force: true });
  }
}

/** Removes a scratch worktree and its record; never fails (what is left, `git worktree prune` drops later). */
export async function removeScratch(repo: string, dir: string): Promise<void> {
  await git(repo, ['worktree', 'remove', '--force', '--force', dir]);
  await rm(dir, { recursive: true, force: true });
  await git(repo, ['worktree', 'prune']);
}

/**
 * Copies into `dir` the files of `repo` that `.worktreeinclude` lists and git ignores. Nothing
 * when the file is absent. Symbolic links are copied as links.
 */
export async function copyIncluded(repo: string, dir: string): Promise<string[]> {
  const listFile = join(repo, WORKTREE_INCLUDE);
  if ((await lstat(listFile).catch(() => null))?.isFile() !== true) return [];
  const listed = await git(repo, ['ls-files', '-z', '--others', '--ignored', `--exclude-from=${listFile}`]);
  // `--directory` names a wholly ignored directory once (`node_modules/`) instead of every file in it.
  const ignored = await git(repo, ['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  if (listed.code !== 0 || ignored.code !== 0) return [];
  const ignoredEntries = ignored.stdout.split('\0').filter(Boolean);
  const isIgnored = (file: string) => ignoredEntries.some((e) => e === file || (e.endsWith('/') && file.startsWith(e)));
  const files = listed.stdout.split('\0').filter((f) => f !== '' && isIgnored(f));
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
