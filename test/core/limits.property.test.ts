// Limits in the engine's own state machine, run in simulated time on random plans whose workers
// the API refuses at random moments (core/simulation.ts): before or after it served them, retried
// to success by their CLI or ended by the refusal; or the API out of reach, its requests never
// answered. Whatever comes: a limit spends no attempt, fails no task (every task completes, at its
// first attempt) and trips no breaker, the run stops only workers the API had served nothing, and
// never has more workers at once than --concurrency.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/core/plan.ts';
import { SIMULATION_DEFAULTS, type SimulatedAttempt, simulateRun } from '../../src/core/simulation.ts';
import { MAX_SIM_TASKS, simulationArb } from '../support/arbitraries.ts';

/** A worker's refusal, or none; `unreachable`: some are the API out of reach (a request never answered) rather than a 429. */
const refusalArb = (unreachable: boolean): fc.Arbitrary<SimulatedAttempt['refused'] | undefined> =>
  fc.option(
    fc
      .record({
        at: fc.double({ min: 0.1, max: 0.9, noNaN: true }),
        served: fc.boolean(),
        delayMs: fc.integer({ min: 0, max: 5 }),
        endsIt: fc.boolean(),
        unreachable: unreachable ? fc.boolean() : fc.constant(false),
      })
      .map((r) => ({ atMs: r.at, served: r.served, delayMs: r.delayMs, endsIt: r.endsIt, ...(r.unreachable ? { unreachable: true } : {}) })),
    { nil: undefined, freq: 2 },
  );

describe('limits in the engine', () => {
  it.each([
    ['a rate limit', false],
    ['the API out of reach', true],
  ])('%s: spends no attempt, fails no task, trips no breaker, stops only workers the API served nothing, and keeps to --concurrency', (_name, unreachable) => {
    // How often each way was met, so the property is known to have seen them.
    const seen = { stopped: 0, paused: 0, resumed: 0, held: 0 };
    fc.assert(
      fc.property(
        simulationArb({ allSucceed: true }),
        fc.array(refusalArb(unreachable), { minLength: 2 * MAX_SIM_TASKS, maxLength: 2 * MAX_SIM_TASKS }),
        fc.integer({ min: 0, max: 3 }),
        (sim, refusals, backoffMs) => {
          // Each task's first start may be refused (at a fraction of its run); later starts go through.
          const starts = new Map<number, number>();
          const trace = simulateRun(sim.plan, { ...SIMULATION_DEFAULTS, backoffMs, concurrency: sim.concurrency, schedule: 'continuous' }, (task) => {
            const n = starts.get(task) ?? 0;
            starts.set(task, n + 1);
            const durationMs = sim.durations[task]! * 10;
            const refused = n < 2 ? refusals[2 * task + n] : undefined;
            return {
              durationMs,
              report: 'COMPLETED',
              ...(refused !== undefined ? { refused: { ...refused, atMs: Math.max(1, Math.floor(refused.atMs * durationMs)) } } : {}),
            };
          });
          expect(trace.state.stop?.reason).toBe('all-done');
          expect(trace.state.plan.tasks.map((t) => [statusOf(t), t.attempts])).toEqual(trace.state.plan.tasks.map(() => ['completed', 1]));
          expect(
            trace.events
              .filter((e) => e.type === 'task-finished')
              .map((e) => e.type === 'task-finished' && e.outcome)
              .filter((o) => o !== 'completed' && o !== 'requeued'),
          ).toEqual([]);
          expect(trace.events.some((e) => e.type === 'breaker')).toBe(false);
          for (const stop of trace.stops) expect(stop.served).toBe(false);
          seen.stopped += trace.stops.length;
          seen.paused += trace.events.filter((e) => e.type === 'task-paused').length;
          seen.resumed += trace.events.filter((e) => e.type === 'task-resumed').length;
          seen.held += trace.events.filter((e) => e.type === 'limit' && e.change === 'hold').length;
          // At no moment more workers than --concurrency.
          const moments = trace.intervals.flatMap((i) => [i.start, i.end]);
          for (const t of moments) expect(trace.intervals.filter((i) => i.start <= t && t < i.end).length).toBeLessThanOrEqual(sim.concurrency);
        },
      ),
      { numRuns: 300 },
    );
    expect(
      Object.values(seen).every((n) => n > 0),
      JSON.stringify(seen),
    ).toBe(true);
    expect(seen.resumed).toBe(seen.paused);
  });
});
