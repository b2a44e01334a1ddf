// Where an attempt works: the directory its worker and its checks run in, what changed there, and
// putting the attempt's files back. Today every attempt shares the person's working tree (the one
// implementation below); giving each attempt its own git worktree replaces only this module.

import type { Git } from '../adapters/git.ts';
import type { FileChange, GitFailure } from '../core/git-text.ts';
import type { Result } from '../core/failure.ts';

export interface Workspace {
  /** The directory the worker and its checks run in. */
  readonly dir: string;
  /** How each path under `paths` differs from the last commit (untracked files included). */
  changedPaths(paths: readonly string[]): Promise<Map<string, FileChange>>;
  /** Changes to paths that none of `declared` covers. */
  changesOutside(declared: readonly string[]): Promise<Map<string, FileChange>>;
  /** Put `paths` back as they are in the last commit; never deletes an ignored file. */
  restore(paths: readonly string[]): Promise<Result<void, GitFailure>>;
}

/** The person's own working tree, shared by every attempt. */
export function sharedTree(dir: string, git: Git): Workspace {
  return {
    dir,
    changedPaths: (paths) => git.changedPaths(paths),
    changesOutside: (declared) => git.changesOutside(declared),
    restore: (paths) => git.restore(paths),
  };
}
