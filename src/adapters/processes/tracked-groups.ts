// The process groups this process started, tracked while they run, so that they are killed even
// when the orchestrator exits without cleaning up (`process.exit`, an uncaught error).

import { signalGroup, signalTree } from './processes.ts';

// Detached groups are outside the terminal's process group, and execa's `cleanup` skips detached
// children, so the orchestrator's exit has to end them itself.
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Remembers a group this process started, until `untrackGroup`; it is killed if we exit first. */
export function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const g of liveGroups) signalTree(g, 'SIGKILL');
  });
}

export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** SIGTERM every tracked group now, and SIGKILL them after `graceMs` (0: SIGKILL at once). */
export function killTrackedGroups(graceMs: number): void {
  const groups = [...liveGroups];
  if (graceMs <= 0) {
    for (const g of groups) signalTree(g, 'SIGKILL');
    return;
  }
  const hit = groups.flatMap((g) => signalTree(g, 'SIGTERM'));
  if (hit.length > 0)
    setTimeout(() => {
      for (const group of hit) signalGroup(group, 'SIGKILL');
    }, graceMs).unref();
}
