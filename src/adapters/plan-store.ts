// The only module that reads and writes the plan file and its run lock.
//
// Writes are atomic: the new content goes to a temp file in the same directory, is fsync'd,
// renamed over the target, and the directory is fsync'd — so a crash (even SIGKILL or power
// loss after the rename) leaves either the old or the new complete file, never a mix.
//
// The run lock is `<plan dir>/plan.lock`, a small JSON file created exclusively, holding the
// holder's pid, host and process start time. A lock left by a process on this host that is gone
// or a zombie, or whose pid now belongs to another process (its start time differs), or a file
// that is not a lock at all, is taken over at once.

import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { type FileHandle, link, mkdir, open, readFile, realpath, rename, rmdir, stat, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { assertNever, err, ok, type Result } from '../core/failure.ts';
import { type Layout, commandHint } from '../core/command-hint.ts';
import { compactTimestamp } from '../core/format.ts';
import type { Plan } from '../core/plan.ts';
import { processStartTime, sameProcessAlive } from './processes.ts';

// ---------------------------------------------------------------------------------------------
// Reading

export type PlanReadError = { kind: 'missing' | 'unreadable'; message: string };

/** The plan file's text (UTF-8). Parsing and validation are the caller's. */
export async function readPlanFile(file: string): Promise<Result<{ text: string }, PlanReadError>> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message = `${file}: ${(e as Error).message}`;
    return err({ kind: code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable', message });
  }
  try {
    return ok({ text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) });
  } catch {
    return err({ kind: 'unreadable', message: `${file}: not valid UTF-8 text` });
  }
}

// ---------------------------------------------------------------------------------------------
// Atomic writes

export interface WriteAtomicOptions {
  /** File mode for the result. Default: the existing file's mode, else 0o666 minus the umask. */
  mode?: number;
}

const tempNameFor = (target: string): string =>
  path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);

async function fsyncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch (e) {
    // Some file systems cannot fsync a directory; the rename itself is still atomic there.
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EACCES' && code !== 'ENOTSUP') throw e;
  } finally {
    await fh?.close().catch(() => {});
  }
}

/**
 * Replaces `file` with `data` atomically (see the module comment). A symlink at `file` is
 * followed: the file it points to is replaced and the link is kept. Throws on failure, leaving
 * the old file untouched and no temp file behind (unless the process itself dies).
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, opts: WriteAtomicOptions = {}): Promise<void> {
  let target = file;
  let mode = opts.mode;
  try {
    target = await realpath(file);
    if (mode === undefined) mode = (await stat(target)).mode & 0o7777;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const tmp = tempNameFor(target);
  const fh = await open(tmp, 'wx', mode ?? 0o666);
  let renamed = false;
  try {
    try {
      if (mode !== undefined) await fh.chmod(mode); // open()'s mode is masked by the umask
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, target);
    renamed = true;
  } finally {
    if (!renamed) await unlink(tmp).catch(() => {});
  }
  await fsyncDir(path.dirname(target));
}

/** The plan as JSON with a 2-space indent and a trailing newline. */
export const serializePlan = (plan: Plan): string => `${JSON.stringify(plan, null, 2)}\n`;

/** Writes the plan atomically, keeping the file's mode. */
export async function writePlanAtomic(file: string, plan: Plan): Promise<void> {
  await writeFileAtomic(file, serializePlan(plan));
}

const digestOf = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Where a person's edit to `planPath`, made while a run held it, is kept: `plan.edited-<stamp>.json` beside it. */
const editedPathFor = (planPath: string, stamp: string, n: number): string =>
  path.join(path.dirname(planPath), `${path.basename(planPath, '.json')}.edited-${stamp}${n === 1 ? '' : `-${n}`}.json`);

/** What the person is told when their edit to the plan file, made while a run held it, was kept aside. */
export const describeKeptEdit = (planPath: string, kept: string, layout: Layout): string =>
  `${planPath} was changed while this run holds it: the run did not take the change in, and kept it, byte for byte, in ${kept}. To use it, stop the run (\`${commandHint('plan', 'drain', layout)}\` lets it finish what is running; Ctrl-C stops it now), copy ${kept} over ${planPath}, and run again: the resumed run finds the work already integrated on its ref`;

/**
 * The plan file as a run holding its lock keeps it. The run writes the plan after every change;
 * a person may edit the file meanwhile (by hand, or with `plan check --fix`, which takes no lock),
 * and the run's next write would replace that edit unseen. So before each write the file is
 * compared with what the run last read or wrote: when it differs, the person's bytes are kept
 * whole at a path of their own beside the plan (never merged into the run, never lost), and the
 * write says where. A stat that matches the run's own last write skips the comparison.
 */
export class PlanKeeper {
  private digest: string;
  private written: { size: number; mtimeMs: number; ino: number } | null = null;

  /** `text`: the plan file's content as the run read it. */
  constructor(
    readonly path: string,
    text: string,
  ) {
    this.digest = digestOf(text);
  }

