// The only module that runs git. Every method is bound to one repository.
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
import { lstat, readdir, readlink, realpath, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { GitError, simpleGit, type SimpleGit } from 'simple-git';
import { type Result, err, ok } from '../core/failure.ts';
import {
  type FileChange,
  type GitFailure,
  type StatusEntry,
  type Trailer,
  type TrailerList,
  buildMessage,
  changesByPath,
  chunks,
  failureOf,
  isTrailerKey,
  normalizeRepoPath,
  parseStatus,
  parseTrailers,
  splitNul,
} from '../core/git-text.ts';
import { coveredBy } from '../core/paths.ts';

/** What `operationInProgress` finds. */
export type RepositoryOperation = 'merge' | 'rebase' | 'cherry-pick' | 'revert' | 'bisect';

export interface CommitRequest {
  /** Exactly the paths to commit (files, or `dir/` for everything under a directory). */
  paths: string[];
  message: string;
  /** Appended as a git trailer block, in order: `Key: value`. */
  trailers?: TrailerList;
  /** Run the repository's commit hooks (pre-commit, commit-msg…). Default true. */
  verify?: boolean;
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
}

/**
 * Runs `git args` (for the git modules beside this one: worktrees, integration, landing). A
 * non-zero exit is returned as a value; stdout is returned untrimmed. Hooks never run through
 * here: every caller uses plumbing.
 */
export function runGit(args: readonly string[], run: GitRun): Promise<Result<string, GitCommandError>> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...args], { cwd: run.cwd, env: { ...process.env, ...run.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => errOut.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(ok(Buffer.concat(out).toString('utf8')));
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
  private readonly clients = new Map<string, SimpleGit>();

  /** `dir`: the repository, or any directory inside it. */
  constructor(readonly dir: string) {}

  private client(baseDir: string): SimpleGit {
    let c = this.clients.get(baseDir);
    if (!c) {
      c = simpleGit({
        baseDir,
        trimmed: false,
        // Only ever `core.hooksPath=/dev/null`, for foreman's own commits (see `commit`).
        unsafe: { allowUnsafeHooksPath: true },
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
  private async tryRun(args: string[], cwd?: string): Promise<Result<string, GitCommandError>> {
    try {
      return ok(await this.run(args, cwd));
    } catch (caught) {
      if (caught instanceof GitCommandError) return err(caught);
      throw caught;
    }
  }

  /** Like `tryRun`, with `input` on git's stdin (simple-git cannot pass stdin). */
  private async tryRunWithInput(args: string[], input: string): Promise<Result<string, GitCommandError>> {
    return runGit(args, { cwd: await this.root(), input });
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
    const added = await this.tryRun(['-c', 'core.hooksPath=/dev/null', 'worktree', 'add', '--detach', dir, commit]);
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

  /**
   * How each path under `paths` differs from HEAD, untracked files included (each file listed,
   * `-uall`), ignored files excluded. Renames are not detected: a renamed file shows as its old
   * path `deleted` and its new path `added`/`untracked`. Empty `paths` → empty map.
   */
  async changedPaths(paths: readonly string[]): Promise<Map<string, FileChange>> {
    const specs = paths.map(normalizeRepoPath);
    if (specs.length === 0) return new Map();
    return changesByPath((await this.statusEntries(specs)).filter((e) => coveredBy(e.path, specs)));
  }

  /** Every change in the working tree and index vs HEAD, untracked files included. */
  async allChanges(): Promise<Map<string, FileChange>> {
    return changesByPath(await this.statusEntries(null));
  }

  /** Sorted paths changed vs HEAD (working tree or index), untracked files included. */
  async diffNames(): Promise<string[]> {
    return [...(await this.allChanges()).keys()].sort();
  }

  /** Changed paths (vs HEAD, untracked included) that match none of `declared`. */
  async changesOutside(declared: readonly string[]): Promise<Map<string, FileChange>> {
    const specs = declared.map(normalizeRepoPath);
    const out = new Map<string, FileChange>();
    for (const [p, c] of await this.allChanges()) if (!coveredBy(p, specs)) out.set(p, c);
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
  async isTracked(repoPath: string): Promise<boolean> {
    const spec = normalizeRepoPath(repoPath);
    return (await this.indexFiles([spec])).length > 0;
  }

  /** Whether HEAD holds `path` (for `dir/`: the directory). False on an unborn branch. */
  async existsInHead(repoPath: string): Promise<boolean> {
    const spec = normalizeRepoPath(repoPath);
    if (!(await this.headCommit())) return false;
    const out = await this.run(['--literal-pathspecs', 'ls-tree', '-z', '--name-only', '--full-tree', 'HEAD', '--', spec.replace(/\/$/, '')]);
    return splitNul(out).length > 0;
  }

  private async headFiles(specs: string[]): Promise<string[]> {
    if (specs.length === 0 || !(await this.headCommit())) return [];
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(...splitNul(await this.run(['--literal-pathspecs', 'ls-tree', '-r', '-z', '--name-only', '--full-tree', 'HEAD', '--', ...chunk])));
    }
    return files.filter((f) => coveredBy(f, specs));
  }

  private async indexFiles(specs: string[]): Promise<string[]> {
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(...splitNul(await this.run(['--literal-pathspecs', 'ls-files', '-z', '--cached', '--full-name', '--', ...chunk])));
    }
    return files.filter((f) => coveredBy(f, specs));
  }

  private async untrackedFiles(specs: string[]): Promise<string[]> {
    const files: string[] = [];
    for (const chunk of chunks(specs)) {
      files.push(
        ...splitNul(await this.run(['--literal-pathspecs', 'ls-files', '-z', '--others', '--exclude-standard', '--full-name', '--', ...chunk])),
      );
    }
    return files.filter((f) => coveredBy(f, specs));
  }

  /**
   * Absolute path of a repo-relative path, or null when removing it would go through a symlink:
   * every directory on the way must be a real directory inside the repository, so a removal
   * never reaches a file through a link (inside the repository or out of it).
   */
  private async safeAbsolute(root: string, rel: string): Promise<string | null> {
    const full = path.join(root, rel);
    try {
      const parentReal = await realpath(path.dirname(full));
      const rootReal = await realpath(root);
      const expected = path.dirname(rel) === '.' ? rootReal : path.join(rootReal, path.dirname(rel));
      return parentReal === expected ? full : null;
    } catch {
      return null; // the parent does not exist: nothing to remove
    }
  }

  /**
   * Puts `paths` back as they are in HEAD, touching nothing else:
   * - a file in HEAD gets HEAD's content in both the index and the working tree;
   * - a file in the index but not in HEAD is dropped from both;
   * - an untracked file is removed, unless git ignores it.
   * A `dir/` path does this for every file under it; a bare path only for the file of that name.
   * Ignored files are never removed: git cannot have committed them, so they are the person's
   * (a task may not declare an ignored path; see `ignoredPaths`). Nothing is removed through a
   * symlinked directory. Directories left empty by a removal are removed too.
   */
  async restore(paths: readonly string[]): Promise<Result<void, GitFailure>> {
    const specs = [...new Set(paths.map(normalizeRepoPath))];
    if (specs.length === 0) return ok(undefined);
    try {
      const root = await this.root();
      const head = await this.headCommit();
      const inHead = await this.headFiles(specs);
      const inIndex = await this.indexFiles(specs);
      const removeFromDisk = new Set<string>(await this.untrackedFiles(specs));
      const headSet = new Set(inHead);

      if (head) {
        // Exact files, never the declared specs: `git restore -- src` would also reach `src/…`.
        // Without --overlay, index entries HEAD does not have are dropped with their files.
        const known = [...new Set([...inHead, ...inIndex])];
        for (const chunk of chunks(known)) {
          await this.run(['--literal-pathspecs', 'restore', '--source=HEAD', '--staged', '--worktree', '--', ...chunk]);
        }
      } else {
        for (const chunk of chunks(inIndex)) {
          await this.run(['--literal-pathspecs', 'rm', '--cached', '-q', '--ignore-unmatch', '--', ...chunk]);
        }
        for (const f of inIndex) removeFromDisk.add(f);
      }

      const removedParents = new Set<string>();
      for (const rel of removeFromDisk) {
        if (headSet.has(rel)) continue;
        const full = await this.safeAbsolute(root, rel);
        if (!full) continue;
        const st = await lstat(full).catch(() => null);
        if (!st || st.isDirectory()) continue;
        await rm(full, { force: true });
        removedParents.add(path.dirname(full));
      }
      await pruneEmptyDirs(root, removedParents);
      return ok(undefined);
    } catch (e) {
      if (e instanceof GitCommandError) return err(failureOf(e));
      throw e;
    }
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

  /** The index entries (`git ls-files -s`) of exactly `files`, to put back after a failed commit. */
  private async indexEntries(files: string[]): Promise<Map<string, string[]>> {
    const entries = new Map<string, string[]>();
    for (const chunk of chunks(files)) {
      for (const rec of splitNul(await this.run(['--literal-pathspecs', 'ls-files', '-s', '-z', '--full-name', '--', ...chunk]))) {
        // `<mode> <object> <stage>\t<path>`
        const tab = rec.indexOf('\t');
        const file = rec.slice(tab + 1);
        if (!files.includes(file)) continue;
        entries.set(file, [...(entries.get(file) ?? []), rec.slice(0, tab)]);
      }
    }
    return entries;
  }

  /** Puts the index entries of `files` back as `saved` holds them (absent ones are removed). */
  private async putBackIndex(files: string[], saved: Map<string, string[]>): Promise<void> {
    const absent = files.filter((f) => !saved.has(f));
    for (const chunk of chunks(absent)) await this.run(['update-index', '--force-remove', '--', ...chunk]);
    const present = files.filter((f) => saved.has(f));
    for (const chunk of chunks(present)) {
      const args = chunk.flatMap((f) =>
        saved.get(f)!.flatMap((entry) => {
          const [mode, object] = entry.split(' ');
          return ['--cacheinfo', `${mode},${object},${f}`];
        }),
      );
      await this.run(['update-index', '--add', ...args]);
    }
  }

  /**
   * Commits exactly `paths` (their working-tree state: changes, new files, deletions) and nothing
   * else: whatever else the user has staged stays staged and uncommitted. Paths that neither
   * exist nor are tracked are ignored, as are ignored files. Returns the new commit's hash, or
   * null when there was nothing to commit. Uses the repository's identity; only when none is
   * configured, commits as `foreman <foreman@localhost>`.
   *
   * When any step fails (a hook, signing, a locked index…), the index entries of the paths this
   * call staged are put back as they were before it, so nothing is left staged, and the failure
   * is returned.
   */
  async commit(req: CommitRequest): Promise<Result<string | null, GitFailure>> {
    const specs = [...new Set(req.paths.map(normalizeRepoPath))];
    if (specs.length === 0) return ok(null);
    const message = buildMessage(req.message, req.trailers);
    const root = await this.root();

    const before = (await this.statusEntries(specs)).filter((e) => coveredBy(e.path, specs));
    if (before.length === 0) return ok(null);
    const files = [...new Set(before.map((e) => e.path))];
    const saved = await this.indexEntries(files);
    const undo = async (failure: GitFailure): Promise<Result<never, GitFailure>> => {
      try {
        await this.putBackIndex(files, saved);
      } catch (e) {
        if (!(e instanceof GitCommandError)) throw e;
        return err({ ...failure, indexNotRestored: e.stderr.trim() || e.message });
      }
      return err(failure);
    };

    const present: string[] = [];
    const missing: string[] = [];
    for (const f of files) (await exists(path.join(root, f)) ? present : missing).push(f);
    try {
      for (const chunk of chunks(present)) await this.run(['--literal-pathspecs', 'add', '--', ...chunk]);
      for (const chunk of chunks(missing)) await this.run(['--literal-pathspecs', 'rm', '--cached', '-q', '--ignore-unmatch', '--', ...chunk]);
    } catch (e) {
      if (e instanceof GitCommandError) return undo(failureOf(e));
      throw e;
    }

    // `--only` commits the working-tree state of exactly these files, leaving the rest of the
    // index alone. Exact file names, not the declared specs: a bare `src` names a file only. A
    // file gone from disk that HEAD never had (staged, then deleted) has nothing to commit.
    const inHead = new Set(await this.headFiles(missing));
    const toCommit = [...present, ...missing.filter((f) => inHead.has(f))];
    if (toCommit.length === 0) return ok(null);
    const identity = await identityArgs(root);
    const committed = await this.tryRun([
      ...identity,
      // verify=false: no hook at all. `--no-verify` skips only pre-commit and commit-msg;
      // prepare-commit-msg, post-commit and the rest would still run, and could fail the commit,
      // rewrite its message (the trailers resume relies on) or touch the working tree.
      ...(req.verify === false ? ['-c', 'core.hooksPath=/dev/null'] : []),
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
      if ((await this.statusEntries(specs)).filter((e) => coveredBy(e.path, specs)).length === 0) return ok(null);
      return undo(failureOf(committed.error));
    }
    return ok(await this.headCommit());
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
