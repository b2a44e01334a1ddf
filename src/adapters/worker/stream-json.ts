// Incremental reader of Claude Code's `--output-format stream-json --verbose` output.
// Pure code, no I/O: the worker adapter feeds it one line at a time. The parser keeps only bounded
// state (never the whole stream), so a worker printing gigabytes keeps the orchestrator flat.
// What the stream means for the worker's outcome is decided in src/core/attempt/worker-outcome.ts;
// lines split by src/adapters/processes/line-splitter.ts; the readable log by src/adapters/worker/stream-log.ts; the
// fields both read, by src/adapters/worker/stream-json-fields.ts.
//
// Shapes seen from the real CLI (2.1.330) are described in REFERENCE.md §1; the samples in
// test/stream-json.test.ts were recorded from it.

import {
  addUsage,
  type ApiRetryInfo,
  type AssistantErrorInfo,
  type Classification,
  classifyOutcome,
  clipHead,
  emptyUsage,
  type ExitInfo,
  oneLine,
  parseStatusLine,
  type PermissionDenial,
  type ResultInfo,
  type StreamFacts,
  type Usage,
} from '../../core/index.ts';
import { asArray, asNumber, asString, denialsOf, isJsonObject, type Json, MAX_DENIALS, summarizeToolInput, usageOf } from './stream-json-fields.ts';

// ---------------------------------------------------------------------------------------------
// The accumulator

export type AcceptResult = { kind: 'event'; event: Json } | { kind: 'blank' } | { kind: 'garbage'; line: string };

const ACTIVITY_CHARS = 200;
const SAMPLE_CHARS = 200;
const MAX_RESULT_CHARS = 1024 * 1024;

export class StreamJsonParser {
  private _sessionId: string | undefined;
  private _cwd: string | undefined;
  private _activity: string | undefined;
  private readonly _toolUses = new Map<string, { name: string; input: unknown }>();
  private _validEvents = 0;
  private _nonJsonLines = 0;
  private _garbageSample: string | undefined;
  private _initSeen = false;
  private _lastApiRetry: ApiRetryInfo | undefined;
  private readonly _retryStatuses = new Set<number>();
  private readonly _retryErrors = new Set<string>();
  private _assistantError: AssistantErrorInfo | undefined;
  private _authFailure = false;
  // Responses the API served (assistant messages that are not API errors), by message id.
  private _served = 0;
  private _lastServedId: string | undefined;
  // Refusals (429/529, and requests the API never answered): a new `api_retry` attempt since the
  // last response. The CLI repeats a long wait's api_retry every 30 s with the same attempt number
  // and the time left (CLI-NOTES.md).
  private _refusals = 0;
  private _refusedAttempt: number | undefined;
  // An api_retry came after the last response served: the CLI was still trying when it stopped.
  private _retrying = false;
  private _limitResetAt: number | undefined;
  private _result: ResultInfo | undefined;
  private _streamDenials: PermissionDenial[] = [];
  // Running usage: assistant events repeat one message's usage once per content block, so
  // count each message id once (its latest usage) and sum over messages.
  private _committedUsage: Usage = emptyUsage();
  private _currentMessageId: string | undefined;
  private _currentMessageUsage: Usage = emptyUsage();

  constructor(options: { cwd?: string } = {}) {
    this._cwd = options.cwd;
  }

  /** Feed one line of stdout (without its newline). */
  accept(line: string): AcceptResult {
    const trimmed = line.trim();
    if (trimmed === '') return { kind: 'blank' };
    let event: unknown;
    if (trimmed.startsWith('{')) {
      try {
        event = JSON.parse(trimmed);
      } catch {
        event = undefined;
      }
    }
    if (!isJsonObject(event) || typeof event['type'] !== 'string') {
      this._nonJsonLines++;
      this._garbageSample ??= clipHead(trimmed, SAMPLE_CHARS);
      return { kind: 'garbage', line };
    }
    this._validEvents++;
    this.acceptEvent(event);
    return { kind: 'event', event };
  }

  private acceptEvent(event: Json): void {
    const sid = asString(event['session_id']);
    if (sid) this._sessionId ??= sid;
    switch (event['type']) {
      case 'system':
        this.onSystem(event);
        break;
      case 'assistant':
        this.onAssistant(event);
        break;
      case 'result':
        this.onResult(event);
        break;
      case 'rate_limit_event':
        this.onRateLimitInfo(event['rate_limit_info']);
        break;
      default:
        break;
    }
  }

  /** A `rate_limit_info` that says the account's limit refused: when it resets. */
  private onRateLimitInfo(info: unknown): void {
    if (!isJsonObject(info) || info['status'] !== 'rejected') return;
    const resetsAt = asNumber(info['resetsAt']) ?? asNumber(info['overageResetsAt']);
    if (resetsAt !== undefined && resetsAt > 0) this._limitResetAt = resetsAt * 1000;
  }

