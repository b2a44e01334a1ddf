// Renderers for run events (src/core/report/events.ts):
// - createLiveView (live-view.ts): a terminal block redrawn in place (at most ~5 times a second)
//   with one row per running task and a footer of counts, cost and elapsed time; finished tasks
//   and notices scroll above it as permanent lines;
// - createPlainView: one timestamped line per event, for logs and CI (no control codes);
// - jsonView: one JSON object per line, the event as it is (the `--json` stream).
// None of them starts a timer: the caller calls `tick()` (say every 250 ms) to advance clocks.

import { isoSeconds, type Layout, type RunEvent } from '../core/index.ts';
import { describeEvent } from './event-text.ts';

export interface RunView {
  update(event: RunEvent): void;
  /** Advance clocks; redraws if something visible changed (live view only). */
  tick(): void;
  /** Stop; the live view leaves its final state on screen. Later calls do nothing. */
  close(): void;
}

export function createPlainView(options: { write: (text: string) => void; layout: Layout; now?: () => number }): RunView {
  const now = options.now ?? Date.now;
  let closed = false;
  return {
    update(event) {
      if (closed) return;
      const line = describeEvent(event, options.layout);
      if (line !== null) options.write(`${isoSeconds(now())} ${line}\n`);
    },
    tick() {},
    close() {
      closed = true;
    },
  };
}

export function jsonView(options: { write: (text: string) => void }): RunView {
  let closed = false;
  return {
    update(event) {
      if (!closed) options.write(`${JSON.stringify(event)}\n`);
    },
    tick() {},
    close() {
      closed = true;
    },
  };
}
