// What a task's work parked for approval changes (core/integration/parked-change.ts), read from its ref; and
// the diff of earlier work an attempt starts from, for its prompt.

import { err, failureOf, type GitFailure, ok, type ParkedChange, parseChangedFiles, type Result } from '../../core/index.ts';
import { awaitingRef, commitOf, readRef } from './refs.ts';
import { git } from './runner.ts';

/** The work parked for `task` awaiting approval and what it changes, or null when none is parked. */
export async function parkedChange(repo: string, planId: string, task: number): Promise<Result<ParkedChange | null, GitFailure>> {
  const parked = await readRef(repo, awaitingRef(planId, task));
  if (!parked.ok) return parked;
  const commit = parked.value;
  if (commit === null) return ok(null);
  const base = await commitOf(repo, `${commit}^1`);
  if (!base.ok) return err(failureOf(base.error));
  const diff = (format: string) => git(repo, ['diff-tree', '-r', '-z', '--no-renames', format, base.value, commit]);
  const [names, counts] = [await diff('--name-status'), await diff('--numstat')];
  if (!names.ok) return err(failureOf(names.error));
  if (!counts.ok) return err(failureOf(counts.error));
  return ok({ base: base.value, commit, files: parseChangedFiles(names.value, counts.value) });
}

/** The diff of the work between `base` and `commit`, as a worker's prompt shows the work so far. */
export async function workDiff(repo: string, base: string, commit: string): Promise<Result<string, GitFailure>> {
  const diff = await git(repo, ['diff', '--no-color', '--no-ext-diff', '--no-renames', base, commit, '--']);
  return diff.ok ? diff : err(failureOf(diff.error));
}
