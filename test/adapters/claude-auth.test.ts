// `claude auth status --json` on the real CLI (2.1.330), as a headless run asks it before it
// starts anything: what it says with no credentials, an API key, an apiKeyHelper, Bedrock or
// Vertex, a stored claude.ai login (the only one naming its account), and what a CLI that cannot
// say gives. Each case with a HOME of its own.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { authStatus } from '../../src/adapters/worker/claude-auth.ts';
import { parseAuthStatus } from '../../src/core/hosts/auth-status.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const homes: string[] = [];
afterAll(async () => {
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

async function asked(extra: Record<string, string | undefined> = {}, settings?: object) {
  const home = await tempHome();
  homes.push(home);
  if (settings !== undefined) {
    await mkdir(join(home, '.claude'), { recursive: true });
    await writeFile(join(home, '.claude/settings.json'), JSON.stringify(settings));
  }
  // No key, no base URL: only what `extra` and the settings give.
  return authStatus(claudeBin, home, claudeEnv(undefined, home, extra) as NodeJS.ProcessEnv);
}

describe('claude auth status, on the real CLI', () => {
  it('no credentials: logged out', async () => {
    expect(await asked()).toEqual({ kind: 'logged-out' });
  });

  it('an API key, a helper in the settings (not run), Bedrock, Vertex: logged in', async () => {
    expect(await asked({ ANTHROPIC_API_KEY: 'sk-ant-test' })).toEqual({ kind: 'logged-in', method: 'api_key' });
    expect(await asked({}, { apiKeyHelper: 'exit 1' })).toEqual({ kind: 'logged-in', method: 'api_key_helper' });
    expect(await asked({ CLAUDE_CODE_USE_BEDROCK: '1' })).toEqual({ kind: 'logged-in', method: 'third_party' });
    expect(await asked({ CLAUDE_CODE_USE_VERTEX: '1' })).toEqual({ kind: 'logged-in', method: 'third_party' });
  });

  it("a stored claude.ai login: logged in, naming its account (the limiter's: docs/hosts.md)", async () => {
    const home = await tempHome();
    homes.push(home);
    await mkdir(join(home, '.claude'), { recursive: true });
    // A login as `claude` stores it (never used here: `auth status` answers without the network).
    const oauth = {
      accessToken: 'sk-ant-oat01-test',
      refreshToken: 'sk-ant-ort01-test',
      expiresAt: 4102444800000,
      scopes: ['user:inference'],
      subscriptionType: 'max',
    };
    await writeFile(join(home, '.claude/.credentials.json'), JSON.stringify({ claudeAiOauth: oauth }));
    await writeFile(
      join(home, '.claude.json'),
      JSON.stringify({ oauthAccount: { accountUuid: 'acc-1', emailAddress: 'other@example.com', organizationUuid: 'org-2', organizationName: 'Other Org' } }),
    );
    expect(await authStatus(claudeBin, home, claudeEnv(undefined, home, {}) as NodeJS.ProcessEnv)).toEqual({
      kind: 'logged-in',
      method: 'claude.ai',
      account: { email: 'other@example.com', orgId: 'org-2', orgName: 'Other Org' },
    });
  });

  it('a program that is not the CLI, or none, cannot say', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'foreman-auth-'));
    homes.push(dir);
    const notClaude = join(dir, 'not-claude');
    await writeFile(notClaude, '#!/bin/sh\necho "usage: not-claude"\nexit 2\n', { mode: 0o755 });
    expect(await authStatus(notClaude, dir, process.env)).toEqual({ kind: 'unknown', why: 'its answer is not JSON' });
    expect((await authStatus(join(dir, 'missing'), dir, process.env)).kind).toBe('unknown');
  });
});

describe('parseAuthStatus', () => {
  it('refuses only on loggedIn: false', () => {
    expect(parseAuthStatus('{"loggedIn": false, "authMethod": "none"}')).toEqual({ kind: 'logged-out' });
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "claude.ai"}')).toEqual({ kind: 'logged-in', method: 'claude.ai' });
    expect(parseAuthStatus('{"loggedIn": true}')).toEqual({ kind: 'logged-in', method: 'unknown' });
    expect(parseAuthStatus('{"loggedIn": "no"}').kind).toBe('unknown');
    expect(parseAuthStatus('Not logged in. Run claude auth login to authenticate.').kind).toBe('unknown');
    expect(parseAuthStatus('null').kind).toBe('unknown');
  });

  it("names a claude.ai login's account (its email and organization), and none for an API key or a provider", () => {
    // As 2.1.330 prints them (its bundle: `authMethod` "claude.ai" adds email, orgId and orgName; an API key its source).
    const claudeAi =
      '{"loggedIn": true, "authMethod": "claude.ai", "apiProvider": "firstParty", "email": "me@example.com", "orgId": "org-1", "orgName": "Acme", "subscriptionType": "max"}';
    expect(parseAuthStatus(claudeAi)).toEqual({
      kind: 'logged-in',
      method: 'claude.ai',
      account: { email: 'me@example.com', orgId: 'org-1', orgName: 'Acme' },
    });
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "claude.ai", "email": "me@example.com", "orgId": "org-1"}')).toEqual({
      kind: 'logged-in',
      method: 'claude.ai',
      account: { email: 'me@example.com', orgId: 'org-1' },
    });
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty", "apiKeySource": "ANTHROPIC_API_KEY"}')).toEqual({
      kind: 'logged-in',
      method: 'api_key',
    });
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "third_party", "apiProvider": "bedrock"}')).toEqual({ kind: 'logged-in', method: 'third_party' });
    // An email without its organization (or another method claiming one) names no account.
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "claude.ai", "email": "me@example.com"}')).toEqual({ kind: 'logged-in', method: 'claude.ai' });
    expect(parseAuthStatus('{"loggedIn": true, "authMethod": "api_key", "email": "me@example.com", "orgId": "org-1"}')).toEqual({
      kind: 'logged-in',
      method: 'api_key',
    });
  });
});
