// The only code that spawns agent processes. One call runs one headless Claude Code worker
// (`claude -p --output-format stream-json --verbose`) to completion and returns what happened as
// a value; it never throws for anything the worker does.
//
// - The prompt goes on stdin (argv strings are limited to 128 KiB).
// - The worker's permission rules go in `--settings` JSON with `--setting-sources ""`: no word
//   splitting of rules, and the person's own settings cannot widen them (see src/core/plan/scope.ts);
//   their deny rules are carried over, so they still narrow them (core/sandbox/carried-denies.ts).
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
//
// Beside it, a file each: the request and the command line it becomes (worker-request.ts), where
// the process runs (worker-place.ts), reading its output (worker-output.ts), when it is killed
// (worker-stopping.ts), its clock (worker-clock.ts) and its log (log-writer.ts).

import { createWriteStream, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { clipHead, describeWorkerFailure, type ExitInfo, formatSeconds, oneLine, withDeniedPaths, type WorkerRun } from '../../core/index.ts';
import { DEFAULT_LOG_LIMIT, LogWriter } from './log-writer.ts';
import { StreamJsonParser } from './stream-json.ts';
import { formatRawLineForLog } from './stream-log.ts';
import { killTrackedGroups } from '../processes/index.ts';
import { AttemptClock } from './worker-clock.ts';
import { readWorkerOutput } from './worker-output.ts';
import { localWorkerPlace, type OwnTmp, type WorkerPlace, type WorkerProcessEnd } from './worker-place.ts';
import { prepareLaunch, shellQuote, type WorkerRequest } from './worker-request.ts';
import { WorkerStopping } from './worker-stopping.ts';

const DEFAULT_KILL_GRACE_MS = 3000;
const DEFAULT_POST_RESULT_GRACE_MS = 10_000;
const PROMPT_LOG_CHARS = 16 * 1024;

/** Send SIGTERM (then SIGKILL after `graceMs`) to every live worker's and shell check's process group. */
export function killAllWorkers(graceMs = DEFAULT_KILL_GRACE_MS): void {
  killTrackedGroups(graceMs);
}

/** Run one worker to completion. Resolves with its outcome; rejects only on programming errors. */
export async function runWorker(request: WorkerRequest): Promise<WorkerRun> {
  const clock = new AttemptClock();
  const killGraceMs = request.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const place = request.place ?? localWorkerPlace;
  if (request.place === undefined && !existsSync(request.cwd)) throw new Error(`worker cwd does not exist: ${request.cwd}`);

  const log = await openAttemptLog(request);
  const parser = new StreamJsonParser({ cwd: request.cwd });
  const launch = await prepareLaunch(request, place);
  logAttemptStart(log, request, launch.loggedArgs);
  const exit: ExitInfo = { timedOut: false, aborted: false, stderrTail: '', timeoutMs: request.timeoutMs, bin: request.claudeBin };
  const attempt: EndedAttempt = { request, place, log, parser, clock, exit, ownTmp: launch.ownTmp };

  if (request.signal?.aborted) {
    exit.aborted = true;
    log.line('interrupted before start');
    return concludeAttempt(attempt);
  }

  const subprocess = place.start({
    file: request.claudeBin,
    args: launch.args,
    cwd: request.cwd,
    input: request.prompt,
    env: request.env ?? process.env,
    own: launch.ownEnv,
    ...(request.onMarker ? { onMarker: request.onMarker } : {}),
    ...(request.onSpawn ? { onSpawn: request.onSpawn } : {}),
  });
  const stopping = new WorkerStopping({
    request,
    subprocess,
    log,
    clock,
    parser,
    exit,
    killGraceMs,
    postResultGraceMs: request.postResultGraceMs ?? DEFAULT_POST_RESULT_GRACE_MS,
  });
  stopping.watch();
  readWorkerOutput({ request, subprocess, parser, log, clock, exit, stopping });
  stopping.watchLeaderExit();

  const end = await subprocess.ended;
  await stopping.settled();
  // What it left running outside its group (it carries its marker) is ended too, and named.
  const leftBehind = await subprocess.endLeftovers(killGraceMs);
  if (leftBehind !== '') log.line(`${clock.stamp()} ! ended what the worker left running outside its process group: ${leftBehind}`);
  stopping.dispose();
  recordProcessEnd(log, clock, exit, end);
  return concludeAttempt(attempt);
}

/** The attempt's log, appended to (a resumed task's attempts share one file). */
async function openAttemptLog(request: WorkerRequest): Promise<LogWriter> {
  await mkdir(dirname(request.logPath), { recursive: true });
  return new LogWriter(createWriteStream(request.logPath, { flags: 'a' }), request.logLimit ?? DEFAULT_LOG_LIMIT);
}

/** The log's head: which attempt, where, the command line (no login setting's value) and the start of its prompt. */
function logAttemptStart(log: LogWriter, request: WorkerRequest, loggedArgs: readonly string[]): void {
  const resumed = request.resume !== undefined ? ` · resumed (session ${request.resume})` : '';
  log.line(`==== task ${request.taskIndex} · attempt ${request.attempt}${resumed} · ${new Date().toISOString()} ====`);
  log.line(`$ cd ${shellQuote(request.cwd)}`);
  log.line(`$ ${[request.claudeBin, ...loggedArgs].map(shellQuote).join(' ')} < prompt (${Buffer.byteLength(request.prompt)} bytes)`);
  log.line('---- prompt ----');
  const prompt = clipHead(request.prompt, PROMPT_LOG_CHARS, `\n… [${request.prompt.length - PROMPT_LOG_CHARS} more chars]`);
  for (const line of prompt.split('\n')) log.line(formatRawLineForLog(line));
  log.line('---- worker ----');
}

/** How its process ended, into what the outcome is classified from, and said in the log. */
function recordProcessEnd(log: LogWriter, clock: AttemptClock, exit: ExitInfo, end: WorkerProcessEnd): void {
  if (end.exitCode !== undefined) exit.exitCode = end.exitCode;
  if (end.signal !== undefined) exit.signal = end.signal;
  if (end.spawnError !== undefined) {
    exit.spawnError = end.spawnError;
    log.line(`${clock.stamp()} ! could not start the worker: ${exit.spawnError.message}`);
    return;
  }
  log.line(`${clock.stamp()} worker exited${exit.exitCode !== undefined ? ` with code ${exit.exitCode}` : ''}${exit.signal ? ` by ${exit.signal}` : ''}`);
}

/** An attempt whose worker has ended (or never started), as its outcome is made from it. */
interface EndedAttempt {
  request: WorkerRequest;
  place: WorkerPlace;
  log: LogWriter;
  parser: StreamJsonParser;
  clock: AttemptClock;
  exit: ExitInfo;
  ownTmp: OwnTmp | undefined;
}

/** Its outcome, classified from what it printed and how it ended; the log closed with it, its own TMPDIR removed. */
async function concludeAttempt({ request, place, log, parser, clock, exit, ownTmp }: EndedAttempt): Promise<WorkerRun> {
  exit.endedAt = Date.now();
  const classified = parser.classify(exit);
  const durationMs = Math.round(clock.elapsedMs());
  const outcome = classified.outcome;
  const summary =
    outcome.kind === 'reported'
      ? `reported ${outcome.statusLine ? `${outcome.statusLine.status}: ${outcome.statusLine.text}` : '(no status line)'}`
      : `failed: ${describeWorkerFailure(outcome.failure)}`;
  log.line(`==== outcome: ${oneLine(summary, 1000)} · ${formatSeconds(durationMs)} ====`);
  await log.close();
  if (ownTmp) await ownTmp.remove();
  // A denied write names a path in the worktree: said as a repository path, for the task's record.
  const roots = [...new Set([request.cwd, await place.realCwd(request.cwd).catch(() => request.cwd)])];
  const run: WorkerRun = {
    usage: classified.usage,
    durationMs,
    permissionDenials: withDeniedPaths(classified.permissionDenials, roots),
    logPath: request.logPath,
    outcome,
  };
  if (classified.sessionId) run.sessionId = classified.sessionId;
  if (classified.progressed) run.progressed = true;
  const waitedMs = Math.round(clock.waitedMs(performance.now()));
  if (waitedMs > 0) run.waitedMs = waitedMs;
  return run;
}
