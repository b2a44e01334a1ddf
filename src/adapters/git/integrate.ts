// Integration: verified work committed onto the ref foreman owns for the plan
// (`refs/foreman/<planId>`, the integration tip), stacks of candidates for the gate, and work
// parked on a sibling ref awaiting approval or the gate.
//
// Nothing here uses the person's index, working tree or hooks. A tree is built by a `TreeBuilder`
// (trees.ts: two git processes kept running for the integrator's life, no index file), the commit
// written by a `CommitWriter` (commits.ts: one more, kept) and the ref moved with `update-ref`
// (compare-and-swap, with the integration's reflog message).
//
// Git calls are counted (test/git/capture-integrate.test.ts checks them): update-ref per
// integration, the kept processes and the identity (`config`, `var`) once per integrator, and
// one diff-tree per older base only when a commit the integrator made since set one of its
// paths: no per-file calls, so a batch of tasks costs what one task costs. Where git would write
// a commit differently (an `i18n.commitEncoding` other than UTF-8) or the commit cannot be
// written that way, `commit-tree` and `update-ref` run from one shell as before.

import {
  assertNever,
  buildMessage,
  byPath,
  type CapturedWork,
  err,
  expectObjectId,
  failureOf,
  type GitFailure,
  isObjectId,
  Lane,
  ok,
  parseRaw,
  parseTrailers,
  type Result,
  splitNul,
  type Trailer,
  type TrailerList,
  type WorkEntry,
} from '../../core/index.ts';
import { commitOf, moveRef, moveRefArgs, parkedRef, type ParkKind, readRef } from './refs.ts';
import { git, GitCommandError, identityArgs, PREVIOUS_OUTPUT, runGitSteps } from './runner.ts';
import { CommitWriter } from './commits.ts';
import { TreeBuilder } from './trees.ts';

export interface Integration {
  /** The tasks whose work this commit records (for the reflog message). */
  tasks: number[];
  message: string;
  /** The commit's trailer block (`Foreman-Tasks`, `Foreman-Plan`…), in order. */
  trailers: Array<[string, string]>;
  works: CapturedWork[];
}

export type IntegrationFailure =
  /** The ref is not where the caller thought (compare-and-swap failed). */
  | { kind: 'moved'; expected: string | null; actual: string | null }
  /** Paths whose tip entry differs from the attempt's base entry: another change reached them meanwhile (or two works of the batch both changed them). */
  | { kind: 'conflict'; paths: string[] }
  | { kind: 'git-failed'; failure: GitFailure };

/** A commit an integrator made: its parent and the paths its entries set. */
interface Made {
  parent: string;
  paths: ReadonlySet<string>;
}

/**
 * Commits work onto a repository's refs with plumbing, and keeps what a run's integrations can
 * share instead of asking git again: the identity (asked once), the tree builder's processes and
 * the trees it read or wrote, and the commits it made (so a work from an older base needs no
 * `diff-tree` when none of those commits since its base set one of its paths). Calls run one at
 * a time. `close` ends its processes (they also end with this process).
 */
export class Integrator {
  private identity: Promise<string[]> | null = null;
  private readonly made = new Map<string, Made>();
  private readonly lane = new Lane();
  private readonly trees: TreeBuilder;
  private readonly commits: CommitWriter;

  constructor(readonly repo: string) {
    this.trees = new TreeBuilder(repo);
    this.commits = new CommitWriter(repo);
  }

  /** Whether this integrator made `commit` (an integration, a stack, parked work) or built on it: it exists. */
  knows(commit: string): boolean {
    return this.trees.knowsCommit(commit);
  }

  /** Ends the kept git processes; a later call starts them again. */
  close(): void {
    this.trees.close();
    this.commits.close();
  }

  /** See `integrate`. */
  integrate(ref: string | null, tip: string, integration: Integration): Promise<Result<string, IntegrationFailure>> {
    return this.lane.run(() => this.integrateNow(ref, tip, integration));
  }

