// The only module that runs git. Every method is bound to one repository.
//
// Paths: every path taken or returned is relative to the repository's top-level directory
// (what `root()` returns), with `/` separators. A path ending in `/` means a directory and
// everything under it; a path without one names a file (git also lets it match a directory).
// All pathspecs are passed with `--literal-pathspecs`, so `src/[id].ts` or `*.md` name exactly
// that file and never act as globs. Paths are checked before use: absolute paths, paths that
// leave the repository (`../x`), the repository itself (`.`) and anything inside `.git` are
// refused with an Error, because a plan is written by a model and must not steer us outside.

import { lstat, readdir, readlink, realpath, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { GitError, simpleGit, type SimpleGit } from 'simple-git';

/** How a path differs from HEAD (index and working tree together). */
export type FileChange =
  | 'modified'
  | 'added'
  | 'deleted'
  | 'untracked'
  | 'renamed'
  | 'copied'
  | 'type-changed'
  | 'unmerged';

export interface CommitRequest {
  /** Exactly the paths to commit (files, or `dir/` for everything under a directory). */
  paths: string[];
  message: string;
  /** Appended as a git trailer block, in order: `Key: value`. */
  trailers?: Record<string, string> | Array<[key: string, value: string]>;
  /** Run the repository's commit hooks (pre-commit, commit-msg…). Default true. */
  verify?: boolean;
}

export interface Trailer {
  key: string;
  value: string;
}

export interface TrailerCommit {
  hash: string;
  subject: string;
  /** Values of the requested trailer key, in order (usually one). */
  values: string[];
  /** Every trailer of the commit, for e.g. `Foreman-Plan`. */
  trailers: Trailer[];
}

/** A git command exited non-zero. */
export class GitCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`git ${args.join(' ')} failed (exit ${exitCode}): ${stderr.trim() || '(no output)'}`);
    this.name = 'GitCommandError';
  }
}

const FALLBACK_NAME = 'foreman';
const FALLBACK_EMAIL = 'foreman@localhost';
/** How many paths go into one `git add`/`git rm` command line. */
const CHUNK = 200;
const TRAILER_KEY = /^[A-Za-z0-9][A-Za-z0-9-]*$/;

/**
 * Normalises a repository-relative path and refuses anything that could reach outside the
 * repository or into `.git`. Keeps a trailing `/` (directory marker).
 */
export function normalizeRepoPath(p: string): string {
  if (p === '' || p.includes('\0')) throw new Error(`invalid path ${JSON.stringify(p)}`);
  if (path.posix.isAbsolute(p) || path.isAbsolute(p)) throw new Error(`path must be relative to the repository: ${p}`);
  const isDir = p.endsWith('/');
  let norm = path.posix.normalize(p);
  if (norm.endsWith('/')) norm = norm.slice(0, -1);
  if (norm === '.' || norm === '' || norm === '..' || norm.startsWith('../')) {
    throw new Error(`path is outside the repository or is the repository itself: ${p}`);
  }
  if (norm.split('/')[0]?.toLowerCase() === '.git') throw new Error(`path is inside .git: ${p}`);
  return isDir ? `${norm}/` : norm;
}

/** Whether `file` (a repo-relative file path) is `spec` or lies under it, as git pathspecs match. */
export function pathMatches(file: string, spec: string): boolean {
  const s = spec.endsWith('/') ? spec.slice(0, -1) : spec;
  return spec.endsWith('/') ? file.startsWith(`${s}/`) : file === s || file.startsWith(`${s}/`);
}

/** Whether `file` matches any of `specs`. */
export const matchesAny = (file: string, specs: readonly string[]): boolean => specs.some((s) => pathMatches(file, s));

const UNMERGED = new Set(['DD', 'AU', 'UD', 'UA', 'DU', 'AA', 'UU']);

