// Exit codes (core/engine/exit-codes.ts) and the error a command fails with.
import { describeGitFailure, EXIT, type ExitCode, type GitFailure } from '../core/index.ts';

export { EXIT, type ExitCode };

/** A problem the user must fix: printed as one line (or a list), never as a stack trace. */
export class CliError extends Error {
  constructor(
    readonly code: ExitCode,
    readonly lines: string[],
  ) {
    super(lines.join('\n'));
  }
}

/**
 * A bad flag, argument or flag-like setting (`FOREMAN_SANDBOX`): exit 2, said the one way every
 * command says it, `<command>: <problem> (see --help)` (command.ts `runCommand` words it).
 */
export class UsageError extends CliError {
  constructor(readonly problem: string) {
    super(EXIT.invalid, [problem]);
  }
}

export const usageError = (problem: string) => new UsageError(problem);

/** git failed where a command needed its answer: exit 4, saying what the command was doing and what git said. */
export const gitFailedError = (doing: string, failure: GitFailure): CliError =>
  new CliError(EXIT.gitFailed, [`could not ${doing}: ${describeGitFailure(failure)}`]);
