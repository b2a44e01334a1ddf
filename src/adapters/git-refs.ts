// Refs and revisions, through the one runner (`runGit`): resolving a revision to a commit, asking
// whether one commit holds another, moving a ref by compare-and-swap, starting the plan's
// integration ref, and the repository's own directories. run/ asks git these things only here.

import { type Result, err, ok } from '../core/failure.ts';
import { type GitFailure, failureOf } from '../core/git-text.ts';
import { runGit } from './git.ts';

/** The commit `revision` names in `cwd` (default HEAD), or null: no such revision, or an unborn branch. */
export async function resolveCommit(cwd: string, revision = 'HEAD'): Promise<string | null> {
  const found = await runGit(['rev-parse', '--verify', '--quiet', `${revision}^{commit}`], { cwd });
  return found.ok && found.value.trim() !== '' ? found.value.trim() : null;
}

/** Whether `descendant`'s history holds `ancestor` (a commit is its own ancestor). */
export async function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  return (await runGit(['merge-base', '--is-ancestor', ancestor, descendant], { cwd })).ok;
}

/** Move `ref` to `next` only if it is at `expected` (`''`: only if it does not exist yet), with a reflog entry. */
export async function moveRef(cwd: string, ref: string, next: string, expected: string, reason: string): Promise<Result<void, GitFailure>> {
  const moved = await runGit(['update-ref', '--create-reflog', '-m', reason, ref, next, expected], { cwd });
  return moved.ok ? ok(undefined) : err(failureOf(moved.error));
}

/**
 * The plan's integration ref starts at HEAD when it does not exist yet. Returns where it starts,
 * or the failure (no commit yet; another process made the ref meanwhile).
 */
export async function startIntegrationRef(repo: string, ref: string): Promise<Result<string, GitFailure>> {
  const head = await resolveCommit(repo);
  if (head === null) return err({ step: 'rev-parse', exitCode: 128, stderr: 'fatal: HEAD does not name a commit (the repository has no commit yet)' });
  const made = await moveRef(repo, ref, head, '', 'foreman: start the integration of this plan');
  return made.ok ? ok(head) : made;
}

/** The directory git keeps the repository's shared data in (`.git` of the main worktree), or null. */
export async function commonGitDir(cwd: string): Promise<string | null> {
  const found = await runGit(['rev-parse', '--git-common-dir'], { cwd });
  return found.ok ? found.value.trim() : null;
}

/** The top of the working tree holding `cwd`, or null when it is in none. */
export async function topLevel(cwd: string): Promise<string | null> {
  const found = await runGit(['rev-parse', '--show-toplevel'], { cwd });
  return found.ok ? found.value.trim() : null;
}

/** The ref HEAD points to (`refs/heads/x`), or null on a detached HEAD. */
export async function headBranchRef(cwd: string): Promise<string | null> {
  const found = await runGit(['symbolic-ref', '-q', 'HEAD'], { cwd });
  return found.ok ? found.value.trim() || null : null;
}

/** How many commits `range` (`a..b`, or a ref) holds, or null when git cannot say. */
export async function countCommits(cwd: string, range: string): Promise<number | null> {
  const counted = await runGit(['rev-list', '--count', range, '--'], { cwd });
  return counted.ok ? Number(counted.value.trim()) : null;
}

/** The files of `commit` under `paths` (each a file, or a directory without its `/`), or null when git cannot say. */
export async function filesIn(cwd: string, commit: string, paths: readonly string[]): Promise<string[] | null> {
  const listed = await runGit(['ls-tree', '-r', '-z', '--name-only', commit, '--', ...paths], { cwd });
  return listed.ok ? listed.value.split('\0').filter(Boolean) : null;
}
