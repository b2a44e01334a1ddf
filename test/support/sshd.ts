// Real OpenSSH for the hosts' tests: Debian's sshd (openssh-server, which .ci/run installs)
// started on 127.0.0.1, one per "host", each on a port of its own with a generated host key and
// its own work dir, logging in with a generated user key only (no password, no PAM). The client
// side is the person's own as foreman finds it: an alias per host in `~/.ssh/config` under a
// temporary HOME, its `UserKnownHostsFile` holding the host keys. OpenSSH reads ~/.ssh/config
// from the passwd entry's home, not from HOME, so the temporary HOME's `bin/ssh` (first on the
// PATH the tests give foreman) runs the real ssh with `-F` that config.
//
// When sshd cannot be had (not installed, its privilege separation folder cannot be made),
// `sshdMissing` says why and the tests skip, saying so.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { findExecutable } from '../../src/adapters/sandbox/executables.ts';
import type { SshHost } from '../../src/adapters/host/ssh.ts';

const SSHD = '/usr/sbin/sshd';
/** sshd's privilege separation folder, which it insists on even when it runs as an ordinary user. */
const PRIVILEGE_SEPARATION = '/run/sshd';

/** Why the real-sshd tests cannot run here; null when they can. */
export const sshdMissing: string | null = (() => {
  if (!existsSync(SSHD)) return `${SSHD} is not installed (Debian's openssh-server; .ci/run installs it)`;
  if (findExecutable('ssh', process.env, process.cwd()) === null) return 'the ssh client is not on PATH (openssh-client)';
  if (findExecutable('ssh-keygen', process.env, process.cwd()) === null) return 'ssh-keygen is not on PATH (openssh-client)';
  try {
    mkdirSync(PRIVILEGE_SEPARATION, { recursive: true });
  } catch (caught) {
    return `sshd needs ${PRIVILEGE_SEPARATION}, which could not be made: ${(caught as Error).message}`;
  }
  return null;
})();

export interface TestHost {
  /** The client's alias for it in ~/.ssh/config. */
  alias: string;
  port: number;
  workDir: string;
  /** Its host key's public line (`ssh-ed25519 AAAA…`). */
  hostKey: string;
  /** The host as the hosts' URL parser makes it. */
  host: SshHost;
  sshd: ChildProcess;
}

export interface TestSshd {
  /** The temporary HOME of the person running foreman. */
  home: string;
  /** foreman's environment: HOME the temporary one, its `bin/ssh` first on PATH, no agent. */
  env: NodeJS.ProcessEnv;
  knownHosts: string;
  hosts: TestHost[];
  /** Stops every sshd (the sessions they started are theirs to end). */
  stop(): Promise<void>;
}

/** A free port on 127.0.0.1 (taken back at once; sshd binds it just after). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const keygen = (file: string): string => {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'foreman-test', '-f', file], { stdio: 'ignore' });
  return readFileSync(`${file}.pub`, 'utf8').split(' ').slice(0, 2).join(' ');
};

/** Starts sshd for `host` and resolves once it listens. */
function startSshd(config: string, log: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const sshd = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    sshd.stderr.on('data', (chunk: Buffer) => {
      said += chunk.toString('utf8');
      writeFileSync(log, said);
      if (said.includes('Server listening on')) resolve(sshd);
    });
    sshd.once('error', reject);
    sshd.once('exit', (code) => reject(new Error(`sshd exited (${code}) before it listened: ${said}`)));
  });
}

/**
 * Starts `count` hosts, each its own sshd on 127.0.0.1 with its own work dir (made by foreman, not
 * here). `setEnv`: the hosts' own environment for every session (sshd's `SetEnv`), as a host's
 * administrator sets it: where its claude reaches the API, say. foreman sends none.
 */
export async function startTestSshd(count = 2, setEnv: Record<string, string> = {}): Promise<TestSshd> {
  const top = mkdtempSync(join(tmpdir(), 'foreman-sshd-'));
  const home = join(top, 'home');
  const sshDir = join(home, '.ssh');
  mkdirSync(sshDir, { recursive: true, mode: 0o700 });
  mkdirSync(join(home, 'bin'));
  const userKey = join(sshDir, 'id_ed25519');
  const userPublic = keygen(userKey);
  const authorizedKeys = join(top, 'authorized_keys');
  writeFileSync(authorizedKeys, `${userPublic}\n`);
  const knownHosts = join(sshDir, 'known_hosts');
  const user = userInfo().username;
  const hosts: TestHost[] = [];
  const clientConfig: string[] = [];
  const known: string[] = [];
  for (let index = 0; index < count; index++) {
    const name = `host-${String.fromCharCode(97 + index)}`;
    const dir = join(top, name);
    mkdirSync(dir);
    const hostKeyFile = join(dir, 'host_key');
    const hostKey = keygen(hostKeyFile);
    const port = await freePort();
    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${hostKeyFile}`,
        `AuthorizedKeysFile ${authorizedKeys}`,
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PubkeyAuthentication yes',
        'UsePAM no',
        'StrictModes no',
        'PidFile none',
        // What Debian's sshd accepts by default: a client that sent its locale would be heard.
        'AcceptEnv LANG LC_*',
        ...(Object.keys(setEnv).length > 0
          ? [
              `SetEnv ${Object.entries(setEnv)
                .map(([name, value]) => `${name}=${value}`)
                .join(' ')}`,
            ]
          : []),
        '',
      ].join('\n'),
    );
    const sshd = await startSshd(config, join(dir, 'sshd.log'));
    const alias = `foreman-test-${name}`;
    const workDir = join(dir, 'work');
    clientConfig.push(
      `Host ${alias}`,
      '  HostName 127.0.0.1',
      `  Port ${port}`,
      `  User ${user}`,
      `  IdentityFile ${userKey}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${knownHosts}`,
      '',
    );
    known.push(`[127.0.0.1]:${port} ${hostKey}`);
    hosts.push({ alias, port, workDir, hostKey, sshd, host: { kind: 'ssh', host: alias, workDir } });
  }
  // Debian's client default: the locale goes with every connection whose server accepts it.
  clientConfig.push('Host *', '  SendEnv LANG LC_*', '');
  const configFile = join(sshDir, 'config');
  writeFileSync(configFile, clientConfig.join('\n'));
  writeFileSync(knownHosts, `${known.join('\n')}\n`);
  const realSsh = findExecutable('ssh', process.env, process.cwd()) as string;
  const wrapper = join(home, 'bin', 'ssh');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${realSsh} -F ${configFile} "$@"\n`);
  chmodSync(wrapper, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${join(home, 'bin')}${delimiter}${process.env.PATH ?? ''}` };
  delete env.SSH_AUTH_SOCK;
  return {
    home,
    env,
    knownHosts,
    hosts,
    stop: async () => {
      await Promise.all(
        hosts.map(
          ({ sshd }) =>
            new Promise<void>((resolve) => {
              if (sshd.exitCode !== null || sshd.signalCode !== null) return resolve();
              sshd.once('exit', () => resolve());
              sshd.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
