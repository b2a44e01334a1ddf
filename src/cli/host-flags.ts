// `execute`'s hosts: `--host URL` (repeatable) and `--hosts FILE` (one URL a line), declared and
// read here; each URL is parsed by core/hosts/url.ts. Without either, the run has no hosts and
// places nothing: its workers run here, as they always did.

import { readFile } from 'node:fs/promises';
import { posix, resolve } from 'node:path';
import { type Git, includedFiles } from '../adapters/index.ts';
import {
  type AuthStatus,
  type DryRunEventBody,
  type Host,
  hostAccounts,
  type HostCheckResult,
  hostEvents,
  hostsFileSources,
  type HostSource,
  parseHosts,
  runConcurrency,
  totalSlots,
} from '../core/index.ts';
import { type CheckedHost, checkHosts, type HostCheckNeedsOfRun, type HostCleaning } from '../run/index.ts';
import type { Io, OptionSpec } from './command.ts';
import { CliError, EXIT, usageError } from './exit.ts';

export const hostOptions: Record<string, OptionSpec> = {
  host: {
    type: 'string',
    multiple: true,
    valueName: 'URL',
    description:
      'run attempts on this host, repeatable: ssh://[user@]host[:port]/work/dir?slots=N (your own ssh and its configuration) or local?slots=N (this machine); only the hosts given run workers (see docs/hosts.md; default: every worker here)',
  },
  hosts: { type: 'string', valueName: 'FILE', description: 'the hosts of --host, one URL a line (# comments); with --host, both' },
};

/** `plan clean`'s hosts: the same URLs, whose run folders of the plan it removes. */
export const cleanHostOptions: Record<string, OptionSpec> = {
  host: {
    type: 'string',
    multiple: true,
    valueName: 'URL',
    description:
      "also remove the plan's run folders on this ssh host that no live run holds, repeatable: the URL execute --host takes (see docs/hosts.md); local is this machine, cleaned anyway",
  },
  hosts: { type: 'string', valueName: 'FILE', description: 'the hosts of --host, one URL a line (# comments); with --host, both' },
};

/**
 * The run's hosts (null: none given) and its concurrency: `--concurrency` caps the workers across
 * every host, and defaults to the hosts' slots together. Every problem is a usage error (exit 2).
 */
export async function hostsOf(
  values: Record<string, unknown>,
  concurrency: number | undefined,
  io: Pick<Io, 'cwd'>,
): Promise<{ hosts: Host[]; concurrency: number } | null> {
  const given = Array.isArray(values.host) ? (values.host as string[]) : [];
  const file = typeof values.hosts === 'string' ? values.hosts : undefined;
  if (given.length === 0 && file === undefined) return null;
  const sources: HostSource[] = given.map((text) => ({ text, origin: '--host' }));
  if (file !== undefined) {
    const text = await readFile(resolve(io.cwd, file), 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw usageError(`--hosts ${file}: cannot read it (${error.code ?? error.message})`);
    });
    const listed = hostsFileSources(text, file);
    if (!listed.ok) throw usageError(`--hosts ${listed.error}`);
    sources.push(...listed.value);
  }
  const hosts = parseHosts(sources);
  if (!hosts.ok) throw usageError(hosts.error);
  const workers = runConcurrency(concurrency, hosts.value);
  if (!workers.ok) throw usageError(workers.error);
  return { hosts: hosts.value, concurrency: workers.value };
}

/**
 * What `--dry-run` lists of the hosts: each with its slots and the `.worktreeinclude` files it
 * would get. `checks`: the host checks' results by host name, when they ran; the checks
 * themselves (reaching each host, looking, writing nothing there) are the host channel's.
 */
export async function hostsListed(
  hosts: readonly Host[],
  git: Git,
  repo: string,
  checks: ReadonlyMap<string, readonly HostCheckResult[]> = new Map(),
): Promise<DryRunEventBody[]> {
  return hostEvents(hosts, await includedFiles(git, repo), checks);
}

/**
 * Each ssh host reached and checked before anything starts (a dry run writes nothing on any): a
 * host that fails is left out, named with its reason and fix; with no host left the run refuses
 * (exit 3) before any worker starts. The hosts that remain (`--concurrency` capped by their
 * slots), what the checks found of each, and a line for each host left out.
 */
export async function checkedHosts(
  hosts: readonly Host[],
  concurrency: number,
  needs: HostCheckNeedsOfRun,
): Promise<{ hosts: Host[]; concurrency: number; checked: CheckedHost[]; leftOut: string[] }> {
  const checked = await checkHosts(hosts, needs);
  const out = new Set(checked.flatMap((host) => (host.leftOut === null ? [] : [host.host.name])));
  const leftOut = checked.flatMap((host) => (host.leftOut === null ? [] : [`host ${host.host.name} is left out of the run: ${host.leftOut}`]));
  const remaining = hosts.filter((host) => !out.has(host.name));
  if (remaining.length === 0)
    throw new CliError(EXIT.cannotRun, [...leftOut, 'no host is left to run the plan on: fix one of them, or add local?slots=N to run here']);
  return { hosts: remaining, concurrency: Math.min(concurrency, totalSlots(remaining)), checked, leftOut };
}

/** What the checks found, by host, for the dry run's listing. */
export const checkResults = (checked: readonly CheckedHost[]): Map<string, readonly HostCheckResult[]> =>
  new Map(checked.map((host) => [host.host.name, host.results]));

/** The hosts taking part that are logged in to another account than this machine (`login`): each has that account's limiter (docs/hosts.md). */
export const limiterAccounts = (login: AuthStatus | null, checked: readonly CheckedHost[]): Map<string, string> =>
  hostAccounts(
    login,
    checked.filter((host) => host.leftOut === null).map((host) => ({ name: host.host.name, auth: host.auth })),
  );

/** What `plan clean` did on each host, a line each: a run folder removed or kept, nothing there, or why the host was not cleaned. */
export function describeHostCleaning(cleaning: HostCleaning): string[] {
  const name = `host ${cleaning.host.name}`;
  if ('failed' in cleaning) return [`${name}: not cleaned: ${cleaning.failed}; run the same command again once it answers`];
  const where = (folder: string): string => posix.join(cleaning.host.workDir, folder);
  if (cleaning.removed.length === 0 && cleaning.held.length === 0) return [`${name}: no run folder of the plan there`];
  return [
    ...cleaning.removed.map((folder) => `${name}: removed ${where(folder)}`),
    ...cleaning.held.map((folder) => `${name}: kept ${where(folder)}: a live run holds it`),
  ];
}

/** `plan clean --json`'s record of one host. */
export const hostCleaningJson = (cleaning: HostCleaning) =>
  'failed' in cleaning
    ? { host: cleaning.host.name, failed: cleaning.failed }
    : {
        host: cleaning.host.name,
        removed: cleaning.removed.map((folder) => posix.join(cleaning.host.workDir, folder)),
        held: cleaning.held.map((folder) => posix.join(cleaning.host.workDir, folder)),
      };
