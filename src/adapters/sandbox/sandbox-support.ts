// Whether the sandbox runs here, remembered across runs. Asking costs about 0.6 s (the runtime's
// library loaded, then one sandboxed `true` through its CLI), and every `execute` and every
// in-session step that runs a check asked again. The answer depends on a few facts of the machine:
// the tools the runtime needs, found on PATH as it finds them (bubblewrap, socat and ripgrep on
// Linux; ripgrep and sandbox-exec on macOS), the runtime's CLI and the node that runs it, the user,
// the boot, the namespaces this process is in and the kernel's switches for user namespaces. A
// yes is kept in `<cache>/foreman/sandbox-support.json` under a hash of those facts, for a day at
// most; a change in any of them (a tool installed, removed or upgraded, a reboot, a container, a
// sysctl) asks again. A no is never kept: it is cheap to find again and the person may be fixing it.

import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { uptime } from 'node:os';
import { dirname, join } from 'node:path';
import { ok, type Result } from '../../core/index.ts';
import { findExecutable } from './executables.ts';
import { writeFileAtomic } from '../store/index.ts';

/** How long a yes is believed without asking again, whatever the facts say. */
export const SUPPORT_KEPT_MS = 24 * 60 * 60 * 1000;

/** The file a yes is kept in. */
export const supportCacheFile = (cacheDir: string): string => join(cacheDir, 'sandbox-support.json');

/** The tools the runtime needs, by platform (what its dependency check looks for; a remote host's checks ask for them too). */
export const SANDBOX_TOOLS: Partial<Record<NodeJS.Platform, readonly string[]>> = { linux: ['bwrap', 'socat', 'rg'], darwin: ['rg', 'sandbox-exec'] };

/** Kernel switches that turn unprivileged user namespaces (bubblewrap's) off or on. */
const LINUX_SWITCHES = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
];

/** A file's identity and version: where it is, its inode, size and change time. Null when it is not there. */
function fileFacts(path: string): string | null {
  try {
    const s = statSync(path);
    return `${path}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return null;
  }
}

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
};

const link = (path: string): string | null => {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
};

export interface SupportFactsInput {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  /** The runtime's CLI (`srt`), which runs every sandboxed command. */
  sandboxCli: string;
  /** The node that runs it. */
  nodePath: string;
}

/**
 * The facts the answer depends on, hashed; null where an answer must not be remembered: a
 * platform the sandbox does not know, or a tool it needs that is not installed.
 */
export function supportKey(input: SupportFactsInput): string | null {
  const tools = SANDBOX_TOOLS[input.platform];
  if (tools === undefined) return null;
  const facts: Array<string | null> = [
    input.platform,
    `uid ${process.getuid?.() ?? ''}`,
    `node ${process.version}`,
    fileFacts(input.nodePath),
    fileFacts(input.sandboxCli),
  ];
  for (const tool of tools) {
    const found = tool === 'sandbox-exec' ? '/usr/bin/sandbox-exec' : findExecutable(tool, input.env, '/');
    const identity = found === null ? null : fileFacts(found);
    if (identity === null) return null;
    facts.push(identity);
  }
  if (input.platform === 'linux') {
    facts.push(`boot ${read('/proc/sys/kernel/random/boot_id')}`, `userns ${link('/proc/self/ns/user')}`, `mntns ${link('/proc/self/ns/mnt')}`);
    for (const sw of LINUX_SWITCHES) facts.push(`${sw}=${read(sw)}`);
  } else {
    // No boot id: the boot time, to the minute.
    facts.push(`boot ${Math.round((Date.now() / 1000 - uptime()) / 60)}`);
  }
  if (facts.includes(null)) return null;
  return createHash('sha256').update(facts.join('\n')).digest('hex');
}

interface Kept {
  key: string;
  /** When the sandbox last ran here, ms since the epoch. */
  checkedAt: number;
}

/** Whether `file` holds a yes for `key` checked less than SUPPORT_KEPT_MS before `now`. */
export function keptYes(file: string, key: string, now: number): boolean {
  const text = read(file);
  if (text === null) return false;
  try {
    const kept = JSON.parse(text) as Partial<Kept>;
    return kept.key === key && typeof kept.checkedAt === 'number' && kept.checkedAt <= now && now - kept.checkedAt < SUPPORT_KEPT_MS;
  } catch {
    return false;
  }
}

/** Keeps a yes for `key` (written whole: another run reads the old file or the new one). A cache that cannot be written only costs the next run its question. */
export async function keepYes(file: string, key: string, now: number): Promise<void> {
  try {
    await mkdir(dirname(file), { recursive: true });
    await writeFileAtomic(file, `${JSON.stringify({ key, checkedAt: now } satisfies Kept)}\n`);
  } catch {
    // not kept
  }
}

/**
 * `ask`'s answer, or a yes kept from an earlier run under the same facts. A yes `ask` gives is
 * kept; a no is not.
 */
export async function rememberedSupport(options: {
  file: string;
  key: string | null;
  now: () => number;
  ask: () => Promise<Result<void, string>>;
}): Promise<Result<void, string>> {
  if (options.key !== null && keptYes(options.file, options.key, options.now())) return ok(undefined);
  const answer = await options.ask();
  if (answer.ok && options.key !== null) await keepYes(options.file, options.key, options.now());
  return answer;
}