  /**
   * Parks `work` awaiting approval: a commit whose parent is the work's base, on
   * `parkedRef(kind, planId, task)` (replacing any earlier parked work of the task). It holds no
   * worktree; approving integrates `parkedWork`, rejecting drops it. `trailers` end its message
   * (`parkedTrailers` reads them back). Returns the commit.
   */
  park(
    planId: string,
    task: number,
    work: CapturedWork,
    message: string,
    kind: ParkKind = 'awaiting',
    trailers?: TrailerList,
  ): Promise<Result<string, GitFailure>> {
    return this.lane.run(async () => {
      const base = expectObjectId(work.base, 'base');
      const tree = await this.trees.treeWith(base, work.entries);
      if (!tree.ok) return err(failureOf(tree.error));
      const made = await this.makeCommit(tree.value, base, buildMessage(message, trailers), [
        'update-ref',
        '-m',
        `foreman: park task ${task}`,
        parkedRef(kind, planId, task),
        PREVIOUS_OUTPUT,
      ]);
      if (!made.ok) return err(failureOf(made.error));
      return made.value.moved?.ok === false ? made.value.moved : ok(made.value.commit);
    });
  }

  private async integrateNow(ref: string | null, tip: string, integration: Integration): Promise<Result<string, IntegrationFailure>> {
    expectObjectId(tip, 'tip');
    const gitFailed = (error: GitCommandError): Result<never, IntegrationFailure> => err({ kind: 'git-failed', failure: failureOf(error) });
    const message = buildMessage(integration.message, integration.trailers);

    const entries: WorkEntry[] = [];
    const seen = new Set<string>();
    const twice = new Set<string>();
    const pathsByBase = new Map<string, string[]>();
    for (const work of integration.works) {
      expectObjectId(work.base, 'base');
      for (const entry of work.entries) {
        if (seen.has(entry.path)) twice.add(entry.path);
        seen.add(entry.path);
        entries.push(entry);
        if (work.base !== tip) pathsByBase.set(work.base, [...(pathsByBase.get(work.base) ?? []), entry.path]);
      }
    }
    if (twice.size > 0) return err({ kind: 'conflict', paths: [...twice].sort(byPath) });
    if (entries.length === 0) return ok(tip);

    // The conflict checks git must answer and the tree are independent: asked side by side.
    const asked = [...pathsByBase].filter(([base, paths]) => !this.untouchedSince(base, tip, paths));
    const [moved, tree] = await Promise.all([
      Promise.all(asked.map(([base, paths]) => changedSince(this.repo, base, tip, paths))),
      this.trees.treeWith(tip, entries),
    ]);
    const conflicts = new Set<string>();
    for (const found of moved) {
      if (!found.ok) return gitFailed(found.error);
      for (const conflicted of found.value) conflicts.add(conflicted);
    }
    if (conflicts.size > 0) return err({ kind: 'conflict', paths: [...conflicts].sort(byPath) });
    if (!tree.ok) return gitFailed(tree.error);

    const reason = `foreman: integrate task${integration.tasks.length === 1 ? '' : 's'} ${integration.tasks.join(', ')}`;
    // No ref: a candidate stack for the gate to test, reachable from nothing until it integrates.
    // Else the ref moves from the tip to the commit in the same shell (a compare-and-swap; the
    // reflog, which refs outside refs/heads lack by default, lets the person see and recover
    // every integration with `git reflog <ref>`).
    const made = await this.makeCommit(tree.value, tip, message, ref === null ? undefined : moveRefArgs(ref, PREVIOUS_OUTPUT, tip, reason));
    if (!made.ok) return gitFailed(made.error);
    const { commit, moved: swap } = made.value;
    this.made.set(commit, { parent: tip, paths: new Set(entries.map((entry) => entry.path)) });
    if (ref === null || swap === null || swap.ok) return ok(commit);
    const swapped = await afterFailedMove(this.repo, ref, commit, tip, reason, swap.error);
    return swapped.ok ? ok(commit) : err(swapped.error);
  }

  /**
   * True when every commit from `tip` back to `base` is one this integrator made and none of them
   * set any of `paths`: the paths are as they were at `base`, no git needed. False means "ask
   * git" (a commit not made here, or a path set since, perhaps set back).
   */
  private untouchedSince(base: string, tip: string, paths: readonly string[]): boolean {
    let commit = tip;
    while (commit !== base) {
      const made = this.made.get(commit);
      if (made === undefined || paths.some((changed) => made.paths.has(changed))) return false;
      commit = made.parent;
    }
    return true;
  }

