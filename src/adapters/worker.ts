// The only code that spawns agent processes. One call runs one headless Claude Code worker
// (`claude -p --output-format stream-json --verbose`) to completion and returns what happened as
// a value; it never throws for anything the worker does.
//
// - The prompt goes on stdin (argv strings are limited to 128 KiB).
// - The worker's permission rules go in `--settings` JSON with `--setting-sources ""`: no word
//   splitting of rules, and the person's own settings cannot widen them (see src/core/scope.ts);
//   their deny rules are carried over, so they still narrow them (core/carried-denies.ts).
// - The worker leads its own process group (`detached: true`); on timeout, abort or an
//   authentication failure the whole group gets SIGTERM, then SIGKILL after a grace period, so
//   the tools it started die with it. When the worker exits on its own, whatever it left behind
//   in its group is killed the same way.
// - stdout is read line by line into the stream-json parser and a readable log; nothing keeps
//   the whole output, and the log write stream pushes back on the pipe when the disk is slow.
//   The parser sees every line; the log keeps each attempt's first and last megabytes (see
//   `LogLimit`) with a line saying how much was cut between them.
// - Process groups are signalled and watched through `processes.ts`.
// - The worker carries a marker in its environment, inherited by every command it runs: when the
//   worker ends, whatever still carries it (a dev server started with `setsid` or `nohup … &`,
//   outside the group and no longer its descendant) is ended and named in the log.
// - Limits: each refusal (a 429 or 529 its CLI retries: `api_retry`; or a request the API never
//   answered, an `api_retry` with no status) and each response served is told as it comes
//   (`onRefused`, `onServed`), for the run's limiter; `stopIfIdle` ends a worker
//   the API has served nothing yet (one that has done something is left alone); the time its CLI
//   waits to retry a refused request counts toward no time limit; `resume` continues a session.

import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { describeWorkerFailure, type WorkerRun } from '../core/worker-run.ts';
import { type WorkerSandbox, workerSettings } from '../core/scope.ts';
import type { Refusal } from '../core/limiter.ts';
import { readLoginSettings } from './claude-settings.ts';
import { workerPersonDenies } from './person-denies.ts';
import { groupAlive, terminateGroup } from './processes.ts';
import { PROCESS_MARKER_VARIABLE, describeMarked, endMarked, newProcessMarker } from './process-markers.ts';
import { killTrackedGroups, trackGroup, untrackGroup } from './tracked-groups.ts';
import { clipHead, formatClock, formatSeconds, oneLine } from '../core/format.ts';
import type { ApiRetryInfo, ExitInfo } from '../core/worker-outcome.ts';
import { withDeniedPaths } from '../core/denied-writes.ts';
import { LineSplitter } from './line-splitter.ts';
import { StreamJsonParser, isConnectionFailure, isRefusal } from './stream-json.ts';
import { formatEventForLog, formatRawLineForLog } from './stream-log.ts';

