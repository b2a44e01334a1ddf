// Files whose content appears whole or not at all. A write goes to a temp file in the same
// directory, is fsync'd, renamed over the target, and the directory is fsync'd, so a crash (even
// SIGKILL or power loss after the rename) leaves either the old or the new complete file, never a
// mix (`writeFileAtomic`). A file made once is written aside and hard-linked into place
// (`createExclusive`); one that several processes may replace at once is replaced under a guard
// that lets exactly one in (`enterGuard`).

import { randomBytes } from 'node:crypto';
import { type FileHandle, link, mkdir, open, readFile, realpath, rename, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface WriteAtomicOptions {
  /** File mode for the result. Default: the existing file's mode, else 0o666 minus the umask. */
  mode?: number;
}

const tempNameFor = (target: string): string =>
  path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);

export async function fsyncDir(dir: string): Promise<void> {
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

export async function readRaw(file: string): Promise<{ text: string; mtimeMs: number } | null> {
  try {
    const [text, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    return { text, mtimeMs: st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Writes `text` to a fresh temp file next to `file` (`mode` before the umask) and fsyncs it; returns the temp path. */
export async function writeTemp(file: string, text: string | Uint8Array, mode = 0o644): Promise<string> {
  const tmp = tempNameFor(file);
  const fh = await open(tmp, 'wx', mode);
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

export interface CreateExclusiveOptions {
  /** The new file's mode, before the umask. Default 0o644. */
  mode?: number;
  /**
   * Whether the content must appear complete at once, for a file other processes read as soon as
   * it exists (a lock, a note). Default true. False writes it in place: for a file no process
   * reads while it is being written, which then leaves no temp file beside it, even for a moment.
   */
  whole?: boolean;
}

/**
 * Creates `file` with `text` only if it does not exist; false when it does. The content appears
 * complete at once (written to a temp file, then hard-linked into place); where hard links are
 * unsupported, or `whole` is false, it is an O_EXCL create and write.
 */
export async function createExclusive(file: string, text: string | Uint8Array, options: CreateExclusiveOptions = {}): Promise<boolean> {
  const mode = options.mode ?? 0o644;
  if (options.whole !== false) {
    const tmp = await writeTemp(file, text, mode);
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
  }
  let fh: FileHandle | undefined;
  try {
    fh = await open(file, 'wx', mode);
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

/** A takeover guard older than this was left by a process that died inside the guard. */
export const GUARD_STALE_MS = 10_000;

/**
 * Enters the mutual-exclusion guard `dir` (created with mkdir, which is atomic). Returns null,
 * after a short wait, when another process is inside; the caller then starts over.
 */
export async function enterGuard(dir: string): Promise<{ leave(): Promise<void> } | null> {
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
