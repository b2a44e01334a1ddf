// A run's integration ref and workspaces for a test repository: the plan's integration ref and a
// worktree pool in a temporary folder of its own, both removed after the test.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shellCommands } from '../../src/adapters/sandbox/commands.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { noWorkers } from '../../src/run/adapters.ts';
import { GitIntegration } from '../../src/run/integration.ts';
import { type LocalWorkspaces, openLocalWorkspaces, type WorkspaceUse } from '../../src/run/workspace/local.ts';

/** What a test's workspaces are given unless it says otherwise: no sandbox, no worker log, a minute for setup and checks. */
export const testWorkspaceUse: WorkspaceUse = {
  sandbox: false,
  setupTimeoutMs: 60_000,
  checkTimeoutMs: 30_000,
  strictScope: false,
  logDir: null,
  markTracked: false,
};

/**
 * Opens `plan`'s integration ref in `repo` and its workspaces, their worktrees under a fresh folder
 * (`root`, or the one `env`'s FOREMAN_WORKTREES names); `cleanups` removes both.
 */
export async function openPlaces(
  cleanups: Array<() => Promise<void>>,
  repo: string,
  plan: Plan,
  use: Partial<WorkspaceUse> = {},
  env?: NodeJS.ProcessEnv,
): Promise<{ integration: GitIntegration; workspaces: LocalWorkspaces; root: string }> {
  let runEnv = env;
  if (runEnv === undefined) {
    const root = await mkdtemp(join(tmpdir(), 'foreman-isolation-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    runEnv = { ...process.env, FOREMAN_WORKTREES: root };
  }
  const opened = await GitIntegration.open(plan, { repo, planPath: join(repo, '.design/plan.json') });
  if (!opened.ok) throw new Error(`open: ${opened.error.stderr}`);
  const integration = opened.value;
  const workspaces = await openLocalWorkspaces(
    plan,
    {
      repo: integration.repo,
      planId: integration.planId,
      env: runEnv,
      commands: shellCommands(runEnv),
      workers: noWorkers,
      keepAside: (current, task, work) => integration.keepAside(current, task, work),
      knows: (commit) => integration.knows(commit),
    },
    { ...testWorkspaceUse, ...use },
  );
  cleanups.push(() => workspaces.remove());
  return { integration, workspaces, root: runEnv['FOREMAN_WORKTREES'] ?? '' };
}
