// A host's channel on real OpenSSH (test/support/sshd.ts: two sshd on 127.0.0.1, key login only):
// one ssh process per host serving many requests, the host's faults named with their fixes, the
// checks as data, git objects both ways byte for byte, nothing left running on the host once
// foreman's side is gone or silent, and names full of shell metacharacters travelling as data.

import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { remoteCommand } from '../../src/adapters/host/bootstrap.ts';
import { type HostChannel, openChannel } from '../../src/adapters/host/channel.ts';
import { fetchCommit, sendCommit } from '../../src/adapters/host/objects.ts';
import { hostProgram, type HostProgram } from '../../src/adapters/host/program.ts';
import { type SshHost, sshTransport } from '../../src/adapters/host/ssh.ts';
import { findMarked } from '../../src/adapters/processes/process-markers.ts';
import { parseHosts, type SshHost as UrlSshHost } from '../../src/core/hosts/url.ts';
import { runLockHolder } from '../../src/host/run-lock.ts';
import { HostLink } from '../../src/run/hosts.ts';
import { DEFAULT_MIN_FREE_BYTES, hostProblems } from '../../src/core/hosts/host-checks.ts';
import { HOST_PROTOCOL, type HostEvent, messageLine, type ToHost } from '../../src/core/hosts/host-protocol.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { alive, childrenOf } from '../support/processes.ts';
import { sshdMissing, startTestSshd, type TestSshd } from '../support/sshd.ts';
import { waitFor } from '../support/wait.ts';

const describeSshd = sshdMissing === null ? describe : describe.skip;
if (sshdMissing !== null) console.warn(`host-channel.test.ts skips: ${sshdMissing}`);

let sshd: TestSshd;
let program: HostProgram;

beforeAll(async () => {
  if (sshdMissing !== null) return;
  [sshd, program] = await Promise.all([startTestSshd(2), hostProgram()]);
});
afterAll(async () => {
  await sshd?.stop();
});

