// A run's ssh hosts before anything starts, and their channels while it runs. Each host's channel
// is opened (the person's own ssh, BatchMode) and its checks asked (src/host/checks.ts, judged by
// core/hosts/host-checks.ts), and for a run that sandboxes a sandboxed `true` tried there
// (src/host/sandboxed.ts): a host that cannot be reached or fails a check that stops it is left out,
// named with its reason and fix. A dry run opens the channels with nothing kept on the hosts and
// closes them. A run keeps each checked channel for its workspaces (run/workspace/host.ts), and
// opens another once one went down, when an attempt is placed there again after its back-off.

import {
  type HostChannel,
  type HostFault,
  openChannel,
  type RequestError,
  sendSandboxHelper,
  type SshHost as SshTarget,
  sshTransport,
} from '../adapters/index.ts';
import {
  accountWords,
  type AuthStatus,
  err,
  type Host,
  type HostCheckResult,
  type HostFindings,
  type HostProblem,
  hostProblems,
  type ObjectFormat,
  ok,
  type Result,
  type SandboxStart,
  type SshHost,
} from '../core/index.ts';

/** What the channel is given of a host: where ssh reaches it, and its programs there. */
export const sshTarget = (host: SshHost): SshTarget => ({
  kind: 'ssh',
  host: host.host,
  workDir: host.workDir,
  claude: host.claude,
  node: host.node,
  git: host.git,
  ...(host.user !== undefined ? { user: host.user } : {}),
  ...(host.port !== undefined ? { port: host.port } : {}),
});

/** One host as the checks found it. */
export interface CheckedHost {
  host: SshHost;
  results: HostCheckResult[];
  /** Why it is left out of the run (its reasons and fixes, one line); null: it takes part. */
  leftOut: string | null;
  /** Its channel, open (a run's), or null (a dry run's, closed; or it could not be opened). */
  channel: HostChannel | null;
  /** What its CLI's `auth status` said (the account its limits are, core/hosts/accounts.ts); null when it was not asked. */
  auth: AuthStatus | null;
}

export interface HostCheckNeedsOfRun {
  objectFormat: ObjectFormat;
  /** Whether the run's workers are sandboxed: the sandbox's tools missing then leave a host out. */
  sandbox: boolean;
  /** A dry run: nothing is written on any host, and the channels are closed once checked. */
  dryRun: boolean;
  /** foreman's environment: ssh is started with its PATH and login variables only. */
  env: NodeJS.ProcessEnv;
}

/**
 * The longest work dir a sandboxed worker's sockets fit under: they live in its TMPDIR,
 * `<work dir>/.t/<pid, base 36>-<task>` (at most 12 bytes more), and a socket's path may not pass
 * 107 bytes (measured with Claude Code 2.1.330: a 71-byte TMPDIR works, a 78-byte one does not).
 */
export const MAX_SANDBOX_WORK_DIR_BYTES = 59;

const gib = (bytes: number): string => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

/**
 * What each check found, said plainly, with its problem (when it has one) as what failed.
 * `started`: for a run that sandboxes, what trying the sandbox found (null: not tried, a dry run).
 */
function checkResults(found: HostFindings, problems: readonly HostProblem[], started?: SandboxStart | null): HostCheckResult[] {
  const of = (check: HostProblem['check'], name: string, saw: string): HostCheckResult => {
    const problem = problems.find((p) => p.check === check);
    return problem === undefined ? { check: name, passed: true, found: saw, fix: null } : { check: name, passed: false, found: problem.message, fix: null };
  };
  const auth =
    found.auth === null
      ? 'not asked'
      : found.auth.kind === 'logged-in'
        ? `logged in (${found.auth.method}${found.auth.account !== undefined ? `: ${accountWords(found.auth)}` : ''})`
        : found.auth.kind === 'logged-out'
          ? 'logged out'
          : `it could not say (${found.auth.why})`;
  return [
    { check: 'ssh', passed: true, found: 'reached without a prompt; foreman’s program runs there', fix: null },
    of('git', 'git', found.git.version ?? found.git.path ?? 'not found'),
    of('node', 'node', `${found.node.version} (${found.node.path})`),
    of('claude', 'claude', found.claude.path ?? 'not found'),
    of('auth', 'claude auth status', auth),
    of('sandbox', 'sandbox tools', found.sandbox.map((tool) => `${tool.name} ${tool.path === null ? 'missing' : 'found'}`).join(', ') || 'none needed'),
    // A failure a check above explains (its tools missing, a Node too old) is said there, and fails this line too.
    ...(started === undefined
      ? []
      : [{ ...of('sandbox-start', 'sandbox start', sandboxStartWords(started)), ...(started?.kind === 'failed' ? { passed: false } : {}) }]),
    of('disk', 'free disk', found.workDir.freeBytes === null ? 'unknown' : `${gib(found.workDir.freeBytes)} free at ${found.workDir.checkedAt}`),
  ];
}

/** Why a request to a host failed, in its words: the channel down, the host's answer, or this side's. */
const whyFailed = (error: RequestError | { kind: 'local'; message: string }): string => (error.kind === 'down' ? error.fault.message : error.message);

/**
 * The sandbox tried on the host, for a run that sandboxes, before any attempt goes there: its
 * helper kept there, then a sandboxed `true` run as a sandboxed check's command is.
 */
async function trySandbox(channel: HostChannel): Promise<SandboxStart> {
  const helper = await sendSandboxHelper(channel);
  if (!helper.ok) return { kind: 'failed', stage: 'helper', why: whyFailed(helper.error) };
  const tried = await channel.request({ op: 'sandbox-check' });
  if (!tried.ok) return { kind: 'failed', stage: 'run', why: whyFailed(tried.error) };
  return tried.value.failed === null ? { kind: 'started' } : { kind: 'failed', stage: 'run', why: tried.value.failed };
}

