// What a dry run tells of a host: the ignored files it would get, and what each of its checks found.

/** A `.worktreeinclude` file: its repository path, and for a symbolic link its target as written (null: a regular file). */
export interface IncludedFile {
  path: string;
  link: string | null;
}

/** One check of a host before anything starts (reachable, git, Node, claude, its login, sandbox, free disk), as the checks report it. */
export interface HostCheckResult {
  /** What was checked, in words: `git`, `claude auth status`. */
  check: string;
  passed: boolean;
  /** What was found: `git 2.43.0`, `not found on the PATH of an ssh command`. */
  found: string;
  /** For a failure: what the person does about it (`set claude=/path in the URL`). */
  fix: string | null;
}
