// `runGit`, the Result-returning git runner the adapters and run/ use, and `Git`: the questions
// foreman asks of the person's repository (status, ignore rules, operations in progress, history)
// and its stale-lock and worktree chores, through `runGit`. Every method is bound to one repository.
//
// Paths: every path taken or returned is relative to the repository's top-level directory
// (what `root()` returns), with `/` separators. A path ending in `/` means a directory and
// everything under it; a path without one names exactly one file, never a directory, even though
// git's pathspec `src` would also match `src/a.ts`: what git lists is filtered through
// `coveredBy` (src/core/paths.ts), the one rule the plan's validation and overlaps use too.
// All pathspecs are passed with `--literal-pathspecs`, so `src/[id].ts` or `*.md` name exactly
// that file and never act as globs. Paths are checked before use: absolute paths, paths that
// leave the repository (`../x`), the repository itself (`.`) and anything inside `.git` are
// refused with an Error, because a plan is written by a model and must not steer us outside.

import { spawn } from 'node:child_process';
import { lstat, readdir, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import { type Result, err, ok } from '../core/failure.ts';
import {
  type FileChange,
  type StatusEntry,
  type Trailer,
  NO_HOOKS,
  changesByPath,
  chunks,
  isTrailerKey,
  normalizeRepoPath,
  parseStatus,
  parseTrailers,
  splitNul,
} from '../core/git-text.ts';
import { coveredBy } from '../core/paths.ts';

/** What `operationInProgress` finds. */
export type RepositoryOperation = 'merge' | 'rebase' | 'cherry-pick' | 'revert' | 'bisect';

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

const exists = async (file: string): Promise<boolean> => {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
};

export interface GitRun {
  /** The directory git runs in. */
  cwd: string;
  /** Extra environment (GIT_INDEX_FILE for a temporary index, GIT_AUTHOR_… for commit-tree). */
  env?: Record<string, string>;
  /** Written to git's stdin. */
  input?: string;
  /** The command takes path names, not pathspecs, and refuses the literal magic (`check-ignore`). */
  pathNames?: boolean;
}

/** How long one git command may take (`FOREMAN_GIT_TIMEOUT` seconds; default 10 minutes). */
export const GIT_TIME_LIMIT_ENV = 'FOREMAN_GIT_TIMEOUT';
const DEFAULT_GIT_TIME_LIMIT_MS = 600_000;

function gitTimeLimitMs(env: NodeJS.ProcessEnv): number {
  const seconds = Number(env[GIT_TIME_LIMIT_ENV]);
  return Number.isInteger(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_GIT_TIME_LIMIT_MS;
}

let spawned = 0;
/** How many git processes this process has started (the bench divides it by the tasks run). */
export const gitProcessCount = (): number => spawned;

/**
 * The one git runner: every git command foreman runs goes through here. It always runs with the
 * person's hooks and fsmonitor off (NO_HOOKS) and every pathspec literal (`src/[id].ts` names that
 * file, `*.md` is no glob), within a time limit that ends its process group and says which command
 * hit it. A non-zero exit is returned as a value; stdout is returned untrimmed.
 */
export function runGit(args: readonly string[], run: GitRun): Promise<Result<string, GitCommandError>> {
  return new Promise((resolve) => {
    const full = [...NO_HOOKS, ...args];
    const limitMs = gitTimeLimitMs(process.env);
    spawned++;
    const child = spawn('git', full, { cwd: run.cwd, env: { ...process.env, ...(run.pathNames === true ? {} : { GIT_LITERAL_PATHSPECS: '1' }), ...run.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, limitMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => errOut.push(d));
    // git cannot be started (not installed, not on PATH): a failure like any other, said plainly.
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve(err(new GitCommandError(args, -1, `could not run git: ${error.message}`)));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) {
        const said = `\`git ${args.filter((a) => !a.startsWith('-c') && !a.includes('=')).slice(0, 2).join(' ')}\` timed out after ${Math.round(limitMs / 1000)}s (the limit set by ${GIT_TIME_LIMIT_ENV}, in seconds); its process group was ended`;
        resolve(err(new GitCommandError(args, -1, said)));
      } else if (code === 0) resolve(ok(Buffer.concat(out).toString('utf8')));
      else resolve(err(new GitCommandError(args, code ?? -1, Buffer.concat(errOut).toString('utf8'))));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.input ?? '');
  });
}

/**
 * `-c user.name=… -c user.email=…` for whichever part of the identity is not configured (git
 * config at any level, or the GIT_AUTHOR_… and GIT_COMMITTER_… environment). Git's guesses from the
 * host name do not count: they are often refused, and would differ from machine to machine.
 * One `git config` call: both keys at once.
 */
export async function identityArgs(cwd: string): Promise<string[]> {
  const env = process.env;
  const found = await runGit(['config', '--get-regexp', '^user\\.(name|email)$'], { cwd });
  const keys = new Set(found.ok ? found.value.split('\n').flatMap((line) => (/^\S+ \S/.test(line) ? [line.split(' ')[0]!.toLowerCase()] : [])) : []);
  const hasName = (!!env.GIT_AUTHOR_NAME && !!env.GIT_COMMITTER_NAME) || keys.has('user.name');
  const hasEmail = (!!env.GIT_AUTHOR_EMAIL && !!env.GIT_COMMITTER_EMAIL) || !!env.EMAIL || keys.has('user.email');
  return [...(hasName ? [] : ['-c', `user.name=${FALLBACK_NAME}`]), ...(hasEmail ? [] : ['-c', `user.email=${FALLBACK_EMAIL}`])];
}

export class Git {
  private rootPromise: Promise<string> | undefined;

  /** `dir`: the repository, or any directory inside it. */
  constructor(readonly dir: string) {}

  private async run(args: string[], cwd?: string): Promise<string> {
    return this.exec(cwd ?? (await this.root()), args);
  }

  private async exec(base: string, args: string[]): Promise<string> {
    const ran = await runGit(args, { cwd: base });
    if (!ran.ok) throw ran.error;
    return ran.value;
  }

  /** Like `run`, but a non-zero exit is returned instead of thrown. */
  private async tryRun(args: string[], cwd?: string): Promise<Result<string, GitCommandError>> {
    try {
      return ok(await this.run(args, cwd));
    } catch (caught) {
      if (caught instanceof GitCommandError) return err(caught);
      throw caught;
    }
  }

  /** Like `tryRun`, with `input` on git's stdin, for a command that reads path names there. */
  private async tryRunWithInput(args: string[], input: string): Promise<Result<string, GitCommandError>> {
    return runGit(args, { cwd: await this.root(), input, pathNames: true });
  }

  /** True when `dir` is inside a git working tree. */
  async isRepo(): Promise<boolean> {
    if (!(await exists(this.dir))) return false;
    const r = await this.tryRun(['rev-parse', '--is-inside-work-tree'], this.dir);
    return r.ok && r.value.trim() === 'true';
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

  /**
   * A git operation the repository is in the middle of (a merge, rebase, cherry-pick, revert or
   * bisect), or null. Looked up with `git rev-parse --git-path`, so a linked worktree's own state
   * is found in its own git directory.
   */
  async operationInProgress(): Promise<RepositoryOperation | null> {
    const markers: Array<[string, RepositoryOperation]> = [
      ['MERGE_HEAD', 'merge'],
      ['rebase-merge', 'rebase'],
      ['rebase-apply', 'rebase'],
      ['CHERRY_PICK_HEAD', 'cherry-pick'],
      ['REVERT_HEAD', 'revert'],
      ['BISECT_LOG', 'bisect'],
    ];
    const root = await this.root();
    const out = await this.run(['rev-parse', ...markers.flatMap(([name]) => ['--git-path', name])]);
    const found = out.split('\n').filter(Boolean);
    for (const [i, [, operation]] of markers.entries()) {
      const marker = found[i];
      if (marker !== undefined && (await exists(path.resolve(root, marker)))) return operation;
    }
    return null;
  }

  /** The branch HEAD is on (also on an unborn branch), or null when HEAD is detached. */
  async currentBranch(): Promise<string | null> {
    const r = await this.tryRun(['symbolic-ref', '-q', '--short', 'HEAD']);
    return r.ok ? r.value.trim() || null : null;
  }

  /** Full hash of HEAD, or null on an unborn branch (no commits yet). */
  headCommit(): Promise<string | null> {
    return this.commitOf('HEAD');
  }

  /** Full hash of the commit `ref` names, or null when it names none. */
  async commitOf(ref: string): Promise<string | null> {
    const r = await this.tryRun(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
    if (!r.ok) return null;
    return r.value.trim() || null;
  }

  /** Adds a linked worktree at `dir`, detached at `commit`; no hook runs. */
  async addDetachedWorktree(dir: string, commit: string): Promise<Result<void, GitCommandError>> {
    const added = await this.tryRun(['worktree', 'add', '--detach', dir, commit]);
    return added.ok ? ok(undefined) : added;
  }

  /** Removes the linked worktree at `dir`, changes and all, and forgets worktrees whose directory is gone. Never fails. */
  async removeWorktree(dir: string): Promise<void> {
    await this.tryRun(['worktree', 'remove', '--force', '--force', dir]);
    await this.pruneWorktrees();
  }

  /** Forgets linked worktrees whose directory is gone. Never fails. */
  async pruneWorktrees(): Promise<void> {
    await this.tryRun(['worktree', 'prune']);
  }

  /**
   * Untracked files that the patterns in `listFile` (gitignore syntax) match and that git's own
   * ignore rules ignore too: the files `.worktreeinclude` asks to copy into a new worktree.
   */
  async ignoredFilesListedIn(listFile: string): Promise<string[]> {
    const listed = await this.tryRun(['ls-files', '-z', '--others', '--ignored', `--exclude-from=${listFile}`]);
    // `--directory` names a wholly ignored directory once (`node_modules/`) instead of every file in it.
    const ignored = await this.tryRun(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
    if (!listed.ok || !ignored.ok) return [];
    const ignoredEntries = splitNul(ignored.value);
    return splitNul(listed.value).filter((file) => coveredBy(file, ignoredEntries));
  }

  /** Every change in the working tree and index vs HEAD, untracked files included. */
  async allChanges(): Promise<Map<string, FileChange>> {
    return changesByPath(await this.statusEntries(null));
  }

  /** Sorted paths changed vs HEAD (working tree or index), untracked files included. */
  async diffNames(): Promise<string[]> {
    return [...(await this.allChanges()).keys()].sort();
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

  /**
   * Paths among `paths` that git ignores (and does not track), each with the rule that ignores
   * it (`.gitignore:3:*.log`). Tracked files are never ignored: git commits their changes.
   * Negated rules (`!keep.log`) un-ignore, so they are not reported.
   */
  async ignoredPaths(paths: readonly string[]): Promise<Array<{ path: string; rule: string }>> {
    const specs = [...new Set(paths.map(normalizeRepoPath))];
    if (specs.length === 0) return [];
    // One process for every path: they go through stdin, which has no length limit, and a plan of
    // 20,000 tasks in slices of 200 spent a second starting git 100 times.
    const r = await this.tryRunWithInput(['check-ignore', '-v', '-z', '--stdin'], `${specs.join('\0')}\0`);
    // Exit 1 means "nothing ignored"; -z output is source, line, pattern, path per match.
    if (!r.ok && r.error.exitCode === 1) return [];
    if (!r.ok) throw r.error;
    const out: Array<{ path: string; rule: string }> = [];
    const fields = r.value.split('\0');
    for (let i = 0; i + 3 < fields.length; i += 4) {
      const [source, line, pattern, p] = [fields[i]!, fields[i + 1]!, fields[i + 2]!, fields[i + 3]!];
      if (pattern.startsWith('!')) continue;
      out.push({ path: p, rule: `${source}:${line}:${pattern}` });
    }
    return out;
  }

  /**
   * Commits reachable from HEAD (and not from `since`, when given), newest first, that carry the
   * trailer `key` (case-insensitive, as git treats trailer keys). Empty on an unborn branch.
   * `from`: the revisions to read instead of HEAD (say `[integrationRef(id), 'HEAD']`); those
   * that do not exist (a ref not made yet, an unborn HEAD) are skipped.
   */
  async commitsWithTrailer(key: string, since?: string, from?: readonly string[]): Promise<TrailerCommit[]> {
    if (!isTrailerKey(key)) throw new Error(`invalid trailer key ${JSON.stringify(key)}`);
    let range: string[];
    if (from === undefined) {
      if (!(await this.headCommit())) return [];
      range = [since ? `${since}..HEAD` : 'HEAD'];
    } else {
      // --ignore-missing would skip a mistyped `since` too: that one must exist.
      if (since && !(await this.commitOf(since))) throw new Error(`no commit named ${JSON.stringify(since)}`);
      range = ['--ignore-missing', ...from, ...(since ? [`^${since}`] : [])];
    }
    const out = await this.run([
      'log',
      '-z',
      '--regexp-ignore-case',
      `--grep=^${key}:`,
      '--format=%H%x1f%s%x1f%(trailers:only,unfold)',
      ...range,
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