  /**
   * A commit of `tree` on `parent`, written by the commit writer (or `commit-tree` where it
   * cannot); given `move` (update-ref's arguments, the commit as PREVIOUS_OUTPUT), the ref moved
   * to it (after `commit-tree`, from the same shell: one spawn for both). The commit is returned
   * whenever it was made, with how the move went (null: none asked).
   */
  private async makeCommit(
    tree: string,
    parent: string,
    message: string,
    move?: readonly string[],
  ): Promise<Result<{ commit: string; moved: Result<void, GitFailure> | null }, GitCommandError>> {
    const written = await this.commits.write(tree, parent, message);
    if (written !== null) {
      if (!written.ok) return written;
      const commit = written.value;
      this.trees.rememberCommit(commit, tree);
      if (move === undefined) return ok({ commit, moved: null });
      const moved = await git(
        this.repo,
        move.map((word) => (word === PREVIOUS_OUTPUT ? commit : word)),
      );
      return ok({ commit, moved: moved.ok ? ok(undefined) : err(failureOf(moved.error)) });
    }
    this.identity ??= identityArgs(this.repo);
    const commitArgs = [...(await this.identity), 'commit-tree', tree, '-p', parent];
    const made =
      move === undefined ? await git(this.repo, commitArgs, { input: message }) : await runGitSteps([commitArgs, move], { cwd: this.repo, input: message });
    const moveFailed = !made.ok && move !== undefined && made.error.args[0] === 'update-ref';
    if (!made.ok && !moveFailed) return made;
    const printed: string = made.ok ? made.value : made.error.stdout;
    const commit = printed.trim();
    if (!isObjectId(commit)) return err(new GitCommandError(commitArgs, -1, `commit-tree printed no commit id: ${printed.slice(0, 200)}`));
    this.trees.rememberCommit(commit, tree);
    const moved: Result<void, GitFailure> | null = move === undefined ? null : made.ok ? ok(undefined) : err(failureOf(made.error));
    return ok({ commit, moved });
  }
}

/**
 * `paths` in slices whose command line stays well under the system's limit (ARG_MAX is 2 MiB on
 * Linux, less elsewhere): one slice for any task of ordinary size.
 */
function commandLineChunks(paths: readonly string[], maxBytes = 96 * 1024): string[][] {
  const slices: string[][] = [];
  let slice: string[] = [];
  let bytes = 0;
  for (const item of paths) {
    const size = Buffer.byteLength(item) + 1;
    if (slice.length > 0 && bytes + size > maxBytes) {
      slices.push(slice);
      slice = [];
      bytes = 0;
    }
    slice.push(item);
    bytes += size;
  }
  if (slice.length > 0) slices.push(slice);
  return slices;
}

/** Paths among `paths` whose entries differ between `base` and `tip` (a directory's files too). */
async function changedSince(repo: string, base: string, tip: string, paths: readonly string[]): Promise<Result<string[], GitCommandError>> {
  const found: string[] = [];
  // diff-tree takes no pathspec file: the paths go on the command line.
  for (const chunk of commandLineChunks(paths)) {
    const diff = await git(repo, ['diff-tree', '-r', '-z', '--name-only', '--no-renames', base, tip, '--', ...chunk]);
    if (!diff.ok) return diff;
    found.push(...splitNul(diff.value));
  }
  return ok(found);
}

/**
 * Commits `works` on top of `tip` and moves `ref` there: a compare-and-swap from `tip` (when
 * `ref` does not exist yet, `tip` is the commit it starts from and the ref is created, failing if
 * someone else created it meanwhile). Returns the new commit.
 *
 * Each work's entries are applied over the tip's tree; a path whose entry at the tip differs from
 * the work's base (another task's work reached it since the attempt started), or that two works
 * both change, is a conflict and nothing is committed. Works from an older base integrate as long
 * as their own paths did not move.
 *
 * An integration with no entries at all records nothing: no commit is made and `tip` is returned
 * unchanged (the ref is not touched).
 *
 * `tip` and each work's base are full commit ids (as `readRef` and `captureWork` give them).
 * With `ref` null nothing moves: the commit is returned for the gate to test.
 */
