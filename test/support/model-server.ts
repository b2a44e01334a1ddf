/**
 * A scripted Anthropic Messages API server for tests that run the real Claude Code CLI.
 *
 * The CLI is pointed at it with ANTHROPIC_BASE_URL (see real-claude.ts). Every model turn of
 * the CLI is one `POST /v1/messages?beta=true` with `stream: true`; the server answers with
 * the server-sent events the CLI expects, and the CLI then runs the real tools (Write, Edit,
 * Read, Bash…) in its working directory and sends the tool results in the next request.
 *
 * Scripting is stateless with respect to conversations: a request carries the whole
 * conversation, so the step to play is chosen from the number of assistant messages already
 * in it. Several CLI processes can therefore share one server. The only state kept is a count
 * of how many times the same step of the same session was asked for (`req.attempt`), so a
 * test can fail the first try of a step (429, 529…) and let the CLI's retry succeed.
 *
 * Observed behaviour of the CLI is written down in CLI-NOTES.md next to this file.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gunzipSync, brotliDecompressSync, inflateSync } from 'node:zlib';

// ---------------------------------------------------------------------------------------------
// Content blocks and replies

export interface TextBlock {
  type: 'text';
  text: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  name: string;
  input: Record<string, unknown>;
  /** Generated (`toolu_…`) when omitted. */
  id?: string;
}

export type ContentBlock = TextBlock | ToolUseBlock;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** One assistant turn: the content blocks the scripted model answers with. */
export interface TurnReply {
  kind: 'turn';
  content: ContentBlock[];
  /** Defaults to `tool_use` when the content has a tool_use block, otherwise `end_turn`. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence';
  /** Token usage to report; defaults to a small deterministic estimate. */
  usage?: Partial<Usage>;
  /** Wait this long before answering (the status line is sent only after the wait). */
  delayMs?: number;
}

/** An HTTP error with an Anthropic-style body `{type:'error', error:{type, message}}`. */
export interface ErrorReply {
  kind: 'error';
  status: number;
  errorType: string;
  message: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** Never answer (the connection stays open until the client gives up or the server closes). */
export interface HangReply {
  kind: 'hang';
}

/**
 * Start a 200 event stream (message_start, then the first text block's start) and then cut the
 * connection, as a network failure in the middle of a response would.
 */
export interface DropReply {
  kind: 'drop';
  delayMs?: number;
}

export type Reply = TurnReply | ErrorReply | HangReply | DropReply;

/** What a responder or a scenario turn may return: a reply, or just the content blocks. */
export type ReplyLike = Reply | ContentBlock[];

export function text(t: string): TextBlock {
  return { type: 'text', text: t };
}

export function toolUse(name: string, input: Record<string, unknown>, id?: string): ToolUseBlock {
  return id === undefined ? { type: 'tool_use', name, input } : { type: 'tool_use', name, input, id };
}

export function turn(content: ContentBlock[], opts: Omit<TurnReply, 'kind' | 'content'> = {}): TurnReply {
  return { kind: 'turn', content, ...opts };
}

const DEFAULT_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/**
 * An HTTP error reply. `errorType` defaults from the status (401 authentication_error,
 * 429 rate_limit_error, 529 overloaded_error, …). The CLI honours a `retry-after` header in
 * seconds (e.g. `headers: {'retry-after': '2'}`); without one it backs off ~0.5 s, 1 s, 2 s…
 */
export function httpError(status: number, opts: { errorType?: string; message?: string; headers?: Record<string, string>; delayMs?: number } = {}): ErrorReply {
  const errorType = opts.errorType ?? DEFAULT_ERROR_TYPES[status] ?? 'api_error';
  const headers = { ...opts.headers };
  const reply: ErrorReply = {
    kind: 'error',
    status,
    errorType,
    message: opts.message ?? `scripted ${status} ${errorType}`,
    headers,
  };
  if (opts.delayMs !== undefined) reply.delayMs = opts.delayMs;
  return reply;
}

/** `reply` after waiting `ms` milliseconds. */
export function delayed(ms: number, reply: ReplyLike): Reply {
  const r = normalizeReply(reply);
  return r.kind === 'hang' ? r : { ...r, delayMs: ms };
}

export function hang(): HangReply {
  return { kind: 'hang' };
}

export function drop(): DropReply {
  return { kind: 'drop' };
}

export function normalizeReply(r: ReplyLike): Reply {
  return Array.isArray(r) ? { kind: 'turn', content: r } : r;
}

// ---------------------------------------------------------------------------------------------
// Requests

export interface ToolResult {
  tool_use_id: string;
  /** The result's text (text parts joined with newlines). */
  content: string;
  is_error: boolean;
}

export interface ApiMessage {
  role: string;
  content: string | Array<Record<string, unknown>>;
}

/** A request as the scripting code sees it. */
export interface ScriptedRequest {
  /** 1-based sequence number of the request on this server. */
  seq: number;
  method: string;
  /** Path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** Full URL as received, e.g. `/v1/messages?beta=true`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body (undefined if the body was empty or not JSON). */
  body: any;
  receivedAt: number;

