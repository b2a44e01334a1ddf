// What a landing (land.ts) observes before it changes anything, for each path that differs between
// the branch and the integration tip: its entries in both commits and in the person's index, and
// what is on disk, hashed as git would, for the core to judge (core/integration/landing.ts).

import { createHash } from 'node:crypto';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import {
  assertNever,
  chunks,
  type Entry,
  type FileObservation,
  hashAlgorithmOf,
  type IndexObservation,
  ok,
  type PathObservation,
  type Result,
  splitNul,
} from '../../core/index.ts';
import { git, type GitCommandError } from './runner.ts';

/** What a landing step gives: its value, or the git command that failed. */
export type Step<T> = Result<T, GitCommandError>;

/** git's answer with exit 1 as a value (for `merge-base --is-ancestor`, `symbolic-ref -q`, `config`). */
export async function gitStatus(repo: string, args: string[]): Promise<Step<{ code: 0 | 1; out: string }>> {
  const result = await git(repo, args);
  if (result.ok) return ok({ code: 0, out: result.value });
  return result.error.exitCode === 1 ? ok({ code: 1, out: '' }) : result;
}

/** Entries of `commit` for exactly `paths`. */
async function treeEntries(repo: string, commit: string, paths: readonly string[]): Promise<Step<Map<string, Entry>>> {
  const wanted = new Set(paths);
  const entries = new Map<string, Entry>();
  for (const chunk of chunks(paths)) {
    const listed = await git(repo, ['ls-tree', '-r', '-z', '--full-tree', commit, '--', ...chunk]);
    if (!listed.ok) return listed;
    for (const record of splitNul(listed.value)) {
      const tab = record.indexOf('\t');
      const [mode, , object] = record.slice(0, tab).split(' ');
      const name = record.slice(tab + 1);
      if (wanted.has(name) && mode && object) entries.set(name, { mode, object });
    }
  }
  return ok(entries);
}

/** The person's index for exactly `paths`. */
async function indexEntries(repo: string, paths: readonly string[]): Promise<Step<Map<string, IndexObservation>>> {
  const wanted = new Set(paths);
  const entries = new Map<string, IndexObservation>();
  for (const chunk of chunks(paths)) {
    const listed = await git(repo, ['ls-files', '-s', '-z', '--', ...chunk]);
    if (!listed.ok) return listed;
    for (const record of splitNul(listed.value)) {
      const tab = record.indexOf('\t');
      const [mode, object, stage] = record.slice(0, tab).split(' ');
      const name = record.slice(tab + 1);
      if (!wanted.has(name) || !mode || !object) continue;
      entries.set(name, stage === '0' ? { kind: 'entry', entry: { mode, object } } : { kind: 'conflicted' });
    }
  }
  return ok(entries);
}

interface Disk {
  kind: 'file' | 'symlink' | 'directory' | 'absent';
  executable: boolean;
}

export async function onDisk(file: string): Promise<Disk> {
  try {
    const stats = await lstat(file);
    if (stats.isSymbolicLink()) return { kind: 'symlink', executable: false };
    if (stats.isDirectory()) return { kind: 'directory', executable: false };
    // git records the owner's exec bit.
    return { kind: 'file', executable: (stats.mode & 0o100) !== 0 };
  } catch (caught) {
    if ((caught as NodeJS.ErrnoException).code === 'ENOENT' || (caught as NodeJS.ErrnoException).code === 'ENOTDIR')
      return { kind: 'absent', executable: false };
    throw caught;
  }
}

/** Every file (not directory) under `dir`, repository-relative. */
async function filesUnder(repo: string, dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(path.join(repo, dir), { withFileTypes: true })) {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) found.push(...(await filesUnder(repo, relative)));
    else found.push(relative);
  }
  return found;
}

/** The first leading component of `repoPath` that is not a directory on disk (`a` for `a/b` when `a` is a file), if any. */
async function obstacleOf(repo: string, repoPath: string): Promise<string | undefined> {
  const parts = repoPath.split('/');
  for (let length = 1; length < parts.length; length++) {
    const leading = parts.slice(0, length).join('/');
    const disk = await onDisk(path.join(repo, leading));
    if (disk.kind === 'absent') return undefined;
    if (disk.kind !== 'directory') return leading;
  }
  return undefined;
}

