// The person's uncommitted changes, as a run warns of them: workers start from the last commit and
// never see them, and foreman never touches them.

import { dirname, relative, sep } from 'node:path';
import type { Git } from './repository.ts';
import { clipTail, coveredBy, type GitFailure, ok, type Result } from '../../core/index.ts';

/**
 * The warning of uncommitted changes in the working tree (the plan's own folder and subagent
 * worktrees aside), which workers will not see: said as a run starts, and by its dry run.
 */
export async function uncommittedChangesNotice(repo: string, planPath: string, git: Git): Promise<Result<string | null, GitFailure>> {
  // The plan's own files (plan.json, its lock) and subagent worktrees of a session are not the person's edits.
  const planDir = relative(repo, dirname(planPath)).split(sep).join('/');
  const notTheirs = ['.claude/worktrees/', ...(planDir === '' || planDir.startsWith('..') ? [] : [`${planDir}/`])];
  const changed = await git.diffNames();
  if (!changed.ok) return changed;
  const dirty = changed.value.filter((p) => !coveredBy(p, notTheirs));
  if (dirty.length === 0) return ok(null);
  return ok(
    `you have ${dirty.length === 1 ? 'an uncommitted change' : `${dirty.length} uncommitted changes`} (${clipTail(dirty.join(', '), 200)}): workers start from the last commit and will not see ${dirty.length === 1 ? 'it' : 'them'}; foreman never touches ${dirty.length === 1 ? 'it' : 'them'}; if a task changes ${dirty.length === 1 ? 'that file' : 'one of those files'}, its work waits on the integration ref and nothing lands on your branch until you commit, stash or drop your change`,
  );
}
