// What a host's findings (the `checks` request, src/host/checks.ts) and, for a run that sandboxes,
// a sandboxed `true` tried there (the `sandbox-check` request) mean for a run: each problem named
// with its fix. A problem with `stops: true` leaves the host out of the run; the others are said
// and the host is used (the sandbox's tools missing only matters with `--sandbox on`). Pure.

import type { HostFindings, ObjectFormat } from './host-protocol.ts';

/**
 * The oldest git a host may have: 2.31 reads `GIT_CONFIG_COUNT` (the sandbox passes settings so),
 * and reads and bundles both object formats (SHA-256 arrived in 2.29), so the repository's format
 * is supported wherever this version is.
 */
export const MIN_GIT: readonly [number, number] = [2, 31];

/** The oldest Node.js the remote side runs on (its bundle is built for it). */
export const MIN_NODE_MAJOR = 20;

/**
 * The oldest Node.js the remote side runs sandboxed commands on: the sandbox runtime it carries
 * (@anthropic-ai/sandbox-runtime) declares Node >= 20.11. Without the sandbox any Node 20 will do.
 */
export const MIN_SANDBOX_NODE: readonly [number, number] = [20, 11];

/** Free space a host's work dir needs for a run's repository and workspaces, by default. */
export const DEFAULT_MIN_FREE_BYTES = 1024 ** 3;

export interface HostProblem {
  /** Which check found it. */
  check: 'git' | 'node' | 'claude' | 'auth' | 'sandbox' | 'sandbox-start' | 'disk';
  /** What is wrong, then what the person does about it: one line. */
  message: string;
  /** Whether the host cannot take part in the run. */
  stops: boolean;
}

/** `git version 2.39.5 (Apple Git-…)` → [2, 39], `v20.11.1` → [20, 11]; null when it says no version. */
export function versionNumbers(text: string): [number, number] | null {
  const match = /(\d+)\.(\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/**
 * What trying the sandbox there found (a run that sandboxes tries it before any attempt goes
 * there): it started, or it failed at `stage` — keeping the sandbox's helper there, or running
 * the sandboxed `true` — for `why` (one line).
 */
export type SandboxStart = { kind: 'started' } | { kind: 'failed'; stage: 'helper' | 'run'; why: string };

const atLeast = (version: readonly [number, number], minimum: readonly [number, number]): boolean =>
  version[0] > minimum[0] || (version[0] === minimum[0] && version[1] >= minimum[1]);

const gib = (bytes: number): string => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

export interface HostCheckNeeds {
  objectFormat: ObjectFormat;
  /** The claude binary asked for (the URL's `claude=`, else `claude`). */
  claude: string;
  minFreeBytes: number;
  /** Whether the run sandboxes its workers (`--sandbox on`): the tools missing then stop the host. */
  sandbox: boolean;
}

/**
 * The problems a host's findings show for a run that needs `needs`; none when it can take part.
 * `started`: what trying the sandbox there found (null: not tried — a dry run, or no sandbox).
 */
export function hostProblems(found: HostFindings, needs: HostCheckNeeds, started: SandboxStart | null = null): HostProblem[] {
  const problems: HostProblem[] = [];
  const version = found.git.path === null ? null : versionNumbers(found.git.version ?? '');
  if (found.git.path === null)
    problems.push({
      check: 'git',
      message: `git (${found.git.name}) is not on the PATH of an ssh command there (${found.path}): install git ${MIN_GIT.join('.')} or later, or name it with the URL's git= parameter`,
      stops: true,
    });
  else if (version === null || !atLeast(version, MIN_GIT))
    problems.push({
      check: 'git',
      message: `git there is ${found.git.version ?? 'of no version it says'}, older than ${MIN_GIT.join('.')}${needs.objectFormat === 'sha256' ? ' (and the repository uses SHA-256 objects)' : ''}: upgrade git on the host`,
      stops: true,
    });
  const node = versionNumbers(found.node.version);
  const nodeForSandbox = node !== null && atLeast(node, MIN_SANDBOX_NODE);
  if (node === null || node[0] < MIN_NODE_MAJOR)
    problems.push({
      check: 'node',
      message: `Node.js there is ${found.node.version}, older than ${MIN_NODE_MAJOR}: install a newer one, or name it with the URL's node= parameter`,
      stops: true,
    });
  else if (needs.sandbox && !nodeForSandbox)
    problems.push({
      check: 'node',
      message: `Node.js there is ${found.node.version}, older than the ${MIN_SANDBOX_NODE.join('.')} the sandbox needs (its runtime, @anthropic-ai/sandbox-runtime, declares Node >= ${MIN_SANDBOX_NODE.join('.')}): install Node.js ${MIN_SANDBOX_NODE.join('.')} or later there (or name one with the URL's node= parameter), or run with --sandbox off`,
      stops: true,
    });
  if (found.claude.path === null)
    problems.push({
      check: 'claude',
      message: `the claude binary (${needs.claude}) is not on the PATH of an ssh command there (${found.path}; a login shell's profile is not read): name it with the URL's claude= parameter, e.g. claude=/home/you/.local/bin/claude`,
      stops: true,
    });
  else if (found.auth?.kind === 'logged-out')
    problems.push({
      check: 'auth',
      message: `the Claude Code CLI there (${found.claude.path}) is not logged in: run \`claude\` once on the host to log in`,
      stops: true,
    });
  const missing = found.sandbox.filter((tool) => tool.path === null).map((tool) => tool.name);
  if (missing.length > 0)
    problems.push({
      check: 'sandbox',
      message: `the sandbox's tools are missing there (${missing.join(', ')}): install them on the host${needs.sandbox ? '' : ', or its workers run unsandboxed as with --sandbox off'}`,
      stops: needs.sandbox,
    });
  // The sandbox tried there: its failure is said when nothing found before explains it (its tools missing, a Node too old for it).
  else if (needs.sandbox && nodeForSandbox && started?.kind === 'failed')
    problems.push({ check: 'sandbox-start', message: sandboxStartMessage(started), stops: true });
  if (found.workDir.freeBytes !== null && found.workDir.freeBytes < needs.minFreeBytes)
    problems.push({
      check: 'disk',
      message: `the work dir has ${gib(found.workDir.freeBytes)} free (${found.workDir.checkedAt}), under the ${gib(needs.minFreeBytes)} a run needs: free space there or choose another work dir`,
      stops: true,
    });
  return problems;
}

/** Why the sandbox did not start there, and what the person does about it. */
function sandboxStartMessage(started: Extract<SandboxStart, { kind: 'failed' }>): string {
  return started.stage === 'helper'
    ? `the sandbox could not start there: its helper could not be kept in the work dir (${started.why}): free space there or fix the work dir's permissions, or run with --sandbox off`
    : `the sandbox could not start there: a sandboxed \`true\` failed (${started.why}): make bubblewrap work for the host's user (bubblewrap, socat and ripgrep installed, unprivileged user namespaces allowed: \`bwrap --ro-bind / / true\` must run there), or run with --sandbox off`;
}
