// Hosts: their URLs, the checks and facts found on them, where attempts go, and the protocol spoken with them.
// What the rest of foreman uses from this folder; its other files are its own.

export { accountWords, hostAccounts } from './accounts.ts';
export { type AuthStatus, notLoggedInLines, parseAuthStatus } from './auth-status.ts';
export { type HostProblem, hostProblems, type SandboxStart } from './host-checks.ts';
export type { HostCheckResult, IncludedFile } from './host-facts.ts';
export {
  base64Chunks,
  type CommandExit,
  DEFAULT_SILENCE_MS,
  type FoundTool,
  type FromHost,
  heartbeatInterval,
  HOST_PROTOCOL,
  type HostError,
  type HostEvent,
  type HostFindings,
  type HostReplies,
  type HostRequest,
  type HostSandbox,
  isFolderName,
  MAX_LINE_BYTES,
  messageLine,
  type ObjectFormat,
  readFromHost,
  readToHost,
  type ToHost,
} from './host-protocol.ts';
export {
  allDownSince,
  DEFAULT_HOST_BACKOFF_MS,
  freePlaces,
  hostFault,
  type HostSlots,
  type HostState,
  hostTried,
  hostWorks,
  newHosts,
  nextRetry,
  place,
  type Place,
} from './placement.ts';
export { type Host, hostsFileSources, type HostSource, parseHosts, runConcurrency, type SshHost, totalSlots } from './url.ts';
