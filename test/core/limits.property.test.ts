// Limits in the engine's own state machine, run in simulated time on random plans whose workers
// the API refuses at random moments (core/engine/simulation.ts): before or after it served them, retried
// to success by their CLI or ended by the refusal; or the API out of reach, its requests never
// answered. Whatever comes: a limit spends no attempt, fails no task (every task completes, at its
// first attempt) and trips no breaker, the run stops only workers the API had served nothing, and
// never has more workers at once than --concurrency. With hosts logged in to more than one
// account, each account's limiter hears only its hosts' workers: a refusal on one account never
// holds or narrows another's slots; with one account, the run is the run of one limiter.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Account, accountOfHost, accountsOf, hostsOfAccount, limiterOf, roomOn } from '../../src/core/engine/accounts.ts';
import { startable } from '../../src/core/engine/queries.ts';
import type { EngineConfig, EngineState } from '../../src/core/engine/state.ts';
import type { HostSlots } from '../../src/core/hosts/placement.ts';
import { holding } from '../../src/core/limits/limiter.ts';
import { clonePlan, statusOf } from '../../src/core/plan/plan.ts';
import { type SimulatedAttempt, simulateRun, SIMULATION_DEFAULTS, type SimulationTrace } from '../../src/core/engine/simulation.ts';
import { MAX_SIM_TASKS, type Simulation, simulationArb } from '../support/arbitraries.ts';

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

/** Two or three hosts of 1–3 slots: `a` on this machine's account, `b` on another, `c` on either or a third. */
const accountHostsArb: fc.Arbitrary<HostSlots[]> = fc
  .record({
    slots: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 3, maxLength: 3 }),
    third: fc.constantFrom<Account | null>(null, undefined, 'other', 'third'),
  })
  .map(({ slots, third }) => [
    { name: 'a', slots: slots[0]! },
    { name: 'b', slots: slots[1]!, account: 'other' },
    ...(third === null ? [] : [{ name: 'c', slots: slots[2]!, ...(third !== undefined ? { account: third } : {}) }]),
  ]);

/**
 * `sim` over `hosts` (concurrency: their slots together, or the simulation's when lower), each
 * task's first two starts refused as `refusals` draw when `refusable` says so of where it runs;
 * `observe` sees the state as time moves on.
 */
function runOnHosts(
  sim: Simulation,
  hosts: readonly HostSlots[],
  refusals: ReadonlyArray<SimulatedAttempt['refused'] | undefined>,
  refusable: (host: string) => boolean,
  observe?: (state: EngineState) => void,
): SimulationTrace {
  const slots = hosts.reduce((sum, host) => sum + host.slots, 0);
  const config: EngineConfig = {
    ...SIMULATION_DEFAULTS,
    backoffMs: 2,
    concurrency: Math.min(slots, sim.concurrency + 2),
    schedule: 'continuous',
    hosts,
    hostBackoffMs: 3,
  };
  const starts = new Map<number, number>();
  return simulateRun(
    clonePlan(sim.plan),
    config,
    (task, _attempt, place) => {
      const n = starts.get(task) ?? 0;
      starts.set(task, n + 1);
      const durationMs = sim.durations[task]! * 10;
      const refused = n < 2 && place !== undefined && refusable(place.host) ? refusals[2 * task + n] : undefined;
      return {
        durationMs,
        report: 'COMPLETED',
        ...(refused !== undefined ? { refused: { ...refused, atMs: Math.max(1, Math.floor(refused.atMs * durationMs)) } } : {}),
      };
    },
    observe,
  );
}

/** Where each limit event's task ran when it was refused (its last start or resume), in event order. */
function refusedOn(trace: SimulationTrace): Array<{ hosts: string[] | undefined; host: string | undefined }> {
  const on = new Map<number, string | undefined>();
  const seen: Array<{ hosts: string[] | undefined; host: string | undefined }> = [];
  for (const event of trace.events) {
    if (event.type === 'task-started' || event.type === 'task-resumed') on.set(event.task, event.host);
    if (event.type === 'limit') seen.push({ hosts: event.hosts, host: event.task === null ? undefined : on.get(event.task) });
  }
  return seen;
}

