// What a host has for a run, found there and returned as data (judged by src/core/hosts/host-checks.ts):
// git and its version, this node, the claude binary on the PATH an ssh command gets (no login
// shell's profile) and its `auth status`, the sandbox's tools, and the free space in the work dir.
// Writes nothing: the work dir is only looked at (or its nearest folder that exists).

import { existsSync, statfsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname } from 'node:path';
import { authStatus, findExecutable, forkProcess, SANDBOX_TOOLS } from '../adapters/index.ts';
import type { FoundTool, HostFindings } from '../core/index.ts';

/** The nearest folder of `path` that exists (the work dir itself once made). */
function nearestExisting(path: string): string {
  let dir = path;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

/** Free bytes for this user in the file system holding `dir`; null where it cannot say. */
function freeBytes(dir: string): number | null {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return null;
  }
}

async function gitFound(git: string, cwd: string): Promise<FoundTool> {
  const path = findExecutable(git, process.env, cwd);
  if (path === null) return { name: git, path };
  const ended = await forkProcess({ file: path, args: ['--version'], cwd, env: process.env, timeoutMs: 20_000 });
  return ended.kind === 'exited' && ended.code === 0 ? { name: git, path, version: ended.stdout.toString('utf8').trim() } : { name: git, path };
}

export async function hostFindings(workDir: string, claude: string, gitBinary: string): Promise<HostFindings> {
  const checkedAt = nearestExisting(workDir);
  // Bare names are found from the work dir (or home while it is not made yet), as a command there would.
  const cwd = existsSync(workDir) ? workDir : homedir();
  const claudePath = findExecutable(claude, process.env, cwd);
  const [git, auth] = await Promise.all([gitFound(gitBinary, cwd), claudePath === null ? null : authStatus(claudePath, cwd, process.env, forkProcess)]);
  return {
    platform: process.platform,
    path: process.env.PATH ?? '',
    git,
    node: { version: process.version, path: process.execPath },
    claude: { name: claude, path: claudePath },
    auth,
    sandbox: (SANDBOX_TOOLS[process.platform] ?? []).map((name) => ({ name, path: findExecutable(name, process.env, cwd) })),
    workDir: { exists: existsSync(workDir), freeBytes: freeBytes(checkedAt), checkedAt },
  };
}
