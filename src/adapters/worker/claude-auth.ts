// Asks the Claude Code CLI whether it is logged in, before a headless run starts anything:
// `claude auth status --json`, which answers locally (no request to the API) in about 0.4 s of
// CPU. Non-essential traffic is turned off for it, so it makes no connection at all. It has a
// fixed time limit; a CLI that does not answer in time, or cannot be started, cannot say.

import { assertNever, type AuthStatus, parseAuthStatus } from '../../core/index.ts';
import { type ProcessEnd, type ProcessRequest, runProcess } from '../processes/index.ts';

/** How long `auth status` may take (it answers in well under a second). */
export const AUTH_STATUS_LIMIT_MS = 20_000;

/**
 * What the CLI at `claudeBin` (a path) says of its login, asked in `cwd` (its settings there count)
 * with `env`; started by `run` (a remote host forks it, keeping its temporary files off the host).
 */
export async function authStatus(
  claudeBin: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  run: (request: ProcessRequest) => Promise<ProcessEnd> = runProcess,
): Promise<AuthStatus> {
  const ended = await run({
    file: claudeBin,
    args: ['auth', 'status', '--json'],
    cwd,
    env: { ...env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    timeoutMs: AUTH_STATUS_LIMIT_MS,
  }).catch((caught: unknown): ProcessEnd => ({ kind: 'not-started', message: (caught as Error).message }));
  switch (ended.kind) {
    case 'exited':
      return parseAuthStatus(ended.stdout.toString('utf8'));
    case 'timed-out':
      return { kind: 'unknown', why: `it did not answer within ${AUTH_STATUS_LIMIT_MS / 1000}s` };
    case 'not-started':
      return { kind: 'unknown', why: ended.message };
    default:
      return assertNever(ended, 'process end');
  }
}