function classify(xy: string): FileChange {
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

interface StatusEntry {
  path: string;
  xy: string;
}

/** Parses `git status --porcelain=v1 -z`. */
function parseStatus(out: string): StatusEntry[] {
  const recs = out.split('\0');
  const entries: StatusEntry[] = [];
  for (let i = 0; i < recs.length; i++) {
    const rec = recs[i];
    if (!rec || rec.length < 4) continue;
    const xy = rec.slice(0, 2);
    entries.push({ path: rec.slice(3), xy });
    // Renames and copies carry the original path as the next record.
    if (xy[0] === 'R' || xy[0] === 'C') i++;
  }
  return entries;
}

function toMap(entries: StatusEntry[]): Map<string, FileChange> {
  const map = new Map<string, FileChange>();
  for (const e of entries) {
    const kind = classify(e.xy);
    const prev = map.get(e.path);
    // A file deleted in the index and re-created on disk is listed twice ("D " and "??").
    map.set(e.path, prev === 'deleted' && kind === 'untracked' ? 'modified' : kind);
  }
  return map;
}

const splitZ = (out: string): string[] => out.split('\0').filter((s) => s !== '');

function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const exists = async (p: string): Promise<boolean> => {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
};

export class Git {
  private rootPromise: Promise<string> | undefined;
  private readonly clients = new Map<string, SimpleGit>();

  /** `dir`: the repository, or any directory inside it. */
  constructor(readonly dir: string) {}

  private client(baseDir: string): SimpleGit {
    let c = this.clients.get(baseDir);
    if (!c) {
      c = simpleGit({
        baseDir,
        trimmed: false,
        // simple-git only treats a non-zero exit as an error when stderr is non-empty;
        // we want every non-zero exit to be one, with its code.
        errors: (error, result) => {
          if (result.exitCode === 0) return error;
          const stderr = Buffer.concat(result.stdErr).toString('utf8') || (error instanceof Error ? error.message : '');
          // simple-git rewraps anything that is not a GitError; carry the exit code on one.
          return Object.assign(new GitError(undefined, stderr), { exitCode: result.exitCode, stderrText: stderr });
        },
      });
      this.clients.set(baseDir, c);
    }
    return c;
  }

  /** Runs git in `cwd` (default: the repository root); throws GitCommandError on a non-zero exit. */
  private async run(args: string[], cwd?: string): Promise<string> {
    return this.exec(cwd ?? (await this.root()), args);
  }

  private async exec(base: string, args: string[]): Promise<string> {
    try {
      return await this.client(base).raw(args);
    } catch (e) {
      const x = e as { exitCode?: unknown; stderrText?: unknown };
      if (e instanceof GitError && typeof x.exitCode === 'number') {
        throw new GitCommandError(args, x.exitCode, typeof x.stderrText === 'string' ? x.stderrText : e.message);
      }
      throw e;
    }
  }

  /** Like `run`, but a non-zero exit is returned instead of thrown. */
  private async tryRun(args: string[], cwd?: string): Promise<{ ok: true; out: string } | { ok: false; error: GitCommandError }> {
    try {
      return { ok: true, out: await this.run(args, cwd) };
    } catch (e) {
      if (e instanceof GitCommandError) return { ok: false, error: e };
      throw e;
    }
  }

  /** True when `dir` is inside a git working tree. */
  async isRepo(): Promise<boolean> {
    if (!(await exists(this.dir))) return false;
    const r = await this.tryRun(['rev-parse', '--is-inside-work-tree'], this.dir);
    return r.ok && r.out.trim() === 'true';
  }

  /** Absolute path of the working tree's top-level directory. */
  root(): Promise<string> {
    this.rootPromise ??= (async () => {
      const out = await this.exec(this.dir, ['rev-parse', '--show-toplevel']);
      const top = out.replace(/\n$/, '');
      if (!top) throw new Error(`${this.dir} is not inside a git working tree`);
      return top;
    })();
    this.rootPromise.catch(() => {
      this.rootPromise = undefined;
    });
    return this.rootPromise;
  }

  /** Full hash of HEAD, or null on an unborn branch (no commits yet). */
  async headCommit(): Promise<string | null> {
    const r = await this.tryRun(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
    if (!r.ok) return null;
    return r.out.trim() || null;
  }

  /**
   * How each path under `paths` differs from HEAD, untracked files included (each file listed,
   * `-uall`), ignored files excluded. Renames are not detected: a renamed file shows as its old
   * path `deleted` and its new path `added`/`untracked`. Empty `paths` → empty map.
   */
  async changedPaths(paths: readonly string[]): Promise<Map<string, FileChange>> {
    const specs = paths.map(normalizeRepoPath);
    if (specs.length === 0) return new Map();
    return toMap(await this.statusEntries(specs));
  }

  /** Every change in the working tree and index vs HEAD, untracked files included. */
  async allChanges(): Promise<Map<string, FileChange>> {
    return toMap(await this.statusEntries(null));
  }

  /** Sorted paths changed vs HEAD (working tree or index), untracked files included. */
  async diffNames(): Promise<string[]> {
    return [...(await this.allChanges()).keys()].sort();
  }

  /** Changed paths (vs HEAD, untracked included) that match none of `declared`. */
  async changesOutside(declared: readonly string[]): Promise<Map<string, FileChange>> {
    const specs = declared.map(normalizeRepoPath);
    const out = new Map<string, FileChange>();
    for (const [p, c] of await this.allChanges()) if (!matchesAny(p, specs)) out.set(p, c);
    return out;
  }

  private async statusEntries(specs: string[] | null): Promise<StatusEntry[]> {
    // --no-optional-locks: do not take index.lock to refresh the index, so we never get in the
    // way of git commands the person (or their editor) runs at the same time.
    const args = ['--no-optional-locks', '--literal-pathspecs', 'status', '--porcelain=v1', '-z', '-uall', '--no-renames', '--ignore-submodules=none'];
    if (specs === null) return parseStatus(await this.run(args));
    const entries: StatusEntry[] = [];
    for (const chunk of chunks(specs)) entries.push(...parseStatus(await this.run([...args, '--', ...chunk])));
    return entries;
  }

  /**
   * A `.git/index.lock` left by a git process that was killed (say, a round commit when the
   * orchestrator got SIGKILL) blocks every later commit. Waits briefly for a live git to finish;
   * then removes the lock only if no process has it open. Returns what it found.
   */
  async clearStaleIndexLock(waitMs = 2000): Promise<'none' | 'removed' | 'held'> {
    const gitDir = path.resolve(this.dir, (await this.run(['rev-parse', '--git-dir'])).trim());
    const lock = path.join(gitDir, 'index.lock');
    const deadline = Date.now() + waitMs;
    while (await exists(lock)) {
      if (Date.now() >= deadline) {
        if (await fileHeldOpen(lock)) return 'held';
        await rm(lock, { force: true });
        return 'removed';
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return 'none';
  }

  /** Whether the index holds `path` (for `dir/`: any file under it). */
  async isTracked(p: string): Promise<boolean> {
    const spec = normalizeRepoPath(p);
    return (await this.indexFiles([spec])).length > 0;
  }

  /** Whether HEAD holds `path` (for `dir/`: the directory). False on an unborn branch. */
  async existsInHead(p: string): Promise<boolean> {
    const spec = normalizeRepoPath(p);
    if (!(await this.headCommit())) return false;
    const out = await this.run(['--literal-pathspecs', 'ls-tree', '-z', '--name-only', '--full-tree', 'HEAD', '--', spec.replace(/\/$/, '')]);
    return splitZ(out).length > 0;
  }

  private async headFiles(specs: string[]): Promise<string[]> {
    if (specs.length === 0 || !(await this.headCommit())) return [];
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(...splitZ(await this.run(['--literal-pathspecs', 'ls-tree', '-r', '-z', '--name-only', '--full-tree', 'HEAD', '--', ...chunk])));
    }
    return files;
  }

  private async indexFiles(specs: string[]): Promise<string[]> {
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(...splitZ(await this.run(['--literal-pathspecs', 'ls-files', '-z', '--cached', '--full-name', '--', ...chunk])));
    }
    return files;
  }

  private async untrackedFiles(specs: string[]): Promise<string[]> {
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(
        ...splitZ(await this.run(['--literal-pathspecs', 'ls-files', '-z', '--others', '--exclude-standard', '--full-name', '--', ...chunk])),
      );
    }
    return files;
  }

  /** Absolute path of a repo-relative path, refusing one that reaches outside the repository through a symlink. */
  private async safeAbsolute(root: string, rel: string): Promise<string | null> {
    const full = path.join(root, rel);
    let parentReal: string;
    let rootReal: string;
    try {
      parentReal = await realpath(path.dirname(full));
      rootReal = await realpath(root);
    } catch {
      return null; // the parent does not exist: nothing to remove
    }
    if (parentReal !== rootReal && !parentReal.startsWith(rootReal + path.sep)) return null;
    return full;
  }

  /**
   * Puts `paths` back as they are in HEAD, touching nothing else:
   * - a path in HEAD gets HEAD's content in both the index and the working tree;
   * - a path not in HEAD is removed from the index (if staged) and from disk.
   * A `dir/` path does this for every file under it: files of HEAD are restored, files added
   * since (staged or untracked, not ignored) are removed. Ignored files are removed only when
   * named exactly. Directories left empty by a removal are removed too.
   */
  async restore(paths: readonly string[]): Promise<void> {
    const specs = [...new Set(paths.map(normalizeRepoPath))];
    if (specs.length === 0) return;
    const root = await this.root();
    const head = await this.headCommit();

    const inHead = await this.headFiles(specs);
    const inIndex = await this.indexFiles(specs);
    const untracked = await this.untrackedFiles(specs);
    const headSet = new Set(inHead);

    const removeFromDisk = new Set<string>(untracked);
    if (head) {
      // `git restore` without --overlay also drops index entries that HEAD does not have (and
      // their working-tree files). It fails on a pathspec matching nothing, so pass only those that match.
      const known = specs.filter((s) => inHead.some((f) => pathMatches(f, s)) || inIndex.some((f) => pathMatches(f, s)));
      for (const chunk of chunks(known)) {
        await this.run(['--literal-pathspecs', 'restore', '--source=HEAD', '--staged', '--worktree', '--', ...chunk]);
      }
    } else {
      for (const chunk of chunks(inIndex)) {
        await this.run(['--literal-pathspecs', 'rm', '--cached', '-q', '--ignore-unmatch', '--', ...chunk]);
      }
      for (const f of inIndex) removeFromDisk.add(f);
    }
    // A file named exactly, not in HEAD: remove it even if ignored.
    for (const s of specs) if (!s.endsWith('/') && !headSet.has(s)) removeFromDisk.add(s);

    const removedParents = new Set<string>();
    for (const rel of removeFromDisk) {
      if (headSet.has(rel)) continue;
      const full = await this.safeAbsolute(root, rel);
      if (!full) continue;
      let st;
      try {
        st = await lstat(full);
      } catch {
        continue;
      }
      if (st.isDirectory()) continue; // a bare path naming a directory: its files were listed separately
      await rm(full, { force: true });
      removedParents.add(path.dirname(full));
    }
    await pruneEmptyDirs(root, removedParents);
  }

  /**
   * Commits exactly `paths` (their working-tree state: changes, new files, deletions) and nothing
   * else: whatever else the user has staged stays staged and uncommitted. Paths that neither
   * exist nor are tracked are ignored, as are ignored files. Returns the new commit's hash, or
   * null when there was nothing to commit. Uses the repository's identity; only when none is
   * configured, commits as `foreman <foreman@localhost>`.
   */
  async commit(req: CommitRequest): Promise<string | null> {
    const specs = [...new Set(req.paths.map(normalizeRepoPath))];
    if (specs.length === 0) return null;
    const message = buildMessage(req.message, req.trailers);
    const root = await this.root();

    const before = await this.statusEntries(specs);
    if (before.length === 0) return null;
    const present: string[] = [];
    const missing: string[] = [];
    for (const e of before) (await exists(path.join(root, e.path)) ? present : missing).push(e.path);
    for (const chunk of chunks(present)) await this.run(['--literal-pathspecs', 'add', '--', ...chunk]);
    for (const chunk of chunks(missing)) {
      await this.run(['--literal-pathspecs', 'rm', '--cached', '-q', '--ignore-unmatch', '--', ...chunk]);
    }

    // Pass the declared paths that had changes: short, and `--only` commits the working-tree
    // state of exactly these, leaving the rest of the index alone.
    const toCommit = specs.filter((s) => before.some((e) => pathMatches(e.path, s)));
    const identity = await this.identityArgs();
    const committed = await this.tryRun([
      ...identity,
      '--literal-pathspecs',
      'commit',
      '--only',
      '--quiet',
      '--cleanup=whitespace',
      ...(req.verify === false ? ['--no-verify'] : []),
      '-m',
      message,
      '--',
      ...toCommit,
    ]);
    if (!committed.ok) {
      // Staging can leave nothing to commit (a staged change the working tree had undone).
      if ((await this.statusEntries(specs)).length === 0) return null;
      throw committed.error;
    }
    return this.headCommit();
  }

  /**
   * `-c user.name=… -c user.email=…` for whichever part of the identity is not configured (git
   * config at any level, or the GIT_AUTHOR_… and GIT_COMMITTER_… environment). Git's guesses from the
   * host name do not count: they are often refused, and would differ from machine to machine.
   */
  private async identityArgs(): Promise<string[]> {
    const env = process.env;
    const configured = async (key: string): Promise<boolean> => {
      const r = await this.tryRun(['config', '--get', key]);
      return r.ok && r.out.trim() !== '';
    };
    const hasName = (!!env.GIT_AUTHOR_NAME && !!env.GIT_COMMITTER_NAME) || (await configured('user.name'));
    const hasEmail =
      (!!env.GIT_AUTHOR_EMAIL && !!env.GIT_COMMITTER_EMAIL) || !!env.EMAIL || (await configured('user.email'));
    return [
      ...(hasName ? [] : ['-c', `user.name=${FALLBACK_NAME}`]),
      ...(hasEmail ? [] : ['-c', `user.email=${FALLBACK_EMAIL}`]),
    ];
  }

  /**
   * Commits reachable from HEAD (and not from `since`, when given), newest first, that carry the
   * trailer `key` (case-insensitive, as git treats trailer keys). Empty on an unborn branch.
   */
  async commitsWithTrailer(key: string, since?: string): Promise<TrailerCommit[]> {
    if (!TRAILER_KEY.test(key)) throw new Error(`invalid trailer key ${JSON.stringify(key)}`);
    if (!(await this.headCommit())) return [];
    const range = since ? `${since}..HEAD` : 'HEAD';
    const out = await this.run([
      'log',
      '-z',
      '--regexp-ignore-case',
      `--grep=^${key}:`,
      '--format=%H%x1f%s%x1f%(trailers:only,unfold)',
      range,
      '--',
    ]);
    const wanted = key.toLowerCase();
    const commits: TrailerCommit[] = [];
    for (const rec of out.split('\0')) {
      if (!rec.trim()) continue;
      const [hash = '', subject = '', block = ''] = rec.split('\x1f');
      const trailers = parseTrailers(block);
      const values = trailers.filter((t) => t.key.toLowerCase() === wanted).map((t) => t.value);
      if (values.length > 0) commits.push({ hash: hash.trim(), subject, values, trailers });
    }
    return commits;
  }
}

function parseTrailers(block: string): Trailer[] {
  const out: Trailer[] = [];
  for (const line of block.split('\n')) {
    const m = /^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s?(.*)$/.exec(line);
    if (m?.[1] !== undefined) out.push({ key: m[1], value: (m[2] ?? '').trim() });
  }
  return out;
}

/** The commit message with a trailer block appended (validated: one line per trailer). */
export function buildMessage(message: string, trailers: CommitRequest['trailers']): string {
  const body = message.replace(/\s+$/, '');
  if (!body) throw new Error('empty commit message');
  const list = trailers === undefined ? [] : Array.isArray(trailers) ? trailers : Object.entries(trailers);
  if (list.length === 0) return `${body}\n`;
  const lines = list.map(([k, v]) => {
    if (!TRAILER_KEY.test(k)) throw new Error(`invalid trailer key ${JSON.stringify(k)}`);
    const value = String(v).trim();
    if (/[\r\n]/.test(value) || value === '') throw new Error(`invalid value for trailer ${k}: ${JSON.stringify(v)}`);
    return `${k}: ${value}`;
  });
  // The trailer block must be its own last paragraph, after the subject.
  return `${body}\n\n${lines.join('\n')}\n`;
}

async function pruneEmptyDirs(root: string, dirs: Set<string>): Promise<void> {
  const rootAbs = path.resolve(root);
  // Deepest first, so a parent is tried after its children.
  const sorted = [...dirs].sort((a, b) => b.length - a.length);
  for (let dir of sorted) {
    while (dir.startsWith(rootAbs + path.sep) && dir !== rootAbs) {
      try {
        await rmdir(dir);
      } catch {
        break; // not empty (or gone): stop climbing
      }
      dir = path.dirname(dir);
    }
  }
}

/** Whether any process has `file` open (Linux /proc; elsewhere assume it may be, to stay safe). */
async function fileHeldOpen(file: string): Promise<boolean> {
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((p) => /^\d+$/.test(p));
  } catch {
    return true;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (target === file) return true;
    }
  }
  return false;
}
