// Exit codes shared by every foreman command.
export const EXIT = {
  /** Success: every task completed, or the command did what was asked. */
  ok: 0,
  /** Ran, but the plan is not complete (failed, blocked, skipped, breaker, deadlock, budget, gates). */
  incomplete: 1,
  /** Invalid input or usage: a bad plan, bad flags, not a git repository, a dirty file in the way. */
  invalid: 2,
  /** Could not run: the agent CLI is missing or not authenticated, or another run holds the lock. */
  cannotRun: 3,
  /** Interrupted by SIGINT or SIGTERM. */
  interrupted: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A problem the user must fix: printed as one line (or a list), never as a stack trace. */
export class CliError extends Error {
  constructor(
    readonly code: ExitCode,
    readonly lines: string[],
  ) {
    super(lines.join('\n'));
  }
}

export const usageError = (message: string) => new CliError(EXIT.invalid, [message]);
