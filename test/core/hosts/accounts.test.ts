// Which limiter a host's attempts answer to, from its `claude auth status` and this machine's: the
// run's own unless the host names another account than this machine's; hosts naming the same
// other account share its limiter.

import { describe, expect, it } from 'vitest';
import type { AuthStatus } from '../../../src/core/hosts/auth-status.ts';
import { accountKey, accountWords, hostAccounts } from '../../../src/core/hosts/accounts.ts';

const claudeAi = (email: string, orgId = 'org-1', orgName?: string): AuthStatus => ({
  kind: 'logged-in',
  method: 'claude.ai',
  account: { email, orgId, ...(orgName !== undefined ? { orgName } : {}) },
});
const apiKey: AuthStatus = { kind: 'logged-in', method: 'api_key' };
const unknown: AuthStatus = { kind: 'unknown', why: 'its answer is not JSON' };

describe('a limiter per account', () => {
  it('gives a host naming another account than this machine its own limiter, shared by the hosts naming the same one', () => {
    const hosts = [
      { name: 'same', auth: claudeAi('me@example.com') },
      { name: 'other1', auth: claudeAi('you@example.com') },
      { name: 'other2', auth: claudeAi('you@example.com') },
      { name: 'other-org', auth: claudeAi('me@example.com', 'org-2') },
    ];
    const accounts = hostAccounts(claudeAi('me@example.com'), hosts);
    expect([...accounts]).toEqual([
      ['other1', 'org-1/you@example.com'],
      ['other2', 'org-1/you@example.com'],
      ['other-org', 'org-2/me@example.com'],
    ]);
  });

  it('shares the run’s limiter when a login names no account: an API key, a provider, a CLI that could not say, a host not asked', () => {
    const hosts = [
      { name: 'key', auth: apiKey },
      { name: 'bedrock', auth: { kind: 'logged-in', method: 'third_party' } as AuthStatus },
      { name: 'unknown', auth: unknown },
      { name: 'not-asked', auth: null },
    ];
    expect(hostAccounts(claudeAi('me@example.com'), hosts).size).toBe(0);
    expect(hostAccounts(apiKey, hosts).size).toBe(0);
  });

  it("gives a claude.ai host its account's limiter when this machine's login names none", () => {
    expect([...hostAccounts(apiKey, [{ name: 'b', auth: claudeAi('me@example.com') }])]).toEqual([['b', 'org-1/me@example.com']]);
    expect([...hostAccounts(null, [{ name: 'b', auth: claudeAi('me@example.com') }])]).toEqual([['b', 'org-1/me@example.com']]);
  });

  it('names an account by its email and organization', () => {
    expect(accountKey(claudeAi('me@example.com'))).toBe('org-1/me@example.com');
    expect(accountKey(apiKey)).toBeNull();
    expect(accountWords(claudeAi('me@example.com', 'org-1', 'Acme'))).toBe('me@example.com of Acme');
    expect(accountWords(claudeAi('me@example.com'))).toBe('me@example.com');
    expect(accountWords(unknown)).toBeNull();
  });
});
