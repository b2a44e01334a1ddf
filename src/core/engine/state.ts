// The engine's state: the run's configuration (`EngineConfig`), everything the step function
// keeps between events (`EngineState`), and how a run stopped (`EngineStop`). Only the step
// function (step.ts) makes a new state from one.

import type { StopReason } from '../report/index.ts';
import type { CapturedWork, WorkerFailure } from '../attempt/index.ts';
import type { GateQueue } from './gate.ts';
import type { HostSlots, HostState } from '../hosts/index.ts';
import type { Limiter } from '../limits/index.ts';
import type { Plan, SchedulePolicy, UsageFigure } from '../plan/index.ts';
import type { Attempt } from './attempt.ts';

export interface EngineConfig {
  concurrency: number;
  maxAttempts: number;
  schedule: SchedulePolicy;
  /** The limiter's back-off when a refusal names none; doubled per hold in a row with nothing served between. */
  backoffMs: number;
  /** `--limit-wait`: the longest the run waits for a rate or usage limit, or the API out of reach (0: never); past it, it drains and stops. */
  limitWaitMs: number;
  /** Where the workers reach the API (`ANTHROPIC_BASE_URL`, or Anthropic's): named when it is out of reach. */
  apiUrl?: string;
  /** Stop starting work once the run's cost reaches this. */
  maxCostUsd?: number;
  /** Worker logs go to `<logDir>/worker-<task>.log`. */
  logDir: string;
  /** A change outside a task's declared files fails its attempt (`--strict-scope`); without, it is set aside and the checks decide. */
  strictScope?: boolean;
  /** `--widen PATTERN…` (headless): files an attempt showed its task needs, matching one, join its declared files (core/attempt/widen.ts). */
  widen?: readonly string[];
  /**
   * The merge queue: verified work integrates only in stacks the plan's test command passed. Null:
   * no gate. `command` names the gate in the words of a run it refused (it fails on the starting commit).
   */
  gate: { batchSize: number; command?: string } | null;
  /**
   * How many levels of candidates not yet integrated a task may be built on (`--speculate N`;
   * 0: none, a task waits for its blockers to integrate). Only with a gate, headless, continuous.
   */
  speculate: number;
  /**
   * `headless`: workers start and verified work integrates as soon as they may. `session`: only
   * when the lead asks (`hand-out`, `integrate`), and a task starts only once its blockers' work
   * has landed on the branch its subagent starts from.
   */
  driver: EngineDriver;
  /**
   * Headless, `--host`: where attempts work, each a host with its slots (core/hosts/placement.ts).
   * Absent: no hosts; nothing is placed, the workers run here as they always did.
   */
  hosts?: readonly HostSlots[];
  /** A host marked down is tried again after this, doubled per fault in a row. */
  hostBackoffMs?: number;
}

export type EngineDriver = 'headless' | 'session';

export interface EngineStop {
  reason: StopReason;
  message: string;
  /** For `agent-unavailable`: what failed. */
  agentFailure?: WorkerFailure;
  /**
   * The gate failed on the starting commit, so the run was refused before anything started (what
   * it printed): invalid input rather than an incomplete run.
   */
  baselineFailure?: { output: string };
  /** For `limited`: the run had to wait until then (ms); running it again after that goes on. */
  resumeAfter?: number;
}

/**
 * The gate's check of the starting commit, which comes before it tests any candidate and before
 * any task starts: `none` (no gate, or nothing to test when the run was set up), `due`, `testing`,
 * `passed`, or `failed` (the run was refused).
 */
export type Baseline = 'none' | 'due' | 'testing' | 'passed' | 'failed';

export interface EngineState {
  readonly config: EngineConfig;
  readonly plan: Plan;
  readonly overlaps: readonly ReadonlySet<number>[];
  /** Higher starts first: the longest remaining path. */
  readonly priority: readonly number[];
  /** The time of the latest event (ms). */
  readonly now: number;
  /** Live attempts by task. */
  readonly attempts: ReadonlyMap<number, Attempt>;
  /**
   * The run's limiter for rate and usage limits (core/limits/limiter.ts): this machine's account's, and
   * with hosts, that of every host logged in to it or to no account it names.
   */
  readonly limiter: Limiter;
  /**
   * With hosts logged in to more than one account (`HostSlots.account`): each other account's
   * limiter, by its key (core/engine/accounts.ts). Absent: `limiter` is the run's only one.
   */
  readonly limiters?: ReadonlyMap<string, Limiter>;
  /** With the rounds policy: the tasks of the open round. */
  readonly admitted: ReadonlySet<number> | null;
  /** Rounds recorded so far (the number in commit messages). */
  readonly round: number;
  /** What the run's workers cost so far; `unknown` once a worker nothing measured (a Task subagent) ran. */
  readonly usage: UsageFigure;
  /** In a session: tasks whose work is integrated and not on the person's branch yet (their dependants wait). */
  readonly unlanded: ReadonlySet<number>;
  /** The gate's check of the starting commit: until it passed, nothing starts and no candidate is tested. */
  readonly baseline: Baseline;
  /** Workers were told to stop (an interrupt, an agent that cannot run): verdicts after it are void. */
  readonly aborted: boolean;
  /** Time spent by finished workers, and by the lane recording, to tell whether waiting for a record pays. */
  readonly timing: Timing;
  /** When the record in the lane was handed to it, or null. */
  readonly recordingSince: number | null;
  /** The merge queue (empty without a gate). */
  readonly gate: GateQueue;
  readonly stop: EngineStop | null;
  readonly finished: boolean;
  /** Tasks `--widen` widened in this run: once each. */
  readonly widened: ReadonlySet<number>;
  /** Headless: candidates the gate blamed, retried from their own work: their next attempt starts from it (once). */
  readonly retryFrom?: ReadonlyMap<number, CapturedWork>;
  /** With hosts (`config.hosts`): each one's state, up or down; absent without hosts. */
  readonly hosts?: readonly HostState[];
}

export interface Timing {
  workers: number;
  workerMs: number;
  records: number;
  recordMs: number;
}
