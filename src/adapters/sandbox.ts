// The operating-system sandbox for the commands foreman runs itself (acceptance checks,
// assumption checks): `@anthropic-ai/sandbox-runtime` (bubblewrap on Linux, Seatbelt on macOS).
// A command runs as `srt -s <settings> -c <command>`: it may read anywhere, write only in the
// directories given (the workspace) and a temporary directory of its own (`TMPDIR`), and reach
// no network but its own loopback unless the plan names hosts (`context.checkNetwork`). Workers get the same
// limits from Claude Code's own sandbox (`sandbox` settings, see core/scope.ts).
//
// Whether the sandbox can run here is asked once per run (`sandboxSupport`): the runtime's own
// dependency check (bubblewrap, socat and ripgrep on Linux), then one real sandboxed `true`, since
// bubblewrap can be installed and still be refused namespaces (a container without privileges).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxManager } from '@anthropic-ai/sandbox-runtime';
import { type Result, err, ok } from '../core/failure.ts';

export const SANDBOX_MODES = ['auto', 'on', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** What a sandboxed command may do besides reading. */
export interface CommandSandbox {
  /** Directories it may write in (the workspace); its own TMPDIR is added. */
  writable: readonly string[];
  /**
   * Hosts it may reach through the runtime's proxy (`example.com`, `*.example.com`, an optional
   * `:port`): the plan's `context.checkNetwork`. Empty: no network but its own loopback.
   */
  allowedDomains: readonly string[];
}

/** What to install for the sandbox, by platform, for the messages that say it is missing. */
export function installAdvice(platform: NodeJS.Platform = process.platform): string {
  switch (platform) {
    case 'linux':
      return 'install bubblewrap, socat and ripgrep (Debian/Ubuntu: `apt-get install bubblewrap socat ripgrep`; Fedora: `dnf install bubblewrap socat ripgrep`)';
    case 'darwin':
      return 'install ripgrep (`brew install ripgrep`); Seatbelt (sandbox-exec) comes with macOS';
    default:
      return `the sandbox supports Linux and macOS only, not ${platform}`;
  }
}

const srtCli = (): string => createRequire(import.meta.url).resolve('@anthropic-ai/sandbox-runtime/dist/cli.js');

/** The runtime's settings for one command. */
export function runtimeSettings(sandbox: CommandSandbox, ownTmp: string): Record<string, unknown> {
  return {
    filesystem: { allowWrite: [...sandbox.writable, ownTmp], denyWrite: [], denyRead: [] },
    // No allowed domain: the command's network namespace has its own loopback and nothing else.
    network: { allowedDomains: [...sandbox.allowedDomains], deniedDomains: [] },
  };
}

/** How to spawn `command` in the sandbox, and what to remove once it ended. */
export interface SandboxedSpawn {
  file: string;
  args: string[];
  /** Added to the command's environment: its own TMPDIR. */
  env: Record<string, string>;
  /** Removes the settings and the temporary directory. */
  cleanup: () => void;
}

/**
 * Prepares one sandboxed run of `command`: a directory holding the runtime's settings (read-only
 * to the command) and the command's own temporary directory (writable).
 */
export function sandboxedSpawn(command: string, sandbox: CommandSandbox): SandboxedSpawn {
  const base = mkdtempSync(join(tmpdir(), 'foreman-sandbox-'));
  const ownTmp = join(base, 'tmp');
  mkdirSync(ownTmp);
  const settingsPath = join(base, 'srt-settings.json');
  writeFileSync(settingsPath, JSON.stringify(runtimeSettings(sandbox, ownTmp)));
  return {
    file: process.execPath,
    args: [srtCli(), '--settings', settingsPath, '-c', command],
    // The runtime sets the command's TMPDIR from CLAUDE_CODE_TMPDIR (default /tmp/claude).
    env: { CLAUDE_CODE_TMPDIR: ownTmp, TMPDIR: ownTmp, TMP: ownTmp, TEMP: ownTmp },
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

/** Why the sandbox cannot run here, or ok. Runs one sandboxed `true` when the dependencies are there. */
/**
 * Steps run outside `execute` (the in-session steps, `plan probe`) sandbox their checks where it
 * works when `FOREMAN_SANDBOX` is `auto` or `on` (the default is off; see DEFAULTS.sandbox).
 */
export const checksSandboxed = (env: NodeJS.ProcessEnv | undefined): boolean => {
  const mode = (env ?? process.env).FOREMAN_SANDBOX;
  return (mode === 'auto' || mode === 'on') && sandboxSupport().ok;
};

export function sandboxSupport(): Result<void, string> {
  if (!SandboxManager.isSupportedPlatform()) return err(`the sandbox does not support this platform (${process.platform})`);
  const deps = SandboxManager.checkDependencies();
  if (deps.errors.length > 0) return err(deps.errors.join(', '));
  const probe = sandboxedSpawn('true', { writable: [], allowedDomains: [] });
  try {
    execFileSync(probe.file, probe.args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000, env: { ...process.env, ...probe.env } });
    return ok(undefined);
  } catch (e) {
    const stderr = String((e as { stderr?: unknown }).stderr ?? '').trim().split('\n').filter(Boolean).pop();
    return err(`a sandboxed test command failed${stderr ? `: ${stderr}` : ''}`);
  } finally {
    probe.cleanup();
  }
}

/**
 * While a sandboxed command runs, bubblewrap holds an empty mount point in the workspace for each
 * protected name that does not exist there (`.bashrc`, `.gitconfig`, `.mcp.json`, `.vscode`,
 * `.idea`, `.claude/commands`, …; the runtime's DANGEROUS_FILES and dangerous directories) and
 * removes it afterwards. Another task verified meanwhile in the same tree would see them as
 * changes: these are the untracked paths that are such a placeholder (empty, and named so).
 */
const MOUNT_POINT_NAMES = new Set(['.gitconfig', '.gitmodules', '.bashrc', '.bash_profile', '.zshrc', '.zprofile', '.profile', '.ripgreprc', '.mcp.json', '.vscode', '.idea', '.claude']);

async function emptyTree(path: string): Promise<boolean> {
  const st = await lstat(path).catch(() => null);
  if (st === null) return true; // already removed
  if (st.isFile()) return st.size === 0;
  if (!st.isDirectory()) return false;
  for (const entry of await readdir(path).catch(() => null) ?? []) if (!(await emptyTree(join(path, entry)))) return false;
  return true;
}

export async function sandboxMountPoints(dir: string, untracked: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const path of untracked) {
    const top = path.replace(/\/$/, '').split('/')[0]!;
    if (MOUNT_POINT_NAMES.has(top) && (await emptyTree(join(dir, path)))) found.add(path);
  }
  return found;
}
