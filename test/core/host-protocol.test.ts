// The host protocol's lines and what a host's findings mean, pure.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { DEFAULT_MIN_FREE_BYTES, hostProblems, type SandboxStart, versionNumbers } from '../../src/core/hosts/host-checks.ts';
import type { HostFindings, ToHost } from '../../src/core/hosts/host-protocol.ts';
import * as protocol from '../../src/core/hosts/host-protocol.ts';

describe('the host protocol', () => {
  test('every message foreman sends reads back as itself, on one line', () => {
    const message = fc.oneof(
      fc.constant<ToHost>({ type: 'ping' }),
      fc.record({ type: fc.constant('input' as const), id: fc.integer({ min: 1 }), data: fc.base64String() }),
      fc.record({ type: fc.constantFrom('input-end' as const, 'cancel' as const), id: fc.integer({ min: 1 }) }),
      fc.record({
        type: fc.constant('request' as const),
        id: fc.integer({ min: 1 }),
        request: fc.oneof(
          fc.record(
            {
              op: fc.constant('run' as const),
              argv: fc.array(fc.string(), { minLength: 1 }),
              cwd: fc.string(),
              env: fc.dictionary(fc.string(), fc.string()),
              stdin: fc.boolean(),
              sandbox: fc.oneof(
                fc.record({ kind: fc.constant('check' as const), network: fc.array(fc.string()) }),
                fc.record({ kind: fc.constant('setup' as const), network: fc.array(fc.string()) }, { requiredKeys: ['kind'] }),
              ),
            },
            { requiredKeys: ['op', 'argv', 'cwd', 'env', 'stdin'] },
          ),
          fc.record({ op: fc.constant('sandbox-helper' as const), keep: fc.boolean() }),
          fc.constant({ op: 'sandbox-check' as const }),
        ),
      }),
    );
    fc.assert(
      fc.property(message, (sent) => {
        const line = protocol.messageLine(sent);
        expect(line.indexOf('\n')).toBe(line.length - 1);
        expect(protocol.readToHost(line.slice(0, -1))).toEqual({ ok: true, value: sent });
      }),
    );
  });

  test('a line that is no message is named, never thrown', () => {
    expect(protocol.readToHost('not json')).toEqual({ ok: false, error: 'a line that is not JSON' });
    expect(protocol.readToHost('[1]')).toEqual({ ok: false, error: 'a message that is not an object' });
    expect(protocol.readToHost('{"type":"request","id":1,"request":{"op":"open-run","repository":"../x","plan":"p","objectFormat":"sha1"}}')).toEqual({
      ok: false,
      error: 'request 1 is none the host knows',
    });
    // plan clean's plans: folder names each, and only under a repository.
    const clean = (request: object) => protocol.readToHost(JSON.stringify({ type: 'request', id: 2, request: { op: 'clean', ...request } }));
    expect(clean({ repository: 'r-1', plans: ['p-1', 'p-2'] })).toEqual({
      ok: true,
      value: { type: 'request', id: 2, request: { op: 'clean', repository: 'r-1', plans: ['p-1', 'p-2'] } },
    });
    for (const bad of [{ plans: ['p-1'] }, { repository: 'r-1', plans: ['../p'] }, { repository: 'r-1', plans: 'p-1' }])
      expect(clean(bad)).toEqual({ ok: false, error: 'request 2 is none the host knows' });
    // A run's sandbox: a check's names its network; anything else is no request the host runs.
    const run = (sandbox: unknown) =>
      protocol.readToHost(JSON.stringify({ type: 'request', id: 3, request: { op: 'run', argv: ['true'], cwd: '.', env: {}, stdin: false, sandbox } }));
    for (const bad of [{ kind: 'check' }, { kind: 'check', network: 'example.com' }, { kind: 'none' }, { kind: 'setup', network: [1] }, 'on'])
      expect(run(bad), JSON.stringify(bad)).toEqual({ ok: false, error: 'request 3 is none the host knows' });
    expect(protocol.readFromHost('{"type":"launch"}')).toEqual({ ok: false, error: 'a message of an unknown type (launch)' });
  });

  test('a stream is cut into chunks whose lines stay far under the cap', () => {
    const bytes = Buffer.alloc(protocol.CHUNK_BYTES * 2 + 5, 7);
    const chunks = [...protocol.base64Chunks(bytes)];
    expect(chunks).toHaveLength(3);
    expect(Buffer.concat(chunks.map((chunk) => Buffer.from(chunk, 'base64')))).toEqual(bytes);
    expect(protocol.messageLine({ type: 'input', id: 1, data: chunks[0] as string }).length).toBeLessThan(protocol.MAX_LINE_BYTES / 8);
  });
});

const found = (overrides: Partial<HostFindings> = {}): HostFindings => ({
  platform: 'linux',
  path: '/usr/bin:/bin',
  git: { name: 'git', path: '/usr/bin/git', version: 'git version 2.39.5' },
  node: { version: 'v20.20.2', path: '/usr/bin/node' },
  claude: { name: 'claude', path: '/usr/local/bin/claude' },
  auth: { kind: 'logged-in', method: 'claude.ai' },
  sandbox: [
    { name: 'bwrap', path: '/usr/bin/bwrap' },
    { name: 'socat', path: null },
    { name: 'rg', path: '/usr/bin/rg' },
  ],
  workDir: { exists: true, freeBytes: 10 * 1024 ** 3, checkedAt: '/srv/foreman' },
  ...overrides,
});

