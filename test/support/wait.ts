// Waiting on an event in a test: a poll with no deadline of its own. The test's time limit is the
// one thing that catches a hang; a deadline here would fail a test on a slow machine instead.

import { TestRunner } from 'vitest';

/**
 * Polls `check` every 25 ms until it holds. When the test ends first (its time limit, a cancelled
 * run), the poll stops, says on stderr what it was still waiting for (the timeout's own message
 * does not), and throws.
 */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const signal = testSignal(`waitFor(${what})`);
  const said = () => console.error(`the test ended while waiting for ${what}`);
  signal.addEventListener('abort', said, { once: true });
  try {
    while (!(await check())) {
      if (signal.aborted) throw new Error(`gave up waiting for ${what}: the test ended`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    signal.removeEventListener('abort', said);
  }
}

/**
 * The running test's signal, aborted when the test ends by its time limit (or the run is
 * cancelled): what a test starts or waits on ends with it, never by a time limit of its own.
 */
export function testSignal(user = 'testSignal()'): AbortSignal {
  const signal = TestRunner.getCurrentTest()?.context.signal;
  if (!signal) throw new Error(`${user} runs inside a test: its time limit is what ends the wait`);
  return signal;
}
