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
//
// Beside it, a file each: the pool's folders and slot records (pool-slots.ts), provisioning's
// copies and links (provisioning.ts), the setup command in a slot (setup-command.ts), finding the
// commit a slot is reset to (commit-lookup.ts), and a checkout for one use (one-use-checkout.ts).

import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, realpath, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { err, failureOf, NO_HOOKS, ok, type Result } from '../../core/index.ts';
import { writeFileAtomic } from '../store/index.ts';
import { CommitLookup } from './commit-lookup.ts';
import {
  allPresent,
  copyExcludes,
  destroySlot,
  excludePattern,
  isSlotClone,
  parseRecord,
  poolDir,
  RECORD_NAME,
  recordPath,
  removePoolAt,
  repoPathOrNull,
  SLOT_NAME,
  type SlotRecord,
} from './pool-slots.ts';
import { copyIncluded, DEFAULT_SETUP_INPUTS, linkSymlinkDirectories, type ProvisionFailure } from './provisioning.ts';
import { Git } from './repository.ts';
import { runGit, runGitSteps } from './runner.ts';
import { type RunSetup, runSetupCommand, setupInputsFingerprint } from './setup-command.ts';

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
  runSetup: RunSetup;
  /** Whether a commit is known to exist (the caller made it): a slot reset to it asks git nothing. */
  knows?: (commit: string) => boolean;
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

interface SlotState {
  index: number;
  dir: string;
  busy: boolean;
  /** The slot's directory exists (a complete clone). */
  exists: boolean;
  commit: string | null;
  record: SlotRecord | null;
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
  /** Each commit a slot is reset to is asked of git once (attempts share the integration tip). */
  private readonly commits: CommitLookup;
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
    this.commits = new CommitLookup(options.repo, options.knows);
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
    const commit = await this.commits.resolve(target);
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

  /** The setup inputs' fingerprint at `commit`; null without a setup command. */
  private fingerprint(commit: string): Promise<Result<string | null, ProvisionFailure>> {
    if (this.setupCommand === null) return Promise.resolve(ok(null));
    return setupInputsFingerprint(this.options.repo, commit, this.setupInputs);
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
    const linked = await linkSymlinkDirectories(this.options.repo, state.dir, this.symlinkDirectories);
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
    const linked = await linkSymlinkDirectories(this.options.repo, state.dir, this.symlinkDirectories);
    const ours = [...included, ...linked];
    let made: string[] = [];
    if (this.setupCommand !== null) {
      const setup = await runSetupCommand(this.options.runSetup, state.dir, this.setupCommand, ours, signal);
      if (!setup.ok) return setup;
      made = setup.value;
    }
    const kept = [...new Set([...ours, ...made])].sort();
    state.record = { commit, setupCommand: this.setupCommand, setupInputs: fingerprint, made: made.filter((entry) => !ours.includes(entry)).sort(), kept };
    await writeFileAtomic(recordPath(this.dir, state.index), `${JSON.stringify(state.record, null, 2)}\n`);
    return ok({ index: state.index, dir: state.dir, commit, kept, included });
  }
}