const needs = { objectFormat: 'sha1' as const, claude: 'claude', minFreeBytes: DEFAULT_MIN_FREE_BYTES, sandbox: false };

describe("a host's findings", () => {
  test('a host with everything takes part; missing sandbox tools stop it only under --sandbox on', () => {
    expect(hostProblems(found(), needs)).toEqual([{ check: 'sandbox', message: expect.stringContaining('socat'), stops: false }]);
    expect(hostProblems(found(), { ...needs, sandbox: true })).toEqual([{ check: 'sandbox', message: expect.stringContaining('socat'), stops: true }]);
  });

  test('each missing piece is named with its fix', () => {
    const problems = hostProblems(
      found({
        git: { name: 'git', path: '/usr/bin/git', version: 'git version 2.25.1' },
        node: { version: 'v18.19.0', path: '/usr/bin/node' },
        claude: { name: 'claude', path: null },
        auth: null,
        workDir: { exists: false, freeBytes: 1024 ** 2, checkedAt: '/srv' },
      }),
      { ...needs, objectFormat: 'sha256' },
    );
    expect(problems.map((problem) => [problem.stops, problem.message])).toEqual([
      [true, expect.stringMatching(/^git there is git version 2\.25\.1, older than 2\.31 \(and the repository uses SHA-256 objects\)/)],
      [true, expect.stringContaining("name it with the URL's node= parameter")],
      [true, expect.stringContaining("name it with the URL's claude= parameter")],
      [false, expect.stringContaining('socat')],
      [true, expect.stringContaining('the work dir has 0.0 GiB free (/srv)')],
    ]);
    expect(hostProblems(found({ auth: { kind: 'logged-out' } }), needs)[0]?.message).toContain('is not logged in');
  });

  test('versions are read from what git and node say', () => {
    expect(versionNumbers('git version 2.39.5 (Apple Git-154)')).toEqual([2, 39]);
    expect(versionNumbers('v20.11.1')).toEqual([20, 11]);
    expect(versionNumbers('nothing')).toBeNull();
  });

  const tools = found().sandbox.map((tool) => ({ ...tool, path: `/usr/bin/${tool.name}` }));
  const nodeProblems = (version: string, sandbox: boolean) =>
    hostProblems(found({ node: { version, path: '/usr/bin/node' }, sandbox: tools }), { ...needs, sandbox }).filter((problem) => problem.check === 'node');

  test('a Node older than the sandbox runtime’s 20.11 is refused only when the run sandboxes; one older than 20 always', () => {
    expect(nodeProblems('v20.5.0', true)).toEqual([
      {
        check: 'node',
        message:
          "Node.js there is v20.5.0, older than the 20.11 the sandbox needs (its runtime, @anthropic-ai/sandbox-runtime, declares Node >= 20.11): install Node.js 20.11 or later there (or name one with the URL's node= parameter), or run with --sandbox off",
        stops: true,
      },
    ]);
    expect(nodeProblems('v20.5.0', false)).toEqual([]);
    expect(nodeProblems('v20.11.0', true)).toEqual([]);
    expect(nodeProblems('v22.1.0', true)).toEqual([]);
    for (const sandbox of [true, false])
      expect(nodeProblems('v18.19.0', sandbox).map((problem) => problem.message)).toEqual([
        "Node.js there is v18.19.0, older than 20: install a newer one, or name it with the URL's node= parameter",
      ]);
  });

  test('a sandbox that does not start there stops the host under the sandbox, named with why and what to do, unless a finding before explains it', () => {
    const failed: SandboxStart = { kind: 'failed', stage: 'run', why: 'exit 1: bwrap: No permissions to create new namespace' };
    const sandboxed = { ...needs, sandbox: true };
    expect(hostProblems(found({ sandbox: tools }), sandboxed, failed)).toEqual([
      {
        check: 'sandbox-start',
        message:
          "the sandbox could not start there: a sandboxed `true` failed (exit 1: bwrap: No permissions to create new namespace): make bubblewrap work for the host's user (bubblewrap, socat and ripgrep installed, unprivileged user namespaces allowed: `bwrap --ro-bind / / true` must run there), or run with --sandbox off",
        stops: true,
      },
    ]);
    expect(hostProblems(found({ sandbox: tools }), sandboxed, { kind: 'failed', stage: 'helper', why: 'ENOSPC' })[0]?.message).toBe(
      "the sandbox could not start there: its helper could not be kept in the work dir (ENOSPC): free space there or fix the work dir's permissions, or run with --sandbox off",
    );
    expect(hostProblems(found({ sandbox: tools }), sandboxed, { kind: 'started' })).toEqual([]);
    // Its tools missing, or a Node too old for it, say why already.
    expect(hostProblems(found(), sandboxed, failed).map((problem) => problem.check)).toEqual(['sandbox']);
    expect(
      hostProblems(found({ sandbox: tools, node: { version: 'v20.5.0', path: '/usr/bin/node' } }), sandboxed, failed).map((problem) => problem.check),
    ).toEqual(['node']);
    // Without the sandbox, what trying it found is no matter.
    expect(hostProblems(found({ sandbox: tools }), needs, failed)).toEqual([]);
  });
});
