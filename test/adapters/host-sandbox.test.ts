// The operating-system sandbox on a host, on real OpenSSH (test/support/sshd.ts: two sshd on
// 127.0.0.1, key login only). A run that sandboxes tries a sandboxed `true` on each host before
// any attempt goes there, through the path a sandboxed check takes: a host whose sandbox cannot
// start (here host-b, whose bubblewrap is refused namespaces as in a container without them) is
// left out, named with what failed and what to do, and with no host left the run is refused
// before anything starts; a dry run, which writes nothing there, does not try it, nor does a run
// without the sandbox. A sandboxed command there is wrapped by a sandbox host of the remote
// program, whose TMPDIR (where the runtime keeps its bridge sockets) is given to it in the work
// dir, while the remote side's own environment stays as it started.

import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type HostChannel, openChannel } from '../../src/adapters/host/channel.ts';
import { hostProgram, type HostProgram } from '../../src/adapters/host/program.ts';
import { sendSandboxHelper } from '../../src/adapters/host/sandbox-helper.ts';
import { type SshHost, sshTransport } from '../../src/adapters/host/ssh.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { HostEvent } from '../../src/core/hosts/host-protocol.ts';
import { type Host, parseHosts } from '../../src/core/hosts/url.ts';
import { type CheckedHost, checkHosts } from '../../src/run/hosts.ts';
import { fakeWorker, runExecute } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { childrenOf } from '../support/processes.ts';
import { sshdMissing, startTestSshd, type TestSshd } from '../support/sshd.ts';

const describeSshd = sshdMissing === null ? describe : describe.skip;
if (sshdMissing !== null) console.warn(`host-sandbox.test.ts skips: ${sshdMissing}`);

let sshd: TestSshd;
let program: HostProgram;
const { repos } = leftovers();

/** What host-b's bubblewrap says: refused namespaces, as in a container that grants none. */
const REFUSED = 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.';

beforeAll(async () => {
  if (sshdMissing !== null) return;
  // The hosts' PATH (sshd's SetEnv) finds this bwrap first: the real one, but for a command of host-b's work dir.
  const bin = mkdtempSync(join(tmpdir(), 'foreman-fake-bwrap-'));
  writeFileSync(join(bin, 'bwrap'), `#!/bin/sh\ncase "$TMPDIR" in */host-b/*) echo '${REFUSED}' >&2; exit 1 ;; esac\nexec /usr/bin/bwrap "$@"\n`, {
    mode: 0o755,
  });
  [sshd, program] = await Promise.all([startTestSshd(2, { PATH: `${bin}:/usr/local/bin:/usr/bin:/bin` }), hostProgram()]);
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

/** The ssh processes of channels this test process runs. */
const sshChannels = (): number[] => childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes');

/** Host `index`'s URL (another work dir with `workDir`), the fake worker as its claude. */
const url = (index: number, workDir?: string): string =>
  `ssh://${sshd.hosts[index]!.alias}${workDir ?? sshd.hosts[index]!.workDir}?slots=1&claude=${fakeWorker}`;

const hostsOf = (...urls: string[]): Host[] => {
  const parsed = parseHosts(urls.map((text) => ({ text, origin: '--host' })));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
};

const checkNeeds = (sandbox: boolean, dryRun: boolean) => ({ objectFormat: 'sha1' as const, sandbox, dryRun, env: sshd.env });

/** The one line a host whose sandbox cannot start is left out with. */
const cannotStart = `the sandbox could not start there: a sandboxed \`true\` failed (exit 1: ${REFUSED}): make bubblewrap work for the host's user (bubblewrap, socat and ripgrep installed, unprivileged user namespaces allowed: \`bwrap --ro-bind / / true\` must run there), or run with --sandbox off`;

describeSshd('the sandbox on a host, on real sshd', () => {
  test('a run that sandboxes tries a sandboxed `true` on each host first: a host whose sandbox cannot start is left out, named with what failed and what to do', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    const checked = await checkHosts(hostsOf(url(0), url(1)), checkNeeds(true, false));
    const [a, b] = checked as [CheckedHost, CheckedHost];
    try {
      expect(a.leftOut).toBeNull();
      expect(a.results.find((result) => result.check === 'sandbox start')).toEqual({
        check: 'sandbox start',
        passed: true,
        found: 'a sandboxed `true` ran',
        fix: null,
      });
      expect(b.leftOut).toBe(cannotStart);
      expect(b.results.find((result) => result.check === 'sandbox start')).toEqual({ check: 'sandbox start', passed: false, found: cannotStart, fix: null });
      // host-b's channel is closed; host-a's is kept for the run.
      expect(b.channel).toBeNull();
      const channel = a.channel as HostChannel;
      expect(sshChannels()).toEqual([channel.pid]);
      // The sandbox host the check started there serves the run's first sandboxed checks of no network: the same process.
      const started = childrenOf(channel.hello.pid, 'sandbox-host');
      expect(started).toHaveLength(1);
      const opened = await channel.request({ op: 'open-run', repository: 'repo-1', plan: 'plan-checked', objectFormat: 'sha1' });
      if (!opened.ok) throw new Error(JSON.stringify(opened.error));
      const ran = await channel.request({ op: 'run', argv: ['true'], cwd: '.', env: {}, stdin: false, sandbox: { kind: 'check', network: [] } });
      expect(ran.ok ? ran.value : ran.error).toEqual({ kind: 'exited', code: 0 });
      expect(childrenOf(channel.hello.pid, 'sandbox-host')).toEqual(started);
    } finally {
      await Promise.all(checked.map((host) => host.channel?.close()));
    }
  });

  test('a dry run does not try the sandbox on a host (it writes nothing there), nor does a run without the sandbox', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    // A work dir no run has made (its path as short as the sandbox needs).
    const fresh = join(sshd.hosts[1]!.workDir, '..', 'dry');
    const [dry] = await checkHosts(hostsOf(url(1, fresh)), checkNeeds(true, true));
    expect(dry?.leftOut).toBeNull();
    expect(dry?.results.find((result) => result.check === 'sandbox start')).toEqual({
      check: 'sandbox start',
      passed: true,
      found: 'not tried by a dry run, which writes nothing there (the run tries a sandboxed `true` there before any attempt goes there)',
      fix: null,
    });
    expect(existsSync(fresh)).toBe(false);
    // --sandbox off: host-b's bubblewrap is no matter, and nothing is tried.
    const [off] = (await checkHosts(hostsOf(url(1)), checkNeeds(false, false))) as [CheckedHost];
    try {
      expect(off.leftOut).toBeNull();
      expect(off.results.map((result) => result.check)).not.toContain('sandbox start');
      expect(childrenOf((off.channel as HostChannel).hello.pid, 'sandbox-host')).toEqual([]);
    } finally {
      await off.channel?.close();
    }
  });

  test('execute --sandbox on with only a host whose sandbox cannot start: refused before anything starts (exit 3), the host named with why', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    const { repo, planPath, env } = await repoWithPlan(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]), repos);
    const before = readFileSync(planPath, 'utf8');
    const r = await runExecute(repo.dir, ['--sandbox', 'on', '--host', url(1)], { ...sshd.env, ...env });
    expect(r.exitCode).toBe(3);
    expect(r.stderr.split('\n')).toEqual([
      `host ${sshd.hosts[1]!.alias} is left out of the run: ${cannotStart}`,
      'no host is left to run the plan on: fix one of them, or add local?slots=N to run here',
    ]);
    expect(readFileSync(planPath, 'utf8')).toBe(before);
    expect(sshChannels()).toEqual([]);
  });

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
