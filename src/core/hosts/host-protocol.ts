// What foreman and its remote side (src/host/) say to each other over a host's channel: one JSON
// message a line on the remote program's stdin and stdout. foreman sends requests with ids, the
// bytes a request streams in (a git bundle, a command's stdin) and heartbeats; the host answers
// with events (a command's output, a bundle's bytes) and one reply per request, and heartbeats.
// Bytes travel base64 in chunks small enough that no line nears the reader's cap. Pure.

import type { AuthStatus } from './auth-status.ts';
import { err, ok, type Result } from '../result.ts';

/** The protocol's version: both sides refuse a peer that speaks another. */
export const HOST_PROTOCOL = 3;

/** How long either side waits hearing nothing before it gives the other up (the 30 s). */
export const DEFAULT_SILENCE_MS = 30_000;

/** How often each side says it is there: often enough that a few lost beats never reach the limit. */
export const heartbeatInterval = (silenceMs: number): number => Math.max(50, Math.floor(silenceMs / 6));

/** Bytes in one chunk of a stream (base64 makes a line of about 64 KiB). */
export const CHUNK_BYTES = 48 * 1024;

/** The longest line either side reads; a longer one is a broken peer. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** A git object format a repository can use. */
export type ObjectFormat = 'sha1' | 'sha256';

/** A name foreman gives a folder on the host (a repository's id, a plan's id): one plain path segment. */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const isFolderName = (value: unknown): value is string => typeof value === 'string' && SEGMENT.test(value) && !value.includes('..');

/** What the host is asked to do. */
export type HostRequest =
  /** Says foreman's protocol, the silence limit the host keeps from now on, and the git binary there (the URL's `git=`). */
  | { op: 'hello'; protocol: number; silenceMs: number; git: string }
  /** What the host has for a run: git, node, the claude binary and its login, the sandbox's tools, free disk. Writes nothing. */
  | { op: 'checks'; claude: string }
  /**
   * Whether the operating-system sandbox starts there: `true` run as a sandboxed check's command
   * is (the same sandbox host and spawn), writing nowhere but its own TMPDIR, with no network. Needs
   * the program and the sandbox's helper kept there (`sandbox-helper`).
   */
  | { op: 'sandbox-check' }
  /** Takes `<work dir>/<repository>/<plan>/` for this process (made 0700, locked) with its git repository. */
  | { op: 'open-run'; repository: string; plan: string; objectFormat: ObjectFormat }
  /** The bytes that follow (`input` messages) are a git bundle holding `commit`: into the run's repository. */
  | { op: 'receive-objects'; commit: string }
  /**
   * Removes the runs' folders under `<work dir>/<repository>/` (every repository's without one)
   * that no live process holds; with `plans`, only those plans' folders (`plan clean`).
   */
  | { op: 'clean'; repository?: string; plans?: string[] }
  /** Which of `commits` the run's repository has (what a bundle sent to it may leave out). */
  | { op: 'has-commits'; commits: string[] }
  /** A git bundle of `commit` (without what `exclude` reaches), sent back as `data` events. */
  | { op: 'send-objects'; commit: string; exclude: string[] }
  /**
   * A program run with `argv` (no shell) in `cwd` (relative to the run's folder), with the host's
   * environment plus `env`; its stdout and stderr come back as events, its stdin from `input`
   * messages when `stdin` is true; with `sandbox`, in the operating-system sandbox there.
   */
  | { op: 'run'; argv: string[]; cwd: string; env: Record<string, string>; stdin: boolean; sandbox?: HostSandbox }
  /**
   * Whether the sandbox runtime's seccomp helper (a native program that keeps a sandboxed command
   * from Unix sockets) for the host's architecture is kept beside the program, where the runtime
   * looks for it; with `keep`, the bytes that follow (`input` messages) are that helper, kept.
   */
  | { op: 'sandbox-helper'; keep: boolean };

/**
 * How a `run` is sandboxed on the host (src/host/sandboxed.ts): a check writes only in its `cwd`
 * and a TMPDIR of its own and reaches only `network` (the plan's `context.checkNetwork`); the
 * setup command also writes in the package managers' caches there and reaches the package
 * registries, `network` being the plan's `context.setupNetwork`, as here.
 */
