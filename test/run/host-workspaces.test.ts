// A host's workspaces on real OpenSSH (test/support/sshd.ts: sshd on 127.0.0.1, key login only):
// a channel that cannot serve the run — its run's folder refused there, or the sandbox's helper
// not kept — is closed as the failure is found, its ssh process and remote side gone before the
// attempt's failure is returned (not at the run's end), the failure told once, and the next
// attempt placed there opens a channel of its own.

import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type HostChannel, openChannel } from '../../src/adapters/host/channel.ts';
import { hostProgram } from '../../src/adapters/host/program.ts';
import { sshTransport } from '../../src/adapters/host/ssh.ts';
import { Git } from '../../src/adapters/git/repository.ts';
import { parseHosts, type SshHost } from '../../src/core/hosts/url.ts';
import { runLockHolder } from '../../src/host/run-lock.ts';
import { HostLink } from '../../src/run/hosts.ts';
import { HostWorkspaces } from '../../src/run/workspace/host.ts';
import { repositoryId } from '../../src/run/workspace/host-scripts.ts';
import { afterEachCleanups, tempGitRepo } from '../support/git-repo.ts';
import { openPlaces } from '../support/places.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { alive, childrenOf } from '../support/processes.ts';
import { sshdMissing, startTestSshd, type TestSshd } from '../support/sshd.ts';

const describeSshd = sshdMissing === null ? describe : describe.skip;
if (sshdMissing !== null) console.warn(`host-workspaces.test.ts skips: ${sshdMissing}`);

let sshd: TestSshd;
const cleanups = afterEachCleanups();

beforeAll(async () => {
  if (sshdMissing !== null) return;
  sshd = await startTestSshd(1);
});
afterAll(async () => {
  await sshd?.stop();
});

/** The ssh processes of channels this test process runs. */
const sshChannels = (): number[] => childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes');

/** A host's workspaces for a one-task plan of a fresh repository: the channels its link opened, and the faults it told. */
async function hostWorkspaces(sandbox: boolean) {
  const repo = await tempGitRepo({ 'a.txt': 'a\n' });
  cleanups.push(repo.cleanup);
  const plan = makePlan([fakeTask('host-workspaces', { modify: ['a.txt'] })]);
  const { integration, workspaces: local } = await openPlaces(cleanups, repo.dir, plan);
  const a = sshd.hosts[0] as NonNullable<TestSshd['hosts'][0]>;
  const parsed = parseHosts([{ text: `ssh://${a.alias}${a.workDir}?slots=1`, origin: '--host' }]);
  if (!parsed.ok) throw new Error(parsed.error);
  const host = parsed.value[0] as SshHost;
  const link = new HostLink(host, null, sshd.env);
  cleanups.push(() => link.close());
  const channels: HostChannel[] = [];
  const faults: string[] = [];
  const workspaces = new HostWorkspaces({
    host,
    connect: async () => {
      const opened = await link.connect();
      if (opened.ok) channels.push(opened.value);
      return opened;
    },
    local,
    repo: integration.repo,
    git: new Git(integration.repo),
    planId: integration.planId,
    plan,
    objectFormat: 'sha1',
    setupTimeoutMs: 60_000,
    sandbox,
    onFault: (_host, reason) => faults.push(reason),
  });
  const commit = (await repo.git(['rev-parse', 'HEAD'])).trim();
  const make = () => workspaces.make({ task: 0, commit, place: { host: host.name, slot: 0 } });
  return { host, integration, channels, faults, make };
}

/** The channel is gone: its ssh process ended, its remote side with it. */
function expectGone(channel: HostChannel): void {
  expect(channel.down?.message).toContain('was closed');
  expect(sshChannels()).not.toContain(channel.pid);
  expect(alive(channel.pid as number)).toBe(false);
  expect(alive(channel.hello.pid)).toBe(false);
}

describeSshd('a host’s workspaces on real sshd', () => {
  test('a channel whose run’s folder is refused there is closed as the attempt fails, not at the run’s end', async () => {
    const { host, integration, channels, faults, make } = await hostWorkspaces(false);
    // Another live run holds the plan's folder there.
    const holder = await openChannel(sshTransport({ kind: 'ssh', host: host.host, workDir: host.workDir }, sshd.env), { program: await hostProgram() });
    if (!holder.ok) throw new Error(holder.error.message);
    cleanups.push(() => holder.value.close());
    const held = await holder.value.request({ op: 'open-run', repository: repositoryId(integration.repo), plan: integration.planId, objectFormat: 'sha1' });
    if (!held.ok) throw new Error(JSON.stringify(held.error));

    const made = await make();
    expect(made.ok ? 'made' : made.error).toMatch(/could not take the run’s folder there: .* is held by another live run/);
    expect(channels).toHaveLength(1);
    expectGone(channels[0] as HostChannel);
    expect(sshChannels()).toEqual([holder.value.pid]);
    // Told once: the refusal, not the channel closed after it.
    expect(faults).toEqual([expect.stringContaining('is held by another live run')]);

    // Let go there, the next attempt opens a channel of its own and works there.
    await holder.value.close();
    const again = await make();
    expect(again.ok ? 'made' : again.error).toBe('made');
    expect(channels).toHaveLength(2);
    expect(channels[1]?.down).toBeNull();
    expect(faults).toHaveLength(1);
  });

  test('a channel whose sandbox helper cannot be kept there is closed as the attempt fails, and lets go of the run’s folder', async () => {
    const { host, integration, channels, faults, make } = await hostWorkspaces(true);
    // The helper's folder cannot be made beside the program there: a file is in its way.
    const program = await hostProgram();
    const opened = await openChannel(sshTransport({ kind: 'ssh', host: host.host, workDir: host.workDir }, sshd.env), { program });
    if (!opened.ok) throw new Error(opened.error.message);
    await opened.value.close();
    writeFileSync(join(host.workDir, '.foreman', program.version, 'vendor'), 'in the way\n');
    cleanups.push(async () => rmSync(join(host.workDir, '.foreman', program.version, 'vendor')));

    const made = await make();
    expect(made.ok ? 'made' : made.error).toMatch(/could not keep the sandbox’s helper there/);
    expect(channels).toHaveLength(1);
    const channel = channels[0] as HostChannel;
    expectGone(channel);
    expect(sshChannels()).toEqual([]);
    expect(faults).toEqual([expect.stringContaining('could not keep the sandbox’s helper there')]);
    // The run's folder it had taken is free again.
    const dir = join(host.workDir, repositoryId(integration.repo), integration.planId);
    expect(existsSync(dir)).toBe(true);
    expect(runLockHolder(dir)).toBeNull();
  });
});
