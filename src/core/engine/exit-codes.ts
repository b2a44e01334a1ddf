// Exit codes shared by every foreman command (and recorded in a run's run-finished event).
export const EXIT = {
  /** Success: every task completed, or the command did what was asked. */
  ok: 0,
  /** Ran, but the plan is not complete (failed, blocked, skipped, breaker, deadlock, budget, awaiting approval). */
  incomplete: 1,
  /**
   * Invalid input or usage: a bad plan, bad flags, not a git repository (or not its top), a
   * repository with no commit yet, a repository in the middle of a merge/rebase/…, a declared path
   * that is ignored, unsafe or contradicted by the last commit, a dirty file in the way.
   */
  invalid: 2,
  /** Could not run: the agent CLI is missing or not authenticated, the sandbox `on` asks for cannot run, or another run holds the lock (or a live git the index). */
  cannotRun: 3,
  /**
   * A git step failed (a commit refused by signing or a locked index, a restore): the message
   * says which and what git said; nothing foreman staged is left staged. Fix it and run again.
   */
  gitFailed: 4,
  /**
   * A rate or usage limit would have held the run longer than `--limit-wait`, or the API was out of
   * reach that long: it drained and stopped; run it again after the time it names, or when the API
   * answers (sysexits' EX_TEMPFAIL: try again later).
   */
  limited: 75,
  /** Interrupted by SIGINT or SIGHUP (or a second SIGTERM: a first one drains). */
  interrupted: 130,
  /** An internal error: a bug in foreman (one line, plus a stack trace with FOREMAN_DEBUG=1). */
  internal: 70,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
