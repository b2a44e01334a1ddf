// Landing: moves the person's branch and working tree to the integration tip, touching exactly
// the paths that differ, and only when no such path holds a change of the person's.
//
// Plumbing only (update-index, checkout-index, update-ref), every call with
// `core.hooksPath=/dev/null`, so none of the person's hooks run (post-checkout, post-merge,
// reference-transaction). The person's other staged and unstaged changes are never touched: only
// the index entries of the differing paths are replaced. The landing is recorded in an intent file
// before anything changes and the record removed when it is done, so a crash in between is
// completed by `resumeLanding`. Order: index, then files (deletions first, so a file can replace a
// directory and the reverse), then the ref; a crash leaves the ref at `from` until every file is
// written.

import { readFile, rm, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  assertNever,
  type Entry,
  err,
  failureOf,
  indexInfo,
  judgeLanding,
  type Landed,
  type LandingProblem,
  type LandMode,
  ok,
  type Result,
  type WorkEntry,
} from '../../core/index.ts';
import { commitOf, gitPath, headRef } from './refs.ts';
import { git, type GitCommandError } from './runner.ts';
import { fileModeConfigured, gitStatus, observe, onDisk, type Step } from './land-observe.ts';
import { type Intent, parseIntent, writeIntent } from './land-intent.ts';

export type { Landed, LandMode, LandingProblem } from '../../core/index.ts';

export interface LandRequest {
  repo: string;
  /** The integration tip to land (a commit id). */
  to: string;
  /** The branch the run started on (`refs/heads/x`), or null when it started on a detached HEAD. */
  branch: string | null;
  mode: LandMode;
  /** worktree mode: the commit whose content the working tree already holds for landed paths (from an earlier --no-commit landing); default HEAD. */
  base?: string;
  /** Where the landing is recorded before it starts (e.g. `<repo>/.design/landing.json`), removed when it is done. */
  intentPath: string;
}

/** The steps of a landing, in order, for tests that stop one part-way (a crash). */
export type LandingStep = 'intent-written' | 'index-updated' | 'files-written' | 'ref-updated';

export interface LandingHooks {
  /** Called after each step; throwing stops the landing there, as a crash would. */
  afterStep?: (step: LandingStep) => void | Promise<void>;
}

/** Removes the file at `repoPath` and then each parent directory that this left empty. */
async function removeFile(repo: string, repoPath: string): Promise<void> {
  const disk = await onDisk(path.join(repo, repoPath));
  // A submodule's directory is left alone, as git's checkout does.
  if (disk.kind === 'absent' || disk.kind === 'directory') return;
  await unlink(path.join(repo, repoPath));
  let parent = path.posix.dirname(repoPath);
  while (parent !== '.') {
    try {
      await rmdir(path.join(repo, parent));
    } catch {
      return; // not empty (or already gone): stop
    }
    parent = path.posix.dirname(parent);
  }
}

/** Writes `to`'s content for `paths` (deletions included) into the working tree, leaving the person's index alone. */
async function writeFilesOnly(repo: string, to: string, paths: readonly string[], toEntries: Map<string, Entry>): Promise<Step<void>> {
  for (const repoPath of paths) if (!toEntries.has(repoPath)) await removeFile(repo, repoPath);
  const present = paths.filter((repoPath) => toEntries.has(repoPath));
  if (present.length === 0) return ok(undefined);
  // One fixed name in the git directory (a linked worktree's own): a crashed landing's leftover is replaced by the next one.
  const located = await gitPath(repo, 'foreman-landing.index');
  if (!located.ok) return located;
  const temporaryIndex = located.value;
  try {
    const env = { GIT_INDEX_FILE: temporaryIndex };
    // The whole tip, so its .gitattributes apply to what is written.
    const read = await git(repo, ['read-tree', to], { env });
    if (!read.ok) return read;
    const written = await git(repo, ['checkout-index', '-f', '-z', '--stdin'], { env, input: present.map((repoPath) => `${repoPath}\0`).join('') });
    return written.ok ? ok(undefined) : written;
  } finally {
    await rm(temporaryIndex, { force: true });
  }
}

