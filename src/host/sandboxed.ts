// A command foreman asks the host to run in the operating-system sandbox (a `run` request with
// `sandbox`: an acceptance check, the setup command), made ready to spawn by the same code as on
// foreman's machine (`sandboxedSpawn`): bubblewrap through the sandbox runtime, which this
// program's bundle carries. Its sandbox hosts are this program again, run by node from the file
// kept on the host (`node <kept file> sandbox-host <network>`, ./entry.ts), so nothing is
// installed there. The command writes only in its folder in the run's folder and a TMPDIR of its
// own under the work dir (`.t/<this process's pid, base 36>-c<request id>`, which ./requests.ts
// removes with the rest when it ends), and reaches only the hosts foreman names. The runtime's
// seccomp helper, a native program, is kept beside the program file (foreman sends it:
// src/adapters/host/sandbox-helper.ts), where the runtime bundled in it looks first.

import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type CommandSandbox, type SandboxedSpawn, sandboxedSpawn, setupCommandSandbox, shellLine, type SpawnPlace } from '../adapters/index.ts';
import { err, type HostError, type HostSandbox, ok, type Result } from '../core/index.ts';
import { fault, refused } from './run-folder.ts';

/** The first argument that runs this program as a sandbox host (scripts/sandbox-host.mjs) rather than foreman's remote side. */
export const SANDBOX_HOST_ARGUMENT = 'sandbox-host';

/**
 * `argv` run in `cwd` (in the run's folder) in the sandbox `sandbox` asks for, wrapped by a
 * sandbox host started from `keptFile`, this program's file on the host (none when it runs from
 * memory, a dry run's, which runs no command).
 */
export async function hostSandboxedSpawn(
  request: { id: number; argv: readonly string[]; cwd: string; sandbox: HostSandbox },
  workDir: string,
  keptFile: string | undefined,
): Promise<Result<SandboxedSpawn, HostError>> {
  if (keptFile === undefined) return err(refused('a sandboxed command needs the program kept on the host'));
  const place = spawnPlace(workDir, keptFile, request.id);
  if (!place.ok) return err(fault(place.error));
  const wrapped = await sandboxedSpawn(shellLine(request.argv), request.cwd, await commandSandbox(request.cwd, request.sandbox), place.value);
  return wrapped.ok ? ok(wrapped.value) : err(fault(`the sandbox could not wrap the command there: ${wrapped.error}`));
}

/**
 * Where the sandboxed command of request `id` is wrapped: by a sandbox host run from `keptFile`,
 * the command's TMPDIR `.t/<this process's pid, base 36>-c<id>` and the sandbox hosts' own
 * `.t/<pid, base 36>-h` (the runtime's bridge sockets live there), both in the work dir and short
 * enough for a socket's path; made here, or why not.
 */
function spawnPlace(workDir: string, keptFile: string, id: number): Result<SpawnPlace, string> {
  const own = join(workDir, '.t', process.pid.toString(36));
  const place: SpawnPlace = { hostProgram: [keptFile, SANDBOX_HOST_ARGUMENT], hostTmp: `${own}-h`, ownTmp: `${own}-c${id}` };
  try {
    mkdirSync(place.ownTmp, { recursive: true, mode: 0o700 });
    mkdirSync(place.hostTmp, { recursive: true, mode: 0o700 });
  } catch (caught) {
    return err(`could not make a sandboxed command's TMPDIR there: ${(caught as Error).message}`);
  }
  return ok(place);
}

/** What the command may write and reach: as on foreman's machine, with the host's own package caches and npm registry for the setup command. */
async function commandSandbox(cwd: string, sandbox: HostSandbox): Promise<CommandSandbox> {
  if (sandbox.kind === 'check') return { writable: [cwd], allowedDomains: sandbox.network };
  const { writable, allowedDomains } = await setupCommandSandbox(cwd, undefined, sandbox.network);
  return { writable, allowedDomains };
}

/**
 * Where the runtime bundled in the program at `keptFile` looks first for its seccomp helper for
 * this machine's architecture (beside the bundle: `vendor/seccomp/<arch>/apply-seccomp`), and
 * the architecture; null for one the runtime has no helper for.
 */
export function sandboxHelperFile(keptFile: string): { arch: string; path: string } | null {
  const arch = process.arch === 'x64' || process.arch === 'arm64' ? process.arch : null;
  return arch === null ? null : { arch, path: join(dirname(keptFile), 'vendor', 'seccomp', arch, 'apply-seccomp') };
}