describe('a limiter per account', () => {
  it('a refusal on one account never holds or narrows another account’s slots: each account’s limiter hears only its hosts, and an account with room leaves no task waiting', () => {
    const seen = { heldElsewhere: 0, refusedRun: 0, holds: 0 };
    fc.assert(
      fc.property(
        simulationArb({ allSucceed: true }),
        accountHostsArb,
        fc.array(refusalArb(true), { minLength: 2 * MAX_SIM_TASKS, maxLength: 2 * MAX_SIM_TASKS }),
        fc.boolean(),
        (sim, hosts, refusals, onlyOther) => {
          const refusable = (host: string) => !onlyOther || host === 'b';
          let held = false;
          let before: EngineState | null = null;
          const observe = (state: EngineState) => {
            const previous = before;
            before = state;
            if (state.stop !== null) return;
            const accounts = accountsOf(state);
            expect(accounts.length).toBeGreaterThan(1);
            const running = (of: EngineState) => [...of.attempts.values()].filter((attempt) => attempt.stage === 'running');
            const wasRunning = new Set(previous === null ? [] : running(previous).map((attempt) => attempt.task));
            for (const account of accounts) {
              // A limiter untouched since the last moment held all through this one: nothing started (or resumed) on its hosts.
              const limiter = limiterOf(state, account);
              if (previous !== null && limiterOf(previous, account) === limiter && holding(limiter, state.now)) {
                const started = running(state).filter((attempt) => !wasRunning.has(attempt.task) && accountOfHost(state, attempt.place?.host) === account);
                expect(started).toEqual([]);
              }
              // An account whose limiter lets one more start on a free slot of its hosts leaves no task waiting to start.
              if (roomOn(state, account) > 0) expect(startable(state)).toEqual([]);
              const others = accounts.filter((other) => other !== account);
              if (!holding(limiterOf(state, account), state.now) && others.some((other) => holding(limiterOf(state, other), state.now))) held = true;
            }
            // Refused only on b: the run's own limiter never holds nor narrows.
            if (onlyOther) expect(limiterOf(state, undefined)).toMatchObject({ refusals: 0, holdUntil: 0 });
          };
          const trace = runOnHosts(sim, hosts, refusals, refusable, observe);
          if (held) seen.heldElsewhere++;
          expect(trace.state.stop?.reason).toBe('all-done');
          expect(trace.state.plan.tasks.map((t) => [statusOf(t), t.attempts])).toEqual(trace.state.plan.tasks.map(() => ['completed', 1]));
          // Every limit event is one account's, naming its hosts; a refusal's is the account of the host its task ran on.
          const state = trace.state;
          for (const limit of refusedOn(trace)) {
            expect(limit.hosts).toBeDefined();
            const account = accountOfHost(state, limit.hosts![0]);
            expect(limit.hosts).toEqual(hostsOfAccount(state, account));
            if (limit.host !== undefined) expect(accountOfHost(state, limit.host)).toBe(account);
            if (account === undefined) seen.refusedRun++;
            if (onlyOther) expect(limit.hosts).not.toContain('a');
          }
          seen.holds += trace.events.filter((e) => e.type === 'limit' && e.change === 'hold').length;
        },
      ),
      { numRuns: 200 },
    );
    expect(
      Object.values(seen).every((n) => n > 0),
      JSON.stringify(seen),
    ).toBe(true);
  });

  it('hosts of one account run exactly as the run of one limiter', () => {
    fc.assert(
      fc.property(
        simulationArb({ allSucceed: true }),
        accountHostsArb,
        fc.array(refusalArb(true), { minLength: 2 * MAX_SIM_TASKS, maxLength: 2 * MAX_SIM_TASKS }),
        fc.constantFrom('other', undefined),
        (sim, hosts, refusals, account) => {
          const one = (slots: readonly HostSlots[]) => slots.map(({ name, slots: n }) => ({ name, slots: n, ...(account !== undefined ? { account } : {}) }));
          const without = runOnHosts(
            sim,
            hosts.map(({ name, slots }) => ({ name, slots })),
            refusals,
            () => true,
          );
          const within = runOnHosts(sim, one(hosts), refusals, () => true);
          expect(within.state.limiters).toBeUndefined();
          expect(within.events).toEqual(without.events);
          expect(within.intervals).toEqual(without.intervals);
          for (const event of within.events) if (event.type === 'limit') expect(event).not.toHaveProperty('hosts');
        },
      ),
      { numRuns: 100 },
    );
  });
});
