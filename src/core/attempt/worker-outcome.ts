// What a worker process's end means: from what its stream-json output showed (a result event,
// API retries, assistant error flags, lines that were not JSON) and how the process ended, the
// worker's outcome — a report to judge, or a `WorkerFailure` saying why there is none. Pure; the
// stream-json parser (src/adapters/worker/stream-json.ts) gathers the facts.

import type { PermissionDenial, WorkerFailure, WorkerRun } from './worker-run.ts';
import { clipHead } from '../format.ts';
import type { Usage } from '../plan/index.ts';
import { parseStatusLine } from './prompt.ts';
import { readLimitText } from '../limits/index.ts';

/** A `system`/`api_retry` event: the CLI is retrying an API call. */
export interface ApiRetryInfo {
  attempt?: number;
  maxRetries?: number;
  retryDelayMs?: number;
  errorStatus?: number;
  error?: string;
}

/** The `result` event, the last thing the CLI prints. */
export interface ResultInfo {
  subtype: string;
  isError: boolean;
  /** The final text (`result`), '' when absent (error subtypes carry `errors` instead). */
  resultText: string;
  totalCostUsd?: number;
  usage?: Usage;
  numTurns?: number;
  durationMs?: number;
  terminalReason?: string;
  apiErrorStatus?: number;
  /** The CLI's name for the API error (2.1.330: `connection_failed` when the API could not be reached). */
  apiError?: string;
  permissionDenials: PermissionDenial[];
  errors: string[];
}

/** An assistant message the CLI flagged as an API error. */
export interface AssistantErrorInfo {
  /** e.g. `authentication_failed`, `rate_limit`, `server_error`, `unknown`. */
  error: string;
  apiErrorStatus?: number;
  apiErrorType?: string;
  /** The CLI's name for the API error (`api_error`: `connection_failed`…). */
  apiError?: string;
  text: string;
}

/** What happened to the process; filled in by the worker adapter. */
export interface ExitInfo {
  exitCode?: number;
  signal?: string;
  timedOut: boolean;
  aborted: boolean;
  spawnError?: { code?: string; message: string };
  stderrTail: string;
  /** For the `timed-out` failure. */
  timeoutMs?: number;
  /** For the `agent-missing` failure. */
  bin?: string;
  /** When the process ended (ms): a usage limit's "resets 10pm" is read against it. */
  endedAt?: number;
  /** Ended by the run's limiter: a limit refused it before the API had served it anything. */
  stoppedForLimit?: boolean;
}

/** What the worker's stdout showed, as far as its outcome is concerned. */
export interface StreamFacts {
  usage: Usage;
  permissionDenials: PermissionDenial[];
  sessionId?: string;
  result?: ResultInfo;
  assistantError?: AssistantErrorInfo;
  lastApiRetry?: ApiRetryInfo;
  /** HTTP statuses and error names of every `api_retry` seen. */
  retryStatuses: ReadonlySet<number>;
  retryErrors: ReadonlySet<string>;
  /** The stream showed the worker cannot authenticate (a 401/403 retry, an `authentication_failed` flag). */
  authFailure: boolean;
  /** The API served the worker a response (an assistant message that is not an API error). */
  progressed: boolean;
  /** An `api_retry` came after the last response served: the CLI was still trying to get one. */
  retrying?: boolean;
  /** A usage limit's reset (epoch ms) from a `rate_limit_event` or an error's `rate_limit_info`. */
  limitResetAt?: number;
  validEvents: number;
  nonJsonLines: number;
  initSeen: boolean;
  /** The first line that was not JSON, clipped. */
  garbageSample?: string;
}

export interface Classification {
  outcome: WorkerRun['outcome'];
  usage: Usage;
  sessionId?: string;
  permissionDenials: PermissionDenial[];
  progressed: boolean;
}

/** Turn what the stream showed plus how the process ended into the worker's outcome. */
export function classifyOutcome(facts: StreamFacts, exit: ExitInfo): Classification {
  const base = {
    usage: facts.usage,
    permissionDenials: facts.permissionDenials,
    progressed: facts.progressed,
    ...(facts.sessionId ? { sessionId: facts.sessionId } : {}),
  };
  const failed = (failure: WorkerFailure): Classification => ({ ...base, outcome: { kind: 'failed', failure } });

  if (exit.spawnError) {
    const code = exit.spawnError.code;
    if (code === 'ENOENT' || code === 'EACCES') {
      return failed({ reason: 'agent-missing', bin: exit.bin ?? '', message: exit.spawnError.message });
    }
    return failed({ reason: 'no-result', stderrTail: clipHead(`${exit.spawnError.message}\n${exit.stderrTail}`.trim(), 4096) });
  }
  if (exit.aborted) return failed({ reason: 'interrupted' });
  // Stopped while it waited to retry a refused request: that refusal is its outcome.
  if (exit.stoppedForLimit && !facts.result)
    return failed(transientFromStream(facts, exit.endedAt) ?? { reason: 'rate-limited', message: 'the API refused it; the run waits for the limit' });

  const result = facts.result;
  // A result that arrived before the deadline wins over the timeout: the work was done.
  if (result) {
    if (!result.isError) {
      return { ...base, outcome: { kind: 'reported', resultText: result.resultText, statusLine: parseStatusLine(result.resultText) } };
    }
    return failed(errorResultFailure(facts, result, exit.endedAt));
  }
  if (exit.timedOut) return failed({ reason: 'timed-out', timeoutMs: exit.timeoutMs ?? 0 });

  // No result event.
  const transient = transientFromStream(facts, exit.endedAt);
  if (transient) return failed(transient);
  if (facts.nonJsonLines > 0 && (facts.validEvents === 0 || (!facts.initSeen && facts.nonJsonLines > facts.validEvents))) {
    return failed({ reason: 'garbage-output', sample: facts.garbageSample ?? '' });
  }
  const failure: WorkerFailure = { reason: 'no-result', stderrTail: exit.stderrTail };
  if (exit.exitCode !== undefined) failure.exitCode = exit.exitCode;
  if (exit.signal !== undefined) failure.signal = exit.signal;
  return failed(failure);
}

