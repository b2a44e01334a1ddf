// One sandboxed command, made ready to spawn: what it may write and reach (`CommandSandbox`), the
// runtime's settings for it, and its wrapping by a sandbox host of this process (sandbox-host.ts)
// with a temporary directory of its own. The shell adapter (checks.ts) spawns what this returns;
// whether and how a run sandboxes its commands is sandbox.ts's.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, type FileDenies, ok, type Result } from '../../core/index.ts';
import { personDenies } from './person-denies.ts';
import { leaseSandboxHost, type RuntimeSettings } from './sandbox-host.ts';

/** What a sandboxed command may do besides reading. */
export interface CommandSandbox {
  /** Directories it may write in (the workspace); its own TMPDIR is added. */
  writable: readonly string[];
  /**
   * Hosts it may reach through the runtime's proxy (`example.com`, `*.example.com`, an optional
   * `:port`): the plan's `context.checkNetwork`. Empty: no network but its own loopback.
   */
  allowedDomains: readonly string[];
  /**
   * The repository whose person's Read and Edit deny rules the command is held to, as in Claude
   * Code's own sandbox (adapters/sandbox/person-denies.ts); none for the sandbox's own self-test.
   */
  rulesOf?: string;
}

/** The runtime's settings for one command; `denies`: what the person's deny rules keep it from (adapters/sandbox/person-denies.ts). */
export function runtimeSettings(sandbox: CommandSandbox, ownTmp: string, denies: FileDenies = { denyRead: [], denyWrite: [] }): RuntimeSettings {
  return {
    filesystem: { allowWrite: [...sandbox.writable, ownTmp], denyWrite: [...denies.denyWrite], denyRead: [...denies.denyRead] },
    // No allowed domain: the command's network namespace has its own loopback and nothing else.
    network: { allowedDomains: [...sandbox.allowedDomains], deniedDomains: [] },
  };
}

/** How to spawn `command` in the sandbox, and what to do once it ended. */
export interface SandboxedSpawn {
  file: string;
  args: string[];
  /** Added to the command's environment: its own TMPDIR. */
  env: Record<string, string>;
  /** Hands the host back (the runtime removes its placeholders) and removes the temporary directory. */
  cleanup: () => Promise<void>;
}

/**
 * Where a command is wrapped other than by this machine's own sandbox host: on an SSH host, by
 * foreman's remote program there (src/host/sandboxed.ts), its TMPDIR a folder the caller made in
 * the host's work dir (removed with the command).
 */
export interface SpawnPlace {
  /** The sandbox host's script for node, with its leading arguments. */
  hostProgram: readonly string[];
  /** The sandbox host's TMPDIR, where the runtime keeps its bridge sockets: short enough for a socket's path. */
  hostTmp: string;
  ownTmp: string;
}

/**
 * Prepares one sandboxed run of `command` in `cwd`: a host of this process wraps it
 * (adapters/sandbox/sandbox-host.ts) with a temporary directory of its own as its TMPDIR (made
 * here, or `place`'s); why not, when the host cannot.
 */
export async function sandboxedSpawn(command: string, cwd: string, sandbox: CommandSandbox, place?: SpawnPlace): Promise<Result<SandboxedSpawn, string>> {
  const base = place?.ownTmp ?? mkdtempSync(join(tmpdir(), 'foreman-sandbox-'));
  const ownTmp = place?.ownTmp ?? join(base, 'tmp');
  if (place === undefined) mkdirSync(ownTmp);
  const removeTmp = () => rmSync(base, { recursive: true, force: true });
  // What cannot be held was said once, before the run's commands (`ownSandboxNotice`).
  const denies =
    sandbox.rulesOf === undefined ? undefined : (await personDenies({ repo: sandbox.rulesOf, cwd, writable: [...sandbox.writable, ownTmp] })).denies;
  const settings = runtimeSettings(sandbox, ownTmp, denies);
  const leased = await (place === undefined ? leaseSandboxHost(settings.network) : leaseSandboxHost(settings.network, place.hostProgram, place.hostTmp));
  if (!leased.ok) {
    removeTmp();
    return err(leased.error);
  }
  const lease = leased.value;
  const cleanup = async () => {
    await lease.release();
    removeTmp();
  };
  const wrapped = await lease.wrap(command, cwd, settings.filesystem, ownTmp);
  if (!wrapped.ok) {
    await cleanup();
    return err(wrapped.error);
  }
  return ok({ file: '/bin/sh', args: ['-c', wrapped.value], env: { TMPDIR: ownTmp, TMP: ownTmp, TEMP: ownTmp }, cleanup });
}