export interface WorkerRequest {
  taskIndex: number;
  attempt: number;
  prompt: string;
  model: string;
  cwd: string;
  claudeBin: string;
  permissionMode: string;
  /** Permission rules allowed (`permissions.allow`): tools, `Edit(<path>)`, `Bash(<command>)`. */
  allowedTools: string[];
  /** Permission rules denied (`permissions.deny`); deny wins over allow. */
  deniedTools?: string[];
  maxBudgetUsd?: number;
  timeoutMs: number;
  logPath: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  extraArgs?: string[];
  onActivity?: (a: { text: string; costUsd: number }) => void;
  /**
   * Run its Bash commands in Claude Code's sandbox: writes only in `cwd` and a temporary directory
   * of the attempt's own (its TMPDIR), network only to these hosts. Absent: no sandbox.
   */
  sandbox?: { allowedDomains: readonly string[] };
  /**
   * The repository whose person's deny rules hold for the worker (adapters/person-denies.ts
   * `workerPersonDenies`): `--setting-sources ""` drops them with the rest of their settings.
   */
  rulesOf?: string;
  /** Called with the worker's process group id and its marker once it runs (to record it for orphan cleanup). */
  onSpawn?: (pgid: number, marker: string) => void;
  /** Between SIGTERM and SIGKILL of the worker's group. Default 3000 ms. */
  killGraceMs?: number;
  /** How long a worker may linger after its `result` event before its group is killed. Default 10 000 ms. */
  postResultGraceMs?: number;
  /** How much of this attempt's output the log keeps. Default 8 MiB head + 2 MiB tail. */
  logLimit?: LogLimit;
  /** Continue this Claude Code session (`--resume`) instead of starting one: the prompt follows its conversation. */
  resume?: string;
  /** The API refused it (429/529) and its CLI will retry; `progressed`: it had been served a response before. */
  onRefused?: (refusal: Refusal, progressed: boolean) => void;
  /** The API served it a response. */
  onServed?: () => void;
  /** Aborted: end the worker if the API has served it nothing yet (it has done nothing); otherwise let it be. */
  stopIfIdle?: AbortSignal;
  /** Where its process runs: this machine when absent (`localWorkerPlace`), or a host's slot (run/workspace/host.ts). */
  place?: WorkerPlace;
}

/** How a worker's process ended, as the place that ran it tells it. */
export interface WorkerProcessEnd {
  exitCode?: number;
  signal?: string;
  /** It never ran. */
  spawnError?: { message: string; code?: string };
}

/** A worker's process as `runWorker` drives it, wherever it runs: its output, its end, and how it is stopped. */
export interface WorkerProcess {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** SIGTERM to it and its process group, SIGKILL after `graceMs`; resolves once they are gone. */
  terminate(graceMs: number): Promise<unknown>;
  /** Once it exited: whether something of its process group still runs. */
  groupLeft(): boolean;
  onExit(listener: () => void): void;
  /** Resolves when it has ended and its output is closed. */
  readonly ended: Promise<WorkerProcessEnd>;
  /** Ends what it left running outside its group; what was ended, in words (empty: nothing). */
  endLeftovers(graceMs: number): Promise<string>;
}

/** What a worker's process is started with. */
export interface WorkerSpawn {
  file: string;
  args: string[];
  cwd: string;
  /** Its stdin. */
  input: string;
  /** The run's environment (a place on this machine starts from it; a host never receives it). */
  env: NodeJS.ProcessEnv;
  /** Variables of the attempt's own (its TMPDIR), set wherever it runs. */
  own: Record<string, string>;
  /** Told its process group and marker once it runs here (orphan cleanup records them). */
  onSpawn?: (pgid: number, marker: string) => void;
}

/**
 * Where a worker's process runs. The stream-json parsing, the log (always here), the time limits
 * and the limiter's signals are `runWorker`'s, the same for every place.
 */
export interface WorkerPlace {
  /** `cwd` with its symbolic links resolved, as the CLI matches rules and sandboxes writes. */
  realCwd(cwd: string): Promise<string>;
  /** A temporary folder of the attempt's own there (a sandboxed worker's TMPDIR), and its removal. */
  ownTmp(task: number): Promise<{ path: string; realPath: string; remove(): Promise<void> }>;
  /** The person's login settings carried over to the worker (`readLoginSettings`); a host gets none of them. */
  loginSettings(env: NodeJS.ProcessEnv): Promise<Record<string, unknown>>;
  start(spawn: WorkerSpawn): WorkerProcess;
}

const DEFAULT_KILL_GRACE_MS = 3000;
const DEFAULT_POST_RESULT_GRACE_MS = 10_000;
const MAX_LINE_BYTES = 1024 * 1024;
const STDERR_TAIL_CHARS = 4096;
const PROMPT_LOG_CHARS = 16 * 1024;

/**
 * The worker's argv (the prompt is not in it: it goes on stdin). Only the rules given here apply:
 * `--setting-sources ""` drops the user, project and local settings (their allow rules and hooks),
 * and `inherited` carries the person's login settings over (see `readLoginSettings`).
 */
