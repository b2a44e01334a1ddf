// Incremental reader of Claude Code's `--output-format stream-json --verbose` output.
// Pure code, no I/O: the worker adapter feeds it one line at a time. The parser keeps only bounded
// state (never the whole stream), so a worker printing gigabytes keeps the orchestrator flat.
//
// Shapes seen from the real CLI (2.1.330) are described in REFERENCE.md §1; the samples in
// test/stream-json.test.ts were recorded from it.

import type { PermissionDenial, ReportedStatus, StatusLine, WorkerFailure, WorkerRun } from '../core/failure.ts';
import type { Usage } from '../core/plan.ts';
import { addUsage, emptyUsage } from '../core/plan.ts';
import { clipHead, formatCostExact, formatSeconds, oneLine } from '../core/format.ts';

// ---------------------------------------------------------------------------------------------
// Small helpers over untyped JSON

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);


// ---------------------------------------------------------------------------------------------
// Status line

// The rule lives in the core (the /execute skill's finalize parses status lines too).
export { parseStatusLine } from '../core/prompt.ts';
import { parseStatusLine } from '../core/prompt.ts';

// ---------------------------------------------------------------------------------------------
// Line splitting (bytes → lines), with a cap on one line's length

/**
 * Splits a byte stream into lines without ever holding more than `maxLineBytes` of one line.
 * Longer lines are cut to their first `maxLineBytes` bytes and reported with `truncated: true`.
 * Splits on raw bytes, so multi-byte UTF-8 characters split across chunks decode correctly.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private overflow = false;

  constructor(
    private readonly onLine: (line: string, truncated: boolean) => void,
    private readonly maxLineBytes = 1024 * 1024,
  ) {}

  push(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(0x0a, start);
      if (nl === -1) {
        this.keep(buf.subarray(start));
        return;
      }
      this.keep(buf.subarray(start, nl));
      this.flush();
      start = nl + 1;
    }
  }

  /** Call at end of stream: emits a last line that had no newline. */
  end(): void {
    if (this.partBytes > 0 || this.overflow) this.flush();
  }

  private keep(piece: Buffer): void {
    if (piece.length === 0) return;
    const room = this.maxLineBytes - this.partBytes;
    if (piece.length > room) {
      this.overflow = true;
      if (room > 0) {
        this.parts.push(Buffer.from(piece.subarray(0, room)));
        this.partBytes += room;
      }
      return;
    }
    // Copy: the chunk may be a slice of a large pooled buffer we must not pin.
    this.parts.push(Buffer.from(piece));
    this.partBytes += piece.length;
  }

  private flush(): void {
    let line = Buffer.concat(this.parts, this.partBytes).toString('utf8');
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const truncated = this.overflow;
    this.parts = [];
    this.partBytes = 0;
    this.overflow = false;
    this.onLine(line, truncated);
  }
}

// ---------------------------------------------------------------------------------------------
// The accumulator

export interface ApiRetryInfo {
  attempt?: number;
  maxRetries?: number;
  retryDelayMs?: number;
  errorStatus?: number;
  error?: string;
}

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
  permissionDenials: PermissionDenial[];
  errors: string[];
}

export interface AssistantErrorInfo {
  /** e.g. `authentication_failed`, `rate_limit`, `server_error`, `unknown`. */
  error: string;
  apiErrorStatus?: number;
  apiErrorType?: string;
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
}

export interface Classification {
  outcome: WorkerRun['outcome'];
  usage: Usage;
  sessionId?: string;
  permissionDenials: PermissionDenial[];
}

export type AcceptResult =
  | { kind: 'event'; event: Json }
  | { kind: 'blank' }
  | { kind: 'garbage'; line: string };

const MAX_DENIALS = 100;
const ACTIVITY_CHARS = 200;
const SAMPLE_CHARS = 200;
const MAX_RESULT_CHARS = 1024 * 1024;