export async function integrate(repo: string, ref: string | null, tip: string, integration: Integration): Promise<Result<string, IntegrationFailure>> {
  const integrator = new Integrator(repo);
  try {
    return await integrator.integrate(ref, tip, integration);
  } finally {
    integrator.close();
  }
}

/**
 * After the compare-and-swap of `ref` from `expected` to `next` failed with `failure`: the ref
 * moved (someone else's commit), or does not exist yet, and is then created at `next` (only if
 * still absent: the first integration of a plan whose ref was not started), or git failed.
 */
async function afterFailedMove(
  repo: string,
  ref: string,
  next: string,
  expected: string,
  reason: string,
  failure: GitFailure,
): Promise<Result<void, IntegrationFailure>> {
  const actual = await readRef(repo, ref);
  if (!actual.ok) return err({ kind: 'git-failed', failure: actual.error });
  if (actual.value !== null) return err(actual.value === expected ? { kind: 'git-failed', failure } : { kind: 'moved', expected, actual: actual.value });
  // An empty old value means "must not exist".
  const created = await moveRef(repo, ref, next, '', reason);
  if (created.ok) return ok(undefined);
  const now = await readRef(repo, ref);
  if (!now.ok) return err({ kind: 'git-failed', failure: now.error });
  return err(now.value === null ? { kind: 'git-failed', failure: created.error } : { kind: 'moved', expected: null, actual: now.value });
}

/**
 * The work parked for `task`, read back from its commit (parent..commit, no renames), or null when
 * none is parked; or why git could not read it. Every parked commit foreman made has its base as
 * its parent: one without (a ref someone else wrote) is a failure to read, not a crash.
 */
export async function parkedWork(repo: string, planId: string, task: number, kind: ParkKind = 'awaiting'): Promise<Result<CapturedWork | null, GitFailure>> {
  const ref = parkedRef(kind, planId, task);
  const commit = await readRef(repo, ref);
  if (!commit.ok) return commit;
  if (commit.value === null) return ok(null);
  const parent = await commitOf(repo, `${commit.value}^1`);
  if (!parent.ok && parent.error.exitCode === 1)
    return err({ step: 'rev-parse', exitCode: 1, stderr: `${ref} is at ${commit.value}, which has no parent: no work foreman parked` });
  if (!parent.ok) return err(failureOf(parent.error));
  const base = parent.value;
  const diff = await git(repo, ['diff-tree', '-r', '-z', '--raw', '--no-renames', '--full-index', base, commit.value]);
  if (!diff.ok) return err(failureOf(diff.error));
  return ok({ base, entries: parseRaw(diff.value).sort((a, b) => byPath(a.path, b.path)) });
}

/** The trailers of the commit parked for `task` (which must be parked: `parkedWork` found it), or why git could not read them. */
export async function parkedTrailers(repo: string, planId: string, task: number, kind: ParkKind): Promise<Result<Trailer[], GitFailure>> {
  const shown = await git(repo, ['log', '-1', '--format=%(trailers:only,unfold)', parkedRef(kind, planId, task), '--']);
  return shown.ok ? ok(parseTrailers(shown.value)) : err(failureOf(shown.error));
}
/** An integration's failure as a git failure, in the words a person reads. */
export function integrationFailure(failure: IntegrationFailure): GitFailure {
  switch (failure.kind) {
    case 'git-failed':
      return failure.failure;
    case 'moved':
      return {
        step: 'update-ref',
        exitCode: 1,
        stderr: `the integration ref moved while foreman was writing it (expected ${failure.expected ?? 'none'}, found ${failure.actual ?? 'none'}): another foreman run on the same plan?`,
      };
    case 'conflict':
      return { step: 'integrate', exitCode: 1, stderr: `the integration tip changed ${failure.paths.join(', ')} after the attempt started` };
    default:
      return assertNever(failure, 'integration failure');
  }
}
