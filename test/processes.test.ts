import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import {
  descendantGroups,
  groupAlive,
  processAlive,
  processStartTime,
  sameProcessAlive,
  signalGroup,
  signalTree,
  terminateGroup,
  waitForGroupGone,
  waitForGroupsGone,
} from '../src/adapters/processes/processes.ts';
import { killTrackedGroups, trackGroup, untrackGroup } from '../src/adapters/processes/tracked-groups.ts';
import { makeZombie } from './support/zombies.ts';
import { waitFor } from './support/wait.ts';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) {
    if (c.pid === undefined) continue;
    try {
      process.kill(-c.pid, 'SIGKILL');
    } catch {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
});

/** A detached shell running `script` (its own process group, pgid = pid). */
function group(script: string): ChildProcess & { pid: number } {
  const child = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  started.push(child);
  if (child.pid === undefined) throw new Error('could not spawn /bin/sh');
  return child as ChildProcess & { pid: number };
}

const exited = (child: ChildProcess) =>
  new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve)));

/** Whether kill(pid, 0) succeeds: what a check that ignores zombies would believe. */
const kill0 = (target: number): boolean => {
  try {
    process.kill(target, 0);
    return true;
  } catch {
    return false;
  }
};

describe('processAlive', () => {
  it('is true for running processes and false once one has exited', async () => {
    expect(processAlive(process.pid)).toBe(true);
    const child = group('sleep 1000');
    expect(processAlive(child.pid)).toBe(true);
    child.kill('SIGKILL');
    await exited(child);
    expect(processAlive(child.pid)).toBe(false);
    expect(processAlive(0)).toBe(false);
    expect(processAlive(-5)).toBe(false);
    expect(processAlive(Number.NaN)).toBe(false);
  });

  it('counts a zombie as dead, though kill(pid, 0) still finds it', async () => {
    const zombie = await makeZombie();
    started.push(zombie.parent);
    expect(kill0(zombie.pid)).toBe(true);
    expect(processAlive(zombie.pid)).toBe(false);
    expect(processAlive(zombie.parent.pid!)).toBe(true);
  });
});

describe('groupAlive', () => {
  it('is true while any member runs, the leader gone or not', async () => {
    const whole = group('sleep 1000');
    expect(groupAlive(whole.pid)).toBe(true);
    // The leader exits at once; the background sleep keeps the group alive.
    const orphaned = group('sleep 1000 & exit 0');
    await exited(orphaned);
    expect(processAlive(orphaned.pid)).toBe(false);
    expect(groupAlive(orphaned.pid)).toBe(true);
    signalGroup(orphaned.pid, 'SIGKILL');
    expect(await waitForGroupGone(orphaned.pid, 5000)).toBe(true);
    expect(groupAlive(orphaned.pid)).toBe(false);
  });

  it('counts a group whose only member is a zombie as dead', async () => {
    const zombie = await makeZombie(true);
    started.push(zombie.parent);
    expect(kill0(-zombie.pid)).toBe(true);
    expect(groupAlive(zombie.pid)).toBe(false);
  });
});

describe('start times', () => {
  it('are stable for a process, and kept by a zombie', async () => {
    const mine = processStartTime(process.pid);
    expect(mine).toMatch(/\S/);
    expect(processStartTime(process.pid)).toBe(mine);
    const zombie = await makeZombie();
    started.push(zombie.parent);
    expect(processStartTime(zombie.pid)).toMatch(/\S/);
    const child = group('exit 0');
    await exited(child);
    expect(processStartTime(child.pid)).toBeNull();
  });

  it('tell the recorded process from a later one with the same pid', async () => {
    const mine = processStartTime(process.pid)!;
    expect(sameProcessAlive(process.pid, mine)).toBe('alive');
    expect(sameProcessAlive(process.pid, undefined)).toBe('alive'); // nothing recorded: trust the pid
    expect(sameProcessAlive(process.pid, `${mine}1`)).toBe('reused');
    const zombie = await makeZombie();
    started.push(zombie.parent);
    expect(sameProcessAlive(zombie.pid, processStartTime(zombie.pid)!)).toBe('gone');
  });
});

describe('terminateGroup', () => {
  it('ends a group with SIGTERM, before the grace period runs out', async () => {
    const child = group('sleep 1000 & sleep 1000; wait');
    let killedBy: NodeJS.Signals | null = null;
    child.once('exit', (_code, signal) => (killedBy = signal));
    expect(await terminateGroup(child.pid, 60_000)).toBe(true);
    await exited(child);
    expect(killedBy).toBe('SIGTERM');
    expect(groupAlive(child.pid)).toBe(false);
  });

  it('escalates to SIGKILL for members that ignore SIGTERM', async () => {
    const child = group("trap '' TERM; sleep 1000 & sleep 1000; wait");
    await new Promise((r) => setTimeout(r, 200)); // let the trap be set
    expect(await terminateGroup(child.pid, 300)).toBe(true);
    expect(groupAlive(child.pid)).toBe(false);
  });

  it('reports a group that is already gone as gone', async () => {
    const child = group('exit 0');
    await exited(child);
    expect(await terminateGroup(child.pid, 100)).toBe(true);
  });
});

describe('descendants in groups of their own', () => {
  /** A group whose shell starts `sleep` in a new session (as Claude Code runs its Bash commands), and that sleep's pid. */
  async function groupWithEscapee() {
    const child = group('setsid sleep 1000 & wait');
    await waitFor('the setsid child to start', () => descendantGroups(child.pid).length > 0);
    return { leader: child.pid, escapee: descendantGroups(child.pid)[0]! };
  }

  it('are found through parent links and signalled with the group', async () => {
    const { leader, escapee } = await groupWithEscapee();
    started.push({ pid: escapee } as ChildProcess);
    expect(escapee).not.toBe(leader);
    expect(groupAlive(escapee)).toBe(true);
    expect(signalTree(leader, 'SIGKILL').sort()).toEqual([leader, escapee].sort());
    expect(await waitForGroupsGone([leader, escapee], 5000)).toBe(true);
  });

  it('survive a kill of the group alone, but not terminateGroup', async () => {
    const plain = await groupWithEscapee();
    started.push({ pid: plain.escapee } as ChildProcess);
    signalGroup(plain.leader, 'SIGKILL');
    expect(await waitForGroupGone(plain.leader, 5000)).toBe(true);
    expect(groupAlive(plain.escapee)).toBe(true);

    const tree = await groupWithEscapee();
    started.push({ pid: tree.escapee } as ChildProcess);
    expect(await terminateGroup(tree.leader, 2000)).toBe(true);
    expect(groupAlive(tree.leader)).toBe(false);
    expect(groupAlive(tree.escapee)).toBe(false);
  });
});

describe('tracked groups', () => {
  it('are killed by killTrackedGroups, untracked ones are left alone', async () => {
    const tracked = group('sleep 1000');
    const untracked = group('sleep 1000');
    trackGroup(tracked.pid);
    trackGroup(untracked.pid);
    untrackGroup(untracked.pid);
    killTrackedGroups(0);
    expect(await waitForGroupGone(tracked.pid, 5000)).toBe(true);
    expect(groupAlive(untracked.pid)).toBe(true);
    untrackGroup(tracked.pid);
  });
});