export type HostSandbox = { kind: 'check'; network: string[] } | { kind: 'setup'; network?: string[] };

/** A tool the host was asked about: where it is, and its version when it says one. */
export interface FoundTool {
  name: string;
  path: string | null;
  version?: string;
}

/** What `checks` found on a host, as data; judged here (`src/core/hosts/host-checks.ts`). */
export interface HostFindings {
  platform: string;
  /** The PATH of the host's non-login command shell, which finds every bare name. */
  path: string;
  git: FoundTool;
  node: { version: string; path: string };
  claude: FoundTool;
  auth: AuthStatus | null;
  /** The sandbox's tools for the host's platform. */
  sandbox: FoundTool[];
  workDir: { exists: boolean; freeBytes: number | null; checkedAt: string };
}

/** How a run's command ended on the host. */
export type CommandExit = { kind: 'exited'; code: number } | { kind: 'killed'; signal: string } | { kind: 'not-started'; message: string };

/** What each request's reply holds when it succeeds. */
export interface HostReplies {
  hello: { protocol: number; version: string; pid: number; node: string };
  checks: HostFindings;
  /** Why the sandboxed `true` did not run (one line); null: it ran and exited 0. */
  'sandbox-check': { failed: string | null };
  'open-run': { dir: string };
  'receive-objects': { commit: string };
  'has-commits': { present: string[] };
  /** `<repository>/<plan>` of each run's folder removed, and of each a live process holds. */
  clean: { removed: string[]; held: string[] };
  'send-objects': { bytes: number };
  run: CommandExit;
  /** The host's architecture as the runtime names its helpers (`x64`, `arm64`; null: one it has none for), and whether the helper is kept there now. */
  'sandbox-helper': { arch: string | null; kept: boolean };
}

/**
 * Why a request failed: `refused`, the request cannot be done as asked (a run's folder another
 * live process holds, a path leaving the run's folder); `fault`, the host failed doing it (git
 * failing there, a full disk): the host is at fault, not the task.
 */
export interface HostError {
  kind: 'refused' | 'fault';
  message: string;
}

/** Something a request produces while it runs. */
export type HostEvent = { kind: 'started'; pid: number } | { kind: 'stdout' | 'stderr' | 'data'; data: string };

/** foreman → host. */
export type ToHost =
  | { type: 'request'; id: number; request: HostRequest }
  | { type: 'input'; id: number; data: string }
  | { type: 'input-end'; id: number }
  | { type: 'cancel'; id: number }
  | { type: 'ping' };

/** host → foreman. */
export type FromHost =
  /** The remote program's first line: it runs and reads. */
  | { type: 'ready'; protocol: number; version: string }
  | { type: 'event'; id: number; event: HostEvent }
  | { type: 'reply'; id: number; reply: Result<unknown, HostError> }
  | { type: 'ping' };

/** One message as its line. */
export const messageLine = (message: ToHost | FromHost): string => `${JSON.stringify(message)}\n`;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');
const isStringRecord = (value: unknown): value is Record<string, string> => isRecord(value) && Object.values(value).every((item) => typeof item === 'string');
const isHostSandbox = (value: unknown): value is HostSandbox =>
  isRecord(value) && (value.kind === 'check' ? isStrings(value.network) : value.kind === 'setup' && (value.network === undefined || isStrings(value.network)));
const isObjectFormat = (value: unknown): value is ObjectFormat => value === 'sha1' || value === 'sha256';

