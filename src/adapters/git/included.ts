// The `.worktreeinclude` files (ignored files a new worktree gets, often `.env`) as a list to show
// or send: each file, and a symbolic link by its target as written, never followed.

import { lstat, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { IncludedFile } from '../../core/index.ts';
import type { Git } from './repository.ts';
import { WORKTREE_INCLUDE } from './provisioning.ts';

/** The files `.worktreeinclude` lists and git ignores, sorted; none when the list is absent. */
export async function includedFiles(git: Git, repo: string): Promise<IncludedFile[]> {
  const listFile = path.join(repo, WORKTREE_INCLUDE);
  if ((await lstat(listFile).catch(() => null))?.isFile() !== true) return [];
  const files: IncludedFile[] = [];
  for (const file of (await git.ignoredFilesListedIn(listFile)).sort()) {
    const info = await lstat(path.join(repo, file)).catch(() => null);
    if (info === null) continue;
    if (info.isSymbolicLink()) files.push({ path: file, link: await readlink(path.join(repo, file)) });
    else if (info.isFile()) files.push({ path: file, link: null });
  }
  return files;
}