/** Commit mode's index and file steps: `to`'s entries into the person's index for `paths`, then the files from it. */
async function moveIndexAndFiles(
  repo: string,
  to: string,
  paths: readonly string[],
  toEntries: Map<string, Entry>,
  hooks: LandingHooks,
): Promise<Result<void, MoveFailure>> {
  // Removals first: a path that becomes a directory (`a` → `a/b`) is removed before its new entries are added.
  const removals = paths.filter((repoPath) => !toEntries.has(repoPath));
  const additions = paths.filter((repoPath) => toEntries.has(repoPath));
  const entries: WorkEntry[] = paths.map((repoPath) => {
    const entry = toEntries.get(repoPath);
    return entry === undefined ? { path: repoPath, deleted: true } : { path: repoPath, ...entry };
  });
  const indexed = await git(repo, ['update-index', '-z', '--index-info'], { input: indexInfo(entries, to) });
  if (!indexed.ok) return err({ error: indexed.error, changedNothing: true });
  await hooks.afterStep?.('index-updated');
  for (const repoPath of removals) await removeFile(repo, repoPath);
  if (additions.length > 0) {
    const written = await git(repo, ['checkout-index', '-f', '-u', '-z', '--stdin'], { input: additions.map((repoPath) => `${repoPath}\0`).join('') });
    if (!written.ok) return err({ error: written.error, changedNothing: false });
  }
  await hooks.afterStep?.('files-written');
  return ok(undefined);
}

/** A failed step of moving the index and files, and whether it failed before anything changed. */
interface MoveFailure {
  error: GitCommandError;
  changedNothing: boolean;
}

const gitFailed = (error: GitCommandError): Result<never, LandingProblem> => err({ kind: 'git-failed', failure: failureOf(error) });

interface Prepared {
  intent: Intent;
  update: string[];
  done: string[];
  toEntries: Map<string, Entry>;
}

/** Judges a landing from `from` to `to`; the problem when a path blocks it. */
async function prepare(
  repo: string,
  intent: Omit<Intent, 'paths' | 'version'>,
  unstagedAt: string,
  resuming: boolean,
): Promise<Result<Prepared, LandingProblem>> {
  const observed = await observe(repo, intent.from, intent.to, unstagedAt);
  if (!observed.ok) return gitFailed(observed.error);
  const { paths, observations } = observed.value;
  const fileMode = await fileModeConfigured(repo);
  if (!fileMode.ok) return gitFailed(fileMode.error);
  const judgement = judgeLanding(observations, { mode: intent.mode, resuming, fileMode: fileMode.value });
  if (judgement.blocked.length > 0) return err({ kind: 'local-changes', paths: judgement.blocked });
  const toEntries = new Map<string, Entry>();
  for (const observation of observations) if (observation.to !== null) toEntries.set(observation.path, observation.to);
  return ok({ intent: { version: 1, ...intent, paths }, update: judgement.update, done: judgement.done, toEntries });
}

/** The ref landing moves: the branch, or HEAD itself when detached. */
const refArgs = (branch: string | null): string[] => (branch === null ? ['--no-deref', 'HEAD'] : [branch]);

/** Carries out a judged landing; the intent file is written first and removed last. */
async function carryOut(repo: string, prepared: Prepared, intentPath: string, hooks: LandingHooks, resuming: boolean): Promise<Result<Landed, LandingProblem>> {
  const { intent, update, toEntries } = prepared;
  if (!resuming) {
    await writeIntent(intentPath, intent);
    await hooks.afterStep?.('intent-written');
  }
  if (update.length > 0) {
    if (intent.mode === 'commit') {
      const moved = await moveIndexAndFiles(repo, intent.to, update, toEntries, hooks);
      if (!moved.ok) {
        // Nothing was changed when the very first git step of a new landing failed (say, the index was locked): no record to keep.
        if (!resuming && moved.error.changedNothing) await rm(intentPath, { force: true });
        return gitFailed(moved.error.error);
      }
    } else {
      const written = await writeFilesOnly(repo, intent.to, update, toEntries);
      if (!written.ok) return gitFailed(written.error);
      await hooks.afterStep?.('files-written');
    }
  }
  if (intent.mode === 'commit') {
    const subject = `foreman: land ${intent.to.slice(0, 12)}`;
    const moved = await git(repo, ['update-ref', '-m', subject, ...refArgs(intent.branch), intent.to, intent.from]);
    if (!moved.ok) return gitFailed(moved.error);
    await hooks.afterStep?.('ref-updated');
  }
  await rm(intentPath, { force: true });
  return ok({ from: intent.from, to: intent.to, paths: [...prepared.done, ...update].sort(), upToDate: false });
}

