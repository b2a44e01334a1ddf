// A host is reached by a command that runs a program there with stdin and stdout: a transport.
// SSH is one (./ssh.ts); `kubectl exec -i`, `docker exec -i` or Slurm's `srun` would each be
// another, starting the same remote program (./bootstrap.ts) the same way. The channel
// (./channel.ts) speaks to whatever a transport started.

import type { ChildProcessWithoutNullStreams } from 'node:child_process';

/** Why a host cannot be used now, with the person's fix where there is one: a value, never thrown. */
export interface HostFault {
  reason: /** Its host key is not in known_hosts (ssh refused it under BatchMode). */
    | 'unknown-host-key'
    /** Its host key differs from the one known_hosts holds. */
    | 'changed-host-key'
    /** It refused a login without a prompt. */
    | 'login-refused'
    /** No connection: the name, the port, the network. */
    | 'unreachable'
    /** The transport failed otherwise. */
    | 'ssh-failed'
    /** The node binary named is not there. */
    | 'no-node'
    /** foreman's folder or program could not be made there (a full disk, no permission). */
    | 'bootstrap-failed'
    /** Nothing heard from it for the silence limit. */
    | 'silent'
    /** The channel ended without a report, or the remote program broke the protocol. */
    | 'lost';
  message: string;
}

export interface HostTransport {
  /** The host as a person names it (its URL). */
  readonly name: string;
  /** The absolute folder foreman works in there. */
  readonly workDir: string;
  /** The node binary there. */
  readonly node: string;
  /** The git binary there. */
  readonly git: string;
  /** Starts `command` (an argv) there, its stdin and stdout the channel's. */
  start(command: readonly string[]): ChildProcessWithoutNullStreams;
  /** What an exit of the transport's own means (ssh's 255, from its stderr); null when the exit is the remote command's. */
  fault(code: number | null, stderr: string): HostFault | null;
}