export function buildWorkerArgs(
  req: Pick<WorkerRequest, 'model' | 'permissionMode' | 'allowedTools' | 'deniedTools' | 'maxBudgetUsd' | 'extraArgs' | 'resume'>,
  inherited: Readonly<Record<string, unknown>> = {},
  sandbox?: WorkerSandbox,
): string[] {
  const settings = workerSettings({ allow: req.allowedTools, deny: req.deniedTools ?? [] }, inherited, sandbox);
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--model', req.model, '--permission-mode', req.permissionMode];
  args.push('--setting-sources', '', '--settings', JSON.stringify(settings));
  if (req.maxBudgetUsd !== undefined) args.push('--max-budget-usd', String(req.maxBudgetUsd));
  if (req.resume !== undefined) args.push('--resume', req.resume);
  if (req.extraArgs) args.push(...req.extraArgs);
  return args;
}

/** The login settings as the log shows them: which keys were carried over, never their values. */
const redacted = (inherited: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.keys(inherited).map((k) => [k, '<from your Claude Code user settings>']));

/** Send SIGTERM (then SIGKILL after `graceMs`) to every live worker's and shell check's process group. */
export function killAllWorkers(graceMs = DEFAULT_KILL_GRACE_MS): void {
  killTrackedGroups(graceMs);
}

const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

const stamp = (t0: number): string => `[${formatClock(performance.now() - t0)}]`;

/** How much of one attempt's output the log keeps: its first `headBytes` and its last `tailBytes`. */
export interface LogLimit {
  headBytes: number;
  tailBytes: number;
}

export const DEFAULT_LOG_LIMIT: LogLimit = { headBytes: 8 * 1024 * 1024, tailBytes: 2 * 1024 * 1024 };

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/**
 * Writes to the log, pausing the given sources while the file stream is backed up. Past the head
 * bound it stops writing and keeps only the newest lines in memory (within the tail bound); at
 * close it writes a line saying what was cut, then those lines, so the log ends with the real end.
 */
class LogWriter {
  private waiting = false;
  private closed = false;
  private readonly paused = new Set<Readable>();
  private written = 0;
  private cutting = false;
  // The tail as a queue: `tail[tailStart..]` are the kept lines, oldest first.
  private tail: Array<{ text: string; bytes: number }> = [];
  private tailStart = 0;
  private tailBytes = 0;
  private cutBytes = 0;
  private cutLines = 0;

  constructor(
    private readonly out: WriteStream,
    private readonly limit: LogLimit,
  ) {
    out.on('drain', () => {
      this.waiting = false;
      for (const s of this.paused) s.resume();
      this.paused.clear();
    });
    out.on('error', () => {
      /* a log that cannot be written must not fail the run */
    });
  }

  line(text: string, source?: Readable): void {
    if (this.closed || this.out.destroyed) return;
    const bytes = Buffer.byteLength(text) + 1;
    if (!this.cutting && this.written + bytes <= this.limit.headBytes) {
      this.written += bytes;
      this.write(text, source);
      return;
    }
    this.cutting = true;
    this.keepInTail(text, bytes);
  }

  private write(text: string, source?: Readable): void {
    const ok = this.out.write(`${text}\n`);
    if (!ok) this.waiting = true;
    if (this.waiting && source && !source.destroyed) {
      source.pause();
      this.paused.add(source);
    }
  }

  private keepInTail(text: string, bytes: number): void {
    const max = Math.max(0, this.limit.tailBytes);
    if (bytes > max) {
      // A single line longer than the whole tail: keep its end.
      const kept =
        max > 1
          ? Buffer.from(text)
              .subarray(-(max - 1))
              .toString('utf8')
          : '';
      const keptBytes = max > 1 ? Buffer.byteLength(kept) + 1 : 0;
      this.cutBytes += bytes - keptBytes;
      this.dropTail(this.tailBytes);
      if (keptBytes > 0) this.push(kept, keptBytes);
      return;
    }
    this.push(text, bytes);
    this.dropTail(this.tailBytes - max);
  }

