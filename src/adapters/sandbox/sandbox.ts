// The operating-system sandbox for the commands foreman runs itself (acceptance checks,
// assumption checks): `@anthropic-ai/sandbox-runtime` (bubblewrap on Linux, Seatbelt on macOS).
// A command runs wrapped by a sandbox host of this process (sandbox-host.ts): it may read anywhere,
// write only in the directories given (the workspace) and a temporary directory of its own
// (`TMPDIR`), and reach no network but its own loopback unless the plan names hosts
// (`context.checkNetwork`); and, as in Claude Code's own sandbox, it may not read or write what
// the person's Read and Edit deny rules name (person-denies.ts). Workers get the same limits from Claude Code's own sandbox (`sandbox`
// settings, see core/plan/scope.ts).
//
// The plan's setup command (`context.setupCommand`, e.g. `npm ci`) runs in the same sandbox with
// two openings, since it installs dependencies (`setupCommandSandbox`): it reaches the package
// registries (DEFAULT_SETUP_NETWORK, the npm registry configured here, and the plan's
// `context.setupNetwork`), through the runtime's proxy (it sets HTTP_PROXY and HTTPS_PROXY; npm
// follows them), and writes in the package managers' caches as well.
//
// Whether the sandbox can run here is asked once per run (`sandboxSupport`): the runtime's own
// dependency check (bubblewrap, socat and ripgrep on Linux), then one real sandboxed `true`, since
// bubblewrap can be installed and still be refused namespaces (a container without privileges).
// A yes is remembered across runs while the facts it depends on stay the same (sandbox-support.ts).

import { mkdir } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import {
  describeTimeLimitHit,
  err,
  networkRefusalHint,
  type NetworkSetting,
  NO_DEFAULT_HOSTS,
  ok,
  type Plan,
  planNetwork,
  type Result,
  type SandboxedCommand,
  type SandboxUse,
  type TimeLimit,
} from '../../core/index.ts';
import { worktreesRoot } from '../git/index.ts';
import { ownCacheDir, sandboxCliPath } from '../layout.ts';
import { runShell } from './checks.ts';
import { personDenies, unheldNotice } from './person-denies.ts';
import { rememberedSupport, supportCacheFile, supportKey } from './sandbox-support.ts';
import type { CommandSandbox } from './sandbox-spawn.ts';

export const SANDBOX_MODES = ['auto', 'on', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** The sandbox of a check run in `dir`, a checkout of `repo`: writes there, no network but the plan's `context.checkNetwork` hosts, nothing the person's deny rules name. */
export const checkSandbox = (dir: string, plan: Plan, repo: string): CommandSandbox => ({
  writable: [dir],
  allowedDomains: plan.context?.checkNetwork ?? [],
  rulesOf: repo,
});

/**
 * What a failed command's output shows the sandbox refused of its network, to say with the
 * failure, naming `setting`, the plan's list that allows its hosts (`context.checkNetwork` for
 * checks and the gate, `context.setupNetwork` for the setup command); null when it ran
 * unsandboxed or shows no refusal.
 */
export const sandboxRefusal = (output: string, sandbox: CommandSandbox | undefined, setting: NetworkSetting): string | null =>
  networkRefusalHint(output, { sandboxed: sandbox !== undefined, allowed: sandbox?.allowedDomains ?? [], setting });

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

/**
 * Hosts the setup command may reach unless the plan says otherwise: the public package registries
 * of npm (also pnpm's and corepack's), yarn, PyPI, crates.io and Go's module proxy.
 */
export const DEFAULT_SETUP_NETWORK: readonly string[] = [
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  'repo.yarnpkg.com',
  'pypi.org',
  'files.pythonhosted.org',
  'crates.io',
  'index.crates.io',
  'static.crates.io',
  'proxy.golang.org',
  'sum.golang.org',
];

/**
 * The hosts the setup command may reach: the defaults (the public registries and `configured`,
 * the npm registry set up on this machine) plus the plan's `context.setupNetwork`; only the
 * plan's when it lists `no-defaults`.
 */
export function setupNetworkHosts(planHosts: readonly string[] | undefined, configured: readonly string[] = []): string[] {
  const own = planHosts ?? [];
  const replace = own.includes(NO_DEFAULT_HOSTS);
  const hosts = [...(replace ? [] : [...DEFAULT_SETUP_NETWORK, ...configured]), ...own.filter((h) => h !== NO_DEFAULT_HOSTS)];
  return [...new Set(hosts)];
}

/** `registry.example.com` (or `host:port` when the URL names a port) of a registry URL, or null. */
export function registryHost(url: string): string | null {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return null;
    return parsed.port === '' ? parsed.hostname : `${parsed.hostname}:${parsed.port}`;
  } catch {
    return null;
  }
}

/**
 * The package managers' cache directories under `env`: npm's (`cache`, given), yarn's (classic
 * and berry), pnpm's store and metadata cache, pip's, and Go's module and build caches. Cargo's
 * home is left out: it holds the binaries `cargo install` puts on the PATH (its lock file sits
 * next to them), so a setup command that needs it sets `CARGO_HOME` inside the checkout.
 */
