// A checkout of one commit used once and removed (the probe's): a pool of its own, one slot,
// gone when the work in it is done, whatever happens.

import { randomBytes } from 'node:crypto';
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ok, type Result } from '../../core/index.ts';
import { processAlive } from '../processes/index.ts';
import { type ProvisionFailure, symlinkDirectoriesOf } from './provisioning.ts';
import { openPool, type Slot } from './worktree-pool.ts';
import { poolDir, removePoolAt } from './pool-slots.ts';

/** A pool for one use (`withCheckout`): `checkout-<pid>-<8 hex>`. */
const CHECKOUT_NAME = /^checkout-(\d+)-[0-9a-f]{8}$/;

/**
 * A checkout of `commit` (default HEAD) for one use, the probe's: a pool of its own with one slot,
 * made and provisioned as an attempt's is (`.worktreeinclude` copies, linked directories; the
 * caller runs any setup command itself), and removed afterwards whatever `use` does. What `use`
 * throws is rethrown after the removal.
 */
export async function withCheckout<T>(
  repository: string,
  root: string,
  use: (slot: Slot) => Promise<T>,
  commit = 'HEAD',
): Promise<Result<T, ProvisionFailure>> {
  // Pools are named by the repository's real path, as a run's are.
  const repo = await realpath(repository);
  // Those a killed process left (its pid gone) go first.
  const repoFolder = path.dirname(poolDir(root, repo, 'x'));
  for (const entry of await readdir(repoFolder).catch(() => [] as string[])) {
    const pid = CHECKOUT_NAME.exec(entry)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await removePoolAt(repo, path.join(repoFolder, entry));
  }
  const pool = await openPool({
    repo,
    planId: `checkout-${process.pid}-${randomBytes(4).toString('hex')}`,
    root,
    symlinkDirectories: await symlinkDirectoriesOf(repo),
    runSetup: () => Promise.reject(new Error('a checkout for one use has no setup command')),
  });
  try {
    const acquired = await pool.acquire(commit);
    if (!acquired.ok) return acquired;
    return ok(await use(acquired.value));
  } finally {
    await pool.remove();
  }
}
