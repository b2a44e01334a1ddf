// The worktree pool: the checkouts a plan's attempts work in (issue 12, "Workspaces" and
// "Provisioning").
//
// Where: `<worktreesRoot>/<repo name>-<hash of its path>/<planId>/slot-<n>`, outside the person's
// working tree (their test runners and watchers never find the slots) and outside `.git/` (the
// CLI denies every edit there). Beside each slot, `slot-<n>.json` records how it was provisioned.
//
// What a slot is: a repository of its own (`git clone --shared --no-checkout`), detached at a
// commit, that reads the person's objects through `objects/info/alternates` and has its own git
// directory — config, index, HEAD, no hooks. Not a linked worktree: Claude Code's sandbox guards
// the *common* git directory of the worktree a worker runs in (empty `config.lock`, `hooks`…
// placeholders while each sandboxed command runs), which for a linked worktree is the person's
// `.git/`: their `git config` failed meanwhile, and parallel workers tripped on each other's
// placeholders. A clone's common git directory is its own. The person's repository holds no
// record of the slots (`git worktree list` there shows none), so a slot is just its directory:
// removing it is deleting it. What an attempt captures is written into the person's object store
// (`captureWork`), so nothing in the person's repository ever needs an object only a slot holds.
//
// Reuse: a released slot is detached at the next attempt's commit with its files (`git checkout
// --force --detach`: no branch to move) and cleared of every untracked and ignored file (`git
// clean -ffdx`) except what provisioning put there (the kept entries), so build output, caches and
// stray files of the previous attempt cannot make the next attempt's checks pass. Both commands
// come from one shell (`runGitSteps`): one spawn. `.worktreeinclude` copies are copied again
// (their original content back) and the `worktree.symlinkDirectories` links re-made when missing.
//
// Provisioning: `.worktreeinclude` copies, symlinked directories, then the plan's setup command.
// The setup runs again on a reused slot when the files it depends on (lock files) differ at the
// new commit, or when the slot has no record (provisioning never finished: a setup failure, a
// crash). A slot's record is removed before provisioning starts and written when it is done.
//
// Creating a slot only reads the person's repository (the clone copies refs and writes the
// alternates file in the slot), so slots are made in parallel, not one at a time. A clone is made
// under a temporary name and renamed to `slot-<n>` when complete: a run killed half-way leaves a
// directory `openPool` removes, never a slot that looks whole. Reset and clean work in the slot's
// own index and HEAD. The person's working tree, index and branch are never touched: from their
// tree only `.worktreeinclude` files and `.claude/settings*.json` are read.

import { createHash, randomBytes } from 'node:crypto';
import { copyFile, lstat, mkdir, readFile, readdir, readlink, realpath, rename, rm, rmdir, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { ownCacheDir } from '../layout.ts';
import { type Result, assertNever, err, ok } from '../../core/failure.ts';
import { clipTail } from '../../core/format.ts';
import { type GitFailure, NO_HOOKS, describeGitFailure, failureOf, isObjectId, normalizeRepoPath, parseStatus, splitNul } from '../../core/git-text.ts';
import { coveredBy } from '../../core/paths.ts';
import { type TimeLimit, describeTimeLimitHit } from '../../core/time-limit.ts';
import { commitOf } from './refs.ts';
import { Git } from './repository.ts';
import { runGit, runGitSteps } from './runner.ts';
import { writeFileAtomic } from '../atomic-file.ts';
import { processAlive } from '../processes.ts';

/** The file at the repository's top listing the ignored files a new worktree gets a copy of (gitignore syntax, as Claude Code reads it). */
export const WORKTREE_INCLUDE = '.worktreeinclude';

/** Files whose change (at the repository's top) re-runs the setup command on a reused slot. */
export const DEFAULT_SETUP_INPUTS: readonly string[] = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
  'requirements.txt',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'Gemfile.lock',
  'go.sum',
  'Cargo.lock',
  'composer.lock',
];

/** How much of a failed setup command's output is kept (its end, where the error is). */
const SETUP_OUTPUT_TAIL = 4000;

/**
 * Where every plan's worktrees live: `$FOREMAN_WORKTREES`, else `$XDG_CACHE_HOME/foreman/worktrees`,
 * else `~/.cache/foreman/worktrees`. A relative XDG_CACHE_HOME is ignored, as the XDG spec says.
 */
