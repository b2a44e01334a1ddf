// When a running worker's process group is killed, and why: its time limit ran out (time waiting on
// a limit not counted), the run was interrupted, a limit refused it before the API had served it
// anything, its login failed, it lingered after its result, or its leader exited leaving processes
// behind. The group is killed once, for the first reason; the reason is said in the log.

import type { ExitInfo } from '../../core/index.ts';
import type { LogWriter } from './log-writer.ts';
import type { StreamJsonParser } from './stream-json.ts';
import type { AttemptClock } from './worker-clock.ts';
import type { WorkerProcess } from './worker-place.ts';
import type { WorkerRequest } from './worker-request.ts';

/** setTimeout cannot hold a longer delay. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** What stopping a running worker looks at and acts on. */
export interface RunningWorker {
  request: Pick<WorkerRequest, 'timeoutMs' | 'signal' | 'stopIfIdle'>;
  subprocess: WorkerProcess;
  log: LogWriter;
  clock: AttemptClock;
  parser: StreamJsonParser;
  /** What the outcome is classified from: why it was stopped is marked here. */
  exit: ExitInfo;
  /** Between SIGTERM and SIGKILL of its group. */
  killGraceMs: number;
  /** How long it may linger after its `result` event. */
  postResultGraceMs: number;
}

/** The timers and listeners that decide when a running worker is killed; `dispose` drops them all. */
export class WorkerStopping {
  private termination: Promise<unknown> | undefined;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private postResultTimer: NodeJS.Timeout | undefined;
  private pipeTimer: NodeJS.Timeout | undefined;
  private killedForAuth = false;

  constructor(private readonly running: RunningWorker) {}

  /** Arms its time limit and listens for an interruption and for a limit that wants it stopped while idle. */
  watch(): void {
    const { request } = this.running;
    // No time limit when it is not a usable delay (0, Infinity, or past what setTimeout can hold).
    if (request.timeoutMs > 0 && request.timeoutMs <= LONGEST_TIMER_MS) this.armTimeout(request.timeoutMs);
    request.stopIfIdle?.addEventListener('abort', this.onStopIfIdle, { once: true });
    request.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /**
   * When its leader exits: what is left of its group is killed, and its pipes are read no longer
   * than the grace (a process that escaped the group could hold them open).
   */
  watchLeaderExit(): void {
    const { subprocess, killGraceMs } = this.running;
    subprocess.onExit(() => {
      if (this.termination === undefined && subprocess.groupLeft()) this.terminate('left processes behind');
      this.pipeTimer = setTimeout(() => {
        subprocess.stdout.destroy();
        subprocess.stderr.destroy();
      }, killGraceMs + 1000);
    });
  }

  /** Kills the worker's process group (SIGTERM, SIGKILL after the grace), once, for the first reason given. */
  terminate(why: string): void {
    if (this.termination !== undefined) return;
    const { log, clock, subprocess, killGraceMs } = this.running;
    log.line(`${clock.stamp()} ! killing the worker's process group (${why})`);
    this.termination = subprocess.terminate(killGraceMs);
  }

  /** After each line of its output: a failed login ends it at once; after its result it has a grace to end on its own. */
  afterOutputLine(): void {
    const { parser, exit, postResultGraceMs } = this.running;
    if (parser.authFailureSeen() && !this.killedForAuth && !exit.aborted && !exit.timedOut) {
      this.killedForAuth = true;
      this.terminate('authentication failed');
    }
    if (parser.result && this.postResultTimer === undefined) {
      this.postResultTimer = setTimeout(() => this.terminate(`still running ${postResultGraceMs} ms after its result`), postResultGraceMs);
    }
  }

  /** Once it has ended: a group that got SIGTERM is waited for (stragglers get the rest of the grace, then SIGKILL). */
  async settled(): Promise<void> {
    if (this.termination !== undefined) await this.termination;
  }

  /** No timer left running, no listener left on the caller's signals. */
  dispose(): void {
    const { request } = this.running;
    clearTimeout(this.timeoutTimer);
    clearTimeout(this.postResultTimer);
    clearTimeout(this.pipeTimer);
    request.signal?.removeEventListener('abort', this.onAbort);
    request.stopIfIdle?.removeEventListener('abort', this.onStopIfIdle);
  }

  /** Time waiting on a limit does not count: when the limit is up, the timer looks again. */
  private armTimeout(delayMs: number): void {
    const { request, clock, exit } = this.running;
    this.timeoutTimer = setTimeout(() => {
      const now = performance.now();
      const active = clock.activeMs(now);
      if (active < request.timeoutMs) {
        this.armTimeout(Math.max(10, request.timeoutMs - active));
        return;
      }
      exit.timedOut = true;
      const excused = Math.round(clock.waitedMs(now));
      this.terminate(`timed out after ${request.timeoutMs} ms${excused > 0 ? ` of work (${excused} ms waiting on a limit not counted)` : ''}`);
    }, delayMs);
  }

  private readonly onAbort = (): void => {
    this.running.exit.aborted = true;
    this.terminate('interrupted');
  };

  /** A worker the API has served something is left alone: it has done something. */
  private readonly onStopIfIdle = (): void => {
    const { parser, exit } = this.running;
    if (parser.served === 0 && !exit.aborted && !exit.stoppedForLimit) {
      exit.stoppedForLimit = true;
      this.terminate('a limit refused it (or the API did not answer) before the API had served it anything; it waits for the limit');
    }
  };
}
