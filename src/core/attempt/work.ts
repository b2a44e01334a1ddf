// An attempt's work as git sees it: the commit its worktree started from and the index entries
// of the files it changed, with their contents already stored as git objects. Captured when the
// worker exits, before any check runs, so what is integrated is exactly what the worker left in
// its declared files, never what a check wrote afterwards.

/** One path as the attempt left it: a blob (or symlink, or submodule) entry, or deleted. */
export type WorkEntry = { path: string; mode: string; object: string } | { path: string; deleted: true };

export interface CapturedWork {
  /** The commit the attempt's worktree was at when it started. */
  base: string;
  /** Changed declared paths, sorted by path. */
  entries: WorkEntry[];
}

/** The paths an attempt changed. */
export const pathsOf = (work: CapturedWork): string[] => work.entries.map((entry) => entry.path);
