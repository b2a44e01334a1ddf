// A worker process's run: what it reported (its status line), what it cost, what was denied, and
// every way it can fail to give a usable report, grouped by what the orchestrator does about each.

import type { Usage } from '../plan/index.ts';
import { formatLimit } from '../limits/index.ts';
import { assertNever } from '../result.ts';

export interface PermissionDenial {
  tool: string;
  input?: unknown;
  /** For a denied write inside the worker's worktree: its repository path (the worker adapter, or the in-session worker hook's record, sets it). */
  path?: string;
  /** For such a path: whether the repository has it as a regular file (set when the run may widen tasks). */
  tracked?: boolean;
}

/** What the worker reported on its final status line. */
export type ReportedStatus = 'COMPLETED' | 'FAILED' | 'BLOCKED';

export interface StatusLine {
  status: ReportedStatus;
  /** Text after the colon, trimmed. */
  text: string;
}

/**
 * Why a worker process did not produce a usable report. Grouped by what the orchestrator does:
 * - infrastructure (`agent-missing`, `not-authenticated`): stop the whole run, count no attempt;
 * - transient (`rate-limited`, `overloaded`, `api-unreachable`): the run's limiter holds, the
 *   task waits (or its worker's conversation is resumed), no attempt counted;
 * - `interrupted`: the user stopped the run; the task goes back to pending, no attempt;
 * - the rest are failed attempts of the task.
 */
export type WorkerFailure =
  | { reason: 'agent-missing'; bin: string; message: string }
  | { reason: 'not-authenticated'; message: string }
  /** `resetAt` (epoch ms): a usage limit's reset, when the worker's stream or words said it. */
  | { reason: 'rate-limited'; message: string; retryAfterMs?: number; resetAt?: number }
  | { reason: 'overloaded'; message: string; retryAfterMs?: number }
  /** The API never answered: the connection was refused or dropped, the name did not resolve, TLS failed, or the request timed out. */
  | { reason: 'api-unreachable'; message: string }
  | { reason: 'interrupted' }
  | { reason: 'timed-out'; timeoutMs: number }
  | { reason: 'max-turns'; message: string }
  | { reason: 'max-budget'; message: string }
  | { reason: 'api-error'; message: string; status?: number }
  /** Exited (or was killed by a signal) without a result event. */
  | { reason: 'no-result'; exitCode?: number; signal?: string; stderrTail: string }
  /** The stream was not stream-json at all. */
  | { reason: 'garbage-output'; sample: string }
  /**
   * In a session: Claude Code could not make the subagent's worktree, so the worker never ran (two
   * `git worktree add` at once can trip on each other: `fatal: failed to read …/commondir`). It
   * starts again at the next hand-out (`retryAfterMs` 0), no attempt spent.
   */
  | { reason: 'no-worktree'; message: string; retryAfterMs: number };

export type FailureClass = 'infrastructure' | 'transient' | 'interrupted' | 'attempt';

export function classifyWorkerFailure(failure: WorkerFailure): FailureClass {
  switch (failure.reason) {
    case 'agent-missing':
    case 'not-authenticated':
      return 'infrastructure';
    case 'rate-limited':
    case 'overloaded':
    case 'api-unreachable':
    case 'no-worktree':
      return 'transient';
    case 'interrupted':
      return 'interrupted';
    case 'timed-out':
    case 'max-turns':
    case 'max-budget':
    case 'api-error':
    case 'no-result':
    case 'garbage-output':
      return 'attempt';
    default:
      return assertNever(failure, 'worker failure');
  }
}

export function describeWorkerFailure(failure: WorkerFailure): string {
  switch (failure.reason) {
    case 'agent-missing':
      return `the agent CLI '${failure.bin}' was not found: ${failure.message}`;
    case 'not-authenticated':
      // The CLI's own words name its in-session command (`/login`); a headless run says what to do in a terminal.
      return `the agent is not authenticated (${failure.message}): log in by running \`claude\` once in a terminal, or set ANTHROPIC_API_KEY, then run again`;
    case 'rate-limited':
      return `rate limited: ${failure.message}`;
    case 'overloaded':
      return `the API is overloaded: ${failure.message}`;
    case 'api-unreachable':
      return `the API could not be reached: ${failure.message}`;
    case 'interrupted':
      return 'interrupted';
    case 'timed-out':
      // Worded as every other time limit (time-limit.ts), naming the flag that sets it.
      return `the worker timed out after ${formatLimit(failure.timeoutMs)} (the limit set by --task-timeout); its whole process group was ended`;
    case 'max-turns':
      return `the worker hit its turn limit: ${failure.message}`;
    case 'max-budget':
      return `the worker hit its budget limit: ${failure.message}`;
    case 'api-error':
      return `API error${failure.status ? ` ${failure.status}` : ''}: ${failure.message}`;
    case 'no-result': {
      const how = failure.signal ? `was killed by ${failure.signal}` : `exited with code ${failure.exitCode ?? 'unknown'}`;
      return `the worker ${how} without a result${failure.stderrTail ? `: ${failure.stderrTail}` : ''}`;
    }
    case 'garbage-output':
      return `the worker printed something that is not stream-json: ${JSON.stringify(failure.sample)}`;
    case 'no-worktree':
      return `Claude Code could not make the worker's worktree, so it did not start (${failure.message})`;
    default:
      return assertNever(failure, 'worker failure');
  }
}

/** The run of a re-check: no worker, no cost; its "report" has no status line, so its checks decide (core/attempt/finalize.ts). */
export const recheckRun = (logPath: string): WorkerRun => ({
  recheck: true,
  usage: { costUsd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
  durationMs: 0,
  permissionDenials: [],
  logPath,
  outcome: { kind: 'reported', resultText: 'the work an earlier attempt set aside, re-checked with the task widened', statusLine: null },
});

/** The outcome of one worker process. */
export interface WorkerRun {
  sessionId?: string;
  /**
   * A Task subagent of a Claude Code session: nothing measured its usage or its permission
   * denials (then `usage` and `permissionDenials` are empty and say nothing; they are `unknown`).
   */
  unmeasured?: true;
  /** No worker ran: the work a task's last attempt set aside was re-checked (`recheckRun`). */
  recheck?: true;
  usage: Usage;
  durationMs: number;
  permissionDenials: PermissionDenial[];
  logPath: string;
  /** The API served it a response (an assistant message that is not an API error): it did something. */
  progressed?: true;
  /** Of `durationMs`, the time its CLI waited to retry requests a limit refused (counts toward no time limit). */
  waitedMs?: number;
  outcome: { kind: 'reported'; resultText: string; statusLine: StatusLine | null } | { kind: 'failed'; failure: WorkerFailure };
}