  private push(text: string, bytes: number): void {
    this.tail.push({ text, bytes });
    this.tailBytes += bytes;
  }

  /** Drops the oldest tail lines until at least `bytes` are gone. */
  private dropTail(bytes: number): void {
    let freed = 0;
    while (freed < bytes && this.tailStart < this.tail.length) {
      const oldest = this.tail[this.tailStart++]!;
      freed += oldest.bytes;
      this.tailBytes -= oldest.bytes;
      this.cutBytes += oldest.bytes;
      this.cutLines++;
    }
    // Compact now and then, so the queue's array does not grow with every line ever seen.
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.cutting && !this.out.destroyed) {
      if (this.cutBytes > 0) {
        this.write(
          `==== log cut: ${this.cutBytes} bytes (${mib(this.cutBytes)}, ${this.cutLines} whole lines) of this attempt's log omitted here; ` +
            `the log keeps the first ${mib(this.limit.headBytes)} and the last ${mib(this.limit.tailBytes)} of each attempt ====`,
        );
      }
      for (let i = this.tailStart; i < this.tail.length; i++) this.write(this.tail[i]!.text);
      this.tail = [];
      this.tailStart = 0;
    }
    this.closed = true;
    for (const s of this.paused) s.resume();
    this.paused.clear();
    if (this.out.destroyed) return;
    await new Promise<void>((resolve) => {
      this.out.end(() => resolve());
      this.out.once('error', () => resolve());
    });
  }
}

/** A callback of the caller's: a throw there must not break the worker. */
function tell(call: () => void): void {
  try {
    call();
  } catch {
    /* the engine's inbox does not throw; a broken listener must not stop the worker */
  }
}

/**
 * A CLI's `api_retry` as the limiter hears it: a 529 is overload, a 429 a rate limit (a usage limit
 * once a reset is known), one with no HTTP status the API out of reach (the CLI's delay between its
 * tries is its own back-off, not the API's word: the limiter keeps its own).
 */
function refusalOf(retry: ApiRetryInfo, resetAt: number | undefined): Refusal {
  if (isConnectionFailure(retry)) return { kind: 'api-unreachable' };
  const overloaded = retry.errorStatus === 529 || retry.error === 'overloaded';
  const kind = overloaded ? 'overloaded' : resetAt !== undefined ? 'usage-limit' : 'rate-limit';
  return { kind, ...(retry.retryDelayMs !== undefined ? { delayMs: retry.retryDelayMs } : {}), ...(resetAt !== undefined && !overloaded ? { resetAt } : {}) };
}

