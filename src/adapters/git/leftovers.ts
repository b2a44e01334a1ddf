// What a killed run leaves in the repository's git directory that would stop the next one: stale
// ref locks and temporary index files of processes that are gone.

import { readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { commonGitDir, integrationRef, parkedFolders } from './refs.ts';
import { processAlive } from '../processes/index.ts';

/**
 * What a killed run can leave in the git directory: a lock on the plan's refs (a killed
 * `update-ref`), which would fail every later integration, and temporary index files of
 * processes that are gone. The plan's lock is held, so no other run writes these refs.
 */
export async function clearLeftovers(repo: string, planId: string): Promise<void> {
  const common = await commonGitDir(repo);
  if (common === null) return;
  const gitDir = resolve(repo, common);
  await rm(join(gitDir, `${integrationRef(planId)}.lock`), { force: true });
  for (const folder of parkedFolders(planId)) {
    const dir = join(gitDir, folder);
    for (const name of await readdir(dir).catch(() => [] as string[])) if (name.endsWith('.lock')) await rm(join(dir, name), { force: true });
  }
  for (const name of await readdir(gitDir).catch(() => [] as string[])) {
    const pid = /^foreman-index-(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await rm(join(gitDir, name), { force: true });
  }
}
