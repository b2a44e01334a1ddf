// What foreman says of the sandbox, pure: the one line saying whether its commands (checks, the
// setup command, the gate, the workers' Bash) run sandboxed and with what network, said once by a
// run at its start, by `plan probe` and by `execute --dry-run`; and what a failed command's output
// shows of a network call the sandbox refused, with the plan's setting that allows it.
//
// A sandboxed command reaches the network only through the sandbox runtime's proxy
// (`HTTP_PROXY`/`HTTPS_PROXY`), which lets through the hosts it is given and answers the rest with
// `403 Forbidden`, `X-Proxy-Error: blocked-by-allowlist` and the body `Connection blocked by network
// allowlist` (@anthropic-ai/sandbox-runtime 0.0.78, http-proxy.js). A tool that goes around the
// proxy finds no name server at all: its lookups fail as a temporary failure (`EAI_AGAIN`).

import { listSome } from '../format.ts';
import type { PlanContext } from '../plan/index.ts';

/** The entry of `context.setupNetwork` that drops the default hosts: the plan's hosts replace them. */
export const NO_DEFAULT_HOSTS = 'no-defaults';

/** The commands foreman runs, as the sandbox line names them. */
export type SandboxedCommand = 'checks' | 'setup' | 'gate' | 'workers';

/** The sandbox decision of a run, a probe or a dry run, and what it means for the plan's commands. */
export interface SandboxUse {
  /** The mode asked for: `--sandbox`, else `FOREMAN_SANDBOX`, else `auto`. */
  mode: 'auto' | 'on' | 'off';
  /** The commands run in the sandbox here. */
  sandboxed: boolean;
  /** Why the sandbox cannot run here (`auto` goes without it, `on` refuses); null when it can, or was not asked (`off`). */
  unavailable: string | null;
  /** What to install to have it, when it cannot run. */
  install: string | null;
  /** The commands this is about, in the order they are named. */
  commands: SandboxedCommand[];
  /** The hosts checks, the gate and workers' Bash may reach: the plan's `context.checkNetwork`. */
  checkNetwork: string[];
  /** The setup command's: the package registries unless the plan says `no-defaults`, and the plan's own `context.setupNetwork` hosts. */
  setupNetwork: { registries: boolean; hosts: string[] };
}

/** The commands a plan has foreman run: its checks, its setup command when it has one, the gate and the workers when there are. */
export function sandboxedCommands(context: PlanContext | undefined, also: { gate: boolean; workers: boolean }): SandboxedCommand[] {
  const setup = typeof context?.setupCommand === 'string' && context.setupCommand.trim() !== '';
  return ['checks', ...(setup ? (['setup'] as const) : []), ...(also.gate ? (['gate'] as const) : []), ...(also.workers ? (['workers'] as const) : [])];
}

/** The hosts a plan names for its commands, as `SandboxUse` carries them. */
export function planNetwork(context: PlanContext | undefined): Pick<SandboxUse, 'checkNetwork' | 'setupNetwork'> {
  const setup = context?.setupNetwork ?? [];
  return {
    checkNetwork: [...(context?.checkNetwork ?? [])],
    setupNetwork: { registries: !setup.includes(NO_DEFAULT_HOSTS), hosts: setup.filter((host) => host !== NO_DEFAULT_HOSTS) },
  };
}

/** `a`, `a and b`, `a, b and c`: every item named. */
const inWords = (items: readonly string[]): string => listSome(items, items.length);

const COMMAND_WORDS: Record<SandboxedCommand, string> = {
  checks: 'checks',
  setup: 'the setup command',
  gate: 'the gate',
  workers: "the workers' Bash commands",
};

/** Where the checks, the gate and the workers may reach, sandboxed. */
function checkReach(hosts: readonly string[]): string {
  return hosts.length === 0
    ? 'reaching no network but their own loopback (context.checkNetwork would name hosts)'
    : `reaching only ${inWords(hosts)} (context.checkNetwork) and their own loopback`;
}