/** A request as the host reads it, or null when it is none it knows. */
function readRequest(value: unknown): HostRequest | null {
  if (!isRecord(value)) return null;
  switch (value.op) {
    case 'hello':
      return Number.isSafeInteger(value.protocol) &&
        Number.isSafeInteger(value.silenceMs) &&
        (value.silenceMs as number) > 0 &&
        typeof value.git === 'string' &&
        value.git !== ''
        ? { op: 'hello', protocol: value.protocol as number, silenceMs: value.silenceMs as number, git: value.git }
        : null;
    case 'checks':
      return typeof value.claude === 'string' && value.claude !== '' ? { op: 'checks', claude: value.claude } : null;
    case 'sandbox-check':
      return { op: 'sandbox-check' };
    case 'open-run':
      return isFolderName(value.repository) && isFolderName(value.plan) && isObjectFormat(value.objectFormat)
        ? { op: 'open-run', repository: value.repository, plan: value.plan, objectFormat: value.objectFormat }
        : null;
    case 'receive-objects':
      return typeof value.commit === 'string' ? { op: 'receive-objects', commit: value.commit } : null;
    case 'has-commits':
      return isStrings(value.commits) ? { op: 'has-commits', commits: value.commits } : null;
    case 'clean':
      if (value.repository === undefined) return value.plans === undefined ? { op: 'clean' } : null;
      if (!isFolderName(value.repository)) return null;
      if (value.plans === undefined) return { op: 'clean', repository: value.repository };
      return Array.isArray(value.plans) && value.plans.every(isFolderName) ? { op: 'clean', repository: value.repository, plans: value.plans } : null;
    case 'send-objects':
      return typeof value.commit === 'string' && isStrings(value.exclude) ? { op: 'send-objects', commit: value.commit, exclude: value.exclude } : null;
    case 'run':
      if (value.sandbox !== undefined && !isHostSandbox(value.sandbox)) return null;
      return isStrings(value.argv) && value.argv.length > 0 && typeof value.cwd === 'string' && isStringRecord(value.env) && typeof value.stdin === 'boolean'
        ? {
            op: 'run',
            argv: value.argv,
            cwd: value.cwd,
            env: value.env,
            stdin: value.stdin,
            ...(value.sandbox === undefined ? {} : { sandbox: value.sandbox }),
          }
        : null;
    case 'sandbox-helper':
      return typeof value.keep === 'boolean' ? { op: 'sandbox-helper', keep: value.keep } : null;
    default:
      return null;
  }
}

/**
 * A line read as a message: its JSON object, a heartbeat, else what `read` makes of it (null:
 * a type it does not know); or why it is none.
 */
function readLine<T>(line: string, read: (value: Record<string, unknown>) => Result<T, string> | null): Result<T | { type: 'ping' }, string> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return err('a line that is not JSON');
  }
  if (!isRecord(value)) return err('a message that is not an object');
  if (value.type === 'ping') return ok({ type: 'ping' });
  return read(value) ?? err(`a message of an unknown type (${String(value.type)})`);
}

/** A line foreman sent, read by the host: the message, or why it is not one. */
export const readToHost = (line: string): Result<ToHost, string> =>
  readLine(line, (value): Result<ToHost, string> | null => {
    switch (value.type) {
      case 'request': {
        if (!isId(value.id)) return err('a request without an id');
        const request = readRequest(value.request);
        return request === null ? err(`request ${value.id} is none the host knows`) : ok({ type: 'request', id: value.id, request });
      }
      case 'input':
        return isId(value.id) && typeof value.data === 'string' ? ok({ type: 'input', id: value.id, data: value.data }) : err('a broken input message');
      case 'input-end':
      case 'cancel':
        return isId(value.id) ? ok({ type: value.type, id: value.id }) : err(`a ${value.type} without an id`);
      default:
        return null;
    }
  });

/** A line the host sent, read by foreman: the message, or why it is not one. The host is foreman's own program; its replies' values are trusted to match their requests. */
export const readFromHost = (line: string): Result<FromHost, string> =>
  readLine(line, (value): Result<FromHost, string> | null => {
    switch (value.type) {
      case 'ready':
        return Number.isSafeInteger(value.protocol) && typeof value.version === 'string'
          ? ok({ type: 'ready', protocol: value.protocol as number, version: value.version })
          : err('a broken ready message');
      case 'event':
        return isId(value.id) && isRecord(value.event) && typeof value.event.kind === 'string'
          ? ok({ type: 'event', id: value.id, event: value.event as HostEvent })
          : err('a broken event');
      case 'reply':
        return isId(value.id) && isRecord(value.reply) && typeof value.reply.ok === 'boolean'
          ? ok({ type: 'reply', id: value.id, reply: value.reply as Result<unknown, HostError> })
          : err('a broken reply');
      default:
        return null;
    }
  });

/** Bytes cut into chunks for `input` or `data` messages, base64. */
export function* base64Chunks(bytes: Buffer): Generator<string> {
  for (let start = 0; start < bytes.length; start += CHUNK_BYTES) yield bytes.subarray(start, start + CHUNK_BYTES).toString('base64');
}
