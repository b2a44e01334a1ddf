// The SSH transport of a host's channel: the person's own OpenSSH client (their ~/.ssh/config,
// keys, agent and known hosts), one `ssh` process per host for the whole run, never one per
// command. It always runs with BatchMode=yes, so it never prompts; it never sets
// StrictHostKeyChecking (an unknown or changed host key stops the host, named with the person's
// fix); and it starts with none of the person's environment but what ssh itself needs to log in,
// so no variable of theirs (ANTHROPIC_API_KEY included) can be sent by a SendEnv line.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { clipTail } from '../../core/index.ts';
import { shellLine, shellWord } from './quote.ts';
import type { HostFault, HostTransport } from './transport.ts';

/** A host reached over SSH (the hosts' URL parser, src/core/hosts/, makes it from `ssh://[user@]host[:port]/work/dir?…`). */
export interface SshHost {
  kind: 'ssh';
  user?: string;
  /** A name as the person's ssh takes it: an alias of their ~/.ssh/config, a host name, an address. */
  host: string;
  port?: number;
  /** The absolute folder foreman works in there; nothing is written outside it. */
  workDir: string;
  /** The claude binary there (the URL's `claude=`), else `claude` on the PATH of an ssh command. */
  claude?: string;
  /** The node binary there (the URL's `node=`), else `node`. */
  node?: string;
  /** The git binary there (the URL's `git=`), else `git`. */
  git?: string;
}

/** The only variables ssh is started with: what it needs to find its configuration, keys and agent. */
const SSH_ENVIRONMENT = ['HOME', 'USER', 'LOGNAME', 'PATH', 'SSH_AUTH_SOCK', 'KRB5CCNAME'];

/** How the person reaches the host by hand, for the fixes messages name: `ssh -p 2222 me@box`. */
export const sshCommandHint = (host: SshHost): string =>
  shellLine(['ssh', ...(host.port !== undefined ? ['-p', String(host.port)] : []), host.user !== undefined ? `${host.user}@${host.host}` : host.host]);

/** The host as a URL, for messages. */
export const sshName = (host: SshHost): string =>
  `ssh://${host.user !== undefined ? `${host.user}@` : ''}${host.host}${host.port !== undefined ? `:${host.port}` : ''}${host.workDir}`;

/** ssh's arguments for running `command` (one line for the remote user's shell) on `host`. */
export function sshArguments(host: SshHost, command: string): string[] {
  return [
    '-o',
    'BatchMode=yes',
    // No terminal: the channel is bytes on stdin and stdout, and no escape character applies.
    '-T',
    ...(host.port !== undefined ? ['-p', String(host.port)] : []),
    ...(host.user !== undefined ? ['-l', host.user] : []),
    '--',
    host.host,
    command,
  ];
}

/**
 * What an exit of ssh's own (255) means, named with the person's fix, from what it said on
 * stderr. BatchMode turns every question ssh would ask into one of these.
 */
export function sshFault(host: SshHost, stderr: string): HostFault {
  const by = sshCommandHint(host);
  const said = clipTail(stderr.trim().split('\n').filter(Boolean).at(-1) ?? 'nothing on stderr', 300);
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED/.test(stderr))
    return {
      reason: 'changed-host-key',
      message: `${host.host}'s host key is not the one your known_hosts holds for it, so ssh refused it (foreman never accepts a key by itself): if the host was reinstalled, check its new key's fingerprint with whoever runs it, remove the old one (\`ssh-keygen -R ${shellWord(host.port !== undefined ? `[${host.host}]:${host.port}` : host.host)}\`, or the line ssh names), then connect once with \`${by}\` and accept it`,
    };
  if (/Host key verification failed|No (?:ED25519|RSA|ECDSA)? ?host key is known/i.test(stderr))
    return {
      reason: 'unknown-host-key',
      message: `${host.host}'s host key is not in your known_hosts, and foreman never accepts one by itself (ssh runs with BatchMode=yes): connect once with \`${by}\`, check the fingerprint it shows against the host's, and accept it; then run again`,
    };
  if (/Permission denied|Too many authentication failures/.test(stderr))
    return {
      reason: 'login-refused',
      message: `${host.host} refused a login without a prompt (${said}): put your public key in the host's authorized_keys, or load your key into your agent (\`ssh-add\`), so that \`${by} true\` logs in without asking`,
    };
  if (
    /Could not resolve hostname|Connection refused|Connection timed out|No route to host|Network is unreachable|Connection closed|Connection reset|kex_exchange_identification|Operation timed out/.test(
      stderr,
    )
  )
    return { reason: 'unreachable', message: `${host.host} could not be reached (${said}): check its name and port, that it is up and that sshd runs there` };
  return { reason: 'ssh-failed', message: `ssh to ${host.host} failed (${said}): try \`${by} true\` to see why` };
}

/** The SSH transport of `host`, with ssh started from `env`'s PATH and login variables only. */
export function sshTransport(host: SshHost, env: NodeJS.ProcessEnv = process.env): HostTransport {
  const sshEnv: NodeJS.ProcessEnv = {};
  for (const name of SSH_ENVIRONMENT) if (env[name] !== undefined) sshEnv[name] = env[name];
  return {
    name: sshName(host),
    workDir: host.workDir,
    node: host.node ?? 'node',
    git: host.git ?? 'git',
    start(command: readonly string[]): ChildProcessWithoutNullStreams {
      // A group of its own: a Ctrl-C at the terminal reaches foreman, which decides what ends, not
      // the channel. Should foreman die, ssh's input ends with it, and so does the remote side.
      return spawn('ssh', sshArguments(host, shellLine(command)), { env: sshEnv, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    },
    fault(code: number | null, stderr: string): HostFault | null {
      return code === 255 ? sshFault(host, stderr) : null;
    },
  };
}
