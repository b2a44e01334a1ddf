// Setting aside what an attempt changed outside its task's declared files: in the attempt's own
// worktree, each such path goes back to what the attempt's starting commit holds (restored from
// it, or removed when it has none), so the checks that follow judge exactly the work that would
// land. What was set aside is kept by the caller on a ref of foreman's (capture stored it first).
// Never `git stash`: an in-session worktree shares the person's refs/stash.

import { rm } from 'node:fs/promises';
import path from 'node:path';
import { err, failureOf, type GitFailure, ok, type Result, splitNul } from '../../core/index.ts';
import { git } from './runner.ts';

/** How many paths one `ls-tree` is given (a command line has a limit). */
const PATHS_PER_CALL = 500;

/**
 * Puts `paths` (repository paths, files) in the worktree at `dir` back as commit `base` has
 * them: those it holds are checked out from it (content and mode), the others removed. Returns
 * those `base` holds as regular files (git's modes 100644 and 100755): files the repository has.
 */
export async function setAsideInWorktree(dir: string, base: string, paths: readonly string[]): Promise<Result<{ tracked: string[] }, GitFailure>> {
  if (paths.length === 0) return ok({ tracked: [] });
  const held = await heldBy(dir, base, paths);
  if (!held.ok) return held;
  const { inBase, tracked } = held.value;
  const restore = paths.filter((changedPath) => inBase.has(changedPath));
  if (restore.length > 0) {
    const checkedOut = await git(dir, ['checkout', '--no-overlay', base, '--pathspec-from-file=-', '--pathspec-file-nul'], {
      input: `${restore.join('\0')}\0`,
    });
    if (!checkedOut.ok) return err(failureOf(checkedOut.error));
  }
  for (const changedPath of paths) {
    if (!inBase.has(changedPath)) await rm(path.join(dir, changedPath), { force: true, recursive: true });
  }
  return ok({ tracked });
}

/** Which of `paths` commit `base` holds (asked of the repository at `dir`), and which of them as regular files, sorted. */
export async function heldBy(dir: string, base: string, paths: readonly string[]): Promise<Result<{ inBase: Set<string>; tracked: string[] }, GitFailure>> {
  const inBase = new Set<string>();
  const tracked: string[] = [];
  for (let from = 0; from < paths.length; from += PATHS_PER_CALL) {
    const listed = await git(dir, ['ls-tree', '-z', '--full-tree', base, '--', ...paths.slice(from, from + PATHS_PER_CALL)]);
    if (!listed.ok) return err(failureOf(listed.error));
    // `<mode> <type> <id>\t<path>`
    for (const record of splitNul(listed.value)) {
      const tab = record.indexOf('\t');
      const listedPath = record.slice(tab + 1);
      inBase.add(listedPath);
      if (/^100(644|755) /.test(record)) tracked.push(listedPath);
    }
  }
  return ok({ inBase, tracked: tracked.sort() });
}
