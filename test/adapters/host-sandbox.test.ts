// The operating-system sandbox on a host, on real OpenSSH (test/support/sshd.ts: sshd on
// 127.0.0.1, key login only): a sandboxed command there is wrapped by a sandbox host of the remote
// program, whose TMPDIR (where the runtime keeps its bridge sockets) is given to it in the work
// dir, while the remote side's own environment stays as it started.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type HostChannel, openChannel } from '../../src/adapters/host/channel.ts';
import { hostProgram, type HostProgram } from '../../src/adapters/host/program.ts';
import { sendSandboxHelper } from '../../src/adapters/host/sandbox-helper.ts';
import { type SshHost, sshTransport } from '../../src/adapters/host/ssh.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { HostEvent } from '../../src/core/hosts/host-protocol.ts';
import { childrenOf } from '../support/processes.ts';
import { sshdMissing, startTestSshd, type TestSshd } from '../support/sshd.ts';

const describeSshd = sshdMissing === null ? describe : describe.skip;
if (sshdMissing !== null) console.warn(`host-sandbox.test.ts skips: ${sshdMissing}`);

let sshd: TestSshd;
let program: HostProgram;

beforeAll(async () => {
  if (sshdMissing !== null) return;
  [sshd, program] = await Promise.all([startTestSshd(1), hostProgram()]);
});
afterAll(async () => {
  await sshd?.stop();
});

const open = async (host: SshHost): Promise<HostChannel> => {
  const opened = await openChannel(sshTransport(host, sshd.env), { program });
  if (!opened.ok) throw new Error(`the channel to ${host.host} did not open: ${opened.error.message}`);
  return opened.value;
};

/** A variable of a process's environment as it was started (/proc/<pid>/environ). */
const startedWith = (pid: number, name: string): string | undefined =>
  readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .find((entry) => entry.startsWith(`${name}=`))
    ?.slice(name.length + 1);

describeSshd('the sandbox on a host, on real sshd', () => {
  test('a sandboxed command’s sandbox host is given its TMPDIR in the work dir; the remote side’s own environment is left as it started', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    const host = sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>;
    // A claude that writes down the TMPDIR the remote side gives the commands it starts with its own environment (`claude auth status` in the checks).
    const seen = join(host.workDir, '..', 'tmpdir-seen');
    const claude = join(host.workDir, '..', 'claude-tmpdir');
    writeFileSync(claude, `#!/bin/sh\necho "\${TMPDIR-unset}" > '${seen}'\necho '{"loggedIn": true}'\n`, { mode: 0o755 });
    const channel = await open(host.host);
    try {
      const opened = await channel.request({ op: 'open-run', repository: 'repo-1', plan: 'plan-sandboxed', objectFormat: 'sha1' });
      if (!opened.ok) throw new Error(JSON.stringify(opened.error));
      const helper = await sendSandboxHelper(channel);
      if (!helper.ok) throw new Error(JSON.stringify(helper.error));
      const before = await channel.request({ op: 'checks', claude });
      if (!before.ok) throw new Error(JSON.stringify(before.error));
      const own = readFileSync(seen, 'utf8');
      for (const id of [1, 2]) {
        let stdout = '';
        const ran = await channel.request(
          { op: 'run', argv: ['sh', '-c', 'echo "$TMPDIR"'], cwd: '.', env: {}, stdin: false, sandbox: { kind: 'check', network: [] } },
          {
            onEvent: (event: HostEvent) => {
              if (event.kind === 'stdout') stdout += Buffer.from(event.data, 'base64').toString('utf8');
            },
          },
        );
        expect(ran.ok ? ran.value : ran.error, `sandboxed run ${id}`).toEqual({ kind: 'exited', code: 0 });
        // The command's own TMPDIR, under the work dir's `.t/`.
        expect(stdout.trim().startsWith(join(host.workDir, '.t', `${channel.hello.pid.toString(36)}-c`))).toBe(true);
      }
      // One sandbox host served both (the same network), started with the TMPDIR it was given.
      const sandboxHosts = childrenOf(channel.hello.pid, 'sandbox-host');
      expect(sandboxHosts).toHaveLength(1);
      expect(startedWith(sandboxHosts[0] as number, 'TMPDIR')).toBe(join(host.workDir, '.t', `${channel.hello.pid.toString(36)}-h`));
      // What the remote side starts with its own environment gets the TMPDIR it got before: no sandboxed request changed it.
      const after = await channel.request({ op: 'checks', claude });
      if (!after.ok) throw new Error(JSON.stringify(after.error));
      expect(readFileSync(seen, 'utf8')).toBe(own);
      expect(own.trim()).not.toContain(join(host.workDir, '.t'));
    } finally {
      await channel.close();
    }
    expect(readdirSync(join(host.workDir, '.t'))).toEqual([]);
  });
});
