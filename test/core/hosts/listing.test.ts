// What the dry run says of each host once the host checks have run: the checks' results go in
// through `hostEvents` (by host name) and come out in the events and the text, a failure with its fix.

import { describe, expect, it } from 'vitest';
import { describeHosts, hostEvents } from '../../../src/core/report/host-listing.ts';
import { parseHosts } from '../../../src/core/hosts/url.ts';

describe('the hosts of a dry run', () => {
  it('carries what the host checks found, each failure with its fix; a host not checked says so', () => {
    const hosts = parseHosts([
      { text: 'ssh://a/w?slots=2&include=1', origin: '--host' },
      { text: 'ssh://b/w', origin: '--host' },
    ]);
    if (!hosts.ok) throw new Error(hosts.error);
    const checks = new Map([
      [
        'a',
        [
          { check: 'git', passed: true, found: 'git 2.43.0, sha1 objects', fix: null },
          { check: 'claude', passed: false, found: 'not found on the PATH of an ssh command', fix: 'set claude=/absolute/path in its URL' },
        ],
      ],
    ]);
    const events = hostEvents(hosts.value, [{ path: '.env', link: null }], checks);
    expect(events[0]!.checks).toHaveLength(2);
    expect(events[1]!.checks).toBeUndefined();
    expect(describeHosts(events, 3)).toEqual([
      'Hosts (--host): 2 hosts, 6 slots; up to 3 workers at once (--concurrency)',
      '  a: 2 slots, work dir /w; claude claude, node node, git git',
      '    .worktreeinclude files sent (include=1): .env',
      '    ok git: git 2.43.0, sha1 objects',
      '    FAILED claude: not found on the PATH of an ssh command; set claude=/absolute/path in its URL',
      '  b: 4 slots, work dir /w; claude claude, node node, git git',
      '    .worktreeinclude files: none sent (its URL has no include=1)',
      '    checks: not run',
    ]);
    expect(describeHosts([], 3)).toEqual([]);
  });
});
