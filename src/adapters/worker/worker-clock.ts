// One worker attempt's clock: how long since it started, for its log lines and its duration, and
// how long its CLI has waited to retry a refused request, which counts toward no time limit.

import { formatClock } from '../../core/index.ts';

/**
 * Started when the attempt starts. A wait runs from an `api_retry` until the worker's next line,
 * at most the delay the CLI named (a long wait is told again every 30 s with the time left).
 */
export class AttemptClock {
  private readonly startedAt = performance.now();
  /** Waits that have ended. */
  private waitedBefore = 0;
  /** When the wait under way began; null: none is. */
  private waitingSince: number | null = null;
  /** When the wait under way ends at the latest. */
  private waitingUntil = 0;

  /** `[m:ss]` since the start, the prefix of a log line. */
  stamp(): string {
    return `[${formatClock(this.elapsedMs())}]`;
  }

  elapsedMs(now: number = performance.now()): number {
    return now - this.startedAt;
  }

  /** Time spent waiting to retry a refused request, up to `now`. */
  waitedMs(now: number): number {
    const current = this.waitingSince === null ? 0 : Math.max(0, Math.min(now, this.waitingUntil) - this.waitingSince);
    return this.waitedBefore + current;
  }

  /** Time it worked: since the start, less the waits (what its time limit counts). */
  activeMs(now: number): number {
    return this.elapsedMs(now) - this.waitedMs(now);
  }

  /** A refused request waits `delayMs` from `now`; a wait already under way goes on. */
  waitFrom(now: number, delayMs: number): void {
    if (this.waitingSince === null) this.waitingSince = now;
    this.waitingUntil = now + delayMs;
  }

  /** Any other event: the worker is at work again. */
  endWait(now: number): void {
    this.waitedBefore = this.waitedMs(now);
    this.waitingSince = null;
  }
}