export function worktreesRoot(env: NodeJS.ProcessEnv): string {
  if (env.FOREMAN_WORKTREES) return path.resolve(env.FOREMAN_WORKTREES);
  return path.join(ownCacheDir(env), 'worktrees');
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A plan id usable as one directory name; any other id is named by its hash, never a path. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The pool directory of one plan of one repository: `<root>/<name>-<10 hex>/<planId>`. */
export function poolDir(root: string, repoRealPath: string, planId: string): string {
  const repoDir = `${path.basename(repoRealPath)}-${sha256(repoRealPath).slice(0, 10)}`;
  const planDir = SAFE_NAME.test(planId) ? planId : `plan-${sha256(planId).slice(0, 16)}`;
  return path.join(root, repoDir, planDir);
}

export interface SetupRun {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
  /** The limit the caller ran it under, named when it was hit. */
  timeLimit?: TimeLimit;
  /** What the caller found in its output worth saying with the failure (the sandbox refused its network). */
  note?: string;
}

export interface PoolOptions {
  /** The person's repository top (real path). */
  repo: string;
  planId: string;
  /** `worktreesRoot(env)`. */
  root: string;
  /** The plan's `context.setupCommand`. */
  setupCommand?: string;
  /** Files (repository paths; `dir/` for everything under it) whose change re-runs the setup. Default DEFAULT_SETUP_INPUTS. */
  setupInputs?: readonly string[];
  /** From `symlinkDirectoriesOf(repo)`. */
  symlinkDirectories?: readonly string[];
  /** Runs the setup command in `dir` (the caller sandboxes it, records its process, applies the timeout). */
  runSetup(dir: string, command: string, signal?: AbortSignal): Promise<SetupRun>;
}

export interface Slot {
  index: number;
  /** The worktree's top directory. */
  dir: string;
  /** The commit it is detached at. */
  commit: string;
  /**
   * Repository-relative entries provisioning put there, which git does not track: never a
   * worker's change. Directories end in `/`; a symlinked directory is named without one (git
   * sees a link, not a directory).
   */
  kept: string[];
  /** The `.worktreeinclude` copies among `kept`. */
  included: string[];
}

/**
 * A slot as `slots()` shows it. Without `included`: which of `kept` are `.worktreeinclude` copies
 * is known when a slot is provisioned, not of one found on disk (its record keeps only `kept`).
 */
export interface SlotStatus extends Omit<Slot, 'included'> {
  busy: boolean;
  /** Whether provisioning finished (a record exists). */
  provisioned: boolean;
}

export type ProvisionFailure =
  | { kind: 'setup-failed'; command: string; exitCode: number | null; timedOut: boolean; timeLimit?: TimeLimit; output: string; note?: string }
  /**
   * The setup command changed files git tracks (`npm install` rewriting the lock file): every
   * attempt in the slot would be charged with them. The slot is left unprovisioned.
   */
  | { kind: 'setup-changed-files'; command: string; paths: string[] }
  | { kind: 'git-failed'; doing: string; failure: GitFailure }
  /** The signal was aborted: nothing failed, the slot was released. */
  | { kind: 'interrupted' };

/** One line saying why a slot could not be prepared (a setup's output follows, when there is one). */
export function describeProvisionFailure(failure: ProvisionFailure): string {
  switch (failure.kind) {
    case 'setup-failed': {
      const note = failure.note === undefined ? '' : ` (${failure.note})`;
      if (failure.timedOut && failure.timeLimit !== undefined)
        return `in a new worktree, the setup command ${describeTimeLimitHit(failure.command, failure.timeLimit)}${note}`;
      const how = failure.timedOut ? 'timed out' : failure.exitCode === null ? 'was killed' : `exited with code ${failure.exitCode}`;
      return `the setup command \`${failure.command}\` ${how} in a new worktree${note}`;
    }
    case 'setup-changed-files':
      return `the setup command \`${failure.command}\` changed files git tracks (${failure.paths.join(', ')}); use one that leaves them as committed (e.g. \`npm ci\`, not \`npm install\`)`;
    case 'git-failed':
      return `could not ${failure.doing}: ${describeGitFailure(failure.failure)}`;
    case 'interrupted':
      return 'interrupted';
    default:
      return assertNever(failure, 'provision failure');
  }
}

/** What `slot-<n>.json` holds. */
interface SlotRecord {
  /** The commit the slot was provisioned at. */
  commit: string;
  setupCommand: string | null;
  /** Hash of the setup inputs' blob ids at `commit` (null without a setup command). */
  setupInputs: string | null;
  /** What the setup command made (part of `kept`): when one is gone, the setup runs again. */
  made: string[];
  kept: string[];
}

interface SlotState {
  index: number;
  dir: string;
  busy: boolean;
  /** The slot's directory exists (a complete clone). */
  exists: boolean;
  commit: string | null;
  record: SlotRecord | null;
}

const SLOT_NAME = /^slot-(0|[1-9][0-9]*)$/;
const RECORD_NAME = /^slot-(0|[1-9][0-9]*)\.json$/;
const recordPath = (pool: string, index: number): string => path.join(pool, `slot-${index}.json`);

/** A repository path usable as a pathspec or exclude, or null when it is not one. */
function repoPathOrNull(entry: string): string | null {
  try {
    return normalizeRepoPath(entry);
  } catch {
    return null;
  }
}

/** `git clean -e` pattern naming exactly `entry` (anchored, glob characters escaped). */
function excludePattern(entry: string): string {
  const bare = entry.endsWith('/') ? entry.slice(0, -1) : entry;
  return `/${bare.replace(/[\\*?[\]]/g, (c) => `\\${c}`).replace(/ $/, '\\ ')}`;
}

/** Whether every entry exists in `dir` (a link counts, whatever it points to). */
async function allPresent(dir: string, entries: readonly string[]): Promise<boolean> {
  for (const entry of entries) if ((await lstat(path.join(dir, entry)).catch(() => null)) === null) return false;
  return true;
}

function parseRecord(text: string): SlotRecord | null {
  try {
    const value = JSON.parse(text) as Partial<SlotRecord>;
    const stringOrNull = (x: unknown): x is string | null => x === null || typeof x === 'string';
    if (typeof value.commit !== 'string' || !isObjectId(value.commit)) return null;
    if (!stringOrNull(value.setupCommand) || !stringOrNull(value.setupInputs)) return null;
    const entries = (list: unknown): list is string[] =>
      Array.isArray(list) && list.every((entry) => typeof entry === 'string' && repoPathOrNull(entry) !== null);
    if (!entries(value.kept) || !entries(value.made)) return null;
    return { commit: value.commit, setupCommand: value.setupCommand, setupInputs: value.setupInputs, made: value.made, kept: value.kept };
  } catch {
    return null;
  }
}

/**
 * The person's `info/exclude` (their own ignore patterns, beside `.gitignore`) copied into the new
 * clone at `dir`, as a linked worktree shared it: a file they ignore stays ignored in the slot.
 * Their repository's git directory is where the clone's alternates point (`<git dir>/objects`).
 */
async function copyExcludes(dir: string): Promise<void> {
  const alternates = await readFile(path.join(dir, '.git', 'objects', 'info', 'alternates'), 'utf8').catch(() => '');
  const store = alternates.split('\n').find((line) => path.isAbsolute(line));
  if (store === undefined) return;
  const source = path.join(path.dirname(store), 'info', 'exclude');
  if ((await stat(source).catch(() => null))?.isFile() !== true) return;
  await mkdir(path.join(dir, '.git', 'info'), { recursive: true });
  await copyFile(source, path.join(dir, '.git', 'info', 'exclude')).catch(() => undefined);
}

/**
 * Whether `dir` is a slot this pool made: a repository of its own (its `.git` a directory) that
 * borrows objects through alternates. A slot from an older foreman (a linked worktree: `.git` is
 * a file) or a damaged directory is not.
 */
async function isSlotClone(dir: string): Promise<boolean> {
  const gitDir = await lstat(path.join(dir, '.git')).catch(() => null);
  if (gitDir === null || !gitDir.isDirectory()) return false;
  return (await lstat(path.join(dir, '.git', 'objects', 'info', 'alternates')).catch(() => null))?.isFile() === true;
}

/**
 * Deletes the slot at `dir`; never fails. A symlink in it is removed, never followed. A linked
 * worktree an older foreman made there is unregistered from the person's repository first.
 */
async function destroySlot(repo: string, dir: string): Promise<void> {
  if ((await lstat(path.join(dir, '.git')).catch(() => null))?.isFile() === true) {
    await runGit(['worktree', 'remove', '--force', '--force', dir], { cwd: repo }).catch(() => undefined);
  }
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}

/** Removes every slot of the pool at `dir`, its records and the directory. Never throws. */
async function removePoolAt(repo: string, dir: string): Promise<void> {
  try {
    const real = await realpath(dir).catch(() => null);
    if (real === null) return;
    for (const entry of await readdir(real)) if (SLOT_NAME.test(entry)) await destroySlot(repo, path.join(real, entry));
    await rm(real, { recursive: true, force: true });
    // The repository's folder goes too once its last plan is gone.
    await rmdir(path.dirname(real)).catch(() => undefined);
  } catch {
    // Nothing to report: what is left, the next `openPool` or `removePlanWorktrees` clears.
  }
}

/**
 * Opens the plan's pool: creates its directory, reuses the slots a previous (perhaps crashed) run
 * left, removes half-made ones (a clone a killed run left under its temporary name, a directory
 * that is not a clone) and forgets records whose directory is gone. Other plans' slots are left
 * alone.
 */
export async function openPool(options: PoolOptions): Promise<WorktreePool> {
  const made = poolDir(options.root, options.repo, options.planId);
  await mkdir(made, { recursive: true });
  const dir = await realpath(made);
  const pool = new WorktreePool(options, dir);
  const entries = await readdir(dir, { withFileTypes: true });
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    const slot = SLOT_NAME.exec(entry.name);
    if (slot === null) {
      // An atomic write's temporary file, a clone cut short before its rename.
      if (!RECORD_NAME.test(entry.name)) await rm(full, { recursive: true, force: true });
      continue;
    }
    if (entry.isDirectory() && (await isSlotClone(full))) {
      const index = Number(slot[1]);
      const record = parseRecord((await readFile(recordPath(dir, index), 'utf8').catch(() => null)) ?? '');
      pool.adopt(index, record);
    } else {
      await destroySlot(options.repo, full);
    }
  }
  // Records of slots that are gone.
  for (const entry of entries) {
    const record = RECORD_NAME.exec(entry.name);
    if (record !== null && !pool.has(Number(record[1]))) await rm(path.join(dir, entry.name), { force: true });
  }
  return pool;
}

