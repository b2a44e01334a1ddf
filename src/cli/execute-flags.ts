// `execute`'s flags, and the run's settings read from them (with FOREMAN_SANDBOX and
// FOREMAN_BACKOFF_MS): a flag out of its range or contradicting another is a usage error (exit 2).

import { resolve } from 'node:path';
import { type SandboxMode, sandboxModeOf } from '../adapters/index.ts';
import { SCHEDULE_POLICIES, type SchedulePolicy } from '../core/index.ts';
import { DEFAULTS, LAND_POLICIES, type LandPolicy, type RunSettings } from '../run/index.ts';
import type { Io, Numbers, OptionSpec } from './command.ts';
import { parseNumber, RANGES } from './numeric-flags.ts';
import { usageError } from './exit.ts';
import { gateCommandOf, gateOptions } from './gate-flags.ts';
import { hostOptions } from './host-flags.ts';

export const PERMISSION_MODES = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'manual', 'plan'];

/** execute's flags, each with its help line (docs/cli.md lists them all). */
export const executeOptions: Record<string, OptionSpec> = {
  repo: {
    type: 'string',
    valueName: 'DIR',
    description: 'a folder of the repository to work in, which foreman works in at its top, as git finds it (default: the current folder)',
  },
  plan: {
    type: 'string',
    valueName: 'FILE',
    description: 'the plan, relative to DIR (default: .design/plan.json in DIR or the nearest folder above it in the repository, else at its top)',
  },
  'claude-bin': { type: 'string', valueName: 'PATH', description: 'the Claude Code CLI (default: $CLAUDE_BIN, else `claude` on PATH)' },
  concurrency: {
    type: 'string',
    valueName: 'N',
    description: `workers at once (default ${DEFAULTS.concurrency}; with hosts, their slots together, which it may lower but not exceed)`,
    range: RANGES.workers,
  },
  ...hostOptions,
  'task-timeout': {
    type: 'string',
    valueName: 'SECONDS',
    description: `a worker's time limit; its whole process group is killed (default ${DEFAULTS.taskTimeoutMs / 1000})`,
    range: RANGES.timeoutSeconds,
  },
  'max-attempts': {
    type: 'string',
    valueName: 'N',
    description: `attempts per task, retries included (default ${DEFAULTS.maxAttempts})`,
    range: RANGES.attempts,
  },
  'permission-mode': {
    type: 'string',
    valueName: 'MODE',
    description: `passed to every worker (default ${DEFAULTS.permissionMode}; one of ${PERMISSION_MODES.join(', ')})`,
  },
  'allowed-tools': {
    type: 'string',
    valueName: 'LIST',
    description:
      "permission rules every worker gets instead of the computed ones, space or comma separated (default, per task: Read Glob Grep, Edit(<path>) for exactly the task's declared files, Bash(<command>) for the test/build commands and the task's acceptance checks)",
  },
  schedule: {
    type: 'string',
    valueName: 'POLICY',
    description:
      'continuous: start a task the moment its blockers finish, integrate work as it is verified; rounds: run the ready set as a round, integrate once per round (default continuous)',
  },
  ...gateOptions({ integrates: 'as soon as it is verified', ended: '; its process group is ended' }),
  speculate: {
    type: 'string',
    valueName: 'N',
    description: `with a gate: a task whose blockers are candidates in the merge queue starts on them, up to N levels deep; cancelled if one is blamed (default ${DEFAULTS.speculate})`,
    range: RANGES.speculate,
  },
  'no-speculate': { type: 'boolean', description: 'a task waits for its blockers to integrate (the same as --speculate 0)' },
  land: {
    type: 'string',
    valueName: 'WHEN',
    description: `end: land integrated work on your branch when the run stops; continuous: also after every integration (default ${DEFAULTS.land})`,
  },
  'max-cost-usd': { type: 'string', valueName: 'N', description: "stop starting work once the run's cost reaches N dollars", range: RANGES.dollars },
  'task-budget-usd': {
    type: 'string',
    valueName: 'N',
    description: 'per-worker spend cap (--max-budget-usd) for tasks that set no agent.maxBudgetUsd',
    range: RANGES.dollars,
  },
  'limit-wait': {
    type: 'string',
    valueName: 'SECONDS',
    description: `the longest the run waits for a rate or usage limit to lift (a usage limit's reset), or for the API to answer when it is out of reach, or (with hosts) for one when every host is down; past it, it drains and stops (exit 75), saying when to run again; 0: wait for none (default ${DEFAULTS.limitWaitMs / 1000}, 5 hours)`,
    range: RANGES.limitWait,
  },
  'check-timeout': {
    type: 'string',
    valueName: 'SECONDS',
    description: `time limit of each acceptance or assumption command, and of the setup command in a worktree; its process group is ended (default ${DEFAULTS.checkTimeoutMs / 1000})`,
    range: RANGES.timeoutSeconds,
  },
  sandbox: {
    type: 'string',
    valueName: 'MODE',
    description: `auto: run checks, the setup command, the gate and workers' Bash in the operating-system sandbox where it works (the run says once whether they do, and with what network); on: refuse to run without it (exit 3); off: never (default ${DEFAULTS.sandbox})`,
  },
  'dry-run': {
    type: 'boolean',
    description:
      "validate, refuse what the run would refuse before its first worker (with its exit code and line), print the settings, the rounds, every command the plan would run, the permission rules of each task it would start and the run's warnings (with --json: as events); start and write nothing",
  },
  'no-commit': { type: 'boolean', description: 'land integrated work in your files as uncommitted changes instead of commits on your branch' },
  'no-probe': { type: 'boolean', description: "skip the probe of the pending tasks' acceptance checks at setup" },
  strict: { type: 'boolean', description: 'refuse to run (exit 2) when the probe finds a vacuous task (every check passes before the work)' },
  widen: {
    type: 'string',
    valueName: 'PATTERNS',
    description:
      "let the run add to a task's declared files what an attempt showed it needs (refused, or changed and set aside), when the path matches one of these patterns (space or comma separated, git's wildmatch: 'src/**'), is a file the repository has, lies outside .design/, .git/ and .claude/, and no other task not yet landed declares it; once per task per run, no attempt counted (default: never)",
  },
  'strict-scope': {
    type: 'boolean',
    description: "a change outside a task's declared files fails its attempt (default: it is set aside, never integrated, and the acceptance checks decide)",
  },
  'probe-timeout': {
    type: 'string',
    valueName: 'SECONDS',
    description: `time limit of the whole probe at setup, its setup command included; each check has --check-timeout (default ${DEFAULTS.probeTimeoutMs / 1000})`,
    range: RANGES.timeoutSeconds,
  },
  json: { type: 'boolean', description: 'one JSON event per line on stdout (with --dry-run too)' },
};

