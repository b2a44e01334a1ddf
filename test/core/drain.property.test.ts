// Drain (`plan drain`, SIGTERM) in the engine's own state machine, run in simulated time on
// random plans: asked at any moment, the run starts nothing after it, lets every attempt under
// way finish to a real outcome (never cut short), records all verified work, and stops.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/core/plan/plan.ts';
import { simulateRun, SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { simulationArb } from '../support/arbitraries.ts';

describe('drain', () => {
  it('starts nothing after it, lets what runs finish, records what is verified, and stops', () => {
    fc.assert(
      fc.property(simulationArb(), fc.integer({ min: 0, max: 25 }), (sim, drainAt) => {
        const trace = simulateRun(
          sim.plan,
          { ...SIMULATION_DEFAULTS, concurrency: sim.concurrency, schedule: 'continuous' },
          (task, attempt) => ({ durationMs: sim.durations[task]!, report: attempt <= sim.failuresBefore[task]! ? 'FAILED' : 'COMPLETED' }),
          undefined,
          undefined,
          drainAt,
        );
        const drained = trace.events.some((e) => e.type === 'draining');
        for (const interval of trace.intervals) {
          // Nothing starts after the drain; an attempt started at the same moment was started before it.
          if (drained) expect(interval.start).toBeLessThanOrEqual(drainAt);
          // Every attempt ran to a real outcome: the drain cut none short.
          expect(interval.outcome).not.toBe('interrupted');
          expect(interval.outcome).not.toBeNull();
        }
        // Nothing is left half-way: every verified attempt was recorded.
        expect(trace.state.attempts.size).toBe(0);
        expect(trace.state.plan.tasks.some((t) => statusOf(t) === 'in_progress')).toBe(false);
        const reason = trace.state.stop?.reason;
        if (trace.state.plan.tasks.some((t) => statusOf(t) === 'pending')) expect(['drained', 'breaker']).toContain(reason);
        if (drained) expect(['drained', 'all-done']).toContain(reason);
      }),
      { numRuns: 300 },
    );
  });
});