export class WorktreePool {
  private readonly states = new Map<number, SlotState>();
  private removed = false;
  /** Commits already found to exist: a commit stays, so each is asked about once (attempts share the integration tip). */
  private readonly knownCommits = new Set<string>();
  /** Lookups of full ids under way. */
  private readonly lookups = new Map<string, Promise<Result<string, ProvisionFailure>>>();
  private readonly person: Git;
  private readonly setupCommand: string | null;
  private readonly setupInputs: string[];
  private readonly symlinkDirectories: string[];

  /** Use `openPool`. `dir`: the pool directory (a real path). */
  constructor(
    private readonly options: PoolOptions,
    readonly dir: string,
  ) {
    this.person = new Git(options.repo);
    this.setupCommand = options.setupCommand !== undefined && options.setupCommand.trim() !== '' ? options.setupCommand : null;
    this.setupInputs = (options.setupInputs ?? DEFAULT_SETUP_INPUTS).flatMap((entry) => repoPathOrNull(entry) ?? []);
    this.symlinkDirectories = [...new Set((options.symlinkDirectories ?? []).flatMap((entry) => repoPathOrNull(entry)?.replace(/\/$/, '') ?? []))];
  }

  /** For `openPool`: a slot a previous run left, free. */
  adopt(index: number, record: SlotRecord | null): void {
    this.states.set(index, { index, dir: path.join(this.dir, `slot-${index}`), busy: false, exists: true, commit: null, record });
  }

