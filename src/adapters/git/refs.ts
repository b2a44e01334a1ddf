// Refs and revisions: the names of foreman's refs (one spelling each), resolving a revision to a
// commit, asking whether one commit holds another, moving a ref by compare-and-swap, starting the
// plan's integration ref, listing and deleting foreman's refs, and the repository's own
// directories. run/ asks git these things only here.

import path from 'node:path';
import { byPath, coveredBy, err, expectObjectId, failureOf, type GitFailure, isDirPath, ok, type Result } from '../../core/index.ts';
import { git, GitCommandError, runGit } from './runner.ts';

/** foreman's ref namespaces: integration tips, work awaiting approval, candidates of the merge queue, attempts' set-aside changes. */
const NAMESPACES = {
  integration: 'refs/foreman',
  awaiting: 'refs/foreman-awaiting',
  candidate: 'refs/foreman-candidate',
  aside: 'refs/foreman-aside',
} as const;

/** The plan's integration tip: verified work is committed here, never on the person's branch. */
export const integrationRef = (planId: string) => `${NAMESPACES.integration}/${planId}`;

/**
 * Why work is parked on a ref of its own: awaiting approval, a candidate in the merge queue, or
 * an attempt whose changes outside its declared files were set aside (its whole work, kept to be
 * read back; never integrated from there).
 */
export type ParkKind = 'awaiting' | 'candidate' | 'aside';
/** The folder of a plan's parked refs of one kind (`refs/foreman-awaiting/<planId>/`), ending in `/`. */
export const parkedPrefix = (kind: ParkKind, planId: string): string => `${NAMESPACES[kind]}/${planId}/`;
/** A task's parked work: one commit whose parent is the attempt's base. */
export const parkedRef = (kind: ParkKind, planId: string, task: number): string => `${parkedPrefix(kind, planId)}${task}`;
/** A task's work waiting for a person's approval. */
export const awaitingRef = (planId: string, task: number) => parkedRef('awaiting', planId, task);
/** Verified work waiting in the merge queue: kept here until it integrates (or is found to break the build). */
export const candidateRef = (planId: string, task: number) => parkedRef('candidate', planId, task);
/** A task's last attempt that set changes aside: its whole work on its starting commit. */
export const asideRef = (planId: string, task: number) => parkedRef('aside', planId, task);
const PARK_KINDS = ['awaiting', 'candidate', 'aside'] as const;
/** Every folder of a plan's parked refs, relative to the git directory (`refs/foreman-awaiting/<planId>`…). */
export const parkedFolders = (planId: string): string[] => PARK_KINDS.map((kind) => parkedPrefix(kind, planId).slice(0, -1));

/**
 * The full id of the commit `revision` names in `cwd`: the one place a revision is resolved. A
 * failure says why (exit 1: it names no commit; else git could not answer at all).
 */
