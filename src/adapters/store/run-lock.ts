// The run lock: `<plan dir>/plan.lock`, a small JSON file created exclusively (atomic-file.ts),
// holding the holder's pid, host and process start time. A lock left by a process on this host
// that is gone or a zombie, or whose pid now belongs to another process (its start time differs),
// or a file that is not a lock at all, is taken over at once.

import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNever, err, ok, type Result } from '../../core/index.ts';
import { processStartTime, sameProcessAlive } from '../processes/index.ts';
import { createExclusive, enterGuard, fsyncDir, GUARD_STALE_MS, readRaw, writeTemp } from './atomic-file.ts';
import { DRAIN_FILE_NAME } from './drain-note.ts';

export interface LockInfo {
  pid: number;
  host: string;
  /** ISO timestamp. */
  startedAt: string;
  command?: string;
  /**
   * The holder's process start time as the OS reports it (see `processStartTime`): a live pid with
   * another start time is a later process that reused the pid. Absent in locks of older versions.
   */
  processStart?: string;
}

/** Why a plan command cannot run now: the run that holds the lock, named. */
export const lockHeldMessage = (holder: LockInfo): string =>
  `a run (pid ${holder.pid} on host ${holder.host}, started ${holder.startedAt}) holds the lock; stop it first or wait`;

export interface LockTakeover {
  /** The stale holder, or null when the lock file was not a lock (empty, or cut off mid-write). */
  previous: LockInfo | null;
  /** `dead-process`: the holder is gone or a zombie; `pid-reused`: its pid now runs another process. */
  reason: 'dead-process' | 'pid-reused' | 'unparseable';
}

export interface Lock {
  path: string;
  info: LockInfo;
  /** Set when a stale lock was replaced, so the caller can say so. */
  takenOver?: LockTakeover;
  /** Removes the lock file if it is still ours. Resolves whether it removed it. Idempotent. */
  release(): Promise<boolean>;
  /** `release` for `process.on('exit')` handlers, which cannot wait. */
  releaseSync(): boolean;
}

export type LockError = { kind: 'held'; holder: LockInfo };

export type LockStatus =
  | { state: 'free' }
  /** Held by a live process on this host. */
  | { state: 'live'; holder: LockInfo }
  /** Left by a process on this host that is gone (or a zombie, or its pid was reused): the next run takes it over. */
  | { state: 'stale'; holder: LockInfo; why: 'dead-process' | 'pid-reused' }
  /** Held from another host: we cannot tell whether it is alive. */
  | { state: 'foreign'; holder: LockInfo }
  /** Not a lock (empty or garbage): the next run takes it over. */
  | { state: 'unparseable'; text: string };

export const LOCK_FILE_NAME = 'plan.lock';
export const lockPathFor = (planPath: string): string => path.join(path.dirname(planPath), LOCK_FILE_NAME);

/** An unparseable lock younger than this might be one being written right now by a non-atomic writer. */
const UNPARSEABLE_GRACE_MS = 2000;

interface LockFileBody extends LockInfo {
  /** Random per acquisition; tells our lock from a later one by the same pid. */
  token: string;
}

function parseLockInfo(text: string): (LockInfo & { token?: string }) | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const pid = o.pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return null;
  if (typeof o.host !== 'string' || o.host === '' || typeof o.startedAt !== 'string') return null;
  if (o.command !== undefined && typeof o.command !== 'string') return null;
  return {
    pid,
    host: o.host,
    startedAt: o.startedAt,
    ...(typeof o.command === 'string' ? { command: o.command } : {}),
    ...(typeof o.processStart === 'string' && o.processStart !== '' ? { processStart: o.processStart } : {}),
    ...(typeof o.token === 'string' ? { token: o.token } : {}),
  };
}

const publicInfo = (i: LockInfo & { token?: string }): LockInfo => ({
  pid: i.pid,
  host: i.host,
  startedAt: i.startedAt,
  ...(i.command !== undefined ? { command: i.command } : {}),
  ...(i.processStart !== undefined ? { processStart: i.processStart } : {}),
});

/** How long past GUARD_STALE_MS `acquireLock` keeps trying before it calls the lock contended. */
const ACQUIRE_SLACK_MS = 5_000;

function classify(text: string): LockStatus {
  const holder = parseLockInfo(text);
  if (!holder) return { state: 'unparseable', text };
  const info = publicInfo(holder);
  if (holder.host !== os.hostname()) return { state: 'foreign', holder: info };
  const holderState = sameProcessAlive(holder.pid, holder.processStart);
  switch (holderState) {
    case 'alive':
      return { state: 'live', holder: info };
    case 'gone':
      return { state: 'stale', holder: info, why: 'dead-process' };
    case 'reused':
      return { state: 'stale', holder: info, why: 'pid-reused' };
    default:
      return assertNever(holderState, 'holder state');
  }
}