export function packageCacheDirectories(env: NodeJS.ProcessEnv, npmCache: string, platform: NodeJS.Platform = process.platform): string[] {
  const home = env.HOME || homedir();
  const absolute = (value: string | undefined): string | undefined => (value !== undefined && isAbsolute(value) ? value : undefined);
  const mac = platform === 'darwin';
  const cacheHome = mac ? join(home, 'Library', 'Caches') : (absolute(env.XDG_CACHE_HOME) ?? join(home, '.cache'));
  const dataHome = mac ? join(home, 'Library') : (absolute(env.XDG_DATA_HOME) ?? join(home, '.local', 'share'));
  const goPath = absolute(env.GOPATH?.split(':')[0]) ?? join(home, 'go');
  const dirs = [
    npmCache,
    absolute(env.YARN_CACHE_FOLDER) ?? join(cacheHome, mac ? 'Yarn' : 'yarn'),
    join(home, '.yarn', 'berry'),
    // pnpm's own directory under dataHome also holds its global binaries: only the store.
    absolute(env.npm_config_store_dir) ?? join(dataHome, 'pnpm', 'store'),
    join(cacheHome, 'pnpm'),
    absolute(env.PIP_CACHE_DIR) ?? join(cacheHome, 'pip'),
    absolute(env.GOMODCACHE) ?? join(goPath, 'pkg', 'mod'),
    absolute(env.GOCACHE) ?? join(cacheHome, 'go-build'),
  ];
  return [...new Set(dirs)];
}

/**
 * foreman's own helper commands (asking npm for its settings, the sandbox's self-test) answer in
 * a second or two: a fixed bound, so a hung one cannot hold up a run. Generous, for a cold start
 * of node on a loaded machine.
 */
const HELPER_LIMIT: TimeLimit = { ms: 30_000, flag: null };

const NPM_CONFIG = 'npm config get cache registry';

/**
 * npm's `cache` and `registry` as npm reads them in `cwd` (its .npmrc files and npm_config_*
 * variables); null without npm; why not when npm did not answer in time.
 */
async function npmConfig(cwd: string, env: NodeJS.ProcessEnv): Promise<Result<{ cache?: string; registry?: string } | null, string>> {
  const run = await runShell(NPM_CONFIG, { cwd, env, timeoutMs: HELPER_LIMIT.ms });
  if (run.timedOut) return err(describeTimeLimitHit(NPM_CONFIG, HELPER_LIMIT));
  if (run.exitCode !== 0) return ok(null);
  const value = (key: string) =>
    run.output
      .split('\n')
      .find((line) => line.startsWith(`${key}=`))
      ?.slice(key.length + 1)
      .trim();
  return ok({ cache: value('cache'), registry: value('registry') });
}

/** The setup command's sandbox, and why npm's own settings were not read into it, to say with the command's output. */
export interface SetupSandbox extends CommandSandbox {
  npmUnread?: string;
}

/**
 * The sandbox of the setup command run in `workspace`, a checkout of `repo`: writes there, in its
 * own TMPDIR and the package managers' caches (npm's is created when missing, since npm cannot
 * work without it; the runtime skips the others that do not exist), reaches the hosts of
 * `setupNetworkHosts`, and nothing the person's deny rules name (no `repo`: on an SSH host, where
 * this machine's rules name nothing).
 */
