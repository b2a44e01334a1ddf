// `Git`: the questions foreman asks of the person's repository (status, ignore rules, operations in
// progress, history) and its stale-lock chore, through the one runner (`runGit`).
// Every method is bound to one repository.
//
// A git command that fails is a value: each method returns a `Result` whose error is a
// `GitFailure`, or says in its doc what it makes of a failure (none: `isRepo` is false). What
// throws is a caller's bug: a path or trailer key no caller may give.
//
// Paths: every path taken or returned is relative to the repository's top-level directory
// (what `root()` returns), with `/` separators. A path ending in `/` means a directory and
// everything under it; a path without one names exactly one file, never a directory, even though
// git's pathspec `src` would also match `src/a.ts`: what git lists is filtered through
// `coveredBy` (src/core/plan/paths.ts), the one rule the plan's validation and overlaps use too.
// All pathspecs are passed with `--literal-pathspecs`, so `src/[id].ts` or `*.md` name exactly
// that file and never act as globs. Paths are checked before use: absolute paths, paths that
// leave the repository (`../x`), the repository itself (`.`) and anything inside `.git` are
// refused with an Error, because a plan is written by a model and must not steer us outside.

import { lstat, readdir, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  changesByPath,
  chunks,
  coveredBy,
  err,
  failureOf,
  type FileChange,
  type GitFailure,
  isTrailerKey,
  normalizeRepoPath,
  ok,
  parseStatus,
  parseTrailers,
  type Result,
  splitNul,
  type StatusEntry,
  type Trailer,
} from '../../core/index.ts';
import { headBranchRef, resolveCommit } from './refs.ts';
import { GitCommandError, runGit } from './runner.ts';

const exists = async (file: string): Promise<boolean> => {
  try {
    await lstat(file);
    return true;
  } catch {
    return false;
  }
};

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

export class Git {
  /** The top, once git has said it (a failure is not kept: the next call asks again). */
  private rootPromise: Promise<Result<string, GitCommandError>> | undefined;

  /** `dir`: the repository, or any directory inside it. */
  constructor(readonly dir: string) {}

  /** `args` run at the top (or in `cwd`); a non-zero exit is the error. */
  private async run(args: string[], cwd?: string): Promise<Result<string, GitCommandError>> {
    if (cwd !== undefined) return runGit(args, { cwd });
    const top = await this.top();
    return top.ok ? runGit(args, { cwd: top.value }) : top;
  }

  /** Like `run`, with `input` on git's stdin, for a command that reads path names there. */
  private async runWithInput(args: string[], input: string): Promise<Result<string, GitCommandError>> {
    const top = await this.top();
    return top.ok ? runGit(args, { cwd: top.value, input, pathNames: true }) : top;
  }

  /** True when `dir` is inside a git working tree. The same git process says where its top is (`root`). */
  async isRepo(): Promise<boolean> {
    if (!(await exists(this.dir))) return false;
    // Outside a working tree `--show-toplevel` fails, and so does the call.
    const r = await this.run(['rev-parse', '--is-inside-work-tree', '--show-toplevel'], this.dir);
    if (!r.ok) return false;
    const [inside, ...top] = r.value.replace(/\n$/, '').split('\n');
    if (inside !== 'true') return false;
    // Everything after the first line: a top whose name holds a line break stays whole.
    this.rootPromise ??= Promise.resolve(ok(top.join('\n')));
    return true;
  }

  /** Absolute path of the working tree's top-level directory, or why git could not say (`dir` is in no working tree). */
  async root(): Promise<Result<string, GitFailure>> {
    const top = await this.top();
    return top.ok ? top : err(failureOf(top.error));
  }

  private top(): Promise<Result<string, GitCommandError>> {
    if (this.rootPromise !== undefined) return this.rootPromise;
    const args = ['rev-parse', '--show-toplevel'];
    const asked = runGit(args, { cwd: this.dir }).then((out): Result<string, GitCommandError> => {
      if (!out.ok) return out;
      const top = out.value.replace(/\n$/, '');
      return top !== '' ? ok(top) : err(new GitCommandError(args, 128, `fatal: ${this.dir} is not inside a git working tree`));
    });
    this.rootPromise = asked;
    void asked.then((top) => {
      if (!top.ok && this.rootPromise === asked) this.rootPromise = undefined;
    });
    return asked;
  }

