// The text git reads and writes, pure: repository paths, `git status` records, commit trailers
// and messages, what a failed git step says, the one object-id check and the flags that keep the
// person's hooks off. The adapters run git (`runGit` in src/adapters/git/runner.ts); this reads and
// writes what passes between them and git.

import path from 'node:path';
import { clipTail } from '../format.ts';
import type { WorkEntry } from '../attempt/index.ts';

/** A full object id: SHA-1 (40 hex digits) or SHA-256 (64). The one check foreman makes of an id. */
const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export const isObjectId = (value: unknown): value is string => typeof value === 'string' && OBJECT_ID.test(value);

/**
 * Every git command foreman runs on the person's repository or a worktree of it carries these:
 * none of the person's hooks runs (their global `core.hooksPath` included), nor their fsmonitor
 * (a script status, add and the index commands run).
 */
export const NO_HOOKS: readonly string[] = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false'];

/**
 * The one line for a repository with no commit yet, which every command that needs one says
 * (exit 2): workers, checks and landings all start from the last commit.
 */
export const noCommitLine = (repo: string): string =>
  `the repository at ${repo} has no commit yet, and foreman works from the last commit: commit something first (e.g. \`git add -A && git commit -m "Initial commit"\`), then run again`;

/** How a path differs from HEAD (index and working tree together). */
export type FileChange = 'modified' | 'added' | 'deleted' | 'untracked' | 'renamed' | 'copied' | 'type-changed' | 'unmerged';

export interface Trailer {
  key: string;
  value: string;
}

/** Trailers to append to a commit message, in order: `Key: value`. */
export type TrailerList = Record<string, string> | Array<[key: string, value: string]>;

/**
 * A git step that failed, as a value: what foreman was doing, the command and what git said.
 * Returned by the methods that change the repository (`commit`, `restore`).
 */
export interface GitFailure {
  /** The git subcommand that failed: `add`, `commit`, `restore`… */
  step: string;
  exitCode: number;
  /** What git (or a hook it ran) printed on stderr. */
  stderr: string;
  /** Set when the index could not be put back after the failure: what git said then. */
  indexNotRestored?: string;
}

/** The git subcommand of a command line (`commit` in `-c a=b --literal-pathspecs commit -m …`). */
export function subcommandOf(args: readonly string[]): string {
  for (let index = 0; index < args.length; index++) {
    if (args[index] === '-c' || args[index] === '-C') index++;
    else if (!args[index]!.startsWith('-')) return args[index]!;
  }
  return 'command';
}

/** A git command that exited non-zero (a `GitCommandError`) as a `GitFailure`. */
export const failureOf = (error: { args: readonly string[]; exitCode: number; stderr: string }, step = subcommandOf(error.args)): GitFailure => ({
  step,
  exitCode: error.exitCode,
  stderr: error.stderr,
});

/** One line: the step, its exit code and the end of what git said (where the reason is). */
export function describeGitFailure(failure: GitFailure): string {
  const said =
    clipTail(
      failure.stderr
        .trim()
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean)
        .join(' | '),
      400,
    ) || '(no output)';
  const index = failure.indexNotRestored === undefined ? '' : `; the index could not be put back either (${failure.indexNotRestored}): check \`git status\``;
  return `git ${failure.step} failed (exit ${failure.exitCode}): ${said}${index}`;
}

/**
 * Normalises a repository-relative path and refuses anything that could reach outside the
 * repository or into `.git`. Keeps a trailing `/` (directory marker).
 */
export function normalizeRepoPath(repoPath: string): string {
  if (repoPath === '' || repoPath.includes('\0')) throw new Error(`invalid path ${JSON.stringify(repoPath)}`);
  if (path.posix.isAbsolute(repoPath) || path.isAbsolute(repoPath)) throw new Error(`path must be relative to the repository: ${repoPath}`);
  const isDir = repoPath.endsWith('/');
  let normal = path.posix.normalize(repoPath);
  if (normal.endsWith('/')) normal = normal.slice(0, -1);
  if (normal === '.' || normal === '' || normal === '..' || normal.startsWith('../')) {
    throw new Error(`path is outside the repository or is the repository itself: ${repoPath}`);
  }
  if (normal.split('/')[0]?.toLowerCase() === '.git') throw new Error(`path is inside .git: ${repoPath}`);
  return isDir ? `${normal}/` : normal;
}

