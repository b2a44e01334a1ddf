// How a refused setup is told, the same for `execute` and `plan setup`: an exit code, a short
// kind for the /execute skill's JSON, and the lines to print (the first one says it all).

import { assertNever, commandHint, describeGitFailure, noCommitLine } from '../core/index.ts';
import { describeIgnored, type SetupProblem } from '../run/index.ts';
import { EXIT, type ExitCode } from './exit.ts';
import { lockHeldMessage, type LockInfo, ownLayout } from '../adapters/index.ts';

/** The line for a plan whose lock another run holds (exit 3): the same for `execute`, its dry run and the in-session steps. */
export const lockedLine = (holder: LockInfo): string => `${lockHeldMessage(holder)}; watch it with \`${commandHint('plan', 'status', ownLayout())}\``;

export function describeSetupProblem(problem: SetupProblem): { code: ExitCode; kind: string; lines: string[] } {
  switch (problem.kind) {
    case 'unsafe-paths':
      return { code: EXIT.invalid, kind: 'unsafe-paths', lines: problem.problems };
    case 'ignored-paths':
      return { code: EXIT.invalid, kind: 'ignored-paths', lines: problem.paths.map(describeIgnored) };
    case 'repository-busy':
      return {
        code: EXIT.invalid,
        kind: 'repository-busy',
        lines: [
          `the repository is in the middle of a ${problem.operation}: finish or abort it first (git ${problem.operation === 'bisect' ? 'bisect reset' : `${problem.operation} --continue / --abort`}); landing foreman's work on your branch would mix with it`,
        ],
      };
    case 'not-top':
      return {
        code: EXIT.invalid,
        kind: 'not-top',
        lines: [
          `${problem.dir} is not the top of its git repository (${problem.top}): plan paths are relative to the top, so run from there or pass --repo ${problem.top}`,
        ],
      };
    case 'no-commit':
      return { code: EXIT.invalid, kind: 'no-commit', lines: [noCommitLine(problem.repo)] };
    case 'index-locked':
      return {
        code: EXIT.cannotRun,
        kind: 'index-locked',
        lines: ['another git process is using this repository (.git/index.lock is held open); wait for it to finish and run again'],
      };
    case 'git-failed':
      return {
        code: EXIT.gitFailed,
        kind: 'git-failed',
        lines: [`could not ${problem.doing}: ${describeGitFailure(problem.failure)}; nothing is left staged. Fix it and run again.`],
      };
    case 'setup-failed':
      return {
        code: EXIT.cannotRun,
        kind: 'setup-failed',
        lines: [`${problem.reason}. Fix the plan's context.setupCommand (or what it needs) and run again; no attempt was spent.`],
      };
    default:
      return assertNever(problem, 'setup problem');
  }
}