  // The fields below are derived from a Messages API body (empty / zero otherwise).
  model: string;
  stream: boolean;
  maxTokens: number | undefined;
  /** The `system` text blocks joined with newlines. */
  system: string;
  messages: ApiMessage[];
  /** Text of the first user message, with `<system-reminder>` blocks removed. */
  prompt: string;
  /** Every text block of the first user message, untouched, joined with newlines. */
  promptRaw: string;
  /** Number of assistant messages in `messages`: the index of the turn to play. */
  assistantTurns: number;
  /** The tool_result blocks of the last user message. */
  toolResults: ToolResult[];
  /** The `Primary working directory: <path>` the CLI sends, if present. */
  cwd: string | undefined;
  /** Names of the tools offered to the model. */
  toolNames: string[];
  /** Claude Code session id (header `x-claude-code-session-id`, else from metadata.user_id). */
  sessionId: string | undefined;
  /**
   * How many times this step (same session, same number of messages) has been asked for,
   * this request included: 1 for the first try, 2 for the CLI's first retry, …
   */
  attempt: number;
  /** True when this is not a main conversation turn (see `isSideRequest`). */
  side: boolean;
}

export interface RecordedRequest extends ScriptedRequest {
  /** What the server answered: `turn`, `error <status>`, `hang`, `side`, `other <status>`. */
  answer: string;
}

export type Responder = (req: ScriptedRequest) => ReplyLike | Promise<ReplyLike>;

function textOf(content: ApiMessage['content'] | undefined): string[] {
  if (content === undefined) return [];
  if (typeof content === 'string') return [content];
  const out: string[] = [];
  for (const block of content) {
    if (block['type'] === 'text' && typeof block['text'] === 'string') out.push(block['text']);
  }
  return out;
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => (c && typeof c === 'object' && typeof (c as { text?: unknown }).text === 'string' ? (c as { text: string }).text : ''))
      .filter((s) => s !== '')
      .join('\n');
  }
  return '';
}

function stripReminders(s: string): string {
  return s.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '').trim();
}

/**
 * Side requests are model calls that are not a turn of a conversation the test scripts: the
 * CLI's quota probe (`max_tokens: 1`), title / summary generation and the like. They get a
 * harmless text answer and never consume a scenario turn. A conversation turn carries the
 * environment block (`Primary working directory: …`) or offers tools; a side request does
 * neither. (Seen on 2.1.330 in `-p` mode, with or without
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: no side request at all. The rule is a safety net.
 * `--tools ""` sends no tools but still the environment block, so it stays a main turn.)
 */