/**
 * Lands the integration tip `to` on the person's branch (commit mode) or working tree (worktree
 * mode) when it is safe; otherwise changes nothing and says what blocks it.
 */
export async function land(request: LandRequest, hooks: LandingHooks = {}): Promise<Result<Landed, LandingProblem>> {
  const actual = await headRef(request.repo);
  if (!actual.ok) return gitFailed(actual.error);
  if (actual.value !== request.branch) return err({ kind: 'branch-switched', expected: request.branch, actual: actual.value });
  const headFound = await commitOf(request.repo, 'HEAD');
  if (!headFound.ok) return gitFailed(headFound.error);
  const toFound = await commitOf(request.repo, request.to);
  if (!toFound.ok) return gitFailed(toFound.error);
  const [head, to] = [headFound.value, toFound.value];
  switch (request.mode) {
    case 'commit': {
      if (head === to) return ok({ from: head, to, paths: [], upToDate: true });
      const ancestor = await gitStatus(request.repo, ['merge-base', '--is-ancestor', head, to]);
      if (!ancestor.ok) return gitFailed(ancestor.error);
      if (ancestor.value.code === 1) return err({ kind: 'diverged', head, tip: to });
      const prepared = await prepare(request.repo, { mode: 'commit', branch: request.branch, from: head, to }, head, false);
      if (!prepared.ok) return prepared;
      return carryOut(request.repo, prepared.value, request.intentPath, hooks, false);
    }
    case 'worktree': {
      const baseFound = request.base === undefined ? ok(head) : await commitOf(request.repo, request.base);
      if (!baseFound.ok) return gitFailed(baseFound.error);
      const base = baseFound.value;
      if (base === to) return ok({ from: base, to, paths: [], upToDate: true });
      const prepared = await prepare(request.repo, { mode: 'worktree', branch: request.branch, from: base, to }, head, false);
      if (!prepared.ok) return prepared;
      if (prepared.value.update.length === 0 && prepared.value.done.length === 0) return ok({ from: base, to, paths: [], upToDate: true });
      return carryOut(request.repo, prepared.value, request.intentPath, hooks, false);
    }
    default:
      return assertNever(request.mode, 'land mode');
  }
}

/** A landing a crash cut short (its intent file exists): completed when every path is in `from` or `to` state, else left with the problem. Null when none was recorded. */
export async function resumeLanding(repo: string, intentPath: string, hooks: LandingHooks = {}): Promise<Result<Landed, LandingProblem> | null> {
  let text: string;
  try {
    text = await readFile(intentPath, 'utf8');
  } catch (caught) {
    if ((caught as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return err({ kind: 'bad-intent', intentPath, reason: (caught as Error).message });
  }
  const intent = parseIntent(text);
  if (typeof intent === 'string') return err({ kind: 'bad-intent', intentPath, reason: intent });
  const actual = await headRef(repo);
  if (!actual.ok) return gitFailed(actual.error);
  if (actual.value !== intent.branch) return err({ kind: 'branch-switched', expected: intent.branch, actual: actual.value });
  const headFound = await commitOf(repo, 'HEAD');
  if (!headFound.ok) return gitFailed(headFound.error);
  const head = headFound.value;
  switch (intent.mode) {
    case 'commit': {
      // The ref moves after every file is written: at `to`, only removing the record was left,
      // and whatever the files hold now is the person's.
      if (head === intent.to) {
        await rm(intentPath, { force: true });
        return ok({ from: intent.from, to: intent.to, paths: intent.paths, upToDate: false });
      }
      if (head !== intent.from) return err({ kind: 'diverged', head, tip: intent.to });
      const prepared = await prepare(repo, { mode: 'commit', branch: intent.branch, from: intent.from, to: intent.to }, head, true);
      if (!prepared.ok) return prepared;
      return carryOut(repo, prepared.value, intentPath, hooks, true);
    }
    case 'worktree': {
      const prepared = await prepare(repo, { mode: 'worktree', branch: intent.branch, from: intent.from, to: intent.to }, head, true);
      if (!prepared.ok) return prepared;
      return carryOut(repo, prepared.value, intentPath, hooks, true);
    }
    default:
      return assertNever(intent.mode, 'land mode');
  }
}
