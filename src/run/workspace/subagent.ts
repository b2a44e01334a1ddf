// In a session the workers are Task subagents: Claude Code makes each one's worktree (from HEAD)
// and the lead reports it. That worktree becomes the attempt's workspace here, behind the same
// interface as a slot of foreman's pool, so its work is captured and checked the same way.

import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Git, isAncestor, resolveCommit, symlinkDirectoriesOf, WORKTREE_INCLUDE } from '../../adapters/index.ts';
import { err, ok, type Result } from '../../core/index.ts';
import type { Workspace } from './workspace.ts';
import type { LocalWorkspaces } from './local.ts';

/** The subagents' worktrees of `repo` as workspaces of `workspaces`' plan. */
export function subagentWorkspaces(workspaces: LocalWorkspaces, repo: string, git: Git) {
  // What Claude Code provisioned in a subagent's worktree, read once, when a verification needs it.
  let provisioned: Promise<string[]> | null = null;
  /**
   * The worktree `dir` of a subagent handed out at `base`: its work is what changed since `base`
   * when its HEAD descends from it; else (a lost session) since its HEAD.
   */
  return async (dir: string, base: string | undefined): Promise<Result<Workspace, string>> => {
    provisioned ??= claudeProvisioned(repo, git);
    const head = await resolveCommit(dir);
    if (head === null) return err(`the worktree ${dir} has no commit checked out (HEAD is unborn)`);
    const start = base !== undefined && (await isAncestor(repo, base, head)) ? base : head;
    return ok(workspaces.adopt(dir, start, await provisioned));
  };
}

/**
 * What provisioning put in a subagent's worktree, never the worker's change: Claude Code links
 * the `worktree.symlinkDirectories` folders and copies the ignored files `.worktreeinclude` lists.
 */
async function claudeProvisioned(repo: string, git: Git): Promise<string[]> {
  const linked = await symlinkDirectoriesOf(repo);
  const includeFile = join(repo, WORKTREE_INCLUDE);
  const included = (await lstat(includeFile).catch(() => null))?.isFile() ? await git.ignoredFilesListedIn(includeFile) : [];
  return [...new Set([...linked, ...included])].sort();
}