function retryAfter(facts: StreamFacts): { retryAfterMs?: number } {
  const ms = facts.lastApiRetry?.retryDelayMs;
  return ms !== undefined ? { retryAfterMs: ms } : {};
}

/** A rate limit, with the usage limit's reset the stream said (or its words, read at `endedAt`). */
function rateLimited(facts: StreamFacts, message: string, endedAt: number | undefined): WorkerFailure {
  const resetAt = facts.limitResetAt ?? (endedAt === undefined ? undefined : readLimitText(message, endedAt)?.resetAt);
  return { reason: 'rate-limited', message, ...retryAfter(facts), ...(resetAt !== undefined ? { resetAt } : {}) };
}

/** From api_retry events and assistant error flags, when there is no result event. */
function transientFromStream(facts: StreamFacts, endedAt: number | undefined): WorkerFailure | undefined {
  const assistantError = facts.assistantError;
  const retry = facts.lastApiRetry;
  const describe = (): string =>
    assistantError?.text || (retry ? `API retry ${retry.attempt ?? '?'}: ${retry.errorStatus ?? ''} ${retry.error ?? ''}`.trim() : 'unknown');
  if (facts.retryStatuses.has(401) || facts.retryStatuses.has(403) || facts.authFailure) {
    return { reason: 'not-authenticated', message: describe() };
  }
  if (facts.retryStatuses.has(429) || facts.retryErrors.has('rate_limit') || assistantError?.error === 'rate_limit' || assistantError?.apiErrorStatus === 429) {
    return rateLimited(facts, describe(), endedAt);
  }
  if (
    facts.retryStatuses.has(529) ||
    facts.retryErrors.has('overloaded') ||
    assistantError?.apiErrorStatus === 529 ||
    assistantError?.apiErrorType === 'overloaded_error'
  ) {
    return { reason: 'overloaded', message: describe(), ...retryAfter(facts) };
  }
  if (
    assistantError?.apiError === 'connection_failed' ||
    (assistantError !== undefined && assistantError.apiErrorStatus === undefined && UNREACHABLE.test(assistantError.text)) ||
    (assistantError === undefined && retry !== undefined && retry.errorStatus === undefined && facts.retrying === true)
  ) {
    return {
      reason: 'api-unreachable',
      message: assistantError?.text || 'its requests got no answer (the connection failed: refused, reset, a name that does not resolve, TLS, or a timeout)',
    };
  }
  return undefined;
}

/**
 * Claude Code's words (2.1.330, CLI-NOTES.md) for a request the API never answered: refused, reset,
 * a name that does not resolve, TLS, a timeout.
 */
const UNREACHABLE =
  /Connection refused|Connection dropped|Can[’']t reach the API server|Unable to connect to API|Request timed out|\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|EPROTO|ECONNABORTED)\b/;

/** Why a result event flagged `is_error` failed: limits, authentication, rate, load, or the API. */
function errorResultFailure(facts: StreamFacts, result: ResultInfo, endedAt: number | undefined): WorkerFailure {
  const message = clipHead([result.resultText, ...result.errors].filter((text) => text.trim() !== '').join('; ') || result.subtype, 2000);
  if (result.subtype === 'error_max_turns' || result.terminalReason === 'max_turns') return { reason: 'max-turns', message };
  if (result.subtype === 'error_max_budget_usd' || result.terminalReason === 'budget_exhausted') {
    return { reason: 'max-budget', message };
  }
  const assistantError = facts.assistantError;
  const status = result.apiErrorStatus ?? assistantError?.apiErrorStatus ?? facts.lastApiRetry?.errorStatus;
  if (
    status === 401 ||
    status === 403 ||
    assistantError?.error === 'authentication_failed' ||
    /not logged in|invalid api key|authentication_failed|oauth token (has )?expired/i.test(message)
  ) {
    return { reason: 'not-authenticated', message };
  }
  if (status === 429 || assistantError?.error === 'rate_limit' || /rate[_ ]?limit/i.test(message) || readLimitText(message, endedAt ?? 0)?.usage === true) {
    return rateLimited(facts, message, endedAt);
  }
  if (status === 529 || assistantError?.apiErrorType === 'overloaded_error' || /overloaded/i.test(message)) {
    return { reason: 'overloaded', message, ...retryAfter(facts) };
  }
  if (status === undefined && (result.apiError === 'connection_failed' || assistantError?.apiError === 'connection_failed' || UNREACHABLE.test(message))) {
    return { reason: 'api-unreachable', message };
  }
  return status !== undefined ? { reason: 'api-error', message, status } : { reason: 'api-error', message };
}