  /** Whether slot `index` is known. */
  has(index: number): boolean {
    return this.states.has(index);
  }

  /**
   * The lowest free slot, made if needed, reset to `commit`, cleaned and provisioned. A failure
   * is a value and leaves the slot free (unprovisioned after a setup failure: it is provisioned
   * again next time).
   */
  async acquire(commit: string, signal?: AbortSignal): Promise<Result<Slot, ProvisionFailure>> {
    if (this.removed) throw new Error('acquire after the worktree pool was removed');
    if (signal?.aborted) return err({ kind: 'interrupted' });
    // Chosen and marked before any await, so concurrent calls never share a slot.
    let index = 0;
    while (this.states.get(index)?.busy) index++;
    let state = this.states.get(index);
    if (state === undefined) {
      state = { index, dir: path.join(this.dir, `slot-${index}`), busy: true, exists: false, commit: null, record: null };
      this.states.set(index, state);
    }
    state.busy = true;
    try {
      const prepared = await this.prepare(state, commit, signal);
      if (!prepared.ok) state.busy = false;
      return prepared;
    } catch (caught) {
      state.busy = false;
      throw caught;
    }
  }

  /** Gives the slot back; it is reset when next acquired. */
  release(slot: Slot): void {
    const state = this.states.get(slot.index);
    if (state !== undefined) state.busy = false;
  }

