// The lane (core/integration/lane.ts): jobs run one at a time in the order they were handed in, whatever order
// their work finishes in; each job's result or rejection reaches its own caller; a job that rejects
// or throws does not stop the next; a job never starts before `run` returns; `settled` waits for
// every job handed in so far and never rejects.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Lane } from '../../src/core/integration/lane.ts';

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback and timer of this turn run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

type Outcome = 'resolve' | 'reject' | 'throw';

describe('lane', () => {
  it('runs jobs one after another in call order, each after the one before has settled', async () => {
    const lane = new Lane();
    const log: string[] = [];
    const gates = [deferred<void>(), deferred<void>(), deferred<void>()];
    const results = gates.map((gate, index) =>
      lane.run(async () => {
        log.push(`start ${index}`);
        await gate.promise;
        log.push(`end ${index}`);
        return index;
      }),
    );
    await flush();
    expect(log).toEqual(['start 0']);
    // The later jobs' work is released first: they still wait their turn.
    gates[2]?.resolve();
    gates[1]?.resolve();
    await flush();
    expect(log).toEqual(['start 0']);
    gates[0]?.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2]);
    expect(log).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('gives a rejection to its own caller only and runs the next job', async () => {
    const lane = new Lane();
    const ran: number[] = [];
    const failure = new Error('job 1 failed');
    const first = lane.run(async () => {
      ran.push(0);
      return 'zero';
    });
    const second = lane.run(async () => {
      ran.push(1);
      throw failure;
    });
    const third = lane.run(async () => {
      ran.push(2);
      return 'two';
    });
    await expect(first).resolves.toBe('zero');
    await expect(second).rejects.toBe(failure);
    await expect(third).resolves.toBe('two');
    expect(ran).toEqual([0, 1, 2]);
  });

  it('turns a job that throws instead of returning a promise into its caller’s rejection, and goes on', async () => {
    const lane = new Lane();
    const failure = new Error('thrown at once');
    const thrown = lane.run((): Promise<string> => {
      throw failure;
    });
    const after = lane.run(async () => 'after');
    await expect(thrown).rejects.toBe(failure);
    await expect(after).resolves.toBe('after');
  });

  it('starts a job only after `run` has returned, even on an idle lane', async () => {
    const lane = new Lane();
    let started = false;
    const done = lane.run(async () => {
      started = true;
    });
    expect(started).toBe(false);
    await done;
    expect(started).toBe(true);
  });

  it('keeps a rejection for a caller that looks at it a turn later, without Node calling it unhandled', async () => {
    const lane = new Lane();
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const failing = lane.run(async () => {
        throw new Error('looked at later');
      });
      await flush();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).toEqual([]);
      await expect(failing).rejects.toThrow('looked at later');
    } finally {
      process.off('unhandledRejection', listener);
    }
  });

  it('settles once every job handed in before has, rejected ones too, and never rejects', async () => {
    const lane = new Lane();
    const gate = deferred<void>();
    const failing = lane.run(async () => {
      await gate.promise;
      throw new Error('no');
    });
    let settled = false;
    const waited = lane.settled().then(() => {
      settled = true;
    });
    await flush();
    expect(settled).toBe(false);
    gate.resolve();
    await waited;
    expect(settled).toBe(true);
    await expect(failing).rejects.toThrow('no');
    // An idle lane is settled at once.
    await expect(new Lane().settled()).resolves.toBeUndefined();
  });

  it('holds one job at a time, in call order, each outcome its caller’s, however the work finishes', async () => {
    const outcomeArb = fc.constantFrom<Outcome>('resolve', 'reject', 'throw');
    const caseArb = fc
      .array(outcomeArb, { minLength: 1, maxLength: 40 })
      .chain((outcomes) =>
        fc.record({ outcomes: fc.constant(outcomes), releaseOrder: fc.shuffledSubarray([...outcomes.keys()], { minLength: outcomes.length }) }),
      );
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ outcomes, releaseOrder }) => {
        const lane = new Lane();
        const work = outcomes.map(() => deferred<void>());
        const settled: boolean[] = outcomes.map(() => false);
        const starts: number[] = [];
        const early: number[] = [];
        let active = 0;
        let mostActive = 0;
        const results = outcomes.map((outcome, index) =>
          lane.run(async () => {
            // Every job handed in before this one has settled.
            if (!settled.slice(0, index).every(Boolean)) early.push(index);
            starts.push(index);
            active += 1;
            mostActive = Math.max(mostActive, active);
            try {
              if (outcome === 'throw') throw new Error(`thrown ${index}`);
              await work[index]?.promise;
              if (outcome === 'reject') throw new Error(`rejected ${index}`);
              return index;
            } finally {
              active -= 1;
              settled[index] = true;
            }
          }),
        );
        // The work finishes in a random order, a turn apart.
        for (const index of releaseOrder) {
          work[index]?.resolve();
          await flush();
        }
        const ends = await Promise.allSettled(results);
        expect(early).toEqual([]);
        expect(mostActive).toBe(1);
        expect(starts).toEqual([...outcomes.keys()]);
        ends.forEach((end, index) => {
          const outcome = outcomes[index];
          if (outcome === 'resolve') expect(end).toEqual({ status: 'fulfilled', value: index });
          else expect(end).toEqual({ status: 'rejected', reason: new Error(`${outcome === 'throw' ? 'thrown' : 'rejected'} ${index}`) });
        });
      }),
      { numRuns: 100 },
    );
  });
});