function toUsage(u: unknown, costUsd = 0): Usage {
  if (!isObject(u)) return { ...emptyUsage(), costUsd };
  return {
    costUsd,
    inputTokens: num(u['input_tokens']) ?? 0,
    outputTokens: num(u['output_tokens']) ?? 0,
    cacheReadTokens: num(u['cache_read_input_tokens']) ?? 0,
    cacheCreationTokens: num(u['cache_creation_input_tokens']) ?? 0,
  };
}

function toDenials(v: unknown): PermissionDenial[] {
  const out: PermissionDenial[] = [];
  for (const d of arr(v).slice(0, MAX_DENIALS)) {
    if (!isObject(d)) continue;
    const tool = str(d['tool_name']) ?? str(d['tool']) ?? 'unknown';
    out.push(d['tool_input'] === undefined ? { tool } : { tool, input: d['tool_input'] });
  }
  return out;
}

/** A short summary of a tool's input for humans: the file, the command, the pattern… */
export function summarizeToolInput(name: string, input: unknown, cwd?: string): string {
  if (!isObject(input)) return '';
  const rel = (p: string): string => {
    if (cwd && p.startsWith(cwd.endsWith('/') ? cwd : cwd + '/')) return p.slice(cwd.length).replace(/^\/+/, '');
    return p;
  };
  const path = str(input['file_path']) ?? str(input['notebook_path']) ?? str(input['path']);
  const command = str(input['command']);
  const pattern = str(input['pattern']);
  let s: string;
  if (command !== undefined) s = command;
  else if (pattern !== undefined) s = path ? `${pattern} in ${rel(path)}` : pattern;
  else if (path !== undefined) s = rel(path);
  else
    s =
      str(input['url']) ??
      str(input['query']) ??
      str(input['description']) ??
      str(input['skill']) ??
      str(input['prompt']) ??
      (name === 'TodoWrite' ? `${arr(input['todos']).length} todos` : JSON.stringify(input));
  return oneLine(s, 160);
}

export class StreamJsonParser {
  private _sessionId: string | undefined;
  private _cwd: string | undefined;
  private _activity: string | undefined;
  private readonly _toolUses = new Map<string, { name: string; input: unknown }>();
  private _validEvents = 0;
  private _nonJsonLines = 0;
  private _garbageSample: string | undefined;
  private _initSeen = false;
  private _apiRetryCount = 0;
  private _lastApiRetry: ApiRetryInfo | undefined;
  private readonly _retryStatuses = new Set<number>();
  private _retryErrors = new Set<string>();
  private _assistantError: AssistantErrorInfo | undefined;
  private _authFailure = false;
  private _result: ResultInfo | undefined;
  private _streamDenials: PermissionDenial[] = [];
  // Running usage: assistant events repeat one message's usage once per content block, so
  // count each message id once (its latest usage) and sum over messages.
  private _committedUsage: Usage = emptyUsage();
  private _currentMessageId: string | undefined;
  private _currentMessageUsage: Usage = emptyUsage();

  constructor(opts: { cwd?: string } = {}) {
    this._cwd = opts.cwd;
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
    if (!isObject(event) || typeof event['type'] !== 'string') {
      this._nonJsonLines++;
      this._garbageSample ??= clipHead(trimmed, SAMPLE_CHARS);
      return { kind: 'garbage', line };
    }
    this._validEvents++;
    this.acceptEvent(event);
    return { kind: 'event', event };
  }

