// The person's Read and Edit deny rules in foreman's own sandboxed commands (the setup command,
// the acceptance and assumption checks, the gate, the probe's), as Claude Code's own sandbox
// would hold them had the person run those commands there: the same mapping as the worker hook's
// (core/sandbox/sandbox-denies.ts), with the rules the person's settings hold for the repository (and, in
// a Claude Code session, its command line: `CLAUDE_PID`). Where a rule cannot be held as written,
// the rest still are, and the run says so once (`unheldNotice`): never silently dropped.

import { realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { carriedDenies, heldDenies, type HeldDenies, pathsToResolve, runtimeWritable } from '../../core/index.ts';
import { personRules } from './person-rules.ts';
import { realTargets } from './real-paths.ts';

/** Where one of foreman's own commands runs: its repository, its folder, and where it may write. */
export interface OwnCommandScope {
  /** The repository whose settings hold the person's rules; relative rules are read under it. */
  repo: string;
  /** The command's folder (a checkout of the repository): relative rules are read under it too. */
  cwd: string;
  /** Where the command may write (its TMPDIR included). */
  writable: readonly string[];
}

/** The person's deny rules as a sandboxed command in `scope` holds them, and those it cannot hold as written, each with why. */
export async function personDenies(scope: OwnCommandScope, env: NodeJS.ProcessEnv = process.env): Promise<HeldDenies & { unread: string[] }> {
  const rules = await personRules(env, [scope.repo]);
  const home = env.HOME || homedir();
  const ctx = { roots: [...new Set([scope.repo, scope.cwd])], home, writable: [...scope.writable, ...runtimeWritable(home)] };
  const real = await realTargets(pathsToResolve(rules.deny, ctx));
  return { ...heldDenies(rules.deny, { ...ctx, real }), unread: rules.unread ?? [] };
}

/** What to say once, before foreman's own sandboxed commands run, about the person's deny rules they cannot hold; null when they hold every one. */
export function unheldNotice(held: { unheld: readonly string[]; unread: readonly string[] }): string | null {
  const parts = [
    ...(held.unheld.length > 0
      ? [
          `these deny rules of yours cannot be held as written by the sandbox foreman runs its own commands in (the setup command, the acceptance and assumption checks, the gate), so they do not hold there: ${held.unheld.join('; ')}`,
        ]
      : []),
    ...(held.unread.length > 0 ? [`${held.unread.join(' and ')} could not be read exactly, so the Read and Edit deny rules there do not hold in it`] : []),
  ];
  return parts.length === 0 ? null : `${parts.join('; and ')}. Your other Read and Edit deny rules hold in it, as in Claude Code's own sandbox`;
}

/**
 * The person's deny rules for a headless worker in `worktree`, a checkout of `repo`, as its
 * `--settings` carries them (core/sandbox/carried-denies.ts): those of the settings files that
 * `--setting-sources ""` drops (managed, the user's, the repository's shared and local), never a
 * worktree's, whose files a worker may write. A path rule is anchored at each spelling of the two
 * folders, as written and as real paths, to deny more, never less.
 */
export async function workerPersonDenies(repo: string, worktree: string, env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  // The files only: a session the run was started from has rules of its own, not the person's settings.
  const { CLAUDE_PID: _session, ...settingsOnly } = env;
  const rules = await personRules(settingsOnly, [repo]);
  if (rules.deny.length === 0) return [];
  const spelled = [worktree, repo];
  const real = await Promise.all(spelled.map((folder) => realpath(folder).catch(() => folder)));
  return carriedDenies(rules.deny, [...real, ...spelled]);
}
