// The one module that asks the OS whether a process runs and signals it: workers, shell checks,
// the orphan registry and the run lock all go through it (what it reads of the OS is
// process-table.ts's; the groups this process started, tracked-groups.ts; the markers that find
// what left its group, process-markers.ts).
//
// - "Alive" means running: a zombie (exited, not yet reaped by its parent) or a dead process counts
//   as gone. `kill(pid, 0)` alone counts zombies, and in a container whose init never reaps orphans
//   a killed process stays a zombie forever, so on Linux the state comes from /proc, elsewhere from
//   `ps`.
// - A process's start time tells a pid from a later process that reused it.
// - Killing a group also kills what its members started in groups of their own: Claude Code runs
//   each Bash tool command in a new session (seen on 2.1.330, test/support/CLI-NOTES.md), so a
//   SIGKILL to the worker's group alone would leave those commands running. They are found
//   through the parent links while the worker still lives.

import { hasProcfs, isGone, processTable, procPids, procStat, ps } from './process-table.ts';

const validPid = (pid: number): boolean => Number.isSafeInteger(pid) && pid > 0;

/** `kill(target, signal)`; false when nothing received it (ESRCH) or it was not ours to signal (EPERM). */
export function send(target: number, signal: NodeJS.Signals | 0): { delivered: boolean; exists: boolean } {
  try {
    process.kill(target, signal);
    return { delivered: true, exists: true };
  } catch (e) {
    return { delivered: false, exists: (e as NodeJS.ErrnoException).code === 'EPERM' };
  }
}

/** Sends `signal` to every process of group `pgid`. Whether any process received it. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!validPid(pgid) || pgid === 1) return false;
  return send(-pgid, signal).delivered;
}

/** Whether process `pid` runs (a zombie or a process that is gone does not). */
export function processAlive(pid: number): boolean {
  if (!validPid(pid)) return false;
  if (!send(pid, 0).exists) return false;
  if (hasProcfs()) {
    const st = procStat(pid);
    return st !== null && !isGone(st.state);
  }
  const out = ps(['-o', 'stat=', '-p', String(pid)]);
  if (out === null) return true; // no ps to ask: trust kill(0)
  const state = out.trim();
  return state !== '' && !isGone(state);
}

/** Whether any process of group `pgid` runs (zombies do not count). */
export function groupAlive(pgid: number): boolean {
  if (!validPid(pgid)) return false;
  if (!send(-pgid, 0).exists) return false;
  if (hasProcfs()) {
    // The leader, when it still leads the group and runs, settles it without a scan.
    const leader = procStat(pgid);
    if (leader !== null && leader.pgrp === pgid && !isGone(leader.state)) return true;
    const pids = procPids();
    if (pids === null) return true;
    return pids.some((pid) => {
      const st = procStat(pid);
      return st !== null && st.pgrp === pgid && !isGone(st.state);
    });
  }
  const out = ps(['-A', '-o', 'pgid=', '-o', 'stat=']);
  if (out === null) return true; // no ps to ask: trust kill(0)
  return out.split('\n').some((line) => {
    const [group, state] = line.trim().split(/\s+/);
    return Number(group) === pgid && state !== undefined && !isGone(state);
  });
}

/**
 * The other process groups holding descendants of group `pgid`'s members: what they started in
 * groups or sessions of their own. Only found while the parent links still lead there (a child
 * whose parent died is adopted by init).
 */
export function descendantGroups(pgid: number): number[] {
  if (!validPid(pgid)) return [];
  const table = processTable();
  if (table === null) return [];
  const children = new Map<number, number[]>();
  for (const p of table) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const groupOf = new Map(table.map((p) => [p.pid, p.pgrp]));
  const queue = table.filter((p) => p.pgrp === pgid).map((p) => p.pid);
  const seen = new Set(queue);
  const groups = new Set<number>();
  const own = groupOf.get(process.pid);
  while (queue.length > 0) {
    for (const child of children.get(queue.pop()!) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      queue.push(child);
      const g = groupOf.get(child);
      if (g !== undefined && g !== pgid && g > 1 && g !== own) groups.add(g);
    }
  }
  return [...groups];
}

/** Sends `signal` to group `pgid` and to the groups of its descendants. Returns the groups signalled. */
export function signalTree(pgid: number, signal: NodeJS.Signals): number[] {
  return [pgid, ...descendantGroups(pgid)].filter((group) => signalGroup(group, signal));
}

/**
 * The process's start time as the OS reports it (Linux: /proc field 22, clock ticks since boot;
 * elsewhere `ps -o lstart`), or null when there is no such process. A zombie still has one.
 */
export function processStartTime(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (hasProcfs()) {
    const st = procStat(pid);
    return st === null || st.startTime === '' ? null : st.startTime;
  }
  const out = ps(['-o', 'lstart=', '-p', String(pid)])?.trim();
  return out ? out : null;
}

/**
 * Whether `pid` is still the process that was recorded with `startTime`: it runs, and (when a
 * start time was recorded) it started then. A zombie, a dead pid and a reused pid all answer no.
 */
export function sameProcessAlive(pid: number, startTime: string | undefined): 'alive' | 'gone' | 'reused' {
  if (!processAlive(pid)) return 'gone';
  if (startTime === undefined || startTime === '') return 'alive';
  const now = processStartTime(pid);
  return now !== null && now !== startTime ? 'reused' : 'alive';
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** How often a wait for processes to end looks again. */
export const POLL_MS = 50;
/** After SIGKILL, how long to wait for the group to disappear before giving up on it. */
const AFTER_KILL_WAIT_MS = 2000;

/** Waits until every group in `groups` is gone or `ms` passed. Whether they are all gone. */
export async function waitForGroupsGone(groups: readonly number[], ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (!groups.some(groupAlive)) return true;
    if (performance.now() >= deadline) return false;
    await sleep(Math.min(POLL_MS, Math.max(1, deadline - performance.now())));
  }
}

/** Waits until group `pgid` is gone or `ms` passed. Whether it is gone. */
export const waitForGroupGone = (pgid: number, ms: number): Promise<boolean> => waitForGroupsGone([pgid], ms);

/**
 * Ends group `pgid` and what its members started in groups of their own: SIGTERM, then SIGKILL
 * to whatever is left after `graceMs`, then a short wait for it to disappear. Resolves whether
 * they are all gone.
 */
export async function terminateGroup(pgid: number, graceMs: number): Promise<boolean> {
  const groups = new Set(signalTree(pgid, 'SIGTERM'));
  if (groups.size === 0) return !groupAlive(pgid);
  if (await waitForGroupsGone([...groups], graceMs)) return true;
  for (const g of signalTree(pgid, 'SIGKILL')) groups.add(g);
  for (const g of groups) signalGroup(g, 'SIGKILL');
  return waitForGroupsGone([...groups], AFTER_KILL_WAIT_MS);
}