export async function setupCommandSandbox(
  workspace: string,
  repo: string | undefined,
  planHosts: readonly string[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SetupSandbox> {
  const asked = await npmConfig(workspace, env);
  const npm = asked.ok ? asked.value : null;
  const home = env.HOME || homedir();
  const npmCache = [npm?.cache, env.npm_config_cache, env.NPM_CONFIG_CACHE].find((c): c is string => c !== undefined && isAbsolute(c)) ?? join(home, '.npm');
  await mkdir(npmCache, { recursive: true }).catch(() => undefined);
  const configured = npm?.registry === undefined ? [] : [registryHost(npm.registry)].filter((h): h is string => h !== null);
  return {
    writable: [workspace, ...packageCacheDirectories(env, npmCache)],
    allowedDomains: setupNetworkHosts(planHosts, configured),
    ...(repo === undefined ? {} : { rulesOf: repo }),
    ...(asked.ok
      ? {}
      : {
          npmUnread: `npm's settings were not read (${asked.error}): its cache was taken to be ${npmCache}, and a registry of its settings other than the public ones is not reachable from the sandbox`,
        }),
  };
}

/**
 * What to say once, where foreman's own commands are about to run in the sandbox for `repo`: the
 * person's deny rules the sandbox cannot hold as written there (null when it holds them all). Read
 * for where those commands run: a checkout under foreman's worktrees folder, their own TMPDIR
 * under the system's, and, for the setup command, the package managers' caches.
 */
export async function ownSandboxNotice(repo: string, env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const worktrees = worktreesRoot(env);
  const home = env.HOME || homedir();
  const ownTmp = join(tmpdir(), 'foreman-sandbox-XXXXXX', 'tmp');
  const held = await personDenies(
    { repo, cwd: join(worktrees, 'checkout'), writable: [worktrees, ownTmp, ...packageCacheDirectories(env, join(home, '.npm'))] },
    env,
  );
  return unheldNotice(held);
}

/**
 * The sandbox mode asked for: the flag (`--sandbox`), else `FOREMAN_SANDBOX`, else `auto`; a
 * value that is not a mode is an error naming where it came from.
 */
export function sandboxModeOf(flag: string | undefined, env: NodeJS.ProcessEnv): Result<SandboxMode, string> {
  const source = flag !== undefined ? '--sandbox' : 'FOREMAN_SANDBOX';
  const mode = flag ?? env.FOREMAN_SANDBOX ?? 'auto';
  return (SANDBOX_MODES as readonly string[]).includes(mode)
    ? ok(mode as SandboxMode)
    : err(`${source} expects one of ${SANDBOX_MODES.join(', ')}, got "${mode}"`);
}

/** Whether commands run in the sandbox: `sandboxed`, or why not (`unavailable`: `auto` where it cannot run). */
export type SandboxDecision = { sandboxed: true } | { sandboxed: false; unavailable: string | null };

/**
 * What `mode` means here: `off` runs nothing sandboxed; `auto` sandboxes where the sandbox runs
 * and says why not elsewhere; `on` is refused (the error, with what to install) where it cannot.
 */
export async function decideSandbox(mode: SandboxMode): Promise<Result<SandboxDecision, string>> {
  if (mode === 'off') return ok({ sandboxed: false, unavailable: null });
  const support = await sandboxSupport();
  if (support.ok) return ok({ sandboxed: true });
  if (mode === 'on') return err(`--sandbox on: the sandbox cannot run here (${support.error}); ${installAdvice()}, or run with --sandbox off`);
  return ok({ sandboxed: false, unavailable: support.error });
}

/**
 * What the sandbox line says (core/sandbox/sandbox-words.ts) of `mode` here, for `commands` of `plan`:
 * `decision` as the caller made it; without one (a dry run, which refuses nothing), as the run
 * would find it.
 */
export async function sandboxUse(mode: SandboxMode, plan: Plan, commands: SandboxedCommand[], decision?: SandboxDecision): Promise<SandboxUse> {
  const found: SandboxDecision =
    decision ??
    (mode === 'off'
      ? { sandboxed: false, unavailable: null }
      : await sandboxSupport().then((s) => (s.ok ? { sandboxed: true } : { sandboxed: false, unavailable: s.error })));
  const unavailable = found.sandboxed ? null : found.unavailable;
  return { mode, sandboxed: found.sandboxed, unavailable, install: unavailable === null ? null : installAdvice(), commands, ...planNetwork(plan.context) };
}

/**
 * What `auto` finds here: sandboxed, or why not. For a session set up without a decision (a
 * session file of an earlier version), whose steps ask as `auto`.
 */
export async function autoSandbox(): Promise<{ mode: 'auto' } & SandboxDecision> {
  const decided = await decideSandbox('auto');
  return { mode: 'auto', ...(decided.ok ? decided.value : { sandboxed: false, unavailable: decided.error }) };
}

let support: Promise<Result<void, string>> | undefined;

/**
 * Why the sandbox cannot run here, or ok. Runs one sandboxed `true` when the dependencies are
 * there; asked once per process, since that takes a moment, and a yes is remembered across runs
 * while the machine's facts stay the same (sandbox-support.ts). The runtime's library is loaded
 * only when asking: a run that finds a remembered yes, or runs without the sandbox, does not pay
 * for it at start-up.
 */
export function sandboxSupport(): Promise<Result<void, string>> {
  support ??= rememberedSupport({
    file: supportCacheFile(ownCacheDir(process.env)),
    key: supportKey({ env: process.env, platform: process.platform, sandboxCli: sandboxCliPath(), nodePath: process.execPath }),
    now: Date.now,
    ask: askSupport,
  });
  return support;
}

async function askSupport(): Promise<Result<void, string>> {
  const { SandboxManager } = await import('@anthropic-ai/sandbox-runtime');
  if (!SandboxManager.isSupportedPlatform()) return err(`the sandbox does not support this platform (${process.platform})`);
  const deps = SandboxManager.checkDependencies();
  if (deps.errors.length > 0) return err(deps.errors.join(', '));
  const run = await runShell('true', { cwd: process.cwd(), timeoutMs: HELPER_LIMIT.ms, sandbox: { writable: [], allowedDomains: [] } });
  if (run.timedOut) return err(`a sandboxed test command ${describeTimeLimitHit('true', HELPER_LIMIT)}`);
  if (run.exitCode === 0) return ok(undefined);
  const said = run.output.trim().split('\n').filter(Boolean).pop();
  return err(`a sandboxed test command failed${said ? `: ${said}` : ''}`);
}