  private onSystem(event: Json): void {
    switch (event['subtype']) {
      case 'init': {
        this._initSeen = true;
        const sid = asString(event['session_id']);
        if (sid) this._sessionId = sid;
        this._cwd ??= asString(event['cwd']);
        break;
      }
      case 'api_retry': {
        const info: ApiRetryInfo = {};
        const attempt = asNumber(event['attempt']);
        const maxRetries = asNumber(event['max_retries']);
        const retryDelayMs = asNumber(event['retry_delay_ms']);
        const errorStatus = asNumber(event['error_status']);
        const error = asString(event['error']);
        if (attempt !== undefined) info.attempt = attempt;
        if (maxRetries !== undefined) info.maxRetries = maxRetries;
        if (retryDelayMs !== undefined) info.retryDelayMs = retryDelayMs;
        if (errorStatus !== undefined) {
          info.errorStatus = errorStatus;
          this._retryStatuses.add(errorStatus);
          if (errorStatus === 401 || errorStatus === 403) this._authFailure = true;
        }
        if (error !== undefined) {
          info.error = error;
          if (this._retryErrors.size < 16) this._retryErrors.add(error);
          if (error === 'authentication_failed') this._authFailure = true;
        }
        this._lastApiRetry = info;
        this._retrying = true;
        if ((isRefusal(info) || isConnectionFailure(info)) && attempt !== this._refusedAttempt) {
          this._refusals++;
          this._refusedAttempt = attempt;
        }
        this._activity = `API retry ${attempt ?? '?'}${maxRetries ? `/${maxRetries}` : ''}: ${errorStatus ?? ''} ${error ?? ''}`.trim();
        break;
      }
      case 'permission_denied': {
        if (this._streamDenials.length < MAX_DENIALS) {
          const tool = asString(event['tool_name']) ?? 'unknown';
          const message = asString(event['message']);
          // The line names only the tool call's id: its input (the file, the command) came before.
          const input = this.toolUse(asString(event['tool_use_id']))?.input;
          this._streamDenials.push(input !== undefined ? { tool, input } : message ? { tool, input: { message: clipHead(message, 500) } } : { tool });
        }
        break;
      }
      default:
        break;
    }
  }

  private onAssistant(event: Json): void {
    const error = asString(event['error']);
    const message = isJsonObject(event['message']) ? event['message'] : undefined;
    const content = asArray(message?.['content']);
    if (message && error === undefined && event['is_api_error_message'] !== true) {
      // A response served: each message once (its content blocks come as lines of their own).
      const id = asString(message['id']);
      if (id === undefined || id !== this._lastServedId) this._served++;
      this._lastServedId = id;
      this._refusedAttempt = undefined;
      this._retrying = false;
    }
    if (isJsonObject(event['api_error_params'])) this.onRateLimitInfo(event['api_error_params']['rate_limit_info']);
    if (message) {
      const id = asString(message['id']);
      const usage = usageOf(message['usage']);
      if (id === undefined || id !== this._currentMessageId) {
        this._committedUsage = addUsage(this._committedUsage, this._currentMessageUsage);
        this._currentMessageId = id;
      }
      this._currentMessageUsage = usage;
    }
    let lastText: string | undefined;
    for (const block of content) {
      if (!isJsonObject(block)) continue;
      if (block['type'] === 'tool_use') {
        const name = asString(block['name']) ?? 'tool';
        this.rememberToolUse(asString(block['id']), name, block['input']);
        const summary = summarizeToolInput(name, block['input'], this._cwd);
        this._activity = clipHead(summary ? `${name} ${summary}` : name, ACTIVITY_CHARS);
        lastText = undefined;
      } else if (block['type'] === 'text') {
        const t = asString(block['text']);
        if (t?.trim()) lastText = t;
      }
    }
    if (lastText !== undefined) this._activity = oneLine(lastText, ACTIVITY_CHARS);
    if (error) {
      const info: AssistantErrorInfo = { error, text: clipHead(lastText ?? textOf(content), 2000) };
      const status = asNumber(event['api_error_status']);
      const type = asString(event['api_error_type']);
      const named = asString(event['api_error']);
      if (status !== undefined) info.apiErrorStatus = status;
      if (type !== undefined) info.apiErrorType = type;
      if (named !== undefined) info.apiError = named;
      this._assistantError = info;
      if (error === 'authentication_failed' || status === 401 || status === 403) this._authFailure = true;
    }
  }

  private onResult(event: Json): void {
    const cost = asNumber(event['total_cost_usd']);
    const result: ResultInfo = {
      subtype: asString(event['subtype']) ?? 'unknown',
      isError: event['is_error'] === true,
      resultText: clipHead(asString(event['result']) ?? '', MAX_RESULT_CHARS),
      permissionDenials: denialsOf(event['permission_denials']),
      errors: asArray(event['errors'])
        .slice(0, 20)
        .map((x) => clipHead(typeof x === 'string' ? x : JSON.stringify(x), 2000)),
    };
    if (cost !== undefined) result.totalCostUsd = cost;
    if (isJsonObject(event['usage'])) result.usage = usageOf(event['usage'], cost ?? 0);
    const numTurns = asNumber(event['num_turns']);
    const durationMs = asNumber(event['duration_ms']);
    const terminalReason = asString(event['terminal_reason']);
    const apiErrorStatus = asNumber(event['api_error_status']);
    const apiError = asString(event['api_error']);
    if (apiError !== undefined) result.apiError = apiError;
    if (numTurns !== undefined) result.numTurns = numTurns;
    if (durationMs !== undefined) result.durationMs = durationMs;
    if (terminalReason !== undefined) result.terminalReason = terminalReason;
    if (apiErrorStatus !== undefined) result.apiErrorStatus = apiErrorStatus;
    this._result = result;
    const status = result.isError ? 'failed' : (parseStatusLine(result.resultText)?.status ?? 'finished');
    this._activity = `result: ${status}`;
  }

