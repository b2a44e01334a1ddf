// Which limiter a host's attempts answer to. Rate and usage limits are an account's, so the
// limiter is per account: the hosts logged in to the account this machine is logged in to share
// the run's limiter, and so do the hosts whose login names no account (an API key, a token, a
// cloud provider: `claude auth status` names an account only for a claude.ai login), which cannot
// be told apart from it; a host naming another account has that account's limiter, shared with
// the hosts naming the same one. Pure.

import type { AuthStatus } from './auth-status.ts';

/** What names an account: a claude.ai login's organization and email; null for a login that names none. */
export function accountKey(status: AuthStatus | null): string | null {
  if (status?.kind !== 'logged-in' || status.account === undefined) return null;
  return `${status.account.orgId}/${status.account.email}`;
}

/** A login's account in words (`me@example.com of Acme`), or null when it names none. */
export function accountWords(status: AuthStatus | null): string | null {
  if (status?.kind !== 'logged-in' || status.account === undefined) return null;
  const { email, orgName } = status.account;
  return orgName === undefined ? email : `${email} of ${orgName}`;
}

/**
 * The hosts whose attempts answer to a limiter of their own account's, each with that account's
 * key; a host not in it shares the run's limiter (this machine's account, or its login names none
 * here or there).
 */
export function hostAccounts(thisMachine: AuthStatus | null, hosts: ReadonlyArray<{ name: string; auth: AuthStatus | null }>): Map<string, string> {
  const ours = accountKey(thisMachine);
  const accounts = new Map<string, string>();
  for (const host of hosts) {
    const key = accountKey(host.auth);
    if (key !== null && key !== ours) accounts.set(host.name, key);
  }
  return accounts;
}