  /** Feed an already parsed event. */
  acceptEvent(event: Json): void {
    const sid = str(event['session_id']);
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
      default:
        break;
    }
  }

  private onSystem(e: Json): void {
    switch (e['subtype']) {
      case 'init': {
        this._initSeen = true;
        const sid = str(e['session_id']);
        if (sid) this._sessionId = sid;
        this._cwd ??= str(e['cwd']);
        break;
      }
      case 'api_retry': {
        this._apiRetryCount++;
        const info: ApiRetryInfo = {};
        const attempt = num(e['attempt']);
        const maxRetries = num(e['max_retries']);
        const retryDelayMs = num(e['retry_delay_ms']);
        const errorStatus = num(e['error_status']);
        const error = str(e['error']);
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
        this._activity = `API retry ${attempt ?? '?'}${maxRetries ? `/${maxRetries}` : ''}: ${errorStatus ?? ''} ${error ?? ''}`.trim();
        break;
      }
      case 'permission_denied': {
        if (this._streamDenials.length < MAX_DENIALS) {
          const tool = str(e['tool_name']) ?? 'unknown';
          const message = str(e['message']);
          // The line names only the tool call's id: its input (the file, the command) came before.
          const input = this.toolUse(str(e['tool_use_id']))?.input;
          this._streamDenials.push(input !== undefined ? { tool, input } : message ? { tool, input: { message: clipHead(message, 500) } } : { tool });
        }
        break;
      }
      default:
        break;
    }
  }

  private onAssistant(e: Json): void {
    const error = str(e['error']);
    const message = isObject(e['message']) ? e['message'] : undefined;
    const content = arr(message?.['content']);
    if (message) {
      const id = str(message['id']);
      const usage = toUsage(message['usage']);
      if (id === undefined || id !== this._currentMessageId) {
        this._committedUsage = addUsage(this._committedUsage, this._currentMessageUsage);
        this._currentMessageId = id;
      }
      this._currentMessageUsage = usage;
    }
    let lastText: string | undefined;
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block['type'] === 'tool_use') {
        const name = str(block['name']) ?? 'tool';
        this.rememberToolUse(str(block['id']), name, block['input']);
        const summary = summarizeToolInput(name, block['input'], this._cwd);
        this._activity = clipHead(summary ? `${name} ${summary}` : name, ACTIVITY_CHARS);
        lastText = undefined;
      } else if (block['type'] === 'text') {
        const t = str(block['text']);
        if (t && t.trim()) lastText = t;
      }
    }
    if (lastText !== undefined) this._activity = oneLine(lastText, ACTIVITY_CHARS);
    if (error) {
      const info: AssistantErrorInfo = { error, text: clipHead(lastText ?? textOf(content), 2000) };
      const status = num(e['api_error_status']);
      const type = str(e['api_error_type']);
      if (status !== undefined) info.apiErrorStatus = status;
      if (type !== undefined) info.apiErrorType = type;
      this._assistantError = info;
      if (error === 'authentication_failed' || status === 401 || status === 403) this._authFailure = true;
    }
  }

  private onResult(e: Json): void {
    const cost = num(e['total_cost_usd']);
    const r: ResultInfo = {
      subtype: str(e['subtype']) ?? 'unknown',
      isError: e['is_error'] === true,
      resultText: clipHead(str(e['result']) ?? '', MAX_RESULT_CHARS),
      permissionDenials: toDenials(e['permission_denials']),
      errors: arr(e['errors'])
        .slice(0, 20)
        .map((x) => clipHead(typeof x === 'string' ? x : JSON.stringify(x), 2000)),
    };
    if (cost !== undefined) r.totalCostUsd = cost;
    if (isObject(e['usage'])) r.usage = toUsage(e['usage'], cost ?? 0);
    const numTurns = num(e['num_turns']);
    const durationMs = num(e['duration_ms']);
    const terminalReason = str(e['terminal_reason']);
    const apiErrorStatus = num(e['api_error_status']);
    if (numTurns !== undefined) r.numTurns = numTurns;
    if (durationMs !== undefined) r.durationMs = durationMs;
    if (terminalReason !== undefined) r.terminalReason = terminalReason;
    if (apiErrorStatus !== undefined) r.apiErrorStatus = apiErrorStatus;
    this._result = r;
    const status = r.isError ? 'failed' : (parseStatusLine(r.resultText)?.status ?? 'finished');
    this._activity = `result: ${status}`;
  }

  // ---- queries ---------------------------------------------------------------------------

  get sessionId(): string | undefined {
    return this._sessionId;
  }
  /** Latest thing the worker did, for a live view: `Write src/a.ts`, `Bash npm test`, or text. */
  /** A recent tool call by id (the last 64 are kept), so a denial can say what was denied. */
  toolUse(id: string | undefined): { name: string; input: unknown } | undefined {
    return id === undefined ? undefined : this._toolUses.get(id);
  }

  private rememberToolUse(id: string | undefined, name: string, input: unknown): void {
    if (id === undefined) return;
    this._toolUses.set(id, { name, input });
    if (this._toolUses.size > 64) this._toolUses.delete(this._toolUses.keys().next().value as string);
  }

  get activity(): string | undefined {
    return this._activity;
  }
  get validEvents(): number {
    return this._validEvents;
  }
  get nonJsonLines(): number {
    return this._nonJsonLines;
  }
  get garbageSample(): string | undefined {
    return this._garbageSample;
  }
  get initSeen(): boolean {
    return this._initSeen;
  }
  get apiRetryCount(): number {
    return this._apiRetryCount;
  }
  get lastApiRetry(): ApiRetryInfo | undefined {
    return this._lastApiRetry;
  }
  get assistantError(): AssistantErrorInfo | undefined {
    return this._assistantError;
  }
  get result(): ResultInfo | undefined {
    return this._result;
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

  /** Turn what was seen plus how the process ended into the worker's outcome. */
  classify(exit: ExitInfo): Classification {
    const base = {
      usage: this.usage(),
      permissionDenials: this.permissionDenials(),
      ...(this._sessionId ? { sessionId: this._sessionId } : {}),
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

    const r = this._result;
    // A result that arrived before the deadline wins over the timeout: the work was done.
    if (r) {
      if (!r.isError) {
        return { ...base, outcome: { kind: 'reported', resultText: r.resultText, statusLine: parseStatusLine(r.resultText) } };
      }
      return failed(this.classifyErrorResult(r));
    }
    if (exit.timedOut) return failed({ reason: 'timed-out', timeoutMs: exit.timeoutMs ?? 0 });

    // No result event.
    const transient = this.transientFromStream();
    if (transient) return failed(transient);
    if (this._nonJsonLines > 0 && (this._validEvents === 0 || (!this._initSeen && this._nonJsonLines > this._validEvents))) {
      return failed({ reason: 'garbage-output', sample: this._garbageSample ?? '' });
    }
    const f: WorkerFailure = { reason: 'no-result', stderrTail: exit.stderrTail };
    if (exit.exitCode !== undefined) f.exitCode = exit.exitCode;
    if (exit.signal !== undefined) f.signal = exit.signal;
    return failed(f);
  }

  private retryAfter(): { retryAfterMs?: number } {
    const ms = this._lastApiRetry?.retryDelayMs;
    return ms !== undefined ? { retryAfterMs: ms } : {};
  }

  /** From api_retry events and assistant error flags, when there is no result event. */
  private transientFromStream(): WorkerFailure | undefined {
    const ae = this._assistantError;
    const retry = this._lastApiRetry;
    const describe = (): string =>
      ae?.text ||
      (retry ? `API retry ${retry.attempt ?? '?'}: ${retry.errorStatus ?? ''} ${retry.error ?? ''}`.trim() : 'unknown');
    if (this._retryStatuses.has(401) || this._retryStatuses.has(403) || this._authFailure) {
      return { reason: 'not-authenticated', message: describe() };
    }
    if (this._retryStatuses.has(429) || this._retryErrors.has('rate_limit') || ae?.error === 'rate_limit' || ae?.apiErrorStatus === 429) {
      return { reason: 'rate-limited', message: describe(), ...this.retryAfter() };
    }
    if (
      this._retryStatuses.has(529) ||
      this._retryErrors.has('overloaded') ||
      ae?.apiErrorStatus === 529 ||
      ae?.apiErrorType === 'overloaded_error'
    ) {
      return { reason: 'overloaded', message: describe(), ...this.retryAfter() };
    }
    return undefined;
  }

  private classifyErrorResult(r: ResultInfo): WorkerFailure {
    const message = clipHead([r.resultText, ...r.errors].filter((s) => s.trim() !== '').join('; ') || r.subtype, 2000);
    if (r.subtype === 'error_max_turns' || r.terminalReason === 'max_turns') return { reason: 'max-turns', message };
    if (r.subtype === 'error_max_budget_usd' || r.terminalReason === 'budget_exhausted') {
      return { reason: 'max-budget', message };
    }
    const ae = this._assistantError;
    const status = r.apiErrorStatus ?? ae?.apiErrorStatus ?? this._lastApiRetry?.errorStatus;
    if (
      status === 401 ||
      status === 403 ||
      ae?.error === 'authentication_failed' ||
      /not logged in|invalid api key|authentication_failed|oauth token (has )?expired/i.test(message)
    ) {
      return { reason: 'not-authenticated', message };
    }
    if (status === 429 || ae?.error === 'rate_limit' || /rate[_ ]?limit/i.test(message)) {
      return { reason: 'rate-limited', message, ...this.retryAfter() };
    }
    if (status === 529 || ae?.apiErrorType === 'overloaded_error' || /overloaded/i.test(message)) {
      return { reason: 'overloaded', message, ...this.retryAfter() };
    }
    return status !== undefined ? { reason: 'api-error', message, status } : { reason: 'api-error', message };
  }
}

function textOf(content: unknown[]): string {
  const parts: string[] = [];
  for (const b of content) if (isObject(b) && b['type'] === 'text' && typeof b['text'] === 'string') parts.push(b['text']);
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Log formatting

export const LOG_LINE_MAX = 4096;
const TEXT_MAX = 8192;
const TOOL_RESULT_LINES = 20;

function indent(text: string, prefix: string, maxChars = TEXT_MAX): string[] {
  return clipHead(text, maxChars, `… [${text.length - maxChars} more chars]`)
    .split(/\r?\n/)
    .map((l) => prefix + clipHead(l, LOG_LINE_MAX));
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  const parts: string[] = [];
  for (const b of arr(content)) {
    if (!isObject(b)) continue;
    if (b['type'] === 'text' && typeof b['text'] === 'string') parts.push(b['text']);
    else if (typeof b['type'] === 'string') parts.push(`[${b['type']}]`);
  }
  return parts.join('\n');
}

const costText = (usd: number | undefined): string => (usd === undefined ? '?' : formatCostExact(usd));

/** A raw (non-JSON) stdout line as it goes into the log: verbatim, cut to 4 KiB. */
export function formatRawLineForLog(line: string): string {
  return clipHead(line, LOG_LINE_MAX, `… [${line.length - LOG_LINE_MAX} more chars]`);
}

/**
 * Readable log lines for one stream-json event (for `.design/worker-<i>.log`). Returns no lines
 * for events not worth logging. `cwd` shortens file paths.
 */
export function formatEventForLog(event: unknown, opts: { cwd?: string; toolUse?: (id: string | undefined) => { input: unknown } | undefined } = {}): string[] {
  if (!isObject(event)) return [formatRawLineForLog(JSON.stringify(event) ?? String(event))];
  const type = str(event['type']);
  const subtype = str(event['subtype']);
  switch (type) {
    case 'system': {
      if (subtype === 'init') {
        const sid = str(event['session_id']) ?? '?';
        const lines = [`session ${sid} (resume with: claude --resume ${sid})`];
        const model = str(event['model']);
        const mode = str(event['permissionMode']);
        const version = str(event['claude_code_version']);
        const details = [
          model && `model ${model}`,
          mode && `permission mode ${mode}`,
          version && `claude ${version}`,
          str(event['cwd']) && `cwd ${str(event['cwd'])}`,
        ].filter(Boolean);
        if (details.length) lines.push(`  ${details.join(' · ')}`);
        return lines;
      }
      if (subtype === 'api_retry') {
        const a = num(event['attempt']);
        const max = num(event['max_retries']);
        const delay = num(event['retry_delay_ms']);
        return [
          `! API retry ${a ?? '?'}${max !== undefined ? `/${max}` : ''}: status ${num(event['error_status']) ?? '?'} ${str(event['error']) ?? ''}${delay !== undefined ? `, next try in ${Math.round(delay)} ms` : ''}`,
        ];
      }
      if (subtype === 'permission_denied') {
        // "Permission to use Write has been denied because …." then advice to the model: keep the first sentence.
        const tool = str(event['tool_name']) ?? '?';
        const what = summarizeToolInput(tool, opts.toolUse?.(str(event['tool_use_id']))?.input, opts.cwd);
        const why = oneLine(str(event['message']) ?? str(event['decision_reason']) ?? '', 500).replace(/^(.*?\.)\s+IMPORTANT:.*$/, '$1');
        return [`! permission denied: ${tool}${what ? ` ${what}` : ''}${why ? ` — ${why}` : ''}`];
      }
      return [`[system ${subtype ?? '?'}]`];
    }
    case 'assistant': {
      const message = isObject(event['message']) ? event['message'] : {};
      const lines: string[] = [];
      for (const block of arr(message['content'])) {
        if (!isObject(block)) continue;
        if (block['type'] === 'text') {
          const t = str(block['text']) ?? '';
          if (t.trim()) lines.push(...indent(t, '  ').map((l, i) => (i === 0 ? 'assistant:' + l.slice(1) : l)));
        } else if (block['type'] === 'tool_use') {
          const name = str(block['name']) ?? 'tool';
          const summary = summarizeToolInput(name, block['input'], opts.cwd);
          lines.push(`→ ${name}${summary ? ' ' + summary : ''}`);
        } else if (block['type'] === 'thinking') {
          lines.push('  (thinking)');
        }
      }
      const error = str(event['error']);
      if (error) {
        const status = num(event['api_error_status']);
        lines.push(`! API error: ${error}${status !== undefined ? ` (status ${status})` : ''}`);
      }
      return lines;
    }
    case 'user': {
      const message = isObject(event['message']) ? event['message'] : {};
      const lines: string[] = [];
      for (const block of arr(message['content'])) {
        if (!isObject(block) || block['type'] !== 'tool_result') continue;
        const text = toolResultText(block['content']);
        const all = text.trim() === '' ? ['(no output)'] : text.split(/\r?\n/);
        const shown = all.slice(0, TOOL_RESULT_LINES);
        const mark = block['is_error'] === true ? '  ✗ ' : '  ← ';
        shown.forEach((l, i) => lines.push((i === 0 ? mark : '    ') + clipHead(l, 500)));
        if (all.length > TOOL_RESULT_LINES) lines.push(`    … [${all.length - TOOL_RESULT_LINES} more lines]`);
      }
      return lines;
    }
    case 'result': {
      const usage = toUsage(event['usage']);
      const isError = event['is_error'] === true;
      const head = [
        `= result: ${subtype ?? '?'}${isError ? ' (error)' : ''}`,
        str(event['terminal_reason']) && `terminal ${str(event['terminal_reason'])}`,
        num(event['api_error_status']) !== undefined && `API status ${num(event['api_error_status'])}`,
        `cost ${costText(num(event['total_cost_usd']))}`,
        `tokens in ${usage.inputTokens} out ${usage.outputTokens} cache read ${usage.cacheReadTokens} write ${usage.cacheCreationTokens}`,
        `turns ${num(event['num_turns']) ?? '?'}`,
        formatSeconds(num(event['duration_ms']) ?? 0),
      ]
        .filter(Boolean)
        .join(' · ');
      const lines = [head];
      const text = str(event['result']);
      if (text && text.trim()) lines.push(...indent(text, '  '));
      for (const e of arr(event['errors'])) lines.push(`  error: ${clipHead(typeof e === 'string' ? e : JSON.stringify(e), 1000)}`);
      const denials = toDenials(event['permission_denials']);
      if (denials.length) {
        lines.push(`  permission denials (${denials.length}):`);
        for (const d of denials) lines.push(`    ${d.tool} ${summarizeToolInput(d.tool, d.input, opts.cwd)}`.trimEnd());
      }
      const sid = str(event['session_id']);
      if (sid) lines.push(`  resume with: claude --resume ${sid}`);
      return lines;
    }
    case 'stream_event':
      return [];
    default:
      return [`[${type ?? '?'}] ${clipHead(JSON.stringify(event), 500)}`];
  }
}
