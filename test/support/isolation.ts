// A run's isolation for a test repository: the plan's integration ref and a worktree pool in a
// temporary folder of its own, both removed after the test.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellCommands } from '../../src/adapters/commands.ts';
import type { Plan } from '../../src/core/plan.ts';
import { Isolation } from '../../src/run/isolation.ts';

/** Opens `plan`'s isolation in `repo`, its worktrees under a fresh folder (`root`); `cleanups` removes both. */
export async function openIsolation(cleanups: Array<() => Promise<void>>, repo: string, plan: Plan): Promise<{ isolation: Isolation; root: string }> {
  const root = await mkdtemp(join(tmpdir(), 'foreman-isolation-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const env = { ...process.env, FOREMAN_WORKTREES: root };
  const opened = await Isolation.open(plan, {
    repo,
    planPath: join(repo, '.design/plan.json'),
    env,
    sandbox: false,
    setupTimeoutMs: 60_000,
    commands: shellCommands(env),
  });
  if (!opened.ok) throw new Error(`open: ${opened.error.stderr}`);
  cleanups.push(() => opened.value.removeWorktrees());
  return { isolation: opened.value, root };
}