/** Run one worker to completion. Resolves with its outcome; rejects only on programming errors. */
export async function runWorker(req: WorkerRequest): Promise<WorkerRun> {
  const t0 = performance.now();
  const killGraceMs = req.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const postResultGraceMs = req.postResultGraceMs ?? DEFAULT_POST_RESULT_GRACE_MS;
  const place = req.place ?? localWorkerPlace;
  if (req.place === undefined && !existsSync(req.cwd)) throw new Error(`worker cwd does not exist: ${req.cwd}`);

  await mkdir(dirname(req.logPath), { recursive: true });
  const log = new LogWriter(createWriteStream(req.logPath, { flags: 'a' }), req.logLimit ?? DEFAULT_LOG_LIMIT);
  const parser = new StreamJsonParser({ cwd: req.cwd });
  const inherited = await place.loginSettings(req.env ?? process.env);
  const personDenies = req.rulesOf === undefined ? [] : await workerPersonDenies(req.rulesOf, req.cwd, req.env ?? process.env);
  const ruled = personDenies.length === 0 ? req : { ...req, deniedTools: [...(req.deniedTools ?? []), ...personDenies] };
  // A sandboxed attempt's own TMPDIR, writable by its Bash commands, removed when it ends.
  const ownTmp = req.sandbox ? await place.ownTmp(req.taskIndex) : undefined;
  const sandbox: WorkerSandbox | undefined =
    req.sandbox && ownTmp ? { writable: [await place.realCwd(req.cwd), ownTmp.realPath], allowedDomains: req.sandbox.allowedDomains } : undefined;
  const tmpEnv: Record<string, string> = ownTmp ? { TMPDIR: ownTmp.path, CLAUDE_CODE_TMPDIR: ownTmp.path } : {};
  const args = buildWorkerArgs(ruled, inherited, sandbox);

  log.line(
    `==== task ${req.taskIndex} · attempt ${req.attempt}${req.resume !== undefined ? ` · resumed (session ${req.resume})` : ''} · ${new Date().toISOString()} ====`,
  );
  log.line(`$ cd ${shellQuote(req.cwd)}`);
  log.line(
    `$ ${[req.claudeBin, ...buildWorkerArgs(ruled, redacted(inherited), sandbox)].map(shellQuote).join(' ')} < prompt (${Buffer.byteLength(req.prompt)} bytes)`,
  );
  log.line('---- prompt ----');
  for (const l of clipHead(req.prompt, PROMPT_LOG_CHARS, `\n… [${req.prompt.length - PROMPT_LOG_CHARS} more chars]`).split('\n')) {
    log.line(formatRawLineForLog(l));
  }
  log.line('---- worker ----');

  const exit: ExitInfo = { timedOut: false, aborted: false, stderrTail: '', timeoutMs: req.timeoutMs, bin: req.claudeBin };

  // Time its CLI waits to retry a refused request: from the api_retry until the next line, at most the delay it named.
  const waits = { total: 0, since: null as number | null, until: 0 };
  const waited = (now: number): number => waits.total + (waits.since === null ? 0 : Math.max(0, Math.min(now, waits.until) - waits.since));
  const endWait = (now: number): void => {
    waits.total = waited(now);
    waits.since = null;
  };

  const finish = async (): Promise<WorkerRun> => {
    exit.endedAt = Date.now();
    const c = parser.classify(exit);
    const durationMs = Math.round(performance.now() - t0);
    const o = c.outcome;
    const summary =
      o.kind === 'reported'
        ? `reported ${o.statusLine ? `${o.statusLine.status}: ${o.statusLine.text}` : '(no status line)'}`
        : `failed: ${describeWorkerFailure(o.failure)}`;
    log.line(`==== outcome: ${oneLine(summary, 1000)} · ${formatSeconds(durationMs)} ====`);
    await log.close();
    if (ownTmp) await ownTmp.remove();
    // A denied write names a path in the worktree: said as a repository path, for the task's record.
    const roots = [...new Set([req.cwd, await place.realCwd(req.cwd).catch(() => req.cwd)])];
    const run: WorkerRun = { usage: c.usage, durationMs, permissionDenials: withDeniedPaths(c.permissionDenials, roots), logPath: req.logPath, outcome: o };
    if (c.sessionId) run.sessionId = c.sessionId;
    if (c.progressed) run.progressed = true;
    const waitedMs = Math.round(waited(performance.now()));
    if (waitedMs > 0) run.waitedMs = waitedMs;
    return run;
  };

  if (req.signal?.aborted) {
    exit.aborted = true;
    log.line('interrupted before start');
    return finish();
  }

  const subprocess = place.start({
    file: req.claudeBin,
    args,
    cwd: req.cwd,
    input: req.prompt,
    env: req.env ?? process.env,
    own: tmpEnv,
    ...(req.onSpawn ? { onSpawn: req.onSpawn } : {}),
  });

  // ---- killing -------------------------------------------------------------------------------
  let termination: Promise<unknown> | undefined;
  const terminate = (why: string): void => {
    if (termination !== undefined) return;
    log.line(`${stamp(t0)} ! killing the worker's process group (${why})`);
    termination = subprocess.terminate(killGraceMs);
  };

  let killedForAuth = false;
  // No timeout when it is not a usable delay (0, Infinity, or past what setTimeout can hold). Time
  // waiting on a limit does not count: when the limit is up, the timer looks again.
  let timeoutTimer: NodeJS.Timeout | undefined;
  const armTimeout = (delay: number): void => {
    timeoutTimer = setTimeout(() => {
      const now = performance.now();
      const active = now - t0 - waited(now);
      if (active < req.timeoutMs) {
        armTimeout(Math.max(10, req.timeoutMs - active));
        return;
      }
      exit.timedOut = true;
      const excused = Math.round(waited(now));
      terminate(`timed out after ${req.timeoutMs} ms${excused > 0 ? ` of work (${excused} ms waiting on a limit not counted)` : ''}`);
    }, delay);
  };
  if (req.timeoutMs > 0 && req.timeoutMs <= 2 ** 31 - 1) armTimeout(req.timeoutMs);
  const onStopIfIdle = (): void => {
    if (parser.served === 0 && !exit.aborted && !exit.stoppedForLimit) {
      exit.stoppedForLimit = true;
      terminate('a limit refused it (or the API did not answer) before the API had served it anything; it waits for the limit');
    }
  };
  req.stopIfIdle?.addEventListener('abort', onStopIfIdle, { once: true });
  let postResultTimer: NodeJS.Timeout | undefined;
  const onAbort = (): void => {
    exit.aborted = true;
    terminate('interrupted');
  };
  req.signal?.addEventListener('abort', onAbort, { once: true });

  // ---- stdout → parser + log -----------------------------------------------------------------
  let lastActivity: string | undefined;
  const stdout = subprocess.stdout;
  const stderr = subprocess.stderr;
  const onStdoutLine = (line: string, truncated: boolean): void => {
    const served = parser.served;
    const refusals = parser.refusals;
    const r = parser.accept(line);
    const at = stamp(t0);
    const now = performance.now();
    const retry = parser.lastApiRetry;
    if (r.kind === 'event' && r.event['type'] === 'system' && r.event['subtype'] === 'api_retry' && retry !== undefined) {
      // A refused request waits its delay (a long wait is told again every 30 s with the time left).
      if (waits.since === null) waits.since = now;
      waits.until = now + (retry.retryDelayMs ?? 0);
    } else if (r.kind === 'event') endWait(now);
    if (parser.refusals > refusals && retry !== undefined && (isRefusal(retry) || isConnectionFailure(retry)))
      tell(() => req.onRefused?.(refusalOf(retry, parser.limitResetAt), served > 0));
    if (parser.served > served) tell(() => req.onServed?.());
    if (r.kind === 'event') {
      for (const l of formatEventForLog(r.event, { cwd: req.cwd, toolUse: (id) => parser.toolUse(id) })) log.line(`${at} ${l}`, stdout);
    } else if (r.kind === 'garbage') {
      log.line(`${at} stdout| ${formatRawLineForLog(line)}${truncated ? ' [line cut at 1 MiB]' : ''}`, stdout);
    }
    const activity = parser.activity;
    if (activity !== undefined && activity !== lastActivity) {
      lastActivity = activity;
      try {
        req.onActivity?.({ text: activity, costUsd: parser.costUsd });
      } catch {
        /* a broken live view must not break the worker */
      }
    }
    if (parser.authFailureSeen() && !killedForAuth && !exit.aborted && !exit.timedOut) {
      killedForAuth = true;
      terminate('authentication failed');
    }
    if (parser.result && postResultTimer === undefined) {
      postResultTimer = setTimeout(() => terminate(`still running ${postResultGraceMs} ms after its result`), postResultGraceMs);
    }
  };
  const outSplitter = new LineSplitter(onStdoutLine, MAX_LINE_BYTES);
  stdout.on('data', (chunk: Buffer) => outSplitter.push(chunk));
  stdout.on('end', () => outSplitter.end());

  const errSplitter = new LineSplitter((line) => {
    if (line.trim()) log.line(`${stamp(t0)} stderr| ${formatRawLineForLog(line)}`, stderr);
  }, 64 * 1024);
  stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    exit.stderrTail = (exit.stderrTail + (text.length > STDERR_TAIL_CHARS ? text.slice(-STDERR_TAIL_CHARS) : text)).slice(-STDERR_TAIL_CHARS);
    errSplitter.push(chunk);
  });
  stderr.on('end', () => errSplitter.end());

  // ---- leader exit: clean up the rest of its group, and do not wait forever for pipes -------
  let pipeTimer: NodeJS.Timeout | undefined;
  subprocess.onExit(() => {
    if (termination === undefined && subprocess.groupLeft()) terminate('left processes behind');
    // A process that escaped the group could hold our pipes open; stop reading after the grace.
    pipeTimer = setTimeout(() => {
      stdout.destroy();
      stderr.destroy();
    }, killGraceMs + 1000);
  });

  const result = await subprocess.ended;

  // The group got SIGTERM: stragglers get the rest of the grace period, then SIGKILL.
  if (termination !== undefined) await termination;
  const leftBehind = await subprocess.endLeftovers(killGraceMs);
  if (leftBehind !== '') log.line(`${stamp(t0)} ! ended what the worker left running outside its process group: ${leftBehind}`);
  clearTimeout(timeoutTimer);
  clearTimeout(postResultTimer);
  clearTimeout(pipeTimer);
  req.signal?.removeEventListener('abort', onAbort);
  req.stopIfIdle?.removeEventListener('abort', onStopIfIdle);

  if (result.exitCode !== undefined) exit.exitCode = result.exitCode;
  if (result.signal !== undefined) exit.signal = result.signal;
  if (result.spawnError !== undefined) {
    exit.spawnError = result.spawnError;
    log.line(`${stamp(t0)} ! could not start the worker: ${exit.spawnError.message}`);
  } else {
    log.line(`${stamp(t0)} worker exited${exit.exitCode !== undefined ? ` with code ${exit.exitCode}` : ''}${exit.signal ? ` by ${exit.signal}` : ''}`);
  }
  return finish();
}