  /** Every slot, lowest first. */
  slots(): SlotStatus[] {
    return [...this.states.values()]
      .filter((state) => state.exists)
      .sort((a, b) => a.index - b.index)
      .map((state) => ({
        index: state.index,
        dir: state.dir,
        commit: state.commit ?? state.record?.commit ?? '',
        kept: [...(state.record?.kept ?? [])],
        busy: state.busy,
        provisioned: state.record !== null,
      }));
  }

  /** Removes every slot and the pool directory. Never throws. Call when no attempt runs. */
  async remove(): Promise<void> {
    this.removed = true;
    await removePoolAt(this.options.repo, this.dir);
    this.states.clear();
  }

  private async prepare(state: SlotState, target: string, signal: AbortSignal | undefined): Promise<Result<Slot, ProvisionFailure>> {
    const commit = await this.resolve(target);
    if (!commit.ok) return commit;
    const fingerprint = await this.fingerprint(commit.value);
    if (!fingerprint.ok) return fingerprint;
    // A slot whose git directory is gone is made again: git run there would find the repository
    // around it, if any, and reset that.
    if (state.exists && !(await isSlotClone(state.dir))) {
      await destroySlot(this.options.repo, state.dir);
      await this.forget(state);
      state.exists = false;
    }
    if (state.exists) {
      // Provisioned for the same setup command and the same inputs, and what the setup made still
      // there (an attempt may have deleted node_modules/): kept as it is. Otherwise everything
      // goes, what an earlier setup made included, and the slot is provisioned afresh.
      const record = state.record;
      const current =
        record !== null && record.setupCommand === this.setupCommand && record.setupInputs === fingerprint.value && (await allPresent(state.dir, record.made))
          ? record
          : null;
      if (current === null) await this.forget(state);
      const cleaned = await this.reset(state, commit.value, current?.kept ?? []);
      if (cleaned.ok && current !== null) return this.refresh(state, current, commit.value);
      if (cleaned.ok) return this.provision(state, commit.value, fingerprint.value, signal);
      // A slot that cannot be reset (its directory damaged, a lock left by a killed git): made again.
      await destroySlot(this.options.repo, state.dir);
      await this.forget(state);
      state.exists = false;
    }
    const made = await this.create(state, commit.value);
    if (!made.ok) return made;
    return this.provision(state, commit.value, fingerprint.value, signal);
  }

  /** A commit the caller made itself (an integration): no need to ask git whether it exists. */
  remember(commit: string): void {
    if (isObjectId(commit)) this.knownCommits.add(commit);
  }

  /**
   * The full hash of `target`, checked to be a commit before any slot is touched (a failed reset
   * would remake the slot). Slots acquired at once for the same full id share one lookup.
   */
  private resolve(target: string): Promise<Result<string, ProvisionFailure>> {
    if (this.knownCommits.has(target)) return Promise.resolve(ok(target));
    if (!isObjectId(target)) return this.lookUp(target);
    let pending = this.lookups.get(target);
    if (pending === undefined) {
      pending = this.lookUp(target).finally(() => this.lookups.delete(target));
      this.lookups.set(target, pending);
    }
    return pending;
  }

  private async lookUp(target: string): Promise<Result<string, ProvisionFailure>> {
    const found = await commitOf(this.options.repo, target);
    if (!found.ok) return err({ kind: 'git-failed', doing: `find the commit ${target}`, failure: failureOf(found.error) });
    const commit = found.value;
    // Only a full id is remembered as itself: a name (HEAD, a branch) may move.
    if (commit === target) this.knownCommits.add(commit);
    return ok(commit);
  }

  /** The setup inputs' blob ids at `commit`, hashed (one `git ls-tree`); null without a setup command. */
  private async fingerprint(commit: string): Promise<Result<string | null, ProvisionFailure>> {
    if (this.setupCommand === null) return ok(null);
    if (this.setupInputs.length === 0) return ok(sha256(''));
    const specs = this.setupInputs.map((entry) => entry.replace(/\/$/, ''));
    const listed = await runGit(['--literal-pathspecs', 'ls-tree', '-r', '-z', '--full-tree', commit, '--', ...specs], { cwd: this.options.repo });
    if (!listed.ok) return err({ kind: 'git-failed', doing: `read the setup inputs at ${commit.slice(0, 12)}`, failure: failureOf(listed.error) });
    return ok(
      sha256(
        splitNul(listed.value)
          .filter((line) => coveredBy(line.slice(line.indexOf('\t') + 1), this.setupInputs))
          .sort()
          .join('\n'),
      ),
    );
  }