/** The object id git would give a blob holding `content`, in the repository's hash. */
function blobId(content: Buffer, algorithm: string): string {
  return createHash(algorithm)
    .update(Buffer.from(`blob ${content.length}\0`))
    .update(content)
    .digest('hex');
}

/** What is on disk at each path: content ids through git (so clean filters apply), symlinks hashed by their target with the repository's `algorithm`. */
async function fileObservations(repo: string, paths: readonly string[], algorithm: 'sha1' | 'sha256'): Promise<Step<Map<string, FileObservation>>> {
  const observations = new Map<string, FileObservation>();
  const regular: Array<{ path: string; executable: boolean }> = [];
  for (const repoPath of paths) {
    const disk = await onDisk(path.join(repo, repoPath));
    switch (disk.kind) {
      case 'absent':
        observations.set(repoPath, { kind: 'absent' });
        break;
      case 'directory':
        observations.set(repoPath, { kind: 'directory', files: await filesUnder(repo, repoPath) });
        break;
      case 'symlink': {
        const target = await readlink(path.join(repo, repoPath), { encoding: 'buffer' });
        observations.set(repoPath, { kind: 'file', entry: { mode: '120000', object: blobId(target, algorithm) } });
        break;
      }
      case 'file':
        regular.push({ path: repoPath, executable: disk.executable });
        break;
      default:
        assertNever(disk.kind, 'disk entry');
    }
  }
  for (const chunk of chunks(regular)) {
    // File names as arguments (not --stdin-paths, which cannot carry a newline); `--path` is implied.
    const hashed = await git(repo, ['hash-object', '--', ...chunk.map((file) => file.path)]);
    if (!hashed.ok) return hashed;
    const ids = hashed.value.split('\n');
    chunk.forEach((file, index) => {
      observations.set(file.path, { kind: 'file', entry: { mode: file.executable ? '100755' : '100644', object: ids[index] ?? '' } });
    });
  }
  return ok(observations);
}

export async function fileModeConfigured(repo: string): Promise<Step<boolean>> {
  const found = await gitStatus(repo, ['config', '--type=bool', 'core.fileMode']);
  return found.ok ? ok(found.value.code === 1 || found.value.out.trim() !== 'false') : found;
}

/** Observes every path that differs between `from` and `to`; `unstagedAt`: the commit whose entries mean "nothing staged". */
export async function observe(repo: string, from: string, to: string, unstagedAt: string): Promise<Step<{ paths: string[]; observations: PathObservation[] }>> {
  const differing = await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--name-only', from, to]);
  if (!differing.ok) return differing;
  const paths = splitNul(differing.value);
  if (paths.length === 0) return ok({ paths, observations: [] });
  const [fromFound, toFound, unstagedFound, indexFound, filesFound] = await Promise.all([
    treeEntries(repo, from, paths),
    treeEntries(repo, to, paths),
    unstagedAt === from ? null : treeEntries(repo, unstagedAt, paths),
    indexEntries(repo, paths),
    fileObservations(repo, paths, hashAlgorithmOf(to)),
  ]);
  if (!fromFound.ok) return fromFound;
  if (!toFound.ok) return toFound;
  if (unstagedFound !== null && !unstagedFound.ok) return unstagedFound;
  if (!indexFound.ok) return indexFound;
  if (!filesFound.ok) return filesFound;
  const [fromEntries, toEntries, index, files] = [fromFound.value, toFound.value, indexFound.value, filesFound.value];
  const unstagedEntries = unstagedFound === null ? null : unstagedFound.value;
  const observations: PathObservation[] = [];
  for (const repoPath of paths) {
    const toEntry = toEntries.get(repoPath) ?? null;
    const obstacle = toEntry === null ? undefined : await obstacleOf(repo, repoPath);
    observations.push({
      path: repoPath,
      from: fromEntries.get(repoPath) ?? null,
      to: toEntry,
      unstaged: (unstagedEntries ?? fromEntries).get(repoPath) ?? null,
      index: index.get(repoPath) ?? { kind: 'absent' },
      file: files.get(repoPath) ?? { kind: 'absent' },
      ...(obstacle === undefined ? {} : { obstacle }),
    });
  }
  return ok({ paths, observations });
}