/** A worker's process on this machine: its own process group, tracked so a Ctrl-C or a crash of foreman ends it, marked so what it detached is found. */
export const localWorkerPlace: WorkerPlace = {
  realCwd: (cwd) => realpath(cwd),
  async ownTmp(task) {
    const path = await mkdtemp(join(tmpdir(), `foreman-task-${task}-`));
    return { path, realPath: await realpath(path), remove: () => rm(path, { recursive: true, force: true }) };
  },
  loginSettings: (env) => readLoginSettings(env),
  start(spawn) {
    const marker = newProcessMarker();
    const subprocess = execa(spawn.file, spawn.args, {
      cwd: spawn.cwd,
      env: { ...spawn.env, ...spawn.own, ...marker.env },
      extendEnv: false,
      input: spawn.input,
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      detached: true,
      stripFinalNewline: false,
    });
    const pid = subprocess.pid;
    if (pid !== undefined) {
      trackGroup(pid);
      spawn.onSpawn?.(pid, marker.marker);
    }
    const ended = subprocess.then((result): WorkerProcessEnd => {
      const end: WorkerProcessEnd = {
        ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
        ...(result.signal !== undefined ? { signal: result.signal } : {}),
      };
      if (pid === undefined || (result.code && result.exitCode === undefined && result.signal === undefined))
        end.spawnError = { message: result.shortMessage ?? result.message ?? 'spawn failed', ...(result.code ? { code: result.code } : {}) };
      return end;
    });
    return {
      stdout: subprocess.stdout,
      stderr: subprocess.stderr,
      terminate: (graceMs) => (pid === undefined ? Promise.resolve(true) : terminateGroup(pid, graceMs)),
      groupLeft: () => pid !== undefined && groupAlive(pid),
      onExit: (listener) => void subprocess.on('exit', listener),
      ended,
      endLeftovers: async (graceMs) => {
        const leftBehind = await endMarked(PROCESS_MARKER_VARIABLE, marker.marker, graceMs, marker.since);
        if (pid !== undefined) untrackGroup(pid);
        return describeMarked(leftBehind);
      },
    };
  },
};
