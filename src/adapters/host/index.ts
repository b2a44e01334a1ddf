// Hosts reached over SSH: the channel, the bootstrap, the remote program's bundle, and git objects sent and fetched.
// What the rest of foreman uses from this folder; its other files are its own.

export { type HostChannel, openChannel, type RequestError } from './channel.ts';
export { fetchCommit, sendCommit } from './objects.ts';
export { shellLine } from './quote.ts';
export { sendSandboxHelper } from './sandbox-helper.ts';
export { type SshHost, sshTransport } from './ssh.ts';
export type { HostFault } from './transport.ts';
