// A run's settings, declared once: the headless CLI parses them from flags, the engine takes them,
// and the in-session plan tool uses the same defaults. docs/cli.md's flag table states these defaults.

import type { SandboxMode } from '../adapters/index.ts';
import { DEFAULT_HOST_BACKOFF_MS, type Host, type SchedulePolicy } from '../core/index.ts';

export const DEFAULTS = {
  concurrency: 4,
  maxAttempts: 3,
  taskTimeoutMs: 1_800_000,
  checkTimeoutMs: 300_000,
  /** The whole probe of a plan's acceptance checks (`plan probe --timeout`, `execute --probe-timeout`). */
  probeTimeoutMs: 600_000,
  permissionMode: 'dontAsk',
  schedule: 'continuous' as SchedulePolicy,
  /**
   * The run's back-off after a refusal that names none (`FOREMAN_BACKOFF_MS`), doubled per hold in
   * a row with nothing served between; a delay the API names (`retry-after`) is waited as it is.
   */
  backoffMs: 5_000,
  /**
   * `--limit-wait`: the longest the run waits for a rate or usage limit before it drains and stops
   * (exit 75). Five hours: a subscription's session limit resets within that, a weekly one does not.
   */
  limitWaitMs: 18_000_000,
  /** `--sandbox` (and `FOREMAN_SANDBOX`): the sandbox wherever the platform has it. */
  sandbox: 'auto' as SandboxMode,
  /** `--land`: when integrated work lands on the person's branch. */
  land: 'end' as LandPolicy,
  /** `--gate-batch`: candidates the gate tests together at most. */
  gateBatch: 4,
  /**
   * `--speculate`: levels of candidates not yet integrated a task may be built on (0: none). Chosen
   * from bench/speculate.ts: 1 takes the whole gain on a chain and all but a point of it on random
   * plans, where 2 and more add a point or two of worker time wasted on cancelled work.
   */
  speculate: 1,
  /** A host marked down (a host fault) is tried again after this, doubled per fault in a row (core/hosts/placement.ts). */
  hostBackoffMs: DEFAULT_HOST_BACKOFF_MS,
} as const;

/**
 * The flags that set the time limits, named when a limit is hit (`describeTimeLimitHit`). The plan
 * tool's steps take the same names (`plan setup --check-timeout`, `--gate-timeout`, `plan finalize
 * --check-timeout`); only the whole probe's budget is named differently by `plan probe`.
 */
export const LIMIT_FLAGS = {
  /** Each acceptance and assumption check, and the setup command in a worktree of the run. */
  check: '--check-timeout',
  /** One gate run (and, in a session, the setup command in the gate process's own worktree). */
  gate: '--gate-timeout',
  /** The whole probe at the start of a headless run, its setup command included. */
  probe: '--probe-timeout',
  /** The whole probe of `plan probe`, its setup command included. */
  planProbe: 'plan probe --timeout',
} as const;

/** The merge queue's gate: the plan's test command (or `--gate CMD`), its batch size and time limit. */
export interface GateSettings {
  command: string;
  batchSize: number;
  timeoutMs: number;
}

/** When integrated work lands: when the run stops, or also after every integration. */
export const LAND_POLICIES = ['end', 'continuous'] as const;
export type LandPolicy = (typeof LAND_POLICIES)[number];

export interface RunSettings {
  /** The repository's top directory. */
  repo: string;
  planPath: string;
  claudeBin: string;
  concurrency: number;
  taskTimeoutMs: number;
  maxAttempts: number;
  permissionMode: string;
  /** Explicit tool list for every worker; when absent, computed per task from its declared files. */
  allowedTools?: string[];
  schedule: SchedulePolicy;
  /** Stop starting work once the run's cost reaches this. */
  maxCostUsd?: number;
  /** Per-worker spend cap when the task sets none. */
  taskBudgetUsd?: number;
  checkTimeoutMs: number;
  /** Land integrated work as commits on the branch; without, it lands as uncommitted changes. */
  commit: boolean;
  /** A change outside a task's declared files fails its attempt (`--strict-scope`); else it is set aside and the checks decide. */
  strictScope?: boolean;
  /** `--widen PATTERN…`: files an attempt showed its task needs, matching one, join its declared files (once per task per run). */
  widen?: string[];
  land: LandPolicy;
  /** The merge queue's gate; null: verified work integrates without one. */
  gate: GateSettings | null;
  /** Levels of candidates a task may be built on before they integrate (`--speculate`; 0 with `--no-speculate`); default `DEFAULTS.speculate`. */
  speculate?: number;
  backoffMs: number;
  limitWaitMs: number;
  /**
   * `--host`, `--hosts`: where attempts work, in the order given (core/hosts/url.ts); `concurrency`
   * is then at most their slots together. Absent: no hosts, every worker here, as always.
   */
  hosts?: Host[];
  /**
   * The hosts logged in to another account than this machine's, each with that account's key
   * (core/hosts/accounts.ts): their attempts answer to that account's limiter. A host not in it
   * shares the run's.
   */
  hostAccounts?: ReadonlyMap<string, string>;
}