export function isSideRequest(req: Pick<ScriptedRequest, 'maxTokens' | 'toolNames' | 'messages' | 'cwd'>): boolean {
  if (req.messages.length === 0) return true;
  if (req.maxTokens !== undefined && req.maxTokens <= 1) return true;
  return req.cwd === undefined && req.toolNames.length === 0;
}

function describeRequest(seq: number, req: IncomingMessage, body: any, attempts: Map<string, number>): ScriptedRequest {
  const url = req.url ?? '/';
  const path = url.split('?')[0] ?? url;
  const isObj = body !== null && typeof body === 'object' && !Array.isArray(body);
  const messages: ApiMessage[] = isObj && Array.isArray(body.messages) ? body.messages : [];
  const systemField = isObj ? body.system : undefined;
  const system =
    typeof systemField === 'string'
      ? systemField
      : Array.isArray(systemField)
        ? systemField.map((b: unknown) => (b && typeof b === 'object' ? String((b as { text?: unknown }).text ?? '') : '')).join('\n')
        : '';
  const firstUser = messages.find((m) => m.role === 'user');
  const promptParts = textOf(firstUser?.content);
  const promptRaw = promptParts.join('\n');
  const prompt = promptParts
    .map(stripReminders)
    .filter((s) => s !== '')
    .join('\n');
  const assistantTurns = messages.filter((m) => m.role === 'assistant').length;

  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const toolResults: ToolResult[] = [];
  if (lastUser && Array.isArray(lastUser.content)) {
    for (const b of lastUser.content) {
      if (b['type'] === 'tool_result') {
        toolResults.push({
          tool_use_id: String(b['tool_use_id'] ?? ''),
          content: toolResultText(b['content']),
          is_error: b['is_error'] === true,
        });
      }
    }
  }

  // The working directory is in a system-role message of `messages` (2.1.330) or in `system`.
  const everyText = [system, ...messages.flatMap((m) => textOf(m.content))].join('\n');
  const cwdMatch = /Primary working directory: (.+)/.exec(everyText);
  const cwd = cwdMatch?.[1]?.trim();

  const toolNames: string[] =
    isObj && Array.isArray(body.tools) ? body.tools.map((t: unknown) => (t && typeof t === 'object' ? String((t as { name?: unknown }).name ?? '') : '')) : [];

  const header = req.headers['x-claude-code-session-id'];
  let sessionId = typeof header === 'string' ? header : undefined;
  if (sessionId === undefined && isObj && typeof body.metadata?.user_id === 'string') {
    try {
      const meta = JSON.parse(body.metadata.user_id) as { session_id?: unknown };
      if (typeof meta.session_id === 'string') sessionId = meta.session_id;
    } catch {
      /* not JSON */
    }
  }

  const maxTokens = isObj && typeof body.max_tokens === 'number' ? body.max_tokens : undefined;
  const side = path === '/v1/messages' ? isSideRequest({ maxTokens, toolNames, messages, cwd }) : false;

  const key = `${req.method} ${path} ${sessionId ?? '?'} ${side ? 'side' : 'main'} ${messages.length} ${promptRaw.length}`;
  const attempt = (attempts.get(key) ?? 0) + 1;
  attempts.set(key, attempt);

  return {
    seq,
    method: req.method ?? 'GET',
    path,
    url,
    headers: req.headers,
    body,
    receivedAt: Date.now(),
    model: isObj && typeof body.model === 'string' ? body.model : '',
    stream: isObj && body.stream === true,
    maxTokens,
    system,
    messages,
    prompt,
    promptRaw,
    assistantTurns,
    toolResults,
    cwd,
    toolNames,
    sessionId,
    attempt,
    side,
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

export type Matcher = string | RegExp | ((req: ScriptedRequest) => boolean);
export type TurnScript = ReplyLike | ((req: ScriptedRequest) => ReplyLike | Promise<ReplyLike>);

export interface Scenario {
  /** For messages and the request log. */
  name?: string;
  /** A string the prompt must contain, a RegExp tested on the prompt, or a predicate. */
  match: Matcher;
  /** `turns[req.assistantTurns]` answers the request. */
  turns: TurnScript[];
}

export function scenario(s: Scenario): Scenario {
  return s;
}

export function matches(m: Matcher, req: ScriptedRequest): boolean {
  if (typeof m === 'string') return req.prompt.includes(m);
  if (m instanceof RegExp) return m.test(req.prompt);
  return m(req);
}

/** A matcher that requires every string to appear in the prompt, e.g. ('TASK-A', 'This is attempt 2'). */
export function promptHas(...parts: string[]): (req: ScriptedRequest) => boolean {
  return (req) => parts.every((p) => req.prompt.includes(p));
}

/**
 * One task scripted differently by attempt (or by any other prompt variation): every case
 * becomes a scenario matching `base` and its own `when`; the first case that matches plays.
 * Put the catch-all case (no `when`) last.
 *
 *   ...variants('TASK-A', [
 *     { when: 'This is attempt 2', turns: [[text('COMPLETED: second try')]] },
 *     { turns: [[text('FAILED: first try')]] },
 *   ])
 */
export function variants(base: Matcher, cases: Array<{ when?: Matcher; name?: string; turns: TurnScript[] }>): Scenario[] {
  return cases.map((c, i) => {
    const when = c.when;
    return {
      name: c.name ?? `variant ${i + 1}`,
      match: (req: ScriptedRequest) => matches(base, req) && (when === undefined || matches(when, req)),
      turns: c.turns,
    };
  });
}

/**
 * Answer the first try of a step with `error` and later tries (the CLI's retries) with `then`.
 * `failures` tries fail (default 1).
 */
export function failFirst(error: ErrorReply, then: TurnScript, failures = 1): TurnScript {
  return (req) => (req.attempt <= failures ? error : typeof then === 'function' ? then(req) : then);
}

/**
 * Holds requests until every party named has arrived (or `timeoutMs` has passed), so that two
 * agents' conversations overlap whatever the machine's load: when the CLI runs them at once, each
 * one's first answer waits for the other's first request; when it runs them one after the other,
 * the first waits out the time limit and the overlap a test asserts is not there.
 */
export function rendezvous<Party>(parties: readonly Party[], timeoutMs: number): (party: Party) => Promise<void> {
  const arrived = new Set<Party>();
  let release!: () => void;
  const everyone = new Promise<void>((resolve) => (release = resolve));
  return async (party) => {
    arrived.add(party);
    if (parties.every((p) => arrived.has(p))) release();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([everyone, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  };
}

export const NO_SCENARIO_TEXT = 'FAILED: the scripted model has no scenario for this prompt';
export const NO_MORE_TURNS_TEXT = 'FAILED: the scripted scenario has no more turns';

/** A responder that plays the first scenario whose `match` accepts the request. */
export function fromScenarios(scenarios: Scenario[]): Responder {
  return async (req) => {
    const s = scenarios.find((sc) => matches(sc.match, req));
    if (!s) return [text(`${NO_SCENARIO_TEXT} (prompt starts: ${JSON.stringify(req.prompt.slice(0, 80))})`)];
    const step = s.turns[req.assistantTurns];
    if (step === undefined) {
      return [text(`${NO_MORE_TURNS_TEXT} (${s.name ?? 'unnamed'}: ${s.turns.length} turns, asked for turn ${req.assistantTurns + 1})`)];
    }
    return typeof step === 'function' ? step(req) : step;
  };
}

// ---------------------------------------------------------------------------------------------
// The server

export interface ModelServerOptions {
  /** Answers main conversation turns. Takes precedence over `scenarios`. */
  respond?: Responder;
  /** Played with `fromScenarios` when `respond` is not given. */
  scenarios?: Scenario[];
  /** Answers side requests (default: a short text). */
  respondSide?: Responder;
  /** Print each request and answer to stderr. Also on when FOREMAN_MODEL_SERVER_LOG=1. */
  log?: boolean;
}

export interface ModelServer {
  /** Base URL for ANTHROPIC_BASE_URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Main conversation turns only (POST /v1/messages that are not side requests). */
  turns(): RecordedRequest[];
  /** Replace the responder (e.g. between tests sharing one server). */
  setResponder(r: Responder): void;
  setScenarios(s: Scenario[]): void;
  /** Forget the recorded requests. */
  clear(): void;
  /**
   * The API goes out of reach: the server stops listening and drops every connection (a request
   * under way is cut off), so connections to its port are refused until `acceptConnections`.
   */
  refuseConnections(): Promise<void>;
  /** The API is back: the server listens on the same port again. */
  acceptConnections(): Promise<void>;
  close(): Promise<void>;
}

let idCounter = 0;
function newId(prefix: string): string {
  idCounter += 1;
  return `${prefix}_${randomBytes(8).toString('hex')}${idCounter.toString(36)}`;
}

function estimateTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}

function defaultUsage(content: ContentBlock[], override: Partial<Usage> | undefined): Usage {
  const out = content.reduce((n, b) => n + estimateTokens(b.type === 'text' ? b.text : b.name + JSON.stringify(b.input)), 0);
  return {
    input_tokens: 100,
    output_tokens: out,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    ...override,
  };
}

function apiContent(content: ContentBlock[]): Array<Record<string, unknown>> {
  return content.map((b) =>
    b.type === 'text' ? { type: 'text', text: b.text } : { type: 'tool_use', id: b.id ?? newId('toolu'), name: b.name, input: b.input },
  );
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(data),
    'request-id': newId('req'),
    ...headers,
  });
  res.end(data);
}

function sendTurn(res: ServerResponse, req: ScriptedRequest, reply: TurnReply): void {
  const blocks = apiContent(reply.content);
  const usage = defaultUsage(reply.content, reply.usage);
  const stopReason = reply.stopReason ?? (reply.content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  const id = newId('msg');
  const model = req.model || 'claude-scripted';

  if (!req.stream) {
    sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: blocks,
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
    return;
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'request-id': newId('req'),
  });
  const event = (name: string, data: Record<string, unknown>): void => {
    res.write(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
  };
  event('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  event('ping', {});
  blocks.forEach((b, index) => {
    if (b['type'] === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: b['text'] } });
    } else {
      event('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: b['id'], name: b['name'], input: {} },
      });
      event('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(b['input']) },
      });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  event('message_stop', {});
  res.end();
}

function sendDrop(res: ServerResponse, req: ScriptedRequest): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'request-id': newId('req') });
  const start = {
    type: 'message_start',
    message: {
      id: newId('msg'),
      type: 'message',
      role: 'assistant',
      model: req.model || 'claude-scripted',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 1 },
    },
  };
  res.write(`event: message_start\ndata: ${JSON.stringify(start)}\n\n`);
  res.write(`event: content_block_start\ndata: ${JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })}\n\n`);
  setTimeout(() => res.destroy(), 20);
}

