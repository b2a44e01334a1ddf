// What `claude auth status --json` says of the Claude Code CLI's login, and what a headless run
// does with it: refuse only when the CLI itself says it is not logged in. Seen on 2.1.330
// (test/support/CLI-NOTES.md): it answers locally, `{"loggedIn": false, "authMethod": "none", …}`
// with exit 1 when it has no credentials; `loggedIn: true` with an API key (`api_key`), an auth
// token (`oauth_token`), an `apiKeyHelper` (`api_key_helper`, without running it), a stored
// claude.ai login (`claude.ai`, expired or not) and Bedrock, Vertex or Foundry (`third_party`,
// without looking at their credentials). Anything else — another answer, a CLI without the
// command, a fake — cannot say, and a run is never refused on it. Only a claude.ai login names its
// account (`email`, `orgId`, `orgName`); an API key, a token or a cloud provider names none. Pure.

/** The account a claude.ai login names: its rate and usage limits are that account's. */
export interface LoginAccount {
  email: string;
  orgId: string;
  orgName?: string;
}

/** The CLI's login as its `auth status` tells it. */
export type AuthStatus =
  | { kind: 'logged-in'; method: string; account?: LoginAccount }
  | { kind: 'logged-out' }
  /** It could not say (`why`): the run goes on, and a worker that cannot authenticate stops it then. */
  | { kind: 'unknown'; why: string };

/** `claude auth status --json`'s output read as a login, whatever its exit code (1 when logged out). */
export function parseAuthStatus(stdout: string): AuthStatus {
  let answer: unknown;
  try {
    answer = JSON.parse(stdout);
  } catch {
    return { kind: 'unknown', why: 'its answer is not JSON' };
  }
  const loggedIn = (answer as { loggedIn?: unknown } | null)?.loggedIn;
  if (loggedIn === false) return { kind: 'logged-out' };
  if (loggedIn === true) {
    const method = (answer as { authMethod?: unknown }).authMethod;
    const account = accountOf(answer as Record<string, unknown>);
    return { kind: 'logged-in', method: typeof method === 'string' ? method : 'unknown', ...(account !== null ? { account } : {}) };
  }
  return { kind: 'unknown', why: 'its answer has no loggedIn' };
}

/** The account a claude.ai login's answer names (its email and organization), or null. */
function accountOf(answer: Record<string, unknown>): LoginAccount | null {
  const { authMethod, email, orgId, orgName } = answer;
  if (authMethod !== 'claude.ai' || typeof email !== 'string' || typeof orgId !== 'string' || email === '' || orgId === '') return null;
  return { email, orgId, ...(typeof orgName === 'string' && orgName !== '' ? { orgName } : {}) };
}

/** Why a headless run refuses to start when the CLI is not logged in: the person's next step, in terminal words. */
export function notLoggedInLines(claudeBin: string): string[] {
  return [
    `the Claude Code CLI (${claudeBin}) is not logged in, so no worker could run; nothing was started (its \`auth status\` says loggedIn: false).`,
    'Log in by running `claude` once in a terminal, or set ANTHROPIC_API_KEY, then run again.',
  ];
}
