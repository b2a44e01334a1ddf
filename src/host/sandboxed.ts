// A command foreman asks the host to run in the operating-system sandbox (a `run` request with
// `sandbox`: an acceptance check, the setup command), made ready to spawn by the same code as on
// foreman's machine (`sandboxedSpawn`): bubblewrap through the sandbox runtime, which this
// program's bundle carries. Its sandbox hosts are this program again, run by node from the file
// kept on the host (`node <kept file> sandbox-host <network>`, ./entry.ts), so nothing is
// installed there. The command writes only in its folder in the run's folder and a TMPDIR of its
// own under the work dir (`.t/<this process's pid, base 36>-c<request id>`, which ./requests.ts
// removes with the rest when it ends), and reaches only the hosts foreman names. The runtime's
// seccomp helper, a native program, is kept beside the program file (foreman sends it:
// src/adapters/host/sandbox-helper.ts), where the runtime bundled in it looks first. Before a run
// that sandboxes sends attempts here, its checks start a sandboxed `true` the same way
// (`sandboxStarts`, the `sandbox-check` request), so a host whose sandbox cannot start is named then.

import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type CommandSandbox, forkProcess, type SandboxedSpawn, sandboxedSpawn, setupCommandSandbox, shellLine, type SpawnPlace } from '../adapters/index.ts';
import { clipTail, err, type HostError, type HostSandbox, ok, oneLine, type Result } from '../core/index.ts';
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

/** How long the sandboxed `true` of a host's checks may take, its sandbox host's start included. */
const SANDBOX_CHECK_LIMIT_MS = 30_000;

/**
 * Whether the sandbox starts here, for the checks before a run sends attempts here: `true` made
 * ready by the same path as a sandboxed check's command (a sandbox host run from `keptFile`, its
 * TMPDIR in the work dir) and run in the work dir with `env`, writing nowhere but its own TMPDIR,
 * with no network. Why not, in one line; null when it ran. Its sandbox host stays for the run's
 * first checks of no network.
 */
export async function sandboxStarts(id: number, workDir: string, keptFile: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  const place = spawnPlace(workDir, keptFile, id);
  if (!place.ok) return place.error;
  const wrapped = await sandboxedSpawn('true', workDir, { writable: [], allowedDomains: [] }, place.value);
  if (!wrapped.ok) return `the sandbox could not wrap it: ${wrapped.error}`;
  const { file, args, env: own, cleanup } = wrapped.value;
  const ended = await forkProcess({ file, args, cwd: workDir, env: { ...env, ...own }, timeoutMs: SANDBOX_CHECK_LIMIT_MS });
  await cleanup();
  switch (ended.kind) {
    case 'exited': {
      if (ended.code === 0) return null;
      const lastLine = (bytes: Buffer) =>
        bytes
          .toString('utf8')
          .split('\n')
          .filter((line) => line.trim() !== '')
          .at(-1);
      const said = lastLine(ended.stderr) ?? lastLine(ended.stdout);
      return `exit ${ended.code}${said === undefined ? '' : `: ${clipTail(oneLine(said), 300)}`}`;
    }
    case 'timed-out':
      return `it did not end within ${SANDBOX_CHECK_LIMIT_MS / 1000} s`;
    case 'not-started':
      return ended.message;
  }
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