/** Where the setup command may reach, sandboxed. */
function setupReach(network: SandboxUse['setupNetwork']): string {
  const own = network.hosts.length > 0 ? `${inWords(network.hosts)} (context.setupNetwork)` : null;
  if (network.registries)
    return `reaching the package registries (npm's, yarn's, PyPI, crates.io, Go's and your npm registry)${own === null ? ' and the hosts context.setupNetwork adds' : ` and ${own}`}`;
  return own === null ? 'reaching no network but its own loopback (context.setupNetwork: no-defaults)' : `reaching only ${own}`;
}

/**
 * The line saying whether the plan's commands run in the sandbox here and what network they
 * reach: `sandbox: on (--sandbox auto): checks, the gate and the workers' Bash commands run in it,
 * reaching no network but their own loopback …; the setup command runs in it, reaching the
 * package registries …`.
 */
export function describeSandboxUse(use: SandboxUse): string {
  const flag = `--sandbox ${use.mode}`;
  const named = (commands: readonly SandboxedCommand[]) => inWords(commands.map((c) => COMMAND_WORDS[c]));
  const install = use.install === null ? '' : `; to sandbox them, ${use.install}`;
  const limited = use.commands.includes('workers') ? ", and the workers' Bash stays limited to the commands their tasks are judged by" : '';
  if (!use.sandboxed && use.mode === 'on')
    return `sandbox: cannot run here (${use.unavailable ?? 'unknown'}): with ${flag} the run refuses to start (exit 3)${use.install === null ? '' : `; ${use.install}`}`;
  if (!use.sandboxed) {
    const why = use.mode === 'off' ? flag : `${flag}: it cannot run here: ${use.unavailable ?? 'unknown'}`;
    return `sandbox: off (${why}): ${named(use.commands)} run without it, with this machine's network and files${limited}${use.mode === 'off' ? '' : install}`;
  }
  const checking = use.commands.filter((c) => c !== 'setup');
  const parts = [
    ...(checking.length > 0 ? [`${named(checking)} run in it, ${checkReach(use.checkNetwork)}`] : []),
    ...(use.commands.includes('setup') ? [`the setup command runs in it, ${setupReach(use.setupNetwork)}`] : []),
  ];
  return `sandbox: on (${flag}): ${parts.join('; ')}`;
}

/** A network call the sandbox refused, as a command's output shows it. */
export interface NetworkRefusal {
  /**
   * `proxy`: the sandbox's proxy refused a host the command is not allowed; `bypassed`: the
   * command went around the proxy and found no network at all (its name lookup failed).
   */
  kind: 'proxy' | 'bypassed';
  /** The host, when the output names it. */
  host: string | null;
  /** The line of the output that shows it. */
  line: string;
}

/** Where a refused call went: its host, and its port when the output says (a URL's, its scheme's by default). */
interface Target {
  host: string;
  port: number | null;
}

/** The target of a URL (`https://registry.npmjs.org/kleur` → `registry.npmjs.org`, 443), or null. */
function urlTarget(url: string | undefined): Target | null {
  if (url === undefined) return null;
  try {
    const parsed = new URL(url);
    if (parsed.hostname === '') return null;
    return { host: parsed.hostname, port: parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80 };
  } catch {
    return null;
  }
}

/**
 * The proxy's refusal as each client prints it. npm: `npm error 403 403 Forbidden - GET
 * https://registry.npmjs.org/uvu` (older npm: `npm ERR! 403 …`), then its advice `… forbidden by
 * your security policy …`; curl and git (libcurl): `CONNECT tunnel failed, response 403`; Python
 * (pip, urllib, requests): `Tunnel connection failed: 403 Forbidden`; wget: `Proxy tunneling
 * failed: Forbidden`; node's undici through a proxy agent: `Proxy response (403) !== 200 when HTTP
 * Tunneling`; any client that prints the body: the runtime's own words.
 */
const NPM_ADVICE = /forbidden by your security policy/;
const PROXY_REFUSALS: ReadonlyArray<RegExp> = [
  /\b403 Forbidden - [A-Z]+ (https?:\/\/\S+)/,
  NPM_ADVICE,
  /CONNECT tunnel failed, response 403/,
  /Tunnel connection failed: 403 Forbidden/,
  /Proxy tunneling failed: Forbidden/,
  /Proxy response \(403\) !== 200 when HTTP Tunneling/,
  /Connection blocked by network allowlist|blocked-by-allowlist/,
];

