// What the lead's session remembers between steps (`Session`): its settings, the tasks handed
// out, the gate process under way, the sandbox, and the step function's state; a new session's
// defaults, and the step function's configuration for a session. The session file (file.ts) keeps
// it between the steps' processes; its shape is file-schema.ts's.

import type { SandboxDecision, SandboxMode } from '../../adapters/index.ts';
import type { EngineConfig, EngineState } from '../../core/index.ts';
import { promptsDirFor } from '../archive.ts';
import { DEFAULTS } from '../settings.ts';

/** The session's sandbox: the mode asked for and whether commands run in it (or why not). */
export type SessionSandbox = { mode: SandboxMode } & SandboxDecision;

/** The gate a session uses: the plan's test command (or `--gate CMD`), its batch size and time limit. */
export interface SessionGateConfig {
  command: string;
  batchSize: number;
  timeoutMs: number;
}

/** The gate process started in the background: its id, what it tests and on which integration tip. */
export interface GateRunRecord {
  id: string;
  /** Candidates stacked in order on `tip`; empty for the baseline. */
  tasks: number[];
  tip: string;
  startedAt: string;
}

/** The merge queue's process side (its queue and its baseline are the step function's): the command, the run under way. */
export interface SessionGate {
  config: SessionGateConfig | null;
  current: GateRunRecord | null;
}

/**
 * A task `next` handed out: when, and the commit its attempt starts from: HEAD's (its subagent's
 * worktree is made there), or for a revision (`plan revise`) its parked attempt's, with `parked`,
 * the parked work the worker hook puts in the worktree.
 */
export interface HandedOut {
  at: string;
  base: string;
  parked?: string;
}

/** What the lead's session remembers between steps. */
export interface Session {
  concurrency: number;
  maxAttempts: number;
  checkTimeoutMs: number;
  /** The branch checked out at setup (`refs/heads/…`), where integrated work lands; null on a detached HEAD. */
  branch: string | null;
  /** When the session's run started. */
  startedAt: string;
  /** The run's id in the journal; null until a step starts a run. */
  runId: string | null;
  /** True once a step wrote the run's run-finished event: the next task handed out starts a new run. */
  runFinished: boolean;
  /** By task index: the tasks handed out and not finalized yet. */
  handedOut: Record<string, HandedOut>;
  gate: SessionGate;
  /** The sandbox mode `setup` was given and what it found. Null in a session file of an earlier version. */
  sandbox: SessionSandbox | null;
  /** `setup --strict-scope`: a change outside a task's declared files fails its attempt (else it is set aside). */
  strictScope: boolean;
  /** The step function's state (its plan is read from plan.json at each step); null before setup. */
  engine: EngineState | null;
}

export const noSessionGate = (): SessionGate => ({ config: null, current: null });

export const defaultSession = (): Session => ({
  concurrency: DEFAULTS.concurrency,
  maxAttempts: DEFAULTS.maxAttempts,
  checkTimeoutMs: DEFAULTS.checkTimeoutMs,
  branch: null,
  startedAt: new Date().toISOString(),
  runId: null,
  runFinished: false,
  handedOut: {},
  gate: noSessionGate(),
  sandbox: null,
  strictScope: false,
  engine: null,
});

/** The step function's configuration for a session. */
export const sessionConfig = (
  session: Pick<Session, 'concurrency' | 'maxAttempts' | 'gate'> & Partial<Pick<Session, 'strictScope'>>,
  planPath: string,
): EngineConfig => ({
  concurrency: session.concurrency,
  maxAttempts: session.maxAttempts,
  schedule: 'continuous',
  backoffMs: DEFAULTS.backoffMs,
  // A session waits for no limit: its lead is told the reset time and comes back after it.
  limitWaitMs: 0,
  logDir: promptsDirFor(planPath),
  ...(session.strictScope === true ? { strictScope: true } : {}),
  gate: session.gate.config === null ? null : { batchSize: session.gate.config.batchSize, command: session.gate.config.command },
  // A subagent's worktree starts from HEAD: nothing can be built on candidates in a session.
  speculate: 0,
  driver: 'session',
});