/** What trying the sandbox found, for the dry run's listing. */
const sandboxStartWords = (started: SandboxStart | null): string =>
  started === null
    ? 'not tried by a dry run, which writes nothing there (the run tries a sandboxed `true` there before any attempt goes there)'
    : started.kind === 'started'
      ? 'a sandboxed `true` ran'
      : `not started (${started.why})`;

/** Reaches and checks one host; its channel kept open unless it is left out or the run is a dry run. */
async function checkHost(host: SshHost, needs: HostCheckNeedsOfRun): Promise<CheckedHost> {
  const opened = await openChannel(sshTransport(sshTarget(host), needs.env), { keep: !needs.dryRun });
  if (!opened.ok)
    return {
      host,
      results: [{ check: 'ssh', passed: false, found: opened.error.message, fix: null }],
      leftOut: opened.error.message,
      channel: null,
      auth: null,
    };
  const channel = opened.value;
  const length = Buffer.byteLength(host.workDir);
  // The sandbox is tried while the host looks at what it has; not by a dry run, which writes nothing there, nor in a work dir its sockets do not fit under (said below).
  const [asked, started] = await Promise.all([
    channel.request({ op: 'checks', claude: host.claude }),
    needs.sandbox && !needs.dryRun && length <= MAX_SANDBOX_WORK_DIR_BYTES ? trySandbox(channel) : null,
  ]);
  if (!asked.ok) {
    await channel.close();
    const why = whyFailed(asked.error);
    return { host, results: [{ check: 'ssh', passed: false, found: why, fix: null }], leftOut: why, channel: null, auth: null };
  }
  const problems = hostProblems(
    asked.value,
    { objectFormat: needs.objectFormat, claude: host.claude, minFreeBytes: host.freeMb * 1024 ** 2, sandbox: needs.sandbox },
    started,
  );
  const results = checkResults(asked.value, problems, needs.sandbox ? started : undefined);
  if (needs.sandbox && length > MAX_SANDBOX_WORK_DIR_BYTES) {
    const message = `the work dir's path is ${length} bytes, longer than the ${MAX_SANDBOX_WORK_DIR_BYTES} under which a sandboxed worker's sockets fit (a socket's path may not pass 107 bytes): choose a shorter work dir, or run with --sandbox off`;
    problems.push({ check: 'disk', message, stops: true });
    results.push({ check: 'work dir path', passed: false, found: message, fix: null });
  }
  const stopping = problems.filter((problem) => problem.stops);
  const leftOut = stopping.length === 0 ? null : stopping.map((problem) => problem.message).join('; ');
  if (needs.dryRun || leftOut !== null) await channel.close();
  return { host, results, leftOut, channel: needs.dryRun || leftOut !== null ? null : channel, auth: asked.value.auth };
}

/** Every ssh host of `hosts` checked, at once, in their order. */
export function checkHosts(hosts: readonly Host[], needs: HostCheckNeedsOfRun): Promise<CheckedHost[]> {
  return Promise.all(hosts.flatMap((host) => (host.kind === 'ssh' ? [checkHost(host, needs)] : [])));
}

/** A host's channels over a run: the checked one first, a new one once it went down; every one closed at the end. */
export class HostLink {
  private readonly opened: HostChannel[] = [];
  private first: HostChannel | null;

  constructor(
    readonly host: SshHost,
    checked: HostChannel | null,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.first = checked;
    if (checked !== null) this.opened.push(checked);
  }

  private closed = false;

  async connect(): Promise<Result<HostChannel, HostFault>> {
    const first = this.first;
    this.first = null;
    if (first !== null && first.down === null) return ok(first);
    if (this.closed) return err({ reason: 'lost', message: `the channels to ${this.host.name} were closed: the run is ending` });
    const opened = await openChannel(sshTransport(sshTarget(this.host), this.env), { keep: true });
    if (!opened.ok) return opened;
    this.opened.push(opened.value);
    // Opened as the run ended: closed at once, not left behind.
    if (this.closed) await this.close();
    return opened;
  }

  /** Closes every channel opened so far, and any still opening; none opens after. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.opened.map((channel) => channel.close()));
  }
}

/** What `plan clean` did on one ssh host: the plans' run folders removed and kept (a live run holds them), or why it could not. */
export type HostCleaning = { host: SshHost; removed: string[]; held: string[] } | { host: SshHost; failed: string };

/**
 * `plan clean --host`: on each ssh host of `hosts`, at once, the run folders of `plans` (of the
 * repository `repository` there) that no live process holds are removed. A host that cannot be
 * reached, or fails the cleaning, is said so; the others are cleaned all the same.
 */
export function cleanOnHosts(hosts: readonly Host[], repository: string, plans: readonly string[], env: NodeJS.ProcessEnv): Promise<HostCleaning[]> {
  return Promise.all(hosts.flatMap((host) => (host.kind === 'ssh' ? [cleanOnHost(host, repository, plans, env)] : [])));
}

async function cleanOnHost(host: SshHost, repository: string, plans: readonly string[], env: NodeJS.ProcessEnv): Promise<HostCleaning> {
  const opened = await openChannel(sshTransport(sshTarget(host), env), { keep: true });
  if (!opened.ok) return { host, failed: opened.error.message };
  try {
    const cleaned = await opened.value.request({ op: 'clean', repository, plans: [...plans] });
    if (!cleaned.ok) return { host, failed: whyFailed(cleaned.error) };
    return { host, removed: cleaned.value.removed, held: cleaned.value.held };
  } finally {
    await opened.value.close();
  }
}
