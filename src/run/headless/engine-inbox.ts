// The headless engine's inbox (run/headless/engine.ts): what workers, checks, the lane, timers and signals
// bring arrives here, and the step loop takes it one event at a time.

import type { EngineEvent, Inbox as EngineInbox } from '../../core/index.ts';

/** Events in arrival order, awaited one at a time. */
export class Inbox implements EngineInbox {
  private readonly queue: EngineEvent[] = [];
  private waiting: ((event: EngineEvent) => void) | null = null;
  private failure: unknown = null;
  private rejectWaiting: ((error: unknown) => void) | null = null;

  post(event: EngineEvent): void {
    if (this.waiting) {
      const deliver = this.waiting;
      this.waiting = null;
      this.rejectWaiting = null;
      deliver(event);
    } else this.queue.push(event);
  }

  /** A bug in an adapter: the engine stops with it. */
  fail(error: unknown): void {
    this.failure ??= error;
    this.rejectWaiting?.(error);
  }

  next(): Promise<EngineEvent> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const event = this.queue.shift();
    if (event) return Promise.resolve(event);
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.rejectWaiting = reject;
    });
  }
}