  /**
   * A git operation the repository is in the middle of (a merge, rebase, cherry-pick, revert or
   * bisect), or null. Looked up with `git rev-parse --git-path`, so a linked worktree's own state
   * is found in its own git directory.
   */
  async operationInProgress(): Promise<Result<RepositoryOperation | null, GitFailure>> {
    const markers: Array<[string, RepositoryOperation]> = [
      ['MERGE_HEAD', 'merge'],
      ['rebase-merge', 'rebase'],
      ['rebase-apply', 'rebase'],
      ['CHERRY_PICK_HEAD', 'cherry-pick'],
      ['REVERT_HEAD', 'revert'],
      ['BISECT_LOG', 'bisect'],
    ];
    const root = await this.top();
    if (!root.ok) return err(failureOf(root.error));
    const out = await this.run(['rev-parse', ...markers.flatMap(([name]) => ['--git-path', name])]);
    if (!out.ok) return err(failureOf(out.error));
    const found = out.value.split('\n').filter(Boolean);
    for (const [i, [, operation]] of markers.entries()) {
      const marker = found[i];
      if (marker !== undefined && (await exists(path.resolve(root.value, marker)))) return ok(operation);
    }
    return ok(null);
  }

  /** The branch HEAD is on (also on an unborn branch), or null when HEAD is detached. */
  async currentBranch(): Promise<string | null> {
    const ref = await headBranchRef(this.dir);
    return ref === null ? null : ref.replace(/^refs\/heads\//, '');
  }

  /** Full hash of HEAD, or null on an unborn branch (no commits yet). */
  headCommit(): Promise<string | null> {
    return this.commitOf('HEAD');
  }

  /** Full hash of the commit `ref` names, or null when it names none. */
  async commitOf(ref: string): Promise<string | null> {
    return resolveCommit(this.dir, ref);
  }

  /**
   * Untracked files that the patterns in `listFile` (gitignore syntax) match and that git's own
   * ignore rules ignore too: the files `.worktreeinclude` asks to copy into a new worktree.
   */
  async ignoredFilesListedIn(listFile: string): Promise<string[]> {
    const listed = await this.run(['ls-files', '-z', '--others', '--ignored', `--exclude-from=${listFile}`]);
    // `--directory` names a wholly ignored directory once (`node_modules/`) instead of every file in it.
    const ignored = await this.run(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
    if (!listed.ok || !ignored.ok) return [];
    const ignoredEntries = splitNul(ignored.value);
    return splitNul(listed.value).filter((file) => coveredBy(file, ignoredEntries));
  }

  /**
   * Every file of the last commit (HEAD), the state each worker starts from; none on an unborn
   * branch. Staged and untracked files are not in it: no worker would see them.
   */
  async committedFiles(): Promise<Set<string>> {
    const listed = await this.run(['ls-tree', '-r', '-z', '--name-only', '--full-tree', 'HEAD']);
    return new Set(listed.ok ? splitNul(listed.value) : []);
  }

  /** Every change in the working tree and index vs HEAD, untracked files included. */
  async allChanges(): Promise<Result<Map<string, FileChange>, GitFailure>> {
    const entries = await this.statusEntries(null);
    return entries.ok ? ok(changesByPath(entries.value)) : entries;
  }

  /** Sorted paths changed vs HEAD (working tree or index), untracked files included. */
  async diffNames(): Promise<Result<string[], GitFailure>> {
    const changes = await this.allChanges();
    return changes.ok ? ok([...changes.value.keys()].sort()) : changes;
  }

  private async statusEntries(specs: string[] | null): Promise<Result<StatusEntry[], GitFailure>> {
    // --no-optional-locks: do not take index.lock to refresh the index, so we never get in the
    // way of git commands the person (or their editor) runs at the same time.
    const args = ['--no-optional-locks', '--literal-pathspecs', 'status', '--porcelain=v1', '-z', '-uall', '--no-renames', '--ignore-submodules=none'];
    const entries: StatusEntry[] = [];
    for (const chunk of specs === null ? [null] : chunks(specs)) {
      const listed = await this.run(chunk === null ? args : [...args, '--', ...chunk]);
      if (!listed.ok) return err(failureOf(listed.error));
      entries.push(...parseStatus(listed.value));
    }
    return ok(entries);
  }

  /**
   * A `.git/index.lock` left by a git process that was killed (say, a round commit when the
   * orchestrator got SIGKILL) blocks every later commit. Waits briefly for a live git to finish;
   * then removes the lock only if no process has it open. Returns what it found. `look`: only
   * look (a dry run), and say `stale` of a lock it would have removed.
   */
  async clearStaleIndexLock(waitMs = 2000, look = false): Promise<Result<'none' | 'removed' | 'stale' | 'held', GitFailure>> {
    const found = await this.run(['rev-parse', '--git-dir']);
    if (!found.ok) return err(failureOf(found.error));
    const lock = path.join(path.resolve(this.dir, found.value.trim()), 'index.lock');
    const deadline = Date.now() + waitMs;
    while (await exists(lock)) {
      if (Date.now() >= deadline) {
        if (await fileHeldOpen(lock)) return ok('held');
        if (look) return ok('stale');
        await rm(lock, { force: true });
        return ok('removed');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return ok('none');
  }

  /**
   * Paths among `paths` that git ignores (and does not track), each with the rule that ignores
   * it (`.gitignore:3:*.log`). Tracked files are never ignored: git commits their changes.
   * Negated rules (`!keep.log`) un-ignore, so they are not reported.
   */
  async ignoredPaths(paths: readonly string[]): Promise<Result<Array<{ path: string; rule: string }>, GitFailure>> {
    const specs = [...new Set(paths.map(normalizeRepoPath))];
    if (specs.length === 0) return ok([]);
    // One process for every path: they go through stdin, which has no length limit, and a plan of
    // 20,000 tasks in slices of 200 spent a second starting git 100 times.
    const r = await this.runWithInput(['check-ignore', '-v', '-z', '--stdin'], `${specs.join('\0')}\0`);
    // Exit 1 means "nothing ignored"; -z output is source, line, pattern, path per match.
    if (!r.ok && r.error.exitCode === 1) return ok([]);
    if (!r.ok) return err(failureOf(r.error));
    const out: Array<{ path: string; rule: string }> = [];
    const fields = r.value.split('\0');
    for (let i = 0; i + 3 < fields.length; i += 4) {
      const [source, line, pattern, p] = [fields[i]!, fields[i + 1]!, fields[i + 2]!, fields[i + 3]!];
      if (pattern.startsWith('!')) continue;
      out.push({ path: p, rule: `${source}:${line}:${pattern}` });
    }
    return ok(out);
  }

  /**
   * Commits reachable from HEAD (and not from `since`, when given), newest first, that carry the
   * trailer `key` (case-insensitive, as git treats trailer keys). Empty on an unborn branch.
   * `from`: the revisions to read instead of HEAD (say `[integrationRef(id), 'HEAD']`); those
   * that do not exist (a ref not made yet, an unborn HEAD) are skipped. A key that is no trailer
   * key, or a `since` that names no commit, is the caller's bug: it throws.
   */
  async commitsWithTrailer(key: string, since?: string, from?: readonly string[]): Promise<Result<TrailerCommit[], GitFailure>> {
    if (!isTrailerKey(key)) throw new Error(`invalid trailer key ${JSON.stringify(key)}`);
    // A mistyped `since` would fail git log (or, with --ignore-missing, be skipped): it must exist.
    if (since && !(await this.commitOf(since))) throw new Error(`no commit named ${JSON.stringify(since)}`);
    let range: string[];
    if (from === undefined) {
      if (!(await this.headCommit())) return ok([]);
      range = [since ? `${since}..HEAD` : 'HEAD'];
    } else {
      range = ['--ignore-missing', ...from, ...(since ? [`^${since}`] : [])];
    }
    const out = await this.run(['log', '-z', '--regexp-ignore-case', `--grep=^${key}:`, '--format=%H%x1f%s%x1f%(trailers:only,unfold)', ...range, '--']);
    if (!out.ok) return err(failureOf(out.error));
    const wanted = key.toLowerCase();
    const commits: TrailerCommit[] = [];
    for (const rec of out.value.split('\0')) {
      if (!rec.trim()) continue;
      const [hash = '', subject = '', block = ''] = rec.split('\x1f');
      const trailers = parseTrailers(block);
      const values = trailers.filter((t) => t.key.toLowerCase() === wanted).map((t) => t.value);
      if (values.length > 0) commits.push({ hash: hash.trim(), subject, values, trailers });
    }
    return ok(commits);
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
