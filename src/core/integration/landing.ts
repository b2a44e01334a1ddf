// Landing, the pure part: which of the paths that differ between the commit the person's tree is
// at and the integration tip can be moved to the tip, which already are there, and which hold a
// change of the person's that landing must not touch. The adapter (src/adapters/git/land.ts)
// observes the repository and does the moving.

import { commandHint, type Layout } from '../command-hint.ts';
import { assertNever } from '../result.ts';
import { describeGitFailure, type GitFailure } from './git-text.ts';

/** commit: branch, index and files move; worktree (`--no-commit`): only files change, left as uncommitted changes. */
export type LandMode = 'commit' | 'worktree';

/** A tree or index entry: its mode (`100644`, `100755`, `120000`, `160000`) and object id. */
export interface Entry {
  mode: string;
  object: string;
}

/** What the person's index holds for a path. */
export type IndexObservation = { kind: 'entry'; entry: Entry } | { kind: 'absent' } | { kind: 'conflicted' };

/** What is on disk at a path. */
export type FileObservation =
  /** A regular file or a symlink: its mode as git would record it and the id of its content as git would store it (filters applied). */
  | { kind: 'file'; entry: Entry }
  | { kind: 'absent' }
  /** A directory: the files under it (repository-relative), to know whether landing empties it anyway. */
  | { kind: 'directory'; files: string[] };

/** One path that differs between `from` and `to`, as observed before landing. */
export interface PathObservation {
  path: string;
  /** The path in the commit whose content the working tree holds (commit mode: HEAD; worktree mode: `base`). */
  from: Entry | null;
  /** The path in the integration tip. */
  to: Entry | null;
  /** The index entry that means "nothing staged here": `from`'s in commit mode, HEAD's in worktree mode. */
  unstaged: Entry | null;
  index: IndexObservation;
  file: FileObservation;
  /** A leading component of the path that is a file or symlink on disk (`a` for `a/b`), which writing the path would replace. */
  obstacle?: string;
}

/** Why a path blocks landing: the person changed it. */
export type LocalChange = 'staged' | 'modified' | 'untracked' | 'deleted';

/** Where a path stands: as in `from` (to update), as in `to` (done), or changed by someone. */
export type PathState = { kind: 'from' } | { kind: 'to' } | { kind: 'changed'; why: LocalChange };

export interface Judgement {
  /** Paths to move from `from` to `to`. */
  update: string[];
  /** Paths already as in `to` (a landing a crash cut short). */
  done: string[];
  /** Paths holding the person's changes; when any, nothing at all may change. */
  blocked: Array<{ path: string; why: LocalChange }>;
}

export interface JudgeOptions {
  mode: LandMode;
  /**
   * Completing a landing a crash cut short: in commit mode the index may already hold `to`'s
   * entry while the file is still `from`'s (the index is updated before the files are written).
   */
  resuming?: boolean;
  /** core.fileMode: when false the exec bit of a file on disk is not compared (git ignores it too). */
  fileMode?: boolean;
}

const sameEntry = (a: Entry | null, b: Entry | null): boolean => (a === null || b === null ? a === b : a.mode === b.mode && a.object === b.object);

const sameIndex = (index: IndexObservation, entry: Entry | null): boolean => {
  switch (index.kind) {
    case 'conflicted':
      return false;
    case 'absent':
      return entry === null;
    case 'entry':
      return sameEntry(index.entry, entry);
    default:
      return assertNever(index, 'index observation');
  }
};

const isGitlink = (entry: Entry | null): boolean => entry?.mode === '160000';
const isRegular = (mode: string): boolean => mode === '100644' || mode === '100755';

/**
 * Whether what is on disk is `entry`. A submodule's directory (or its absence: git does not
 * populate submodules on checkout) matches a gitlink. `vanishing`: whether every file under a
 * directory goes away with this landing anyway, so the directory stands for nothing.
 */
function fileIs(file: FileObservation, entry: Entry | null, fileMode: boolean, vanishing: (files: string[]) => boolean): boolean {
  if (isGitlink(entry)) return file.kind === 'directory' || file.kind === 'absent';
  switch (file.kind) {
    case 'absent':
      return entry === null;
    case 'directory':
      return entry === null && vanishing(file.files);
    case 'file':
      if (entry === null || file.entry.object !== entry.object) return false;
      if (file.entry.mode === entry.mode) return true;
      return !fileMode && isRegular(file.entry.mode) && isRegular(entry.mode);
    default:
      return assertNever(file, 'file observation');
  }
}

/** Why a path that is neither as in `from` nor as in `to` counts as the person's change. */
function whyChanged(observation: PathObservation, indexUntouched: boolean): LocalChange {
  if (!indexUntouched) return 'staged';
  if (observation.from !== null && observation.file.kind === 'absent') return 'deleted';
  if (observation.from === null) return 'untracked';
  return 'modified';
}

/** Where one path stands; `vanishing` as in `fileIs`. */
export function pathState(observation: PathObservation, options: JudgeOptions, vanishing: (files: string[]) => boolean = () => false): PathState {
  const fileMode = options.fileMode ?? true;
  const indexUntouched = sameIndex(observation.index, observation.unstaged);
  const fileAtFrom = fileIs(observation.file, observation.from, fileMode, vanishing);
  const fileAtTo = fileIs(observation.file, observation.to, fileMode, vanishing);
  switch (options.mode) {
    case 'commit': {
      const indexAtTo = sameIndex(observation.index, observation.to);
      if (indexAtTo && fileAtTo) return { kind: 'to' };
      // A file already holding `to`'s content loses nothing when its index entry moves too.
      if (indexUntouched && (fileAtFrom || fileAtTo)) return { kind: 'from' };
      if (options.resuming && indexAtTo && fileAtFrom) return { kind: 'from' };
      return { kind: 'changed', why: whyChanged(observation, indexUntouched || (options.resuming === true && indexAtTo)) };
    }
    case 'worktree':
      if (indexUntouched && fileAtTo) return { kind: 'to' };
      if (indexUntouched && fileAtFrom) return { kind: 'from' };
      return { kind: 'changed', why: whyChanged(observation, indexUntouched) };
    default:
      return assertNever(options.mode, 'land mode');
  }
}