function makeLock(file: string, info: LockInfo, token: string, takenOver?: LockTakeover): Lock {
  const ours = (text: string): boolean => {
    const h = parseLockInfo(text);
    return h !== null && h.pid === info.pid && h.host === info.host && (h.token === undefined || h.token === token);
  };
  return {
    path: file,
    info,
    ...(takenOver ? { takenOver } : {}),
    async release() {
      const cur = await readRaw(file);
      if (!cur || !ours(cur.text)) return false;
      // A drain asked of this run is over with it.
      await unlink(path.join(path.dirname(file), DRAIN_FILE_NAME)).catch(() => undefined);
      try {
        await unlink(file);
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw e;
      }
    },
    releaseSync() {
      try {
        if (!ours(readFileSync(file, 'utf8'))) return false;
        try {
          unlinkSync(path.join(path.dirname(file), DRAIN_FILE_NAME));
        } catch {
          // none asked
        }
        unlinkSync(file);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * Takes the run lock next to `planPath`. A live holder on this host, or any holder on another
 * host, makes it `held`. A holder on this host whose process is gone or a zombie, or whose pid
 * now runs a process with another start time, or a lock file that is not a lock, is replaced at
 * once (reported in `takenOver`).
 *
 * Several processes finding the same stale lock: a takeover guard (`plan.lock.takeover`, a
 * directory) lets exactly one replace it.
 */
export async function acquireLock(planPath: string, info: LockInfo): Promise<Result<Lock, LockError>> {
  const file = lockPathFor(planPath);
  const token = randomBytes(8).toString('hex');
  const body: LockFileBody = { ...publicInfo(info), token };
  const text = `${JSON.stringify(body)}\n`;

  // Bounded by time, not by tries: a guard left by a process killed inside it blocks every
  // takeover until it is stale, so the budget must outlast GUARD_STALE_MS.
  const deadline = Date.now() + GUARD_STALE_MS + ACQUIRE_SLACK_MS;
  while (Date.now() < deadline) {
    if (await createExclusive(file, text)) return ok(makeLock(file, info, token));

    const current = await readRaw(file);
    if (current === null) continue; // released meanwhile: try again
    const status = classify(current.text);
    let takeover: LockTakeover;
    switch (status.state) {
      case 'free':
        continue;
      case 'live':
      case 'foreign':
        return err({ kind: 'held', holder: status.holder });
      case 'stale':
        takeover = { previous: status.holder, reason: status.why };
        break;
      case 'unparseable':
        if (Date.now() - current.mtimeMs < UNPARSEABLE_GRACE_MS) {
          await sleep(100);
          continue;
        }
        takeover = { previous: null, reason: 'unparseable' };
        break;
    }

    // Replace the stale file under a takeover guard, so that of several processes finding the
    // same stale lock exactly one replaces it; the others then see a live lock. The new lock is
    // written and synced before the guard is entered and the directory synced after it is left,
    // so the guard is held for a read and a rename only: a kill inside it is rare.
    const tmp = await writeTemp(file, text);
    let replaced = false;
    try {
      const guard = await enterGuard(`${file}.takeover`);
      if (!guard) continue;
      try {
        const again = await readRaw(file);
        if (again === null || again.text !== current.text) continue; // changed meanwhile: look again
        await rename(tmp, file);
        replaced = true;
      } finally {
        await guard.leave();
      }
    } finally {
      if (!replaced) await unlink(tmp).catch(() => {});
    }
    await fsyncDir(path.dirname(file));
    const confirm = await readRaw(file);
    if (confirm?.text === text) return ok(makeLock(file, info, token, takeover));
  }
  throw new Error(`could not acquire ${file}: it keeps changing (another process is contending for it)`);
}

/** What the lock next to `planPath` says, for status displays. */
export async function readLock(planPath: string): Promise<LockStatus> {
  const raw = await readRaw(lockPathFor(planPath));
  return raw === null ? { state: 'free' } : classify(raw.text);
}

/** Whether a run holds the lock (one that `acquireLock` would refuse). */
export async function isLocked(planPath: string): Promise<boolean> {
  const s = await readLock(planPath);
  return s.state === 'live' || s.state === 'foreign';
}

/** The LockInfo for this process. */
export function currentLockInfo(command?: string): LockInfo {
  const processStart = processStartTime(process.pid);
  return {
    pid: process.pid,
    host: os.hostname(),
    startedAt: new Date().toISOString(),
    ...(command !== undefined ? { command } : {}),
    ...(processStart !== null ? { processStart } : {}),
  };
}