  /**
   * A new slot at `commit`: `git clone --shared --no-checkout` of the person's repository under a
   * temporary name, renamed to the slot's name once complete, then checked out. `--template=`
   * copies no hooks (nor anything else of the person's templates) and the slot's own config sets
   * `core.hooksPath=/dev/null`, so no hook of the person's (their global `core.hooksPath`
   * included) runs there, not even for a worker's own `git commit`. Leftovers of a half-made
   * slot are removed first.
   */
  private async create(state: SlotState, commit: string): Promise<Result<void, ProvisionFailure>> {
    await destroySlot(this.options.repo, state.dir);
    const making = `${state.dir}.clone-${randomBytes(4).toString('hex')}`;
    const cloned = await runGit(['clone', '--template=', '--shared', '--no-checkout', '--quiet', ...NO_HOOKS, '--', this.options.repo, making], {
      cwd: this.dir,
    });
    if (!cloned.ok) {
      await rm(making, { recursive: true, force: true }).catch(() => undefined);
      return err({ kind: 'git-failed', doing: `create the worktree ${state.dir} at ${commit.slice(0, 12)}`, failure: failureOf(cloned.error) });
    }
    await copyExcludes(making);
    await rename(making, state.dir);
    state.exists = true;
    // A fresh checkout holds nothing to clean.
    const checkedOut = await this.reset(state, commit, null);
    if (!checkedOut.ok) {
      await destroySlot(this.options.repo, state.dir);
      state.exists = false;
      return checkedOut;
    }
    return ok(undefined);
  }

  /** Detached at `commit` with its files (`git checkout --force --detach`), then `git clean -ffdx` keeping exactly `kept` (no clean when null: a fresh clone). */
  private async reset(state: SlotState, commit: string, kept: readonly string[] | null): Promise<Result<void, ProvisionFailure>> {
    // One `checkout --force --detach`: HEAD detached at the commit (had the attempt checked out a
    // branch, no branch moves, as `reset --hard <commit>` would move it), index and files as in it.
    // A full id: the commit is found through the alternates (an integration commit is in the
    // person's repository only), no ref in the slot needed.
    const checkout = ['checkout', '-q', '--force', '--detach', commit];
    // -x: ignored files go too (build output, caches); the -e patterns still apply with -x.
    const clean = ['clean', '-ffdxq', ...(kept ?? []).flatMap((entry) => ['-e', excludePattern(entry)])];
    // Both from one shell: one spawn from this process for the two (runGitSteps says why).
    const reset = kept === null ? await runGit(checkout, { cwd: state.dir }) : await runGitSteps([checkout, clean], { cwd: state.dir });
    if (!reset.ok) {
      const doing = reset.error.args[0] === 'clean' ? `clean ${state.dir}` : `reset ${state.dir} to ${commit.slice(0, 12)}`;
      // A failed clean leaves the slot at the commit: only a failed checkout leaves it unknown.
      if (reset.error.args[0] === 'clean') state.commit = commit;
      return err({ kind: 'git-failed', doing, failure: failureOf(reset.error) });
    }
    state.commit = commit;
    return ok(undefined);
  }

  /** A provisioned slot reused: `.worktreeinclude` copies back to their original content, missing links re-made. */
  private async refresh(state: SlotState, record: SlotRecord, commit: string): Promise<Result<Slot, ProvisionFailure>> {
    const included = await copyIncluded(this.person, this.options.repo, state.dir);
    const linked = await this.link(state.dir);
    const kept = [...new Set([...record.kept, ...included, ...linked])].sort();
    if (kept.length !== record.kept.length) {
      state.record = { ...record, kept };
      await writeFileAtomic(recordPath(this.dir, state.index), `${JSON.stringify(state.record, null, 2)}\n`);
    }
    return ok({ index: state.index, dir: state.dir, commit, kept, included });
  }

  /** Drops the slot's record: until provisioning finishes again, it is not provisioned. */
  private async forget(state: SlotState): Promise<void> {
    state.record = null;
    await rm(recordPath(this.dir, state.index), { force: true });
  }