function sendError(res: ServerResponse, reply: ErrorReply): void {
  const requestId = newId('req');
  sendJson(
    res,
    reply.status,
    { type: 'error', error: { type: reply.errorType, message: reply.message }, request_id: requestId },
    { 'request-id': requestId, ...reply.headers },
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function decode(raw: Buffer, encoding: string | undefined): string {
  try {
    if (encoding === 'gzip') return gunzipSync(raw).toString('utf8');
    if (encoding === 'br') return brotliDecompressSync(raw).toString('utf8');
    if (encoding === 'deflate') return inflateSync(raw).toString('utf8');
  } catch {
    /* fall through: treat as plain */
  }
  return raw.toString('utf8');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  let responder: Responder = opts.respond ?? fromScenarios(opts.scenarios ?? []);
  const respondSide: Responder = opts.respondSide ?? (() => [text('OK')]);
  const log = opts.log ?? process.env['FOREMAN_MODEL_SERVER_LOG'] === '1';
  const requests: RecordedRequest[] = [];
  const attempts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  let seq = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const bodyText = decode(raw, req.headers['content-encoding'] as string | undefined);
    let body: unknown;
    if (bodyText !== '') {
      try {
        body = JSON.parse(bodyText);
      } catch {
        body = bodyText;
      }
    }
    seq += 1;
    const sreq = describeRequest(seq, req, body, attempts);
    const record: RecordedRequest = { ...sreq, answer: 'pending' };
    requests.push(record);
    const note = (answer: string): void => {
      record.answer = answer;
      if (log) {
        const what =
          sreq.path === '/v1/messages'
            ? `model=${sreq.model} stream=${sreq.stream} max_tokens=${sreq.maxTokens} msgs=${sreq.messages.length} turn=${sreq.assistantTurns} attempt=${sreq.attempt} side=${sreq.side}`
            : '';
        process.stderr.write(`[model-server] #${sreq.seq} ${sreq.method} ${sreq.url} ${what} -> ${answer}\n`);
      }
    };

    const method = sreq.method;
    const path = sreq.path;

    if (method === 'POST' && path === '/v1/messages') {
      let reply: Reply;
      try {
        reply = normalizeReply(await (sreq.side ? respondSide : responder)(sreq));
      } catch (err) {
        reply = { kind: 'turn', content: [text(`FAILED: the scripted model threw: ${String(err)}`)] };
      }
      if (reply.kind === 'hang') {
        note('hang');
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (reply.delayMs) await sleep(reply.delayMs);
      if (res.destroyed) {
        note('client gone');
        return;
      }
      if (reply.kind === 'error') {
        note(`error ${reply.status}`);
        sendError(res, reply);
      } else if (reply.kind === 'drop') {
        note('drop');
        sendDrop(res, sreq);
      } else {
        note(sreq.side ? 'side' : 'turn');
        sendTurn(res, sreq, reply);
      }
      return;
    }
    if (method === 'POST' && path === '/v1/messages/count_tokens') {
      note('other 200');
      sendJson(res, 200, { input_tokens: estimateTokens(bodyText) });
      return;
    }
    if (method === 'GET' && path === '/v1/models') {
      note('other 200');
      sendJson(res, 200, {
        data: ['claude-opus-4-1', 'claude-sonnet-4-5', 'claude-haiku-4-5'].map((id) => ({
          type: 'model',
          id,
          display_name: id,
          created_at: '2025-01-01T00:00:00Z',
        })),
        has_more: false,
        first_id: null,
        last_id: null,
      });
      return;
    }
    if (method === 'GET' && path.startsWith('/v1/models/')) {
      const id = decodeURIComponent(path.slice('/v1/models/'.length));
      note('other 200');
      sendJson(res, 200, { type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' });
      return;
    }
    if (method === 'HEAD' || (method === 'GET' && path === '/')) {
      note('other 200');
      sendJson(res, 200, {});
      return;
    }
    note('other 404');
    sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `scripted server: no ${method} ${path}` } });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: String(err) } });
      else res.destroy();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const listen = (on: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(on, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  /** Stop listening and end every connection (hanging answers too). */
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const r of hanging) r.destroy();
      for (const s of sockets) s.destroy();
      if (!server.listening) resolve();
      else server.close(() => resolve());
    });
  await listen(0);
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    turns: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && !r.side),
    setResponder: (r) => {
      responder = r;
    },
    setScenarios: (s) => {
      responder = fromScenarios(s);
    },
    clear: () => {
      requests.length = 0;
    },
    refuseConnections: stop,
    acceptConnections: () => listen(port),
    close: stop,
  };
}