const open = async (host: SshHost, options: { silenceMs?: number; keep?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<HostChannel> => {
  const opened = await openChannel(sshTransport(host, options.env ?? sshd.env), { program, ...options });
  if (!opened.ok) throw new Error(`the channel to ${host.host} did not open: ${opened.error.message}`);
  return opened.value;
};

/** Runs `argv` in the run's folder to its end: its exit and what it printed. */
async function run(channel: HostChannel, argv: string[], use: { env?: Record<string, string>; cwd?: string; input?: Buffer } = {}) {
  let stdout = '';
  let stderr = '';
  const ended = await channel.request(
    { op: 'run', argv, cwd: use.cwd ?? '.', env: use.env ?? {}, stdin: use.input !== undefined },
    {
      ...(use.input !== undefined ? { input: use.input } : {}),
      onEvent: (event: HostEvent) => {
        if (event.kind === 'stdout') stdout += Buffer.from(event.data, 'base64').toString('utf8');
        if (event.kind === 'stderr') stderr += Buffer.from(event.data, 'base64').toString('utf8');
      },
    },
  );
  if (!ended.ok) throw new Error(`run ${argv.join(' ')} failed: ${JSON.stringify(ended.error)}`);
  return { exit: ended.value, stdout, stderr };
}

const openRun = async (channel: HostChannel, plan: string): Promise<string> => {
  const opened = await channel.request({ op: 'open-run', repository: 'repo-1', plan, objectFormat: 'sha1' });
  if (!opened.ok) throw new Error(`open-run failed: ${JSON.stringify(opened.error)}`);
  return opened.value.dir;
};

/** The mode bits of `path`. */
const mode = (path: string): number => statSync(path).mode & 0o777;

describeSshd('a host channel on real sshd', () => {
  test('one ssh process per host serves many requests, and the program is kept on the host by version, private', async () => {
    const [a, b] = sshd.hosts as [NonNullable<TestSshd['hosts'][0]>, NonNullable<TestSshd['hosts'][1]>];
    const channels = await Promise.all([open(a.host), open(b.host)]);
    try {
      expect(childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes').sort()).toEqual(channels.map((c) => c.pid).sort());
      await openRun(channels[0] as HostChannel, 'plan-many');
      const answers = await Promise.all(
        Array.from({ length: 24 }, (_, index) => run(channels[0] as HostChannel, ['sh', '-c', 'echo "$0 $PPID"', String(index)])),
      );
      expect(answers.map((answer) => answer.stdout.split(' ')[0])).toEqual(Array.from({ length: 24 }, (_, index) => String(index)));
      // Every command was started by the one remote program, under the one ssh session.
      expect(new Set(answers.map((answer) => answer.stdout.trim().split(' ')[1]))).toEqual(new Set([String(channels[0]?.hello.pid)]));
      expect(childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes').sort()).toEqual(channels.map((c) => c.pid).sort());
      const kept = join(a.workDir, '.foreman', program.version, 'host.mjs');
      expect(readFileSync(kept).equals(program.bytes)).toBe(true);
      expect([mode(a.workDir), mode(join(a.workDir, '.foreman')), mode(join(a.workDir, '.foreman', program.version))]).toEqual([0o700, 0o700, 0o700]);
      expect(mode(join(a.workDir, 'repo-1'))).toBe(0o700);
      expect(mode(join(a.workDir, 'repo-1', 'plan-many'))).toBe(0o700);
      // A second channel finds the kept program and is not sent it again.
      const before = statSync(kept).mtimeMs;
      const again = await open(a.host);
      expect(statSync(kept).mtimeMs).toBe(before);
      await again.close();
    } finally {
      await Promise.all(channels.map((channel) => channel.close()));
    }
  });

  test('a run’s folder is held by its live process: the same plan twice at once is refused, two plans share the host', async () => {
    const host = sshd.hosts[1]?.host as SshHost;
    const [first, second] = await Promise.all([open(host), open(host)]);
    try {
      const dir = await openRun(first, 'plan-shared');
      const again = await second.request({ op: 'open-run', repository: 'repo-1', plan: 'plan-shared', objectFormat: 'sha1' });
      expect(again.ok ? 'opened' : again.error).toEqual({
        kind: 'refused',
        message: expect.stringContaining(`held by another live run (process ${first.hello.pid} there)`),
      });
      await openRun(second, 'plan-other');
      expect(runLockHolder(dir)).toBe(first.hello.pid);
      await first.close();
      await waitFor('the first run to let go of its folder', () => runLockHolder(dir) === null);
      const third = await open(host);
      try {
        expect(await openRun(third, 'plan-shared')).toBe(dir);
        // A run's folder whose process is gone (its lock names a pid no process has) is cleaned; live ones stay.
        const stale = join(host.workDir, 'repo-1', 'plan-stale');
        mkdirSync(stale);
        writeFileSync(join(stale, 'lock.1'), '999999999 1\n');
        const cleaned = await third.request({ op: 'clean' });
        if (!cleaned.ok) throw new Error(JSON.stringify(cleaned.error));
        expect({ removed: cleaned.value.removed, held: [...cleaned.value.held].sort() }).toEqual({
          removed: ['repo-1/plan-stale'],
          held: ['repo-1/plan-other', 'repo-1/plan-shared'],
        });
        expect(existsSync(stale)).toBe(false);
        expect(runLockHolder(dir)).toBe(third.hello.pid);
      } finally {
        await third.close();
      }
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  test('a run starting on a host removes the program folders of other versions no live process uses; its own is marked in use while it runs', async () => {
    const host = sshd.hosts[1]?.host as SshHost;
    const programs = join(host.workDir, '.foreman');
    const older = (version: string, marks: Record<string, string>): string => {
      const folder = join(programs, version);
      mkdirSync(join(folder, 'running'), { recursive: true });
      writeFileSync(join(folder, 'host.mjs'), 'an older program\n');
      for (const [name, text] of Object.entries(marks)) writeFileSync(join(folder, 'running', name), text);
      return folder;
    };
    // A process of an older version still running (its bootstrap's empty mark), one whose process is gone, one never marked.
    const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
    const used = older('0.0.1-aaaaaaaaaaaa', { [String(sleeper.pid)]: '' });
    const gone = older('0.0.2-bbbbbbbbbbbb', { '999999999': '999999999 1\n' });
    const unmarked = older('0.0.3-cccccccccccc', {});
    try {
      const channel = await open(host);
      const ownMark = join(programs, program.version, 'running', String(channel.hello.pid));
      try {
        // Marked by the bootstrap and the program it became: its pid and start time.
        expect(readFileSync(ownMark, 'utf8')).toMatch(new RegExp(`^${channel.hello.pid} \\S`));
        // Opening nothing, a channel removes nothing (a dry run's, the checks').
        expect(existsSync(gone)).toBe(true);
        await openRun(channel, 'plan-versions');
        expect([existsSync(used), existsSync(gone), existsSync(unmarked)]).toEqual([true, false, false]);
        expect(readdirSync(programs).sort()).toEqual(['0.0.1-aaaaaaaaaaaa', program.version].sort());
      } finally {
        await channel.close();
      }
      await waitFor('the program to take its mark off when it ends', () => !existsSync(ownMark));
      sleeper.kill('SIGKILL');
      await waitFor('the older process to end', () => !alive(sleeper.pid as number));
      const next = await open(host);
      try {
        await openRun(next, 'plan-versions');
        expect(readdirSync(programs)).toEqual([program.version]);
      } finally {
        await next.close();
      }
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  test('a host’s link closes every channel it opened, one still opening as it is closed included, and opens none after', async () => {
    const a = sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>;
    const parsed = parseHosts([{ text: `ssh://${a.alias}${a.workDir}`, origin: '--host' }]);
    if (!parsed.ok) throw new Error(parsed.error);
    const link = new HostLink(parsed.value[0] as UrlSshHost, null, sshd.env);
    const opening = link.connect();
    await link.close();
    const opened = await opening;
    expect(opened.ok ? opened.value.down?.message : opened.error.message).toContain('was closed');
    const after = await link.connect();
    expect(after.ok ? 'opened' : after.error.message).toBe(`the channels to ${a.alias} were closed: the run is ending`);
    expect(childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes')).toEqual([]);
  });

  test('a command that cannot start is said so; a cancelled one is ended with what it started', async () => {
    const channel = await open(sshd.hosts[0]?.host as SshHost);
    try {
      await openRun(channel, 'plan-commands');
      const missing = await run(channel, ['no-such-program-here']);
      expect(missing.exit).toEqual({ kind: 'not-started', message: expect.stringContaining('ENOENT') });
      const mark = `cancelled-${process.pid}-${Date.now()}`;
      const cancel = new AbortController();
      const cancelled = channel.request(
        { op: 'run', argv: ['sh', '-c', 'sleep 1000 & wait'], cwd: '.', env: { FOREMAN_TEST_MARK: mark }, stdin: false },
        { signal: cancel.signal },
      );
      await waitFor('the command to run', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 2);
      cancel.abort();
      expect(await cancelled).toEqual({ ok: true, value: { kind: 'killed', signal: 'SIGTERM' } });
      await waitFor('what it started to end', () => findMarked('FOREMAN_TEST_MARK', mark).length === 0);
      // The channel serves on.
      expect((await run(channel, ['echo', 'still here'])).stdout).toBe('still here\n');
      // Closed, it ends what still runs there.
      const left = `left-${process.pid}-${Date.now()}`;
      const running = channel.request({
        op: 'run',
        argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'],
        cwd: '.',
        env: { FOREMAN_TEST_MARK: left },
        stdin: false,
      });
      await waitFor('the last command to run', () => findMarked('FOREMAN_TEST_MARK', left).length >= 3);
      await channel.close();
      // Its reply (killed) is sent as the host ends it, unless the channel is gone first.
      const answer = await running;
      expect(answer.ok ? answer.value : answer.error).toEqual(
        answer.ok ? { kind: 'killed', signal: 'SIGKILL' } : { kind: 'down', fault: { reason: 'lost', message: expect.stringContaining('was closed') } },
      );
      await waitFor('the host to end it', () => findMarked('FOREMAN_TEST_MARK', left).length === 0 && !alive(channel.hello.pid));
    } finally {
      await channel.close();
    }
  });

  test('a host whose ssh session dies mid-request: the request is answered with the lost channel, and nothing of it runs on there', async () => {
    const host = sshd.hosts[1] as NonNullable<TestSshd['hosts'][1]>;
    const before = new Set(childrenOf(host.sshd.pid as number));
    const channel = await open(host.host);
    await openRun(channel, 'plan-session');
    const mark = `session-${process.pid}-${Date.now()}`;
    const pending = channel.request({
      op: 'run',
      argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'],
      cwd: '.',
      env: { FOREMAN_TEST_MARK: mark },
      stdin: false,
    });
    await waitFor('the command to run', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 3);
    const sessions = childrenOf(host.sshd.pid as number).filter((pid) => !before.has(pid));
    expect(sessions).toHaveLength(1);
    process.kill(sessions[0] as number, 'SIGKILL');
    const answer = await pending;
    expect(answer.ok ? 'answered' : answer.error).toEqual({ kind: 'down', fault: { reason: 'lost', message: expect.stringContaining('without a report') } });
    await waitFor('nothing of the run left on the host', () => findMarked('FOREMAN_TEST_MARK', mark).length === 0 && !alive(channel.hello.pid));
  });

  test('none of foreman’s environment reaches the host, not even what the client’s SendEnv names', async () => {
    const host = sshd.hosts[0]?.host as SshHost;
    const channel = await open(host, { env: { ...sshd.env, ANTHROPIC_API_KEY: 'sk-test-secret', LANG: 'foreman-test-locale', LC_ALL: 'foreman-test-locale' } });
    try {
      await openRun(channel, 'plan-env');
      const { stdout } = await run(channel, ['env']);
      expect(stdout).not.toContain('sk-test-secret');
      expect(stdout).not.toContain('foreman-test-locale');
      // The host's own login: HOME there is the host user's, not foreman's temporary one.
      expect(stdout).not.toContain(sshd.home);
    } finally {
      await channel.close();
    }
  });

  test('an unknown host key stops the host, named with the person’s fix; so does a changed one', async () => {
    const host = sshd.hosts[1] as NonNullable<TestSshd['hosts'][1]>;
    const known = readFileSync(sshd.knownHosts, 'utf8');
    try {
      writeFileSync(
        sshd.knownHosts,
        known
          .split('\n')
          .filter((line) => !line.startsWith(`[127.0.0.1]:${host.port} `))
          .join('\n'),
      );
      const unknown = await openChannel(sshTransport(host.host, sshd.env), { program });
      expect(unknown.ok).toBe(false);
      if (unknown.ok) return;
      expect(unknown.error.reason).toBe('unknown-host-key');
      expect(unknown.error.message).toContain(`connect once with \`ssh ${host.alias}\``);
      expect(unknown.error.message).toContain('never accepts one by itself');
      const otherKey = (sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>).hostKey;
      writeFileSync(sshd.knownHosts, `${known}[127.0.0.1]:${host.port} ${otherKey}\n`.replace(`[127.0.0.1]:${host.port} ${host.hostKey}\n`, ''));
      const changed = await openChannel(sshTransport(host.host, sshd.env), { program });
      expect(changed.ok).toBe(false);
      if (changed.ok) return;
      expect(changed.error.reason).toBe('changed-host-key');
      expect(changed.error.message).toContain('ssh-keygen -R');
      // Nothing reached the host: no work dir was made.
      expect(existsSync(host.workDir) && readdirSync(host.workDir).includes('plan-key')).toBe(false);
    } finally {
      writeFileSync(sshd.knownHosts, known);
    }
  });

  test('a host whose sshd does not answer is unreachable: ssh’s exit 255 as a value', async () => {
    const host: SshHost = { kind: 'ssh', host: '127.0.0.1', port: 1, workDir: join(tmpdir(), 'nowhere') };
    const opened = await openChannel(sshTransport(host, sshd.env), { program });
    expect(opened.ok).toBe(false);
    if (!opened.ok) expect(opened.error.reason).toBe('unreachable');
  });

  test('the checks come back as data; a host without claude on its PATH is named with claude=; a dry run writes nothing there', async () => {
    const base = sshd.hosts[1] as NonNullable<TestSshd['hosts'][1]>;
    const fresh: SshHost = { ...base.host, workDir: join(base.workDir, '..', 'fresh work dir') };
    const channel = await open(fresh, { keep: false });
    try {
      const checks = await channel.request({ op: 'checks', claude: 'claude' });
      expect(checks.ok).toBe(true);
      if (!checks.ok) return;
      const found = checks.value;
      expect(found.git.version).toMatch(/^git version \d+\.\d+/);
      expect(found.node.version).toBe(process.version);
      expect(found.claude.path).toBeNull();
      expect(found.workDir.exists).toBe(false);
      expect(found.workDir.freeBytes).toBeGreaterThan(0);
      const problems = hostProblems(found, { objectFormat: 'sha1', claude: 'claude', minFreeBytes: DEFAULT_MIN_FREE_BYTES, sandbox: false });
      expect(problems.filter((problem) => problem.stops).map((problem) => problem.message)).toEqual([
        expect.stringContaining("name it with the URL's claude= parameter"),
      ]);
      expect(existsSync(fresh.workDir)).toBe(false);
    } finally {
      await channel.close();
    }
    // A claude named by claude=, found, its login asked: a CLI with no credentials says it is logged out.
    const config = join(base.workDir, '..', 'claude-config');
    mkdirSync(config, { recursive: true });
    const claude = join(base.workDir, '..', 'claude');
    writeFileSync(claude, `#!/bin/sh\nCLAUDE_CONFIG_DIR=${config} exec ${join(process.cwd(), 'node_modules', '.bin', 'claude')} "$@"\n`, { mode: 0o755 });
    const named = await open({ ...fresh, claude }, { keep: false });
    try {
      const checks = await named.request({ op: 'checks', claude });
      if (!checks.ok) throw new Error(JSON.stringify(checks.error));
      expect(checks.value.claude.path).toBe(claude);
      expect(checks.value.auth).toEqual({ kind: 'logged-out' });
      expect(hostProblems(checks.value, { objectFormat: 'sha1', claude, minFreeBytes: DEFAULT_MIN_FREE_BYTES, sandbox: false }).map((p) => p.message)).toEqual([
        expect.stringContaining('is not logged in'),
      ]);
      const write = await named.request({ op: 'open-run', repository: 'repo-1', plan: 'plan-dry', objectFormat: 'sha1' });
      expect(write.ok ? 'opened' : write.error).toEqual({ kind: 'refused', message: 'a dry run writes nothing on the host' });
      expect(existsSync(fresh.workDir)).toBe(false);
    } finally {
      await named.close();
    }
  });

  test('what the host’s shell startup prints before the program runs is passed over', async () => {
    const base = sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>;
    const chatty = join(base.workDir, '..', 'chatty-node');
    writeFileSync(chatty, `#!/bin/sh\necho 'Welcome to the build farm!'\necho '{"not": "a message"}'\nexec node "$@"\n`, { mode: 0o755 });
    const channel = await open({ ...base.host, node: chatty });
    try {
      await openRun(channel, 'plan-chatty');
      expect((await run(channel, ['echo', 'heard'])).stdout).toBe('heard\n');
    } finally {
      await channel.close();
    }
  });

  test('a git not on the host is named with git=; one named by it is the one used', async () => {
    const base = sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>;
    const missing = await open({ ...base.host, git: 'git-not-installed-here' }, { keep: false });
    try {
      const checks = await missing.request({ op: 'checks', claude: 'claude' });
      if (!checks.ok) throw new Error(JSON.stringify(checks.error));
      expect(hostProblems(checks.value, { objectFormat: 'sha1', claude: 'claude', minFreeBytes: DEFAULT_MIN_FREE_BYTES, sandbox: false })[0]?.message).toMatch(
        /^git \(git-not-installed-here\) is not on the PATH .* name it with the URL's git= parameter$/,
      );
    } finally {
      await missing.close();
    }
    // A git of its own, which says when it runs: the run's repository is made by it.
    const counted = join(base.workDir, '..', 'counted-git');
    const log = join(base.workDir, '..', 'counted-git.log');
    writeFileSync(counted, `#!/bin/sh\necho "$*" >> ${JSON.stringify(log)}\nexec git "$@"\n`, { mode: 0o755 });
    const named = await open({ ...base.host, git: counted });
    try {
      const checks = await named.request({ op: 'checks', claude: 'claude' });
      expect(checks.ok && checks.value.git).toEqual({ name: counted, path: counted, version: expect.stringMatching(/^git version/) });
      await openRun(named, 'plan-own-git');
      expect(readFileSync(log, 'utf8')).toContain('init');
    } finally {
      await named.close();
    }
  });

  test('a host whose work dir is full: named by the checks, and a bundle that does not fit is the host’s fault', async (context) => {
    const base = sshd.hosts[1] as NonNullable<TestSshd['hosts'][1]>;
    const small = join(base.workDir, '..', 'small disk');
    mkdirSync(small, { recursive: true });
    // A file system of 1 MiB as the work dir: root can mount one; elsewhere the test says why it skips.
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', small], { encoding: 'utf8' });
    if (mounted.status !== 0) return context.skip(`a small file system could not be mounted: ${mounted.stderr.trim() || `exit ${mounted.status}`}`);
    const repo = await tempGitRepo({ 'README.md': '# base\n' });
    try {
      const channel = await open({ ...base.host, workDir: join(small, 'work') });
      try {
        const checks = await channel.request({ op: 'checks', claude: 'claude' });
        if (!checks.ok) throw new Error(JSON.stringify(checks.error));
        expect(
          hostProblems(checks.value, { objectFormat: 'sha1', claude: 'claude', minFreeBytes: DEFAULT_MIN_FREE_BYTES, sandbox: false }).map((p) => p.message),
        ).toContainEqual(expect.stringMatching(/^the work dir has 0\.0 GiB free .* under the 1\.0 GiB a run needs/));
        await openRun(channel, 'plan-full');
        await repo.write({ 'big.bin': randomBytes(2 * 1024 * 1024).toString('base64') });
        await repo.git(['add', '-A']);
        await repo.git(['commit', '-q', '-m', 'too big for the host']);
        const sent = await sendCommit(channel, repo.dir, (await repo.git(['rev-parse', 'HEAD'])).trim());
        expect(sent.ok ? 'sent' : sent.error).toEqual({ kind: 'fault', message: expect.stringMatching(/no space left on device/i) });
        // The host serves on: the fault is the request's, named, not the channel's.
        expect((await run(channel, ['echo', 'still here'])).stdout).toBe('still here\n');
      } finally {
        await channel.close();
      }
    } finally {
      spawnSync('umount', ['-l', small]);
      await repo.cleanup();
    }
  });

  test('a node not on the host is named with node=', async () => {
    const host = { ...(sshd.hosts[0]?.host as SshHost), node: 'node-not-installed-here' };
    const opened = await openChannel(sshTransport(host, sshd.env), { program });
    expect(opened.ok).toBe(false);
    if (!opened.ok) {
      expect(opened.error.reason).toBe('no-node');
      expect(opened.error.message).toContain("the URL's node= parameter");
    }
  });

  test('git objects travel both ways byte for byte: the base in, a commit made there back', async () => {
    const repo = await tempGitRepo({ 'README.md': '# base\n', 'src/a.txt': 'a\n' });
    const channel = await open(sshd.hosts[0]?.host as SshHost);
    try {
      const base = (await repo.git(['rev-parse', 'HEAD'])).trim();
      await openRun(channel, 'plan-objects');
      const sent = await sendCommit(channel, repo.dir, base);
      expect(sent).toEqual({ ok: true, value: { bytes: expect.any(Number) } });
      const worktree = await run(channel, ['git', '-C', 'repository.git', 'worktree', 'add', '--detach', '../work/1', base]);
      expect(worktree.exit).toEqual({ kind: 'exited', code: 0 });
      // Bytes of every value, a name with spaces: written there by a command fed on stdin.
      const content = Buffer.from(Array.from({ length: 256 }, (_, byte) => byte));
      const made = await run(
        channel,
        [
          'sh',
          '-c',
          'cat > "data file.bin" && git add -A && git -c user.name=Host -c user.email=host@example.com commit -q -m "made there" && git rev-parse HEAD',
        ],
        {
          cwd: 'work/1',
          input: content,
        },
      );
      expect(made.exit).toEqual({ kind: 'exited', code: 0 });
      const commit = made.stdout.trim();
      const fetched = await fetchCommit(channel, repo.dir, commit, [base]);
      expect(fetched).toEqual({ ok: true, value: { bytes: expect.any(Number) } });
      const blob = await repo.git(['rev-parse', `${commit}:data file.bin`]);
      // The same commit id here: its tree, parent, author and message arrived byte for byte.
      expect((await repo.git(['rev-parse', `${commit}^`])).trim()).toBe(base);
      expect((await repo.git(['log', '-1', '--format=%s', commit])).trim()).toBe('made there');
      writeFileSync(join(repo.dir, 'expected.bin'), content);
      expect((await repo.git(['hash-object', 'expected.bin'])).trim()).toBe(blob.trim());
      // What the host has is not sent again; a later commit goes as what it adds to a base the host has.
      expect(await sendCommit(channel, repo.dir, base)).toEqual({ ok: true, value: { bytes: 0 } });
      await repo.write({ 'src/b.txt': 'b\n'.repeat(5000) });
      await repo.git(['add', '-A']);
      await repo.git(['commit', '-q', '-m', 'next base']);
      const next = (await repo.git(['rev-parse', 'HEAD'])).trim();
      await repo.git(['bundle', 'create', '-q', join(repo.dir, '.git', 'full.bundle'), 'HEAD']);
      const incremental = await sendCommit(channel, repo.dir, next, [base]);
      if (!incremental.ok) throw new Error(JSON.stringify(incremental.error));
      expect(incremental.value.bytes).toBeGreaterThan(0);
      expect(incremental.value.bytes).toBeLessThan(statSync(join(repo.dir, '.git', 'full.bundle')).size);
      expect(await channel.request({ op: 'has-commits', commits: [next, base, commit, '0'.repeat(40)] })).toEqual({
        ok: true,
        value: { present: [next, base, commit] },
      });
    } finally {
      await channel.close();
      await repo.cleanup();
    }
  });

  test('killing foreman’s ssh (-9) leaves nothing of the run on the host, and lets go of its folder', async () => {
    const channel = await open(sshd.hosts[0]?.host as SshHost, { silenceMs: 3_000 });
    const dir = await openRun(channel, 'plan-killed');
    const mark = `killed-${process.pid}-${Date.now()}`;
    const pids: number[] = [];
    void channel.request(
      { op: 'run', argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'], cwd: '.', env: { FOREMAN_TEST_MARK: mark }, stdin: false },
      { onEvent: (event) => event.kind === 'started' && pids.push(event.pid) },
    );
    await waitFor('the command and what it started in a session of its own', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 3);
    expect(runLockHolder(dir)).toBe(channel.hello.pid);
    process.kill(channel.pid as number, 'SIGKILL');
    await waitFor('the channel to go down', () => channel.down !== null);
    expect(channel.down?.reason).toBe('lost');
    await waitFor('nothing of the run left on the host', () => findMarked('FOREMAN_TEST_MARK', mark).length === 0 && !alive(channel.hello.pid));
    expect(runLockHolder(dir)).toBeNull();
  });

  test('foreman killed -9 leaves nothing of the run on the host: ssh’s input ends with it', async () => {
    // A foreman of its own: a process that opens the channel and starts a command, then is killed.
    const host = sshd.hosts[1]?.host as SshHost;
    const mark = `foreman-killed-${process.pid}-${Date.now()}`;
    const script = join(sshd.home, 'holder.mts');
    const source = (file: string): string => JSON.stringify(new URL(`../../src/adapters/host/${file}`, import.meta.url).href);
    writeFileSync(
      script,
      `import { openChannel } from ${source('channel.ts')};
import { sshTransport } from ${source('ssh.ts')};
const [host, mark] = JSON.parse(process.argv[2]);
const opened = await openChannel(sshTransport(host, process.env));
if (!opened.ok) throw new Error(opened.error.message);
await opened.value.request({ op: 'open-run', repository: 'repo-1', plan: 'plan-holder', objectFormat: 'sha1' });
void opened.value.request({ op: 'run', argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'], cwd: '.', env: { FOREMAN_TEST_MARK: mark }, stdin: false });
process.stdout.write(JSON.stringify({ ssh: opened.value.pid, program: opened.value.hello.pid }) + '\\n');
`,
    );
    const holder = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify([host, mark])], {
      cwd: process.cwd(),
      env: sshd.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const pids = await new Promise<{ ssh: number; program: number }>((resolve, reject) => {
      holder.stdout.on('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString('utf8')) as { ssh: number; program: number }));
      holder.once('exit', (code) => reject(new Error(`the holder exited (${code}) before its channel opened`)));
    });
    await waitFor('the command to run on the host', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 3);
    holder.kill('SIGKILL');
    await waitFor(
      'nothing of the run left, ssh included',
      () => findMarked('FOREMAN_TEST_MARK', mark).length === 0 && !alive(pids.program) && !alive(pids.ssh),
    );
  });

  test('a foreman that goes silent (its ssh stopped, as a sleeping laptop) is given up on both sides after the silence limit', async () => {
    const silenceMs = 2_000;
    const channel = await open(sshd.hosts[1]?.host as SshHost, { silenceMs });
    await openRun(channel, 'plan-silent');
    const mark = `silent-${process.pid}-${Date.now()}`;
    void channel.request({ op: 'run', argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'], cwd: '.', env: { FOREMAN_TEST_MARK: mark }, stdin: false });
    await waitFor('the command to run on the host', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 3);
    const stoppedAt = Date.now();
    process.kill(channel.pid as number, 'SIGSTOP');
    try {
      await waitFor('foreman to mark the host down', () => channel.down !== null);
      expect(channel.down?.reason).toBe('silent');
      await waitFor('the host to end everything it started', () => findMarked('FOREMAN_TEST_MARK', mark).length === 0 && !alive(channel.hello.pid));
      // It waited out the silence limit first: a pause shorter than it ends nothing.
      expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(silenceMs);
    } finally {
      if (channel.pid !== undefined && alive(channel.pid)) process.kill(channel.pid, 'SIGCONT');
    }
  });

  test('the host ends everything it started when foreman says nothing for the silence limit, its connection still up', async () => {
    // foreman's side played by hand: the program started by the same transport and bootstrap,
    // greeted with a silence limit, a command started, then not a byte more (a laptop asleep).
    const host = sshd.hosts[0]?.host as SshHost;
    const silenceMs = 1_500;
    const ssh = sshTransport(host, sshd.env).start(remoteCommand(host.workDir, { version: program.version, bytes: program.bytes.length }, 'node', true));
    const mark = `quiet-${process.pid}-${Date.now()}`;
    const said: string[] = [];
    let lastSent = 0;
    const send = (message: ToHost): void => {
      ssh.stdin.write(messageLine(message));
      lastSent = Date.now();
    };
    const exited = new Promise<number | null>((resolve) => ssh.once('exit', resolve));
    ssh.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        said.push(line);
        if (line === `foreman-host send ${program.bytes.length}`) ssh.stdin.write(program.bytes);
        if (line.startsWith('{"type":"ready"')) {
          send({ type: 'request', id: 1, request: { op: 'hello', protocol: HOST_PROTOCOL, silenceMs, git: 'git' } });
          send({ type: 'request', id: 2, request: { op: 'open-run', repository: 'repo-1', plan: 'plan-quiet', objectFormat: 'sha1' } });
        }
        if (line.startsWith('{"type":"reply","id":2,"reply":{"ok":true')) {
          send({
            type: 'request',
            id: 3,
            request: { op: 'run', argv: ['sh', '-c', 'sleep 1000 & setsid sleep 1001 & wait'], cwd: '.', env: { FOREMAN_TEST_MARK: mark }, stdin: false },
          });
        }
      }
    });
    await waitFor('the command to run on the host', () => findMarked('FOREMAN_TEST_MARK', mark).length >= 3);
    // Its input stays open: only the silence can end it.
    expect(await exited).toBe(0);
    expect(Date.now() - lastSent).toBeGreaterThanOrEqual(silenceMs);
    expect(findMarked('FOREMAN_TEST_MARK', mark)).toEqual([]);
    expect(said.filter((line) => line === '{"type":"ping"}').length).toBeGreaterThan(0);
    ssh.stdin.end();
  });

  test('a host whose program goes silent is marked down after the silence limit', async () => {
    const channel = await open(sshd.hosts[0]?.host as SshHost, { silenceMs: 1_500 });
    process.kill(channel.hello.pid, 'SIGSTOP');
    try {
      const pending = channel.request({ op: 'checks', claude: 'claude' });
      await waitFor('the host to be marked down', () => channel.down !== null);
      expect(channel.down?.reason).toBe('silent');
      const answer = await pending;
      expect(answer.ok ? 'answered' : answer.error.kind).toBe('down');
    } finally {
      process.kill(channel.hello.pid, 'SIGCONT');
    }
    await waitFor('the host program to end once it runs again and finds its input gone', () => !alive(channel.hello.pid));
  });

  test('a work dir, a task name and paths full of shell metacharacters travel as data', async () => {
    const base = sshd.hosts[1] as NonNullable<TestSshd['hosts'][1]>;
    const trap = join(base.workDir, '..', 'pwned');
    const strange = `work $(touch ${trap}) \`touch ${trap}\` 'q' "d" ; & | * ~ \\ ${'$'}HOME`;
    const host: SshHost = { ...base.host, workDir: join(base.workDir, '..', strange) };
    const channel = await open(host);
    try {
      const dir = await openRun(channel, 'plan-strange');
      expect(dir).toBe(join(host.workDir, 'repo-1', 'plan-strange'));
      const name = `task "one"; rm -rf / $(touch ${trap}) 'two' \n next`;
      const file = "out $(touch pwned); 'x' `touch pwned` > .txt";
      const written = await run(channel, ['sh', '-c', 'printf %s "$1" > "$2"', 'sh', name, file]);
      expect(written.exit).toEqual({ kind: 'exited', code: 0 });
      expect(readFileSync(join(dir, file), 'utf8')).toBe(name);
      expect([existsSync(trap), existsSync(join(dir, 'pwned'))]).toEqual([false, false]);
      const outside = await channel.request({ op: 'run', argv: ['true'], cwd: '../..', env: {}, stdin: false });
      expect(outside.ok ? 'ran' : outside.error.kind).toBe('refused');
    } finally {
      await channel.close();
    }
  });
});
