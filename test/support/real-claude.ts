/**
 * Helpers to run the real Claude Code CLI (node_modules/.bin/claude) in tests, against the
 * scripted Messages API server of model-server.ts. Nothing here contacts any host but the
 * server given (checked with strace on 2.1.330: the only connect() is to ANTHROPIC_BASE_URL).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

/** The repository root (two levels above test/support). */
export const repoRoot: string = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The real CLI binary. */
export const claudeBin: string = join(repoRoot, 'node_modules', '.bin', 'claude');

/** A fresh empty directory to use as HOME for one CLI run (or one test). */
export function tempHome(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'foreman-claude-home-'));
}

const DROP_PREFIXES = ['ANTHROPIC_', 'CLAUDE_', 'CLAUDECODE', 'OTEL_', 'AWS_BEARER_TOKEN_BEDROCK', 'VERTEX_'];
const DROP_NAMES = new Set([
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'all_proxy',
  'NODE_OPTIONS',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'XDG_CACHE_HOME',
  'DISABLE_PROMPT_CACHING',
  'MAX_THINKING_TOKENS',
  'API_TIMEOUT_MS',
  'MCP_TIMEOUT',
]);

/**
 * The environment for a CLI run: the parent's environment without any ANTHROPIC_* / CLAUDE_*
 * (or proxy) variable, plus a HOME of its own, the scripted server as ANTHROPIC_BASE_URL, a
 * dummy API key, no retries and no non-essential traffic.
 *
 * `serverUrl` undefined leaves ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY unset (the "not logged
 * in" case). `extra` is applied last; a value of undefined removes the variable.
 */
export function claudeEnv(serverUrl: string | undefined, home: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (DROP_NAMES.has(k) || DROP_PREFIXES.some((p) => k.startsWith(p))) continue;
    env[k] = v;
  }
  Object.assign(env, {
    HOME: home,
    USERPROFILE: home,
    CLAUDE_CODE_MAX_RETRIES: '0',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_COST_WARNINGS: '1',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  });
  if (serverUrl !== undefined) {
    env['ANTHROPIC_BASE_URL'] = serverUrl;
    env['ANTHROPIC_API_KEY'] = 'sk-ant-test-scripted-model';
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  // Said as absent, so that merged over this process's environment (as `runExecute` merges it) it
  // still clears the test run's own settings folder (test/support/global-setup.ts): the CLI and
  // foreman read the user settings under `home`.
  return { CLAUDE_CONFIG_DIR: undefined, ...env };
}

/** The usual headless flags: stream-json output, a model, and write tools allowed. */
export function headlessArgs(opts: { model?: string; permissionMode?: string; allowedTools?: string; extra?: string[] } = {}): string[] {
  return [
    '-p',
    '--output-format',
    'stream-json',
    '--verbose',
    '--model',
    opts.model ?? 'haiku',
    '--permission-mode',
    opts.permissionMode ?? 'dontAsk',
    ...(opts.extra ?? []),
    // Last: --allowedTools swallows every following word.
    '--allowedTools',
    opts.allowedTools ?? 'Read Edit Write Glob Grep',
  ];
}

export type StreamEvent = Record<string, any> & { type: string };

/** Parse stream-json stdout; lines that are not JSON objects are skipped. */
export function parseStreamJson(stdout: string): StreamEvent[] {
  const out: StreamEvent[] = [];
  for (const line of stdout.split('\n')) {
    const t = line.trim();
    if (t === '') continue;
    try {
      const v: unknown = JSON.parse(t);
      if (v !== null && typeof v === 'object' && typeof (v as { type?: unknown }).type === 'string') out.push(v as StreamEvent);
    } catch {
      /* not JSON */
    }
  }
  return out;
}

export interface ClaudeRun {
  exitCode: number | undefined;
  signal: string | undefined;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  events: StreamEvent[];
  /** The last `result` event, if any. */
  result: StreamEvent | undefined;
  durationMs: number;
}

/**
 * Run `claude` with `prompt` on stdin. Never throws for a non-zero exit.
 * `env` defaults to claudeEnv(serverUrl, a fresh temp HOME), removed afterwards.
 */
export async function runClaude(opts: {
  cwd: string;
  prompt: string;
  serverUrl?: string;
  env?: Record<string, string | undefined>;
  args?: string[];
  timeoutMs?: number;
}): Promise<ClaudeRun> {
  const ownHome = opts.env === undefined ? await tempHome() : undefined;
  const env = opts.env ?? claudeEnv(opts.serverUrl, ownHome as string);
  const started = Date.now();
  const r = await execa(claudeBin, opts.args ?? headlessArgs(), {
    cwd: opts.cwd,
    env,
    extendEnv: false,
    input: opts.prompt,
    reject: false,
    // No time limit of its own unless asked: a slow machine slows the CLI; the test's limit catches a hang, and ends it.
    // (Loaded here, not at the top: the demo imports this module, and must not load vitest.)
    ...(opts.timeoutMs === undefined ? { cancelSignal: (await import('./wait.ts')).testSignal('runClaude') } : { timeout: opts.timeoutMs }),
    stripFinalNewline: false,
  });
  if (ownHome !== undefined) await rm(ownHome, { recursive: true, force: true });
  const stdout = String(r.stdout ?? '');
  const events = parseStreamJson(stdout);
  return {
    exitCode: r.exitCode,
    signal: r.signal,
    timedOut: r.timedOut,
    stdout,
    stderr: String(r.stderr ?? ''),
    events,
    result: [...events].reverse().find((e) => e.type === 'result'),
    durationMs: Date.now() - started,
  };
}

/**
 * An organization gateway's token (a JWT whose audience is `claude-gateway`; CLI-NOTES.md): a CLI
 * signed in with it (`ANTHROPIC_AUTH_TOKEN`, no API key) reads an account's usage limit headers as
 * for a claude.ai login.
 */
export function gatewayToken(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ aud: 'claude-gateway', exp: Math.floor(Date.now() / 1000) + 86_400 })}.unsigned`;
}