export async function commitOf(cwd: string, revision: string): Promise<Result<string, GitCommandError>> {
  const found = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`], { cwd });
  if (!found.ok) return found;
  const commit = found.value.trim();
  return commit === '' ? err(new GitCommandError(['rev-parse', revision], 1, `${revision} names no commit`)) : ok(commit);
}

/** The commit `revision` names in `cwd` (default HEAD), or null: no such revision, or an unborn branch. */
export async function resolveCommit(cwd: string, revision = 'HEAD'): Promise<string | null> {
  const found = await commitOf(cwd, revision);
  return found.ok ? found.value : null;
}

/** Whether `descendant`'s history holds `ancestor` (a commit is its own ancestor). */
export async function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  return (await runGit(['merge-base', '--is-ancestor', ancestor, descendant], { cwd })).ok;
}

/** update-ref's arguments for `moveRef` (for a caller that runs it as one of `runGitSteps`). */
export const moveRefArgs = (ref: string, next: string, expected: string, reason: string): string[] => [
  'update-ref',
  '--create-reflog',
  '-m',
  reason,
  ref,
  next,
  expected,
];

/** Move `ref` to `next` only if it is at `expected` (`''`: only if it does not exist yet), with a reflog entry. */
export async function moveRef(cwd: string, ref: string, next: string, expected: string, reason: string): Promise<Result<void, GitFailure>> {
  const moved = await runGit(moveRefArgs(ref, next, expected, reason), { cwd });
  return moved.ok ? ok(undefined) : err(failureOf(moved.error));
}

/**
 * The plan's integration ref starts at HEAD when it does not exist yet. Returns where it starts,
 * or the failure (no commit yet; another process made the ref meanwhile).
 */
export async function startIntegrationRef(repo: string, ref: string): Promise<Result<string, GitFailure>> {
  const head = await resolveCommit(repo);
  if (head === null) return err({ step: 'rev-parse', exitCode: 128, stderr: 'fatal: HEAD does not name a commit (the repository has no commit yet)' });
  const made = await moveRef(repo, ref, head, '', 'foreman: start the integration of this plan');
  return made.ok ? ok(head) : made;
}

/** Where git keeps `name` for the working tree at `cwd` (`.git/<name>`, or a linked worktree's own), absolute. */
export async function gitPath(cwd: string, name: string): Promise<Result<string, GitCommandError>> {
  const found = await runGit(['rev-parse', '--git-path', name], { cwd });
  return found.ok ? ok(path.resolve(cwd, found.value.replace(/\n$/, ''))) : found;
}

/** The directory git keeps the repository's shared data in (`.git` of the main worktree), or null. */
export async function commonGitDir(cwd: string): Promise<string | null> {
  const found = await runGit(['rev-parse', '--git-common-dir'], { cwd });
  return found.ok ? found.value.trim() : null;
}

/**
 * The top of the working tree holding `cwd`: null when git says it is in none; or why git could
 * not say (a repository it refuses to read, such as one another user owns; its time limit).
 */
export async function topLevel(cwd: string): Promise<Result<string | null, GitFailure>> {
  const found = await runGit(['rev-parse', '--show-toplevel'], { cwd });
  if (found.ok) return ok(found.value.trim() || null);
  return outsideWorkTree(found.error) ? ok(null) : err(failureOf(found.error));
}

/** git's own answer that a folder is in no working tree (outside any repository, or inside a `.git` folder or a bare one). */
const outsideWorkTree = (error: GitCommandError): boolean => error.exitCode === 128 && /not a git repository|must be run in a work tree/.test(error.stderr);

/** The ref HEAD points to (`refs/heads/x`, an unborn branch's too), null on a detached HEAD; or why git could not say. */
export async function headRef(cwd: string): Promise<Result<string | null, GitCommandError>> {
  const found = await runGit(['symbolic-ref', '-q', 'HEAD'], { cwd });
  if (found.ok) return ok(found.value.trim() || null);
  return found.error.exitCode === 1 ? ok(null) : found;
}

/** The ref HEAD points to, or null on a detached HEAD (or when git cannot say). */
export async function headBranchRef(cwd: string): Promise<string | null> {
  const found = await headRef(cwd);
  return found.ok ? found.value : null;
}

/** How many commits `range` (`a..b`, or a ref) holds, or null when git cannot say. */
export async function countCommits(cwd: string, range: string): Promise<number | null> {
  const counted = await runGit(['rev-list', '--count', range, '--'], { cwd });
  return counted.ok ? Number(counted.value.trim()) : null;
}

/** Which of `paths` (files, or `dir/`) `commit` does not have. */
export async function missingAt(repo: string, commit: string, paths: readonly string[]): Promise<string[]> {
  const present =
    (await filesIn(
      repo,
      commit,
      paths.map((p) => (isDirPath(p) ? p.slice(0, -1) : p)),
    )) ?? [];
  return paths.filter((p) => !present.some((file) => coveredBy(file, [p])));
}

/** The files of `commit` under `paths` (each a file, or a directory without its `/`), or null when git cannot say. */
export async function filesIn(cwd: string, commit: string, paths: readonly string[]): Promise<string[] | null> {
  const listed = await runGit(['ls-tree', '-r', '-z', '--name-only', commit, '--', ...paths], { cwd });
  return listed.ok ? listed.value.split('\0').filter(Boolean) : null;
}

/** Which of `paths` `commit` holds as regular files (git's modes 100644, 100755), or null when git cannot say. */
export async function regularFilesIn(cwd: string, commit: string, paths: readonly string[]): Promise<Set<string> | null> {
  if (paths.length === 0) return new Set();
  const listed = await runGit(['ls-tree', '-z', '--full-tree', commit, '--', ...paths], { cwd });
  if (!listed.ok) return null;
  return new Set(listed.value.split('\0').flatMap((record) => (/^100(644|755) /.test(record) ? [record.slice(record.indexOf('\t') + 1)] : [])));
}

/**
 * The commit `ref` points at, or null when it does not exist; or why git could not say (it
 * timed out, could not start, or `repo` is no repository).
 */
export async function readRef(repo: string, ref: string): Promise<Result<string | null, GitFailure>> {
  const found = await commitOf(repo, ref);
  if (found.ok) return ok(found.value);
  return found.error.exitCode === 1 ? ok(null) : err(failureOf(found.error));
}

/** Deletes `ref` (when `expected` is given, only if it is still there). Deleting a ref that does not exist succeeds. */
export async function deleteRef(repo: string, ref: string, expected?: string): Promise<Result<void, GitFailure>> {
  const deleted = await git(repo, [
    'update-ref',
    '-m',
    'foreman: clean up',
    '-d',
    ref,
    ...(expected === undefined ? [] : [expectObjectId(expected, 'expected')]),
  ]);
  return deleted.ok ? ok(undefined) : err(failureOf(deleted.error));
}

/**
 * Deletes every ref of the plan `planId` (integration, parked work, candidates): once everything
 * on them has landed. Stops at the first that cannot be deleted, the integration ref last, so a
 * plan whose refs could not all go still has the ref that finds it (`plan land` finishes it).
 */
export async function deletePlanRefs(repo: string, planId: string): Promise<Result<void, GitFailure>> {
  const listed = await foremanRefs(repo, planId);
  if (!listed.ok) return listed;
  const integration = integrationRef(planId);
  const refs = [...listed.value.filter((ref) => ref !== integration), ...listed.value.filter((ref) => ref === integration)];
  for (const ref of refs) {
    const deleted = await deleteRef(repo, ref);
    if (!deleted.ok) return deleted;
  }
  return ok(undefined);
}

/** Drops the work parked for `task` (rejected, or integrated). Nothing parked is fine. */
export function dropParked(repo: string, planId: string, task: number, kind: ParkKind = 'awaiting'): Promise<Result<void, GitFailure>> {
  return deleteRef(repo, parkedRef(kind, planId, task));
}

/** The tasks of a plan with work parked as `kind`. */
export async function parkedTasks(repo: string, planId: string, kind: ParkKind): Promise<Result<number[], GitFailure>> {
  const prefix = parkedPrefix(kind, planId);
  const listed = await git(repo, ['for-each-ref', '--format=%(refname)', prefix]);
  if (!listed.ok) return err(failureOf(listed.error));
  return ok(
    listed.value
      .split('\n')
      .flatMap((ref) => (/^\d+$/.test(ref.slice(prefix.length)) ? [Number(ref.slice(prefix.length))] : []))
      .sort((a, b) => a - b),
  );
}

/** foreman's refs in `repo` (of one plan, when `planId` is given): the integration tips and parked work. */
export async function foremanRefs(repo: string, planId?: string): Promise<Result<string[], GitFailure>> {
  const patterns =
    planId === undefined
      ? Object.values(NAMESPACES).map((namespace) => `${namespace}/`)
      : [integrationRef(planId), ...PARK_KINDS.map((kind) => parkedPrefix(kind, planId))];
  const listed = await git(repo, ['for-each-ref', '--format=%(refname)', ...patterns]);
  if (!listed.ok) return err(failureOf(listed.error));
  return ok(listed.value.split('\n').filter(Boolean).sort(byPath));
}