/**
 * Sorts the differing paths into those to update, those already done and those blocked by the
 * person's changes. A directory standing where `to` puts a file counts as absent only when every
 * file under it is one this landing deletes; a file or symlink standing where `to` needs a
 * directory blocks unless this landing deletes it.
 */
export function judgeLanding(observations: readonly PathObservation[], options: JudgeOptions): Judgement {
  const byPath = new Map(observations.map((observation) => [observation.path, observation]));
  // First pass without directories: which paths are deleted by this landing (to === null) and movable.
  const plain = new Map(observations.map((observation) => [observation.path, pathState(observation, options)]));
  const goesAway = (path: string): boolean => {
    const observation = byPath.get(path);
    const state = plain.get(path);
    return observation !== undefined && observation.to === null && state !== undefined && state.kind !== 'changed';
  };
  const vanishing = (files: string[]): boolean => files.every(goesAway);
  const judgement: Judgement = { update: [], done: [], blocked: [] };
  const blockedPaths = new Set<string>();
  for (const observation of observations) {
    const state = pathState(observation, options, vanishing);
    switch (state.kind) {
      case 'from':
        judgement.update.push(observation.path);
        break;
      case 'to':
        judgement.done.push(observation.path);
        break;
      case 'changed':
        judgement.blocked.push({ path: observation.path, why: state.why });
        blockedPaths.add(observation.path);
        break;
      default:
        assertNever(state, 'path state');
    }
    // A file where `to` needs a directory: writing the path would replace it. One this landing
    // deletes is judged as its own path; any other is not git's (an untracked file).
    const obstacle = observation.obstacle;
    if (obstacle !== undefined && observation.to !== null && !byPath.has(obstacle) && !blockedPaths.has(obstacle)) {
      judgement.blocked.push({ path: obstacle, why: 'untracked' });
      blockedPaths.add(obstacle);
    }
  }
  judgement.update.sort();
  judgement.done.sort();
  judgement.blocked.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return judgement;
}

/** Why landing did not happen. */
/** A landing done: the branch (or the files) moved from `from` to `to`. */
export interface Landed {
  from: string;
  to: string;
  /** The paths written or removed (those a crash had already landed included). */
  paths: string[];
  upToDate: boolean;
}

export type LandingProblem =
  /** HEAD is no longer on the branch the run started on (null: a detached HEAD). */
  | { kind: 'branch-switched'; expected: string | null; actual: string | null }
  /** HEAD is not an ancestor of the tip (the person committed meanwhile). */
  | { kind: 'diverged'; head: string; tip: string }
  | { kind: 'local-changes'; paths: Array<{ path: string; why: LocalChange }> }
  | { kind: 'git-failed'; failure: GitFailure }
  /** The record of a landing a crash cut short cannot be read. */
  | { kind: 'bad-intent'; intentPath: string; reason: string };

const branchName = (ref: string | null): string => (ref === null ? 'a detached HEAD' : ref.replace(/^refs\/heads\//, ''));
const short = (commit: string): string => commit.slice(0, 12);
const MAX_LISTED = 10;

/**
 * The lines of `describeLandingProblem` as one sentence, for a message of one line (empty when
 * nothing blocked landing).
 */
export function landingProblemSentence(lines: readonly string[]): string {
  return lines.length === 0 ? '' : `${lines.join('; ')}.`;
}

/** One line saying what blocks landing, and one saying how to land by hand (`plan land` spelled for `layout`). */
export function describeLandingProblem(problem: LandingProblem, ref: string, layout: Layout): string[] {
  const byHand = `land it with \`${commandHint('plan', 'land', layout)}\`, or by hand with \`git merge --ff-only ${ref}\``;
  switch (problem.kind) {
    case 'branch-switched':
      return [
        `not landed: HEAD is on ${branchName(problem.actual)}, not on ${branchName(problem.expected)} where the run started`,
        `switch back to ${branchName(problem.expected)} and ${byHand}`,
      ];
    case 'diverged':
      return [
        `not landed: the branch has commits the integrated work does not have (HEAD ${short(problem.head)} is not an ancestor of ${short(problem.tip)})`,
        `merge it by hand: \`git merge ${ref}\` (or rebase your commits onto ${ref})`,
      ];
    case 'local-changes': {
      const listed = problem.paths.slice(0, MAX_LISTED).map((change) => `${change.path} (${change.why})`);
      const more = problem.paths.length > MAX_LISTED ? `, and ${problem.paths.length - MAX_LISTED} more` : '';
      const count = problem.paths.length === 1 ? 'a file it would update has' : `${problem.paths.length} files it would update have`;
      return [`not landed: ${count} local changes: ${listed.join(', ')}${more}`, `commit, stash or undo them, then ${byHand}`];
    }
    case 'git-failed':
      return [`not landed: ${describeGitFailure(problem.failure)}`, `try again: ${byHand}`];
    case 'bad-intent':
      return [
        `not landed: the record of an interrupted landing, ${problem.intentPath}, cannot be read: ${problem.reason}`,
        `check \`git status\`, remove ${problem.intentPath}, then ${byHand}`,
      ];
    default:
      return assertNever(problem, 'landing problem');
  }
}
