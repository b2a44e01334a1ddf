// Host URLs: where a headless run's attempts work (`execute --host URL`, `--hosts FILE`).
// `ssh://[user@]host[:port]/absolute/work/dir?slots=N&…` is a machine reached with the person's own
// OpenSSH client and configuration (an alias of ~/.ssh/config works as `host`); `local?slots=N` is
// this machine. Pure: parsed and checked here, every problem one line naming it (the CLI exits 2).
// docs/hosts.md describes every parameter; `HOST_PARAMETERS` is the one list of them.

import { err, ok, type Result } from '../result.ts';
import { closestName } from '../plan/index.ts';

/** Slots a host has when its URL names none: as many workers as a run has by default. */
export const DEFAULT_SLOTS = 4;
/** The most slots one host may have (as many workers as `--concurrency` allows on this machine). */
export const MAX_SLOTS = 64;
/** The free space the host checks want in a work dir when the URL names none (MB). */
export const DEFAULT_FREE_MB = 1024;

/** This machine: its attempts work in worktrees of the run's own pool, as without hosts. */
export interface LocalHost {
  kind: 'local';
  /** Always `local`. */
  name: string;
  /** As given (the journal and `--dry-run` show it). */
  url: string;
  slots: number;
}

/** A machine reached by `ssh`, with the person's own client, keys, agent and known hosts. */
export interface SshHost {
  kind: 'ssh';
  /** How the run names it (the live view, the journal, the report): the `name` parameter, else `[user@]host[:port]`. */
  name: string;
  url: string;
  /** The login name (`-l`); absent: ssh's own choice (~/.ssh/config, else the local user). */
  user?: string;
  /** What ssh is given as the destination: a name, an alias of ~/.ssh/config, or an address (IPv6 without its brackets). */
  host: string;
  /** The port (`-p`); absent: ssh's own choice. */
  port?: number;
  /** The absolute folder on the host under which foreman works, and outside which it writes nothing. */
  workDir: string;
  slots: number;
  /** The Claude Code CLI there: a name on the non-login `PATH` of an ssh command, or an absolute path. */
  claude: string;
  /** Node.js there (≥ 20), which runs foreman's remote side. */
  node: string;
  /** git there. */
  git: string;
  /** The `.worktreeinclude` files (often `.env`) go to this host (`include=1`); by default they never do. */
  include: boolean;
  /** The host checks refuse a work dir with less free space than this (MB). */
  freeMb: number;
}

export type Host = LocalHost | SshHost;

/** Every query parameter, which hosts take it, and its default, as docs/hosts.md lists them. */
export const HOST_PARAMETERS = {
  slots: { local: true, default: String(DEFAULT_SLOTS) },
  claude: { local: false, default: 'claude' },
  node: { local: false, default: 'node' },
  git: { local: false, default: 'git' },
  include: { local: false, default: '0' },
  name: { local: false, default: '[user@]host[:port]' },
  'free-mb': { local: false, default: String(DEFAULT_FREE_MB) },
} as const;

type Parameter = keyof typeof HOST_PARAMETERS;
const PARAMETER_NAMES = Object.keys(HOST_PARAMETERS) as Parameter[];