  /** Copies, links, the setup command; then the record. The slot is clean at `commit`. */
  private async provision(
    state: SlotState,
    commit: string,
    fingerprint: string | null,
    signal: AbortSignal | undefined,
  ): Promise<Result<Slot, ProvisionFailure>> {
    await this.forget(state);
    const included = await copyIncluded(this.person, this.options.repo, state.dir);
    const linked = await this.link(state.dir);
    const ours = [...included, ...linked];
    let made: string[] = [];
    if (this.setupCommand !== null) {
      const run = await this.options.runSetup(state.dir, this.setupCommand, signal);
      if (signal?.aborted) return err({ kind: 'interrupted' });
      if (run.exitCode !== 0 || run.timedOut) {
        return err({
          kind: 'setup-failed',
          command: this.setupCommand,
          exitCode: run.exitCode,
          timedOut: run.timedOut,
          ...(run.timeLimit ? { timeLimit: run.timeLimit } : {}),
          output: clipTail(run.output, SETUP_OUTPUT_TAIL),
          ...(run.note !== undefined ? { note: run.note } : {}),
        });
      }
      const changed = await runGit(['--no-optional-locks', 'status', '--porcelain=v1', '-z', '-uno', '--no-renames'], { cwd: state.dir });
      if (!changed.ok) return err({ kind: 'git-failed', doing: `check what the setup changed in ${state.dir}`, failure: failureOf(changed.error) });
      const paths = parseStatus(changed.value).map((entry) => entry.path);
      if (paths.length > 0) return err({ kind: 'setup-changed-files', command: this.setupCommand, paths: [...new Set(paths)].sort() });
      const untracked = await this.untracked(state.dir, ours);
      if (!untracked.ok) return untracked;
      made = untracked.value;
    }
    const kept = [...new Set([...ours, ...made])].sort();
    state.record = { commit, setupCommand: this.setupCommand, setupInputs: fingerprint, made: made.filter((entry) => !ours.includes(entry)).sort(), kept };
    await writeFileAtomic(recordPath(this.dir, state.index), `${JSON.stringify(state.record, null, 2)}\n`);
    return ok({ index: state.index, dir: state.dir, commit, kept, included });
  }

  /**
   * What git does not track in `dir` after the setup ran, as git lists it (`--directory`: a
   * wholly untracked directory once, as `dir/`). A directory listed only because it holds one of
   * `ours` (a `.worktreeinclude` copy, a link) is listed file by file instead, so that keeping
   * what the setup made there does not keep the whole directory.
   */
  private async untracked(dir: string, ours: readonly string[]): Promise<Result<string[], ProvisionFailure>> {
    const listed = await runGit(['ls-files', '-z', '--others', '--directory'], { cwd: dir });
    if (!listed.ok) return err({ kind: 'git-failed', doing: `list the files the setup made in ${dir}`, failure: failureOf(listed.error) });
    const entries = splitNul(listed.value);
    const holding = entries.filter((entry) => entry.endsWith('/') && ours.some((file) => coveredBy(file, [entry])));
    if (holding.length === 0) return ok(entries);
    const expanded = await runGit(['--literal-pathspecs', 'ls-files', '-z', '--others', '--', ...holding], { cwd: dir });
    if (!expanded.ok) return err({ kind: 'git-failed', doing: `list the files the setup made in ${dir}`, failure: failureOf(expanded.error) });
    return ok([...entries.filter((entry) => !holding.includes(entry)), ...splitNul(expanded.value)]);
  }

  /**
   * Makes each `symlinkDirectories` entry a link to the person's `<repo>/<entry>` when that is a
   * directory there and nothing is at the entry in the slot. Returns the entries that are such
   * links now (made here or before).
   */
  private async link(dir: string): Promise<string[]> {
    const linked: string[] = [];
    const top = await realpath(dir);
    for (const entry of this.symlinkDirectories) {
      const source = path.join(this.options.repo, entry);
      const target = path.join(dir, entry);
      const present = await lstat(target).catch(() => null);
      if (present !== null) {
        if (present.isSymbolicLink() && (await readlink(target).catch(() => null)) === source) linked.push(entry);
        continue;
      }
      if ((await stat(source).catch(() => null))?.isDirectory() !== true) continue;
      await mkdir(path.dirname(target), { recursive: true });
      // Never through a link the checkout holds: the link goes inside the slot or nowhere.
      const parent = await realpath(path.dirname(target));
      if (parent !== top && !parent.startsWith(`${top}${path.sep}`)) continue;
      await symlink(source, target, 'dir');
      linked.push(entry);
    }
    return linked;
  }
}

/** A pool for one use (`withCheckout`): `checkout-<pid>-<8 hex>`. */
const CHECKOUT_NAME = /^checkout-(\d+)-[0-9a-f]{8}$/;