  /** Write `plan`; the path where a person's edit found in the file was kept, or null when there was none. */
  async save(plan: Plan, now: Date = new Date()): Promise<string | null> {
    const kept = await this.keepEdit(now);
    const text = serializePlan(plan);
    await writeFileAtomic(this.path, text);
    this.digest = digestOf(text);
    const st = await stat(this.path).catch(() => null);
    this.written = st === null ? null : { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
    return kept;
  }

  private async keepEdit(now: Date): Promise<string | null> {
    const st = await stat(this.path).catch(() => null);
    if (st === null) return null;
    const w = this.written;
    if (w !== null && st.size === w.size && st.mtimeMs === w.mtimeMs && st.ino === w.ino) return null;
    const bytes = await readFile(this.path).catch(() => null);
    if (bytes === null || digestOf(bytes) === this.digest) return null;
    const stamp = compactTimestamp(now);
    for (let n = 1; ; n++) {
      const target = editedPathFor(this.path, stamp, n);
      try {
        const handle = await open(target, 'wx', 0o666);
        try {
          await handle.writeFile(bytes);
          await handle.sync();
        } finally {
          await handle.close();
        }
        return target;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Run lock

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

async function readRaw(file: string): Promise<{ text: string; mtimeMs: number } | null> {
  try {
    const [text, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    return { text, mtimeMs: st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Writes `text` to a fresh temp file next to `file` and fsyncs it; returns the temp path. */
async function writeTemp(file: string, text: string): Promise<string> {
  const tmp = tempNameFor(file);
  const fh = await open(tmp, 'wx', 0o644);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  return tmp;
}

/**
 * Creates `file` with `text` only if it does not exist. The content appears complete at once
 * (written to a temp file, then hard-linked into place); where hard links are unsupported it
 * falls back to an O_EXCL create and write.
 */
async function createExclusive(file: string, text: string): Promise<boolean> {
  const tmp = await writeTemp(file, text);
  try {
    await link(tmp, file);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV' && code !== 'ENOSYS') throw e;
  } finally {
    await unlink(tmp).catch(() => {});
  }
  let fh: FileHandle | undefined;
  try {
    fh = await open(file, 'wx', 0o644);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A takeover guard older than this was left by a process that died inside the guard. */
const GUARD_STALE_MS = 10_000;
/** How long past GUARD_STALE_MS `acquireLock` keeps trying before it calls the lock contended. */
const ACQUIRE_SLACK_MS = 5_000;

/**
 * Enters the mutual-exclusion guard `dir` (created with mkdir, which is atomic). Returns null,
 * after a short wait, when another process is inside; the caller then starts over.
 */
async function enterGuard(dir: string): Promise<{ leave(): Promise<void> } | null> {
  try {
    await mkdir(dir);
    return { leave: () => rmdir(dir).catch(() => {}) };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  try {
    if (Date.now() - (await stat(dir)).mtimeMs > GUARD_STALE_MS) await rmdir(dir);
  } catch {
    // gone meanwhile
  }
  await sleep(20 + Math.random() * 30);
  return null;
}

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

// ---------------------------------------------------------------------------------------------
// A drain asked of the lock's holder

export const DRAIN_FILE_NAME = 'plan.drain';
const drainPathFor = (planPath: string): string => path.join(path.dirname(planPath), DRAIN_FILE_NAME);
/** The same run: its pid, and the time it took the lock (a later run may get the same pid). */
const sameHolder = (a: Pick<LockInfo, 'pid' | 'startedAt'>, b: Pick<LockInfo, 'pid' | 'startedAt'>) => a.pid === b.pid && a.startedAt === b.startedAt;

/** Whether `holder` was asked to drain already (and when), or this call asked it: then the caller signals it, once. */
export type DrainAsk = { kind: 'asked' } | { kind: 'asked-already'; at: string };

/** When the drain note `text` says its run was asked, if it names `holder`; null otherwise (another run's, or not a note). */
function drainNoteFor(text: string, holder: LockInfo): string | null {
  try {
    const asked = JSON.parse(text) as { pid?: unknown; startedAt?: unknown; at?: unknown };
    return typeof asked.pid === 'number' &&
      typeof asked.startedAt === 'string' &&
      typeof asked.at === 'string' &&
      sameHolder({ pid: asked.pid, startedAt: asked.startedAt }, holder)
      ? asked.at
      : null;
  } catch {
    return null;
  }
}

/** How long `askDrain` keeps at it while other drains replace a stale note at the same moment. */
const DRAIN_ASK_LIMIT_MS = 5_000;

/**
 * Notes that `holder` is asked to drain (`plan drain`, before it signals), unless it was asked
 * already: a second SIGTERM would stop the run at once, so of two drains asked at the same
 * moment only the one that created the note sends it. The note is created exclusively; one that
 * names `holder` means asked already. One that names another run (left by a run that did not
 * release its lock) is replaced under a guard, so that of several drains finding it one removes
 * it, and they try again. The holder's lock release removes the note.
 */
export async function askDrain(planPath: string, holder: LockInfo): Promise<Result<DrainAsk, string>> {
  const file = drainPathFor(planPath);
  const text = `${JSON.stringify({ pid: holder.pid, startedAt: holder.startedAt, at: new Date().toISOString() })}\n`;
  const deadline = Date.now() + DRAIN_ASK_LIMIT_MS;
  while (Date.now() < deadline) {
    if (await createExclusive(file, text)) return ok({ kind: 'asked' });
    const note = await readRaw(file);
    if (note === null) continue; // removed meanwhile: try again
    const at = drainNoteFor(note.text, holder);
    if (at !== null) return ok({ kind: 'asked-already', at });
    const guard = await enterGuard(`${file}.takeover`);
    if (guard === null) continue; // another drain is replacing it
    try {
      const again = await readRaw(file);
      if (again !== null && again.text === note.text) await unlink(file).catch(() => undefined);
    } finally {
      await guard.leave();
    }
  }
  return err(`could not note the drain in ${file}: it kept changing (other drains were asking at the same time)`);
}

/** Withdraws the note (the signal could not be sent). */
export const forgetDrainAsked = (planPath: string): Promise<void> => unlink(drainPathFor(planPath)).catch(() => undefined);

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
