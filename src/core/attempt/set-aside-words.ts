// What an attempt changed outside its task's declared files, set aside before its checks ran, and
// how a warning, a failure, a task's line and the run's summary name it, with the git commands
// that read it back.

import { gitHint } from '../command-hint.ts';
import { listSome } from '../format.ts';

/** What an attempt changed outside its task's declared files, set aside before its checks ran. */
export interface SetAside {
  /** The paths (each restored in the worktree to the attempt's starting commit before the checks). */
  paths: string[];
  /** Those the attempt's starting commit holds as regular files (the repository has them). */
  tracked: string[];
  /** A commit holding the attempt's whole work (declared and set aside) on its starting commit, and the ref of foreman's it is on; null when it could not be kept (`keepFailure` says why). */
  kept: { commit: string; ref: string } | null;
  keepFailure?: string;
}

/** How a warning and a failure name what was set aside. */
export const describeSetAside = (setAside: SetAside): string => {
  const where =
    setAside.kept !== null ? `kept in ${setAside.kept.ref}, commit ${setAside.kept.commit.slice(0, 12)}` : `not kept: ${setAside.keepFailure ?? 'unknown'}`;
  return `changed files its task does not declare: ${setAside.paths.join(', ')} (set aside, not integrated; ${where})`;
};

/**
 * The warning that names what was set aside, for a person (the run's journal, `finalize`'s
 * results): with the commands that read it back. Never in a failure, which a retry's prompt
 * quotes: a worker is not to bring those files back.
 */
export const setAsideWarning = (setAside: SetAside): string =>
  `${describeSetAside(setAside)}${setAside.kept !== null ? `: ${setAsideCommands(setAside.kept.commit)}` : ''}`;

/**
 * What a task's line and the run's Summary say of what an attempt set aside: a few of its paths,
 * how many more, and the commands that read them back (`repo`: the repository they name, when the
 * person may not be at its top, where the paths, relative to the top, would not be found).
 */
export function setAsideSummary(setAside: { paths: readonly string[]; commit?: string }, repo?: string): string {
  const which = listSome(setAside.paths);
  return setAside.commit === undefined
    ? `set aside, not integrated (and not kept): ${which}`
    : `set aside, not integrated: ${which} (${setAsideCommands(setAside.commit, repo)})`;
}

/**
 * The git commands that show what an attempt set aside and bring a file of it back, from the
 * commit that keeps the attempt's whole work (its parent is the attempt's start). The commit
 * outlives its ref (`refs/foreman-aside/…`, removed once the plan finishes) until git prunes
 * unreachable objects (two weeks by default), so the commands name the commit.
 */
export function setAsideCommands(commit: string, repo?: string): string {
  const id = commit.slice(0, 12);
  return `\`${gitHint(`show --stat ${id}`, repo)}\` lists them with the attempt's other files, \`${gitHint(`restore --source=${id} -- <path>`, repo)}\` brings one back into your files`;
}