/**
 * A lookup with no name server, as a command that went around the proxy prints it. node:
 * `getaddrinfo EAI_AGAIN example.com`; Python: `[Errno -3] Temporary failure in name resolution`;
 * curl and git without the proxy: `Could not resolve host: example.com`.
 */
const BYPASSED: ReadonlyArray<RegExp> = [/getaddrinfo EAI_AGAIN (\S+)/, /Temporary failure in name resolution/, /Could not resolve host: ([^\s'"]+)/];

/** A URL on the line, for the outputs whose refusal line names none of its own (git's `unable to access 'https://…'`). */
const URL_ON_LINE = /(https?:\/\/[^\s'"]+)/;

/** Whether `target` is one of `allowed` (`example.com`, `*.example.com`, either with a `:port`, which then must be its port). */
function allows(allowed: readonly string[], target: Target): boolean {
  const host = target.host.toLowerCase();
  return allowed.some((entry) => {
    const [, name = '', port] = /^(.*?)(?::(\d+))?$/.exec(entry.toLowerCase()) ?? [];
    if (port !== undefined && target.port !== null && Number(port) !== target.port) return false;
    return name.startsWith('*.') ? host.endsWith(name.slice(1)) : host === name;
  });
}

/** The target a refusal's line names: the pattern's capture (a URL, or a bare host), else a URL elsewhere on the line. */
function targetOf(named: string | undefined, line: string): Target | null {
  if (named === undefined) return urlTarget(URL_ON_LINE.exec(line)?.[1]);
  if (named.includes('://')) return urlTarget(named);
  const host = named.replace(/[.:,;)]+$/, '');
  return host === '' ? null : { host, port: null };
}

/**
 * The network call a sandboxed command's `output` shows the sandbox refused, or null. `allowed`:
 * the hosts the command was allowed; a 403 naming one of them came from the server, not the
 * sandbox. Read only for a command that ran in the sandbox: without it these words mean
 * something else (a registry's own 403, a machine offline).
 */
export function networkRefusal(output: string, allowed: readonly string[]): NetworkRefusal | null {
  const lines = output.split('\n');
  // npm's advice follows its 403 line: when that line named an allowed host, the advice is about it too.
  let serverRefused = false;
  for (const [kind, patterns] of [
    ['proxy', PROXY_REFUSALS],
    ['bypassed', BYPASSED],
  ] as const) {
    for (const pattern of patterns) {
      for (const line of lines) {
        const match = pattern.exec(line);
        if (match === null) continue;
        const target = targetOf(match[1], line);
        if (kind === 'proxy' && target !== null && allows(allowed, target)) {
          serverRefused = true;
          continue;
        }
        if (pattern === NPM_ADVICE && serverRefused) continue;
        return { kind, host: target?.host ?? null, line: line.trim() };
      }
    }
  }
  return null;
}

/** The plan's setting that allows a sandboxed command's hosts: the setup command's, or everything else's (checks, the gate, workers). */
export type NetworkSetting = 'context.checkNetwork' | 'context.setupNetwork';

/** What to tell a person of a refusal: that the sandbox refused it, and the setting that allows it. */
export function describeNetworkRefusal(refusal: NetworkRefusal, setting: NetworkSetting): string {
  switch (refusal.kind) {
    case 'proxy':
      return refusal.host === null
        ? `the sandbox refused a network connection (a host the plan's ${setting} does not list): name the hosts the command needs in ${setting}`
        : `the sandbox refused the connection to ${refusal.host}, which the plan's ${setting} does not list: add "${refusal.host}" to ${setting} to allow it`;
    case 'bypassed':
      return `the sandbox refused a network call${refusal.host === null ? '' : ` to ${refusal.host}`} made without its proxy (a sandboxed command reaches the network only through HTTP_PROXY/HTTPS_PROXY, to the hosts of the plan's ${setting}): use a tool that follows those variables, with its hosts in ${setting}`;
  }
}

/** The hint for a failed command's output, when it ran in the sandbox and the sandbox refused its network; else null. */
export function networkRefusalHint(output: string, run: { sandboxed: boolean; allowed: readonly string[]; setting: NetworkSetting }): string | null {
  if (!run.sandboxed) return null;
  const refusal = networkRefusal(output, run.allowed);
  return refusal === null ? null : describeNetworkRefusal(refusal, run.setting);
}