  // ---- queries ---------------------------------------------------------------------------

  get sessionId(): string | undefined {
    return this._sessionId;
  }
  /** A recent tool call by id (the last 64 are kept), so a denial can say what was denied. */
  toolUse(id: string | undefined): { name: string; input: unknown } | undefined {
    return id === undefined ? undefined : this._toolUses.get(id);
  }

  private rememberToolUse(id: string | undefined, name: string, input: unknown): void {
    if (id === undefined) return;
    this._toolUses.set(id, { name, input });
    if (this._toolUses.size > 64) this._toolUses.delete(this._toolUses.keys().next().value as string);
  }

  /** Latest thing the worker did, for a live view: `Write src/a.ts`, `Bash npm test`, or text. */
  get activity(): string | undefined {
    return this._activity;
  }
  get nonJsonLines(): number {
    return this._nonJsonLines;
  }
  get lastApiRetry(): ApiRetryInfo | undefined {
    return this._lastApiRetry;
  }
  get result(): ResultInfo | undefined {
    return this._result;
  }
  /** Responses the API served so far: more than none, and the worker has done something. */
  get served(): number {
    return this._served;
  }
  /** Refusals (429/529, or requests never answered) seen so far, each once however often the CLI reports its wait. */
  get refusals(): number {
    return this._refusals;
  }
  /** A usage limit's reset (epoch ms), once the stream said one. */
  get limitResetAt(): number | undefined {
    return this._limitResetAt;
  }

  /** Cost known so far: the CLI reports cost only in its `result` event, so 0 until then. */
  get costUsd(): number {
    return this._result?.totalCostUsd ?? 0;
  }

  /** Usage so far: the result's totals when present, else the sum over assistant messages. */
  usage(): Usage {
    if (this._result?.usage) return { ...this._result.usage };
    return { ...addUsage(this._committedUsage, this._currentMessageUsage), costUsd: this.costUsd };
  }

  permissionDenials(): PermissionDenial[] {
    if (this._result) return [...this._result.permissionDenials];
    return [...this._streamDenials];
  }

  /**
   * True once the stream shows the worker cannot authenticate (an `api_retry` with status 401/403,
   * or an assistant message flagged `authentication_failed`): the runner should kill it at once
   * rather than sit through the CLI's own retries.
   */
  authFailureSeen(): boolean {
    return this._authFailure;
  }

  /** What the stream showed, as far as the worker's outcome is concerned. */
  facts(): StreamFacts {
    return {
      usage: this.usage(),
      permissionDenials: this.permissionDenials(),
      ...(this._sessionId ? { sessionId: this._sessionId } : {}),
      ...(this._result ? { result: this._result } : {}),
      ...(this._assistantError ? { assistantError: this._assistantError } : {}),
      ...(this._lastApiRetry ? { lastApiRetry: this._lastApiRetry } : {}),
      retryStatuses: this._retryStatuses,
      retryErrors: this._retryErrors,
      authFailure: this._authFailure,
      progressed: this._served > 0,
      retrying: this._retrying,
      ...(this._limitResetAt !== undefined ? { limitResetAt: this._limitResetAt } : {}),
      validEvents: this._validEvents,
      nonJsonLines: this._nonJsonLines,
      initSeen: this._initSeen,
      ...(this._garbageSample !== undefined ? { garbageSample: this._garbageSample } : {}),
    };
  }

  /** Turn what was seen plus how the process ended into the worker's outcome (src/core/attempt/worker-outcome.ts). */
  classify(exit: ExitInfo): Classification {
    return classifyOutcome(this.facts(), exit);
  }
}

/** An api_retry for a 429 or a 529: the API refused (a limit), not a failure of the network or the server. */
export const isRefusal = (retry: ApiRetryInfo): boolean =>
  retry.errorStatus === 429 || retry.errorStatus === 529 || retry.error === 'rate_limit' || retry.error === 'overloaded';

/**
 * An api_retry with no HTTP status: the request got no answer at all (refused, reset, DNS, TLS, a
 * timeout; 2.1.330 says `"error_status": null, "error": "unknown"`, CLI-NOTES.md): the API is out of reach.
 */
export const isConnectionFailure = (retry: ApiRetryInfo): boolean =>
  retry.errorStatus === undefined && !isRefusal(retry) && retry.error !== 'authentication_failed';

function textOf(content: unknown[]): string {
  const parts: string[] = [];
  for (const block of content) if (isJsonObject(block) && block['type'] === 'text' && typeof block['text'] === 'string') parts.push(block['text']);
  return parts.join('\n');
}