/** A run's name for a host: letters, digits, `.`, `_`, `-`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** A host name, an alias of ~/.ssh/config or an IPv4 address; never one ssh would read as an option. */
const HOST_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const IPV6 = /^[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?$/;
const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

/** What the person gave, in quotes, for a one-line error: a control character shown as `\u001b`, never written to the terminal. */
const shown = (text: string): string => `"${text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;

/** `ssh://` `[user[:password]@]` `host | [v6]` `[:port]` `[/path]` `[?query]` `[#fragment]`. */
const SSH_URL = /^ssh:\/\/(?:([^@/?#]*)@)?(\[[^\]/?#]*\]|[^:/?#]*)(?::([^/?#]*))?([^?#]*)(?:\?([^#]*))?(#.*)?$/;

/** One URL as the person gave it, and where (`--host`, `hosts.txt:3`), for its errors. */
export interface HostSource {
  text: string;
  origin: string;
}

/** A host URL parsed and checked; the error is one line naming it, where it came from and what is wrong. */
export function parseHost(source: HostSource): Result<Host, string> {
  const fail = (problem: string) => err(`${source.origin} ${shown(source.text)}: ${problem}`);
  const text = source.text;
  if (CONTROL.test(text)) return fail('it holds a control character');
  if (text === 'local' || text.startsWith('local?')) {
    const query = parseQuery(text.slice('local'.length + 1), true);
    if (!query.ok) return fail(query.error);
    const slots = slotsOf(query.value.get('slots'));
    if (!slots.ok) return fail(slots.error);
    return ok({ kind: 'local', name: 'local', url: text, slots: slots.value });
  }
  if (!text.startsWith('ssh://')) {
    return fail(
      text.includes('://')
        ? `foreman reaches hosts by ssh only: ssh://[user@]host[:port]/work/dir, or local`
        : 'expected ssh://[user@]host[:port]/work/dir?slots=N, or local?slots=N',
    );
  }
  const parts = SSH_URL.exec(text);
  if (parts === null) return fail('not a URL of the form ssh://[user@]host[:port]/work/dir');
  const [, userPart, hostPart, portPart, pathPart, queryPart, fragment] = parts;
  if (fragment !== undefined) return fail('a URL of a host has no #fragment (write # in a work dir as %23)');
  const user = userOf(userPart);
  if (!user.ok) return fail(user.error);
  const host = hostOf(hostPart!);
  if (!host.ok) return fail(host.error);
  const port = portOf(portPart);
  if (!port.ok) return fail(port.error);
  const workDir = workDirOf(pathPart!);
  if (!workDir.ok) return fail(workDir.error);
  const query = parseQuery(queryPart ?? '', false);
  if (!query.ok) return fail(query.error);
  const get = (name: Parameter) => query.value.get(name);
  const slots = slotsOf(get('slots'));
  if (!slots.ok) return fail(slots.error);
  const include = get('include') ?? HOST_PARAMETERS.include.default;
  if (include !== '0' && include !== '1') return fail(`include expects 0 or 1, got "${include}"`);
  const freeMb = wholeNumber('free-mb', get('free-mb') ?? HOST_PARAMETERS['free-mb'].default, 0, 1_048_576);
  if (!freeMb.ok) return fail(freeMb.error);
  const programs: Record<'claude' | 'node' | 'git', string> = { claude: '', node: '', git: '' };
  for (const program of ['claude', 'node', 'git'] as const) {
    const value = programOf(program, get(program) ?? HOST_PARAMETERS[program].default);
    if (!value.ok) return fail(value.error);
    programs[program] = value.value;
  }
  const given = get('name');
  if (given !== undefined && (!NAME.test(given) || given === 'local'))
    return fail(`name "${given}" is not a host's name: letters, digits, ".", "_" and "-", and not "local"`);
  const name = given ?? `${user.value === null ? '' : `${user.value}@`}${hostPart}${port.value === null ? '' : `:${port.value}`}`;
  return ok({
    kind: 'ssh',
    name,
    url: text,
    ...(user.value !== null ? { user: user.value } : {}),
    host: host.value,
    ...(port.value !== null ? { port: port.value } : {}),
    workDir: workDir.value,
    slots: slots.value,
    ...programs,
    include: include === '1',
    freeMb: freeMb.value,
  });
}

/**
 * The hosts of a run, in the order given: each URL parsed, then the list checked as a whole (one
 * `local` at most, names that tell hosts apart, no work dir of a host named twice). The first
 * problem, in one line.
 */
export function parseHosts(sources: readonly HostSource[]): Result<Host[], string> {
  const hosts: Host[] = [];
  for (const source of sources) {
    const host = parseHost(source);
    if (!host.ok) return host;
    const same = hosts.find((other) => other.name === host.value.name);
    if (same !== undefined) {
      return err(
        host.value.kind === 'local'
          ? `${source.origin} ${shown(source.text)}: local is named twice (give this machine's slots once)`
          : `${source.origin} ${shown(source.text)}: another host is already called ${host.value.name} (${same.url}); tell them apart with name=…`,
      );
    }
    const twice = host.value.kind === 'ssh' ? hosts.find((other) => other.kind === 'ssh' && sameWorkDir(other, host.value as SshHost)) : undefined;
    if (twice !== undefined)
      return err(`${source.origin} ${shown(source.text)}: the same work dir on the same host as ${twice.url} (give a host's slots once)`);
    hosts.push(host.value);
  }
  return ok(hosts);
}

const sameWorkDir = (one: SshHost, other: SshHost): boolean =>
  one.host === other.host && one.port === other.port && one.user === other.user && one.workDir === other.workDir;

/** A hosts file (`--hosts FILE`): one URL a line; `#` starts a comment; blank lines are skipped. */
export function hostsFileSources(text: string, file: string): Result<HostSource[], string> {
  const sources: HostSource[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    const url = line.replace(/#.*$/, '').trim();
    if (url === '') continue;
    if (/\s/.test(url)) return err(`${file}:${i + 1}: one URL a line, got ${shown(url)}`);
    sources.push({ text: url, origin: `${file}:${i + 1}` });
  }
  if (sources.length === 0) return err(`${file} names no host (one URL a line: ssh://[user@]host[:port]/work/dir?slots=N, or local?slots=N)`);
  return ok(sources);
}

/** The slots of every host together: the most workers the hosts can run at once. */
export const totalSlots = (hosts: readonly Pick<Host, 'slots'>[]): number => hosts.reduce((sum, host) => sum + host.slots, 0);

/**
 * Workers at once: `--concurrency` caps the run's workers across every host (the limiter lowers
 * it under a rate limit as without hosts); without the flag, the hosts' slots together. More than
 * the slots could ever run is refused.
 */
export function runConcurrency(given: number | undefined, hosts: readonly Host[]): Result<number, string> {
  const slots = totalSlots(hosts);
  if (given === undefined) return ok(slots);
  if (given > slots)
    return err(`--concurrency ${given} is more than the hosts' ${slots} slots together: give a host more slots (slots=N), or a lower --concurrency`);
  return ok(given);
}

function parseQuery(query: string, local: boolean): Result<Map<Parameter, string>, string> {
  const values = new Map<Parameter, string>();
  if (query === '') return ok(values);
  for (const pair of query.split('&')) {
    const at = pair.indexOf('=');
    const key = decode(at < 0 ? pair : pair.slice(0, at));
    const value = decode(at < 0 ? '' : pair.slice(at + 1));
    if (!key.ok) return key;
    if (!value.ok) return value;
    if (!(PARAMETER_NAMES as string[]).includes(key.value)) {
      const meant = closestName(key.value, PARAMETER_NAMES);
      return err(`unknown parameter "${key.value}"${meant === null ? '' : `: did you mean ${meant}?`} (one of ${PARAMETER_NAMES.join(', ')})`);
    }
    const name = key.value as Parameter;
    if (local && !HOST_PARAMETERS[name].local) return err(`${name} is a parameter of an ssh host; local takes slots only`);
    if (values.has(name)) return err(`${name} is given twice`);
    if (value.value === '') return err(`${name} has no value`);
    values.set(name, value.value);
  }
  return ok(values);
}

function decode(text: string): Result<string, string> {
  try {
    const decoded = decodeURIComponent(text);
    return CONTROL.test(decoded) ? err(`"${text}" holds a control character`) : ok(decoded);
  } catch {
    return err(`"${text}" is not percent-encoded right (a % must be followed by two hex digits)`);
  }
}

function slotsOf(value: string | undefined): Result<number, string> {
  return wholeNumber('slots', value ?? HOST_PARAMETERS.slots.default, 1, MAX_SLOTS);
}

function wholeNumber(name: string, value: string, min: number, max: number): Result<number, string> {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max) return err(`${name} expects a whole number from ${min} to ${max}, got "${value}"`);
  return ok(number);
}

function userOf(part: string | undefined): Result<string | null, string> {
  if (part === undefined) return ok(null);
  const user = decode(part);
  if (!user.ok) return user;
  if (user.value.includes(':')) return err('a password is never taken in a URL: ssh runs with BatchMode=yes, and logs in with your keys or agent');
  if (!USER.test(user.value)) return err(`"${user.value}" is not a login name (letters, digits, ".", "_" and "-", not starting with "-" or ".")`);
  return ok(user.value);
}

function hostOf(part: string): Result<string, string> {
  if (part === '') return err('no host: ssh://[user@]host[:port]/work/dir');
  if (part.startsWith('[')) {
    const address = part.slice(1, -1);
    return IPV6.test(address) ? ok(address) : err(`"${part}" is not an IPv6 address`);
  }
  if (!HOST_NAME.test(part))
    return err(`"${part}" is not a host name, an alias of ~/.ssh/config or an address (letters, digits, ".", "_" and "-", not starting with "-")`);
  return ok(part);
}

function portOf(part: string | undefined): Result<number | null, string> {
  if (part === undefined) return ok(null);
  return wholeNumber('the port', part, 1, 65535);
}

function workDirOf(part: string): Result<string, string> {
  if (part === '' || part === '/') return err('no work dir: give the absolute folder foreman works under on the host, ssh://host/srv/foreman');
  const decoded = decode(part);
  if (!decoded.ok) return decoded;
  const dir = decoded.value.replace(/\/+$/, '');
  const segments = dir.split('/').slice(1);
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..'))
    return err(`the work dir "${decoded.value}" must be a plain absolute path (no "//", "." or "..")`);
  return ok(dir);
}

function programOf(name: string, value: string): Result<string, string> {
  if (value.startsWith('/') || !value.includes('/')) {
    if (value.startsWith('-')) return err(`${name} "${value}" would be read as an option`);
    return ok(value);
  }
  return err(`${name} expects a program's name (on the host's PATH) or an absolute path, got "${value}"`);
}