/**
 * A checkout of `commit` (default HEAD) for one use, the probe's: a pool of its own with one slot,
 * made and provisioned as an attempt's is (`.worktreeinclude` copies, linked directories; the
 * caller runs any setup command itself), and removed afterwards whatever `use` does. What `use`
 * throws is rethrown after the removal.
 */
export async function withCheckout<T>(
  repository: string,
  root: string,
  use: (slot: Slot) => Promise<T>,
  commit = 'HEAD',
): Promise<Result<T, ProvisionFailure>> {
  // Pools are named by the repository's real path, as a run's are.
  const repo = await realpath(repository);
  // Those a killed process left (its pid gone) go first.
  const repoFolder = path.dirname(poolDir(root, repo, 'x'));
  for (const entry of await readdir(repoFolder).catch(() => [] as string[])) {
    const pid = CHECKOUT_NAME.exec(entry)?.[1];
    if (pid !== undefined && !processAlive(Number(pid))) await removePoolAt(repo, path.join(repoFolder, entry));
  }
  const pool = await openPool({
    repo,
    planId: `checkout-${process.pid}-${randomBytes(4).toString('hex')}`,
    root,
    symlinkDirectories: await symlinkDirectoriesOf(repo),
    runSetup: () => Promise.reject(new Error('a checkout for one use has no setup command')),
  });
  try {
    const acquired = await pool.acquire(commit);
    if (!acquired.ok) return acquired;
    return ok(await use(acquired.value));
  } finally {
    await pool.remove();
  }
}

/**
 * Copies into `dir` the files of `repo` that `.worktreeinclude` lists and git ignores. Nothing
 * when the file is absent. Symbolic links are copied as links.
 */
async function copyIncluded(git: Git, repo: string, dir: string): Promise<string[]> {
  const listFile = path.join(repo, WORKTREE_INCLUDE);
  if ((await lstat(listFile).catch(() => null))?.isFile() !== true) return [];
  const files = await git.ignoredFilesListedIn(listFile);
  for (const file of files) {
    const from = path.join(repo, file);
    const to = path.join(dir, file);
    await mkdir(path.dirname(to), { recursive: true });
    const st = await lstat(from).catch(() => null);
    if (st === null) continue;
    if (st.isSymbolicLink()) await symlink(await readlink(from), to).catch(() => undefined);
    else if (st.isFile()) await copyFile(from, to);
  }
  return files.sort();
}

/** Bytes `dir` takes on disk, not following symlinks, each hard-linked file once; 0 when absent. */
export async function diskUsage(dir: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const info = await lstat(current).catch(() => null);
    if (info === null) continue;
    const key = `${info.dev}:${info.ino}`;
    if (seen.has(key)) continue;
    seen.add(key);
    total += typeof info.blocks === 'number' ? info.blocks * 512 : info.size;
    if (info.isDirectory()) {
      const names = await readdir(current).catch(() => [] as string[]);
      for (const name of names) pending.push(path.join(current, name));
    }
  }
  return total;
}

/** Removes the plan's pool (every slot and its directory); for `plan clean` and a finished plan. Never throws. */
export async function removePlanWorktrees(repo: string, root: string, planId: string): Promise<void> {
  const real = await realpath(repo).catch(() => repo);
  await removePoolAt(real, poolDir(root, real, planId));
}

/**
 * `worktree.symlinkDirectories` from `<repo>/.claude/settings.json`, then `settings.local.json`
 * (the later one wins when it sets it): repository paths, without a trailing `/`. Entries that
 * are not repository paths are dropped; an absent, unreadable or invalid file counts as not
 * setting it.
 */
export async function symlinkDirectoriesOf(repo: string): Promise<string[]> {
  let found: string[] = [];
  for (const name of ['settings.json', 'settings.local.json']) {
    const text = await readFile(path.join(repo, '.claude', name), 'utf8').catch(() => null);
    if (text === null) continue;
    let settings: unknown;
    try {
      settings = JSON.parse(text);
    } catch {
      continue;
    }
    const worktree = typeof settings === 'object' && settings !== null ? (settings as { worktree?: unknown }).worktree : undefined;
    const list = typeof worktree === 'object' && worktree !== null ? (worktree as { symlinkDirectories?: unknown }).symlinkDirectories : undefined;
    if (!Array.isArray(list)) continue;
    found = [...new Set(list.flatMap((entry) => (typeof entry === 'string' ? (repoPathOrNull(entry)?.replace(/\/$/, '') ?? []) : [])))];
  }
  return found;
}