/** The run's settings (declared once, in `run/settings.ts`) and what only the CLI needs. */
export interface Settings extends RunSettings {
  /** What the flags say of the gate; `gate` itself is settled once the plan is read. */
  gateFlags: { command: string | undefined; off: boolean; batchSize: number; timeoutMs: number };
  sandbox: SandboxMode;
  dryRun: boolean;
  json: boolean;
  /** Probe the pending tasks' acceptance checks at setup. */
  probe: boolean;
  /** Refuse vacuous tasks instead of warning about them. */
  strict: boolean;
  probeTimeoutMs: number;
}

export function settingsFrom(values: Record<string, unknown>, numbers: Numbers, io: Io): Settings {
  const str = (key: string) => (typeof values[key] === 'string' ? (values[key] as string) : undefined);
  const repo = resolve(io.cwd, str('repo') ?? '.');
  const permissionMode = str('permission-mode') ?? DEFAULTS.permissionMode;
  if (!PERMISSION_MODES.includes(permissionMode)) throw usageError(`--permission-mode expects one of ${PERMISSION_MODES.join(', ')}, got "${permissionMode}"`);
  const schedule = (str('schedule') ?? DEFAULTS.schedule) as SchedulePolicy;
  if (!SCHEDULE_POLICIES.includes(schedule)) throw usageError(`--schedule expects one of ${SCHEDULE_POLICIES.join(', ')}, got "${schedule}"`);
  const tools = str('allowed-tools');
  // `FOREMAN_SANDBOX` is the default, checked like the flag.
  const sandboxMode = sandboxModeOf(str('sandbox'), io.env);
  if (!sandboxMode.ok) throw usageError(sandboxMode.error);
  const sandbox = sandboxMode.value;
  const land = (str('land') ?? DEFAULTS.land) as LandPolicy;
  if (!LAND_POLICIES.includes(land)) throw usageError(`--land expects one of ${LAND_POLICIES.join(', ')}, got "${land}"`);
  const checkTimeoutMs = seconds(numbers['check-timeout']) ?? DEFAULTS.checkTimeoutMs;
  const gateCommand = gateCommandOf(values);
  if (numbers.speculate !== undefined && values['no-speculate'] === true) throw usageError('--speculate and --no-speculate contradict each other: choose one');
  const gateFlags = {
    command: gateCommand,
    off: values['no-gate'] === true,
    batchSize: numbers['gate-batch'] ?? DEFAULTS.gateBatch,
    timeoutMs: seconds(numbers['gate-timeout']) ?? checkTimeoutMs,
  };
  return {
    gateFlags,
    gate: null,
    sandbox,
    land,
    repo,
    planPath: resolve(repo, str('plan') ?? '.design/plan.json'),
    claudeBin: str('claude-bin') ?? io.env.CLAUDE_BIN ?? 'claude',
    concurrency: numbers.concurrency ?? DEFAULTS.concurrency,
    taskTimeoutMs: seconds(numbers['task-timeout']) ?? DEFAULTS.taskTimeoutMs,
    maxAttempts: numbers['max-attempts'] ?? DEFAULTS.maxAttempts,
    permissionMode,
    allowedTools: tools === undefined ? undefined : tools.split(/[\s,]+(?![^(]*\))/).filter(Boolean),
    schedule,
    maxCostUsd: numbers['max-cost-usd'],
    taskBudgetUsd: numbers['task-budget-usd'],
    checkTimeoutMs,
    // Checked like a flag: a typo must not silently turn the back-off off.
    backoffMs: parseNumber('FOREMAN_BACKOFF_MS', io.env.FOREMAN_BACKOFF_MS, RANGES.backoffMs) ?? DEFAULTS.backoffMs,
    limitWaitMs: seconds(numbers['limit-wait']) ?? DEFAULTS.limitWaitMs,
    speculate: values['no-speculate'] === true ? 0 : (numbers.speculate ?? DEFAULTS.speculate),
    dryRun: values['dry-run'] === true,
    commit: values['no-commit'] !== true,
    strictScope: values['strict-scope'] === true,
    ...(str('widen') !== undefined ? { widen: widenPatterns(str('widen')!) } : {}),
    json: values.json === true,
    probe: values['no-probe'] !== true,
    strict: values.strict === true,
    probeTimeoutMs: seconds(numbers['probe-timeout']) ?? DEFAULTS.probeTimeoutMs,
  };
}

const seconds = (value: number | undefined): number | undefined => (value === undefined ? undefined : value * 1000);

/** `--widen`'s patterns: repository paths with wildmatch's `*`, `**`, `?`, `[…]`; none may leave the repository. */
function widenPatterns(value: string): string[] {
  const patterns = value.split(/[\s,]+/).filter(Boolean);
  if (patterns.length === 0) throw usageError("--widen: no pattern given (e.g. --widen 'src/**')");
  const bad = patterns.find((pattern) => pattern.startsWith('/') || pattern.split('/').includes('..'));
  if (bad !== undefined) throw usageError(`--widen: "${bad}" is not a pattern of repository paths (relative to its top, without ..)`);
  return patterns;
}
