// Reading a running worker's output as it comes, line by line (nothing keeps the whole of it):
// each stdout line goes to the stream-json parser, the log, the run's limiter (each refusal and
// each response served, told as it comes) and the live view; each stderr line to the log, and its
// end is kept for the outcome.

import type { ApiRetryInfo, ExitInfo, Refusal } from '../../core/index.ts';
import { LineSplitter } from '../processes/index.ts';
import type { LogWriter } from './log-writer.ts';
import { type AcceptResult, isConnectionFailure, isRefusal, type StreamJsonParser } from './stream-json.ts';
import { formatEventForLog, formatRawLineForLog } from './stream-log.ts';
import type { AttemptClock } from './worker-clock.ts';
import type { WorkerProcess } from './worker-place.ts';
import type { WorkerRequest } from './worker-request.ts';
import type { WorkerStopping } from './worker-stopping.ts';

const MAX_LINE_BYTES = 1024 * 1024;
const MAX_STDERR_LINE_BYTES = 64 * 1024;
const STDERR_TAIL_CHARS = 4096;

/** What reading a worker's output feeds. */
export interface OutputReading {
  request: Pick<WorkerRequest, 'cwd' | 'onRefused' | 'onServed' | 'onActivity'>;
  subprocess: WorkerProcess;
  parser: StreamJsonParser;
  log: LogWriter;
  clock: AttemptClock;
  /** Its stderr's end goes here. */
  exit: ExitInfo;
  /** Told after each stdout line (a failed login, a result). */
  stopping: WorkerStopping;
}

/** Starts reading the worker's stdout and stderr; the reading ends when they end. */
export function readWorkerOutput(reading: OutputReading): void {
  const stdout = new StdoutReader(reading);
  const splitter = new LineSplitter((line, truncated) => stdout.line(line, truncated), MAX_LINE_BYTES);
  reading.subprocess.stdout.on('data', (chunk: Buffer) => splitter.push(chunk));
  reading.subprocess.stdout.on('end', () => splitter.end());
  readStderr(reading);
}

/** One stdout line after another, into the parser and from there to the log, the limiter and the live view. */
class StdoutReader {
  private lastActivity: string | undefined;

  constructor(private readonly reading: OutputReading) {}

  line(line: string, truncated: boolean): void {
    const { parser, clock, stopping } = this.reading;
    const servedBefore = parser.served;
    const refusalsBefore = parser.refusals;
    const accepted = parser.accept(line);
    const stamp = clock.stamp();
    this.timeRetryWait(accepted, performance.now());
    this.tellLimiter(servedBefore, refusalsBefore);
    this.log(accepted, line, truncated, stamp);
    this.tellActivity();
    stopping.afterOutputLine();
  }

  /** An `api_retry` starts (or goes on with) a wait on a limit; any other event ends it. */
  private timeRetryWait(accepted: AcceptResult, now: number): void {
    const { parser, clock } = this.reading;
    const retry = parser.lastApiRetry;
    if (accepted.kind === 'event' && accepted.event['type'] === 'system' && accepted.event['subtype'] === 'api_retry' && retry !== undefined) {
      clock.waitFrom(now, retry.retryDelayMs ?? 0);
    } else if (accepted.kind === 'event') clock.endWait(now);
  }

  /** A refusal this line brought (`progressed`: it had been served before), a response it was served. */
  private tellLimiter(servedBefore: number, refusalsBefore: number): void {
    const { parser, request } = this.reading;
    const retry = parser.lastApiRetry;
    if (parser.refusals > refusalsBefore && retry !== undefined && (isRefusal(retry) || isConnectionFailure(retry)))
      tell(() => request.onRefused?.(refusalOf(retry, parser.limitResetAt), servedBefore > 0));
    if (parser.served > servedBefore) tell(() => request.onServed?.());
  }

  /** An event as readable lines; a line that is not JSON as it came. The stream waits while the log is backed up. */
  private log(accepted: AcceptResult, line: string, truncated: boolean, stamp: string): void {
    const { parser, request, log, subprocess } = this.reading;
    if (accepted.kind === 'event') {
      for (const text of formatEventForLog(accepted.event, { cwd: request.cwd, toolUse: (id) => parser.toolUse(id) }))
        log.line(`${stamp} ${text}`, subprocess.stdout);
    } else if (accepted.kind === 'garbage') {
      log.line(`${stamp} stdout| ${formatRawLineForLog(line)}${truncated ? ' [line cut at 1 MiB]' : ''}`, subprocess.stdout);
    }
  }

  /** What it is doing now, told when it changes. */
  private tellActivity(): void {
    const { parser, request } = this.reading;
    const activity = parser.activity;
    if (activity === undefined || activity === this.lastActivity) return;
    this.lastActivity = activity;
    try {
      request.onActivity?.({ text: activity, costUsd: parser.costUsd });
    } catch {
      /* a broken live view must not break the worker */
    }
  }
}

/** Each non-blank stderr line to the log; its last characters kept for the outcome (a failure names them). */
function readStderr({ subprocess, log, clock, exit }: OutputReading): void {
  const stderr = subprocess.stderr;
  const splitter = new LineSplitter((line) => {
    if (line.trim()) log.line(`${clock.stamp()} stderr| ${formatRawLineForLog(line)}`, stderr);
  }, MAX_STDERR_LINE_BYTES);
  stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    exit.stderrTail = (exit.stderrTail + (text.length > STDERR_TAIL_CHARS ? text.slice(-STDERR_TAIL_CHARS) : text)).slice(-STDERR_TAIL_CHARS);
    splitter.push(chunk);
  });
  stderr.on('end', () => splitter.end());
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