const UNMERGED = new Set(['DD', 'AU', 'UD', 'UA', 'DU', 'AA', 'UU']);

/** The change a porcelain status code (`XY`) stands for. */
export function changeOf(xy: string): FileChange {
  if (xy === '??') return 'untracked';
  if (UNMERGED.has(xy)) return 'unmerged';
  const x = xy[0];
  const y = xy[1];
  if (x === 'A') return 'added';
  if (x === 'D' || y === 'D') return 'deleted';
  if (x === 'R') return 'renamed';
  if (x === 'C') return 'copied';
  if (x === 'T' || y === 'T') return 'type-changed';
  return 'modified';
}

export interface StatusEntry {
  path: string;
  xy: string;
}

/** Parses `git status --porcelain=v1 -z`. */
export function parseStatus(output: string): StatusEntry[] {
  const records = output.split('\0');
  const entries: StatusEntry[] = [];
  for (let index = 0; index < records.length; index++) {
    const record = records[index];
    if (!record || record.length < 4) continue;
    const xy = record.slice(0, 2);
    entries.push({ path: record.slice(3), xy });
    // Renames and copies carry the original path as the next record.
    if (xy[0] === 'R' || xy[0] === 'C') index++;
  }
  return entries;
}

/** An entry of a v2 status, with what v2 says beyond v1. */
export interface StatusV2Entry extends StatusEntry {
  /** HEAD's entry at the path (ordinary changes only; null when HEAD has none or v2 does not say). */
  head: { mode: string; object: string } | null;
  /** An untracked path, or an ordinary change that is not a submodule's: not renamed, copied or unmerged. */
  ordinary: boolean;
}

/**
 * Parses `git status --porcelain=v2 --branch -z`: the commit HEAD is at (`# branch.oid`; null on an
 * unborn branch) and the entries, their XY spelled as v1 spells them (`.` is a space, `??` untracked,
 * `!!` ignored). One command instead of `rev-parse HEAD` beside a v1 status.
 */
export function parseStatusV2(output: string): { head: string | null; entries: StatusV2Entry[] } {
  const records = output.split('\0');
  const entries: StatusV2Entry[] = [];
  let head: string | null = null;
  for (let index = 0; index < records.length; index++) {
    const record = records[index]!;
    if (record === '') continue;
    if (record.startsWith('# branch.oid ')) {
      const oid = record.slice('# branch.oid '.length);
      head = isObjectId(oid) ? oid : null;
      continue;
    }
    if (record.startsWith('#')) continue;
    const kind = record[0];
    if (kind === '?' || kind === '!') {
      entries.push({ path: record.slice(2), xy: kind === '?' ? '??' : '!!', head: null, ordinary: kind === '?' });
      continue;
    }
    // Ordinary (1), renamed or copied (2: the original path follows as the next record), unmerged (u).
    const fields = kind === '1' ? 8 : kind === '2' ? 9 : kind === 'u' ? 10 : -1;
    if (fields < 0) continue;
    const parts = record.split(' ');
    const xy = parts[1]!.replace(/\./g, ' ');
    // `1 XY sub mH mI mW hH hI path`: HEAD's entry is mH and hH (mode 000000 when HEAD has none).
    const headEntry = kind === '1' && parts[3] !== '000000' ? { mode: parts[3]!, object: parts[6]! } : null;
    entries.push({ path: parts.slice(fields).join(' '), xy, head: headEntry, ordinary: kind === '1' && parts[2] === 'N...' });
    if (kind === '2') index++;
  }
  return { head, entries };
}

/** Each path's change; a file deleted in the index and re-created on disk counts as modified. */
export function changesByPath(entries: readonly StatusEntry[]): Map<string, FileChange> {
  const changes = new Map<string, FileChange>();
  for (const entry of entries) {
    const kind = changeOf(entry.xy);
    const previous = changes.get(entry.path);
    // Such a file is listed twice ("D " and "??").
    changes.set(entry.path, previous === 'deleted' && kind === 'untracked' ? 'modified' : kind);
  }
  return changes;
}

