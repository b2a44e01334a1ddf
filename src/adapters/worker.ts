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

import { createWriteStream, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describeWorkerFailure, type WorkerRun } from '../core/failure.ts';
import type { WorkerSandbox } from '../core/scope.ts';
import type { Refusal } from '../core/limiter.ts';
import { workerPersonDenies } from './person-denies.ts';
import { killTrackedGroups } from './tracked-groups.ts';
import { clipHead, formatClock, formatSeconds, oneLine } from '../core/format.ts';
import type { ApiRetryInfo, ExitInfo } from '../core/worker-outcome.ts';
import { withDeniedPaths } from '../core/denied-writes.ts';
import { LineSplitter } from './line-splitter.ts';
import { StreamJsonParser, isConnectionFailure, isRefusal } from './stream-json.ts';
import { formatEventForLog, formatRawLineForLog } from './stream-log.ts';
import { DEFAULT_LOG_LIMIT, LogWriter } from './log-writer.ts';
import { localWorkerPlace } from './worker-place.ts';
import { type WorkerRequest, buildWorkerArgs, redacted, shellQuote } from './worker-request.ts';

const DEFAULT_KILL_GRACE_MS = 3000;
const DEFAULT_POST_RESULT_GRACE_MS = 10_000;
const MAX_LINE_BYTES = 1024 * 1024;
const STDERR_TAIL_CHARS = 4096;
const PROMPT_LOG_CHARS = 16 * 1024;

/** Send SIGTERM (then SIGKILL after `graceMs`) to every live worker's and shell check's process group. */
export function killAllWorkers(graceMs = DEFAULT_KILL_GRACE_MS): void {
  killTrackedGroups(graceMs);
}

const stamp = (t0: number): string => `[${formatClock(performance.now() - t0)}]`;

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
