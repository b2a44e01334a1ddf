// A lane: asynchronous jobs run one at a time, in the order they were handed in — the plan's
// writes, the engine's records and gate runs, the integrator's commits, a kept git process's
// requests. p-limit at concurrency 1: each job's result or rejection reaches its own caller only,
// a rejected (or throwing) job does not stop the next, and a job never starts before `run` has
// returned (it waits at least a microtask), so the caller may note what it handed in first.

import pLimit, { type LimitFunction } from 'p-limit';

export class Lane {
  private readonly limit: LimitFunction = pLimit(1);

  /** Runs `job` once every job handed in before it has settled; resolves or rejects as it does. */
  run<T>(job: () => Promise<T>): Promise<T> {
    const result = this.limit(job);
    // Handled here, as the promise chains this replaced were: a caller that looks at the rejection
    // a turn later (awaiting something else first) gets it, and Node does not call it unhandled.
    result.catch(() => undefined);
    return result;
  }

  /** Resolves once every job handed in so far has settled, whatever each ended with; never rejects. */
  settled(): Promise<void> {
    return this.limit(() => undefined);
  }
}