/** The records of git's `-z` output (NUL-separated), empty ones dropped. */
export const splitNul = (output: string): string[] => output.split('\0').filter((record) => record !== '');

/** How many paths go into one `git add`/`git rm` command line. */
const CHUNK = 200;

/** `items` in slices of at most `size`, for command lines of bounded length. */
export function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const slices: T[][] = [];
  for (let start = 0; start < items.length; start += size) slices.push(items.slice(start, start + size));
  return slices;
}

const TRAILER_KEY = /^[A-Za-z0-9][A-Za-z0-9-]*$/;

/** Whether git accepts `key` as a trailer key. */
export const isTrailerKey = (key: string): boolean => TRAILER_KEY.test(key);

/** The trailers of a `%(trailers:only,unfold)` block, one `Key: value` a line. */
export function parseTrailers(block: string): Trailer[] {
  const trailers: Trailer[] = [];
  for (const line of block.split('\n')) {
    const match = /^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s?(.*)$/.exec(line);
    if (match?.[1] !== undefined) trailers.push({ key: match[1], value: (match[2] ?? '').trim() });
  }
  return trailers;
}

/** The commit message with a trailer block appended (validated: one line per trailer). */
export function buildMessage(message: string, trailers: TrailerList | undefined): string {
  const body = message.replace(/\s+$/, '');
  if (!body) throw new Error('empty commit message');
  const list = trailers === undefined ? [] : Array.isArray(trailers) ? trailers : Object.entries(trailers);
  if (list.length === 0) return `${body}\n`;
  const lines = list.map(([key, raw]) => {
    if (!isTrailerKey(key)) throw new Error(`invalid trailer key ${JSON.stringify(key)}`);
    const value = String(raw).trim();
    if (/[\r\n]/.test(value) || value === '') throw new Error(`invalid value for trailer ${key}: ${JSON.stringify(raw)}`);
    return `${key}: ${value}`;
  });
  // The trailer block must be its own last paragraph, after the subject.
  return `${body}\n\n${lines.join('\n')}\n`;
}

/** A full object id, checked: callers pass ids git gave them, so anything else is a bug (thrown). */
export function expectObjectId(id: string, what: string): string {
  if (!isObjectId(id)) throw new Error(`${what} must be a full object id, got ${JSON.stringify(id)}`);
  return id;
}

/** Byte order, as git sorts paths. */
export const byPath = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The entries of `git diff-index`/`diff-tree -z --raw` output: `:<old mode> <new mode> <old id> <new id> <status>\0<path>\0`. */
export function parseRaw(output: string): WorkEntry[] {
  const records = splitNul(output);
  const entries: WorkEntry[] = [];
  for (let index = 0; index + 1 < records.length; index += 2) {
    const fields = records[index]!.replace(/^:/, '').split(' ');
    const [, mode = '', , object = '', status = ''] = fields;
    const entryPath = records[index + 1]!;
    entries.push(status.startsWith('D') ? { path: entryPath, deleted: true } : { path: entryPath, mode, object });
  }
  return entries;
}

/** The all-zero id of the repository's hash (SHA-1 or SHA-256), as long as `like`, an id of it. */
export const zeroIdLike = (like: string): string => '0'.repeat(like.length);

/** The hash the repository whose id `like` is uses: a SHA-256 id is 64 characters long, a SHA-1 id 40. */
export const hashAlgorithmOf = (like: string): 'sha1' | 'sha256' => (like.length === 64 ? 'sha256' : 'sha1');

/**
 * `git update-index -z --index-info` input setting `entries`: deletions (mode 0, the zero id)
 * first, so a file may replace a directory and the reverse. `like`: any id of the repository.
 */
export function indexInfo(entries: readonly WorkEntry[], like: string): string {
  const zero = zeroIdLike(like);
  return [
    ...entries.flatMap((entry) => ('deleted' in entry ? [`0 ${zero}\t${entry.path}\0`] : [])),
    ...entries.flatMap((entry) => ('deleted' in entry ? [] : [`${entry.mode} ${entry.object}\t${entry.path}\0`])),
  ].join('');
}
