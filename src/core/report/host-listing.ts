// What `execute --dry-run` says of each host (`--host`): its URL's settings, which
// `.worktreeinclude` files it would get (only a host whose URL says `include=1`; a symbolic link
// named with its target, never followed) and, once the host checks have run, what they found.
// Pure: the files are listed, and the checks run, by the caller.

import type { DryRunEventBody } from './events.ts';
import type { Host, HostCheckResult, IncludedFile } from '../hosts/index.ts';

type HostEvent = Extract<DryRunEventBody, { type: 'dry-run-host' }>;

/**
 * One `dry-run-host` event per host, in the order given. `checks`: by host name, what the host
 * checks found (absent for a host: it was not checked; `local` is this machine, whose checks are
 * the run's own).
 */
export function hostEvents(hosts: readonly Host[], included: readonly IncludedFile[], checks: ReadonlyMap<string, readonly HostCheckResult[]>): HostEvent[] {
  return hosts.map((host): HostEvent => {
    const found = checks.get(host.name);
    const checked = found === undefined ? {} : { checks: [...found] };
    if (host.kind === 'local')
      return { type: 'dry-run-host', host: host.name, url: host.url, kind: 'local', slots: host.slots, include: true, included: [...included], ...checked };
    return {
      type: 'dry-run-host',
      host: host.name,
      url: host.url,
      kind: 'ssh',
      slots: host.slots,
      workDir: host.workDir,
      programs: { claude: host.claude, node: host.node, git: host.git },
      include: host.include,
      included: host.include ? [...included] : [],
      ...checked,
    };
  });
}

/** A file as the listing names it: `.env`, or `config/db.json -> ../secrets/db.json (a symbolic link, not followed)`. */
const fileWords = (file: IncludedFile): string =>
  file.link === null ? file.path : `${file.path} -> ${file.link} (a symbolic link, sent as a link, not followed)`;

/** The text lines of the hosts' events: a heading, then a line per host, its files and its checks. */
export function describeHosts(events: readonly HostEvent[], concurrency: number): string[] {
  if (events.length === 0) return [];
  const slots = events.reduce((sum, event) => sum + event.slots, 0);
  const lines = [
    `Hosts (--host): ${events.length === 1 ? '1 host' : `${events.length} hosts`}, ${slots} slots; up to ${concurrency} workers at once (--concurrency)`,
  ];
  for (const event of events) {
    const where =
      event.kind === 'local'
        ? 'this machine'
        : `work dir ${event.workDir}; claude ${event.programs!.claude}, node ${event.programs!.node}, git ${event.programs!.git}`;
    lines.push(`  ${event.host}: ${event.slots === 1 ? '1 slot' : `${event.slots} slots`}, ${where}`);
    if (event.kind === 'local') lines.push(`    .worktreeinclude files: copied here as in every worktree${event.included.length === 0 ? ' (none)' : ''}`);
    else if (!event.include) lines.push('    .worktreeinclude files: none sent (its URL has no include=1)');
    else lines.push(`    .worktreeinclude files sent (include=1): ${event.included.length === 0 ? 'none listed' : event.included.map(fileWords).join(', ')}`);
    if (event.kind === 'local') continue;
    if (event.checks === undefined) {
      lines.push('    checks: not run');
      continue;
    }
    for (const check of event.checks)
      lines.push(`    ${check.passed ? 'ok' : 'FAILED'} ${check.check}: ${check.found}${check.fix === null ? '' : `; ${check.fix}`}`);
  }
  return lines;
}
