// Exit codes (core/exit-codes.ts) and the error a command fails with.
import { EXIT, type ExitCode } from '../core/exit-codes.ts';

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

export const usageError = (message: string) => new CliError(EXIT.invalid, [message]);
