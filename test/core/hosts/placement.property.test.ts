// Placement on hosts, through the engine's own step function in simulated time
// (core/engine/simulation.ts): random plans over random hosts and slots, with host faults at random
// times. Never more attempts on a host than its slots, nor two on one slot; a host down gets
// nothing (what it held is lost); a lost attempt costs its task no attempt; the run finishes on
// the hosts that remain; with every host down past --limit-wait it stops, resumable; and without
// hosts nothing is placed, as before.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EngineConfig, EngineState } from '../../../src/core/engine/state.ts';
import { allDownSince, freePlaces, hostFault, type HostState, hostTried, hostWorks, newHosts, place } from '../../../src/core/hosts/placement.ts';
import { countByStatus } from '../../../src/core/plan/graph.ts';
import { attemptsOf, clonePlan } from '../../../src/core/plan/plan.ts';
import { simulateRun, SIMULATION_DEFAULTS, type SimulationTrace } from '../../../src/core/engine/simulation.ts';
import { type Simulation, simulationArb } from '../../support/arbitraries.ts';

const hostsArb = fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }).map((slots) => slots.map((n, i) => ({ name: `h${i}`, slots: n })));

/** A simulated run of `sim` over `hosts`, the invariants checked whenever time moves on. */
function run(
  sim: Simulation,
  hosts: EngineConfig['hosts'],
  faults: ReadonlyArray<{ at: number; host: string; reason: string }> = [],
  limitWaitMs = 18_000_000,
): SimulationTrace {
  const config: EngineConfig = {
    ...SIMULATION_DEFAULTS,
    concurrency: sim.concurrency,
    schedule: 'continuous',
    limitWaitMs,
    ...(hosts !== undefined ? { hosts, hostBackoffMs: 3 } : {}),
  };
  const observe = (state: EngineState) => {
    if (state.hosts === undefined) return;
    // --concurrency caps the workers across every host.
    expect([...state.attempts.values()].filter((a) => a.stage === 'running').length).toBeLessThanOrEqual(sim.concurrency);
    for (const host of state.hosts) {
      const on = [...state.attempts.values()].filter((a) => a.place?.host === host.name && ['running', 'verifying', 'paused'].includes(a.stage));
      // Never more attempts on a host than its slots, and one a slot.
      expect(on.length).toBeLessThanOrEqual(host.slots);
      expect(new Set(on.map((a) => a.place!.slot)).size).toBe(on.length);
      for (const a of on) expect(a.place!.slot).toBeGreaterThanOrEqual(1);
      for (const a of on) expect(a.place!.slot).toBeLessThanOrEqual(host.slots);
      // A host down holds nothing but what it lost (ending as its worker stops).
      if (host.down !== null && host.down.until > state.now) for (const a of on) expect((a as { lost?: string }).lost).toBeDefined();
    }
  };
  return simulateRun(
    clonePlan(sim.plan),
    config,
    (task, attempt) => ({ durationMs: sim.durations[task]!, report: attempt <= sim.failuresBefore[task]! ? 'FAILED' : 'COMPLETED' }),
    observe,
    undefined,
    undefined,
    faults,
  );
}

describe('placement on hosts', () => {
  it('never puts more attempts on a host than its slots, and a host down gets nothing new', () => {
    fc.assert(
      fc.property(
        simulationArb(),
        hostsArb,
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 30 }), host: fc.integer({ min: 0, max: 2 }) }), { maxLength: 4 }),
        (sim, hosts, drawn) => {
          const faults = drawn.filter((f) => f.host < hosts.length).map((f) => ({ at: f.at, host: `h${f.host}`, reason: 'ssh exited 255' }));
          const trace = run(sim, hosts, faults);
          // Every worker started on a host, and none on a host while it was down.
          for (const interval of trace.intervals) expect(interval.place).toBeDefined();
          // (That none started on a host while it was down is checked as time moves on: a host down holds only what it lost.)
          // Each fault on a host that was up said so, naming the tasks it lost.
          expect(trace.events.filter((e) => e.type === 'host-down').length).toBeLessThanOrEqual(faults.length);
          // The run finished on what remained: a back-off always ends, so every task that can complete did.
          expect(trace.state.finished).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('loses an attempt to a host fault without spending it: every task completes in one attempt', () => {
    fc.assert(
      fc.property(simulationArb({ allSucceed: true }), hostsArb, fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 3 }), (sim, hosts, times) => {
        const faults = times.map((at, i) => ({ at, host: hosts[i % hosts.length]!.name, reason: 'silent past its limit' }));
        const trace = run(sim, hosts, faults);
        expect(trace.state.stop?.reason).toBe('all-done');
        expect(countByStatus(trace.state.plan).completed).toBe(sim.plan.tasks.length);
        for (const task of trace.state.plan.tasks) expect(attemptsOf(task)).toBe(1);
        const lost = trace.events.filter((e) => e.type === 'task-finished' && e.outcome === 'interrupted');
        for (const finished of lost)
          expect(finished.type === 'task-finished' && finished.reason).toMatch(/^lost: its host h\d went down \(silent past its limit\)$/);
        // Each lost attempt is one a host-down named.
        const named = trace.events.flatMap((e) => (e.type === 'host-down' ? e.lost : []));
        expect(lost.map((e) => e.type === 'task-finished' && e.task).sort()).toEqual([...named].sort());
      }),
      { numRuns: 150 },
    );
  });

  it('places nothing without hosts, and with one host of as many slots as the concurrency runs exactly as without', () => {
    fc.assert(
      fc.property(simulationArb(), (sim) => {
        const without = run(sim, undefined);
        expect(without.state.hosts).toBeUndefined();
        for (const interval of without.intervals) expect(interval.place).toBeUndefined();
        for (const event of without.events) expect(event).not.toHaveProperty('host');
        const one = run(sim, [{ name: 'local', slots: sim.concurrency }]);
        const strip = (trace: SimulationTrace) => trace.intervals.map(({ place: _place, ...rest }) => rest);
        expect(strip(one)).toEqual(strip(without));
        expect(one.events.map(({ host: _h, slot: _s, ...rest }: Record<string, unknown>) => rest)).toEqual(without.events);
      }),
      { numRuns: 150 },
    );
  });

  it('holds the run while every host is down, and stops it past --limit-wait (exit 75, resumable)', () => {
    const sim: Simulation = {
      plan: {
        schemaVersion: 3,
        goal: 'g',
        tasks: [0, 1, 2].map((i) => ({
          subject: `t${i}`,
          prompt: 'p',
          blockedBy: [],
          status: 'pending',
          metadata: { files: { create: [], modify: [`f${i}`] } },
        })),
      },
      concurrency: 1,
      durations: [10, 10, 10],
      failuresBefore: [0, 0, 0],
    };
    // The one host fails at 5, and again just after each time it is tried (back-offs of 3, 6, 12 ms):
    // held, then stopped once it has been down for 40 ms.
    const faults = [5, 9, 16, 29].map((at) => ({ at, host: 'h0', reason: 'ssh exited 255' }));
    const trace = run(sim, [{ name: 'h0', slots: 1 }], faults, 40);
    expect(trace.state.stop?.reason).toBe('hosts-down');
    expect(trace.state.stop?.message).toContain('every host was down for longer than --limit-wait');
    for (const task of trace.state.plan.tasks) expect(attemptsOf(task)).toBe(0);
    // Held, not finished, while the host was tried again after each back-off; stopped at 5 + 40.
    expect(trace.intervals.map((interval) => interval.start)).toEqual([0, 8, 15, 28]);
    expect(trace.makespan).toBe(45);
    expect(trace.events.filter((e) => e.type === 'host-down').map((e) => e.type === 'host-down' && e.faults)).toEqual([1, 2, 3, 4]);
  });
});

describe('the hosts state', () => {
  it('takes the host with the most free slots, the first given on a tie, its lowest free slot', () => {
    const hosts = newHosts([
      { name: 'a', slots: 2 },
      { name: 'b', slots: 3 },
    ]);
    expect(place(hosts, [], 0)).toEqual({ host: 'b', slot: 1 });
    expect(place(hosts, [{ host: 'b', slot: 1 }], 0)).toEqual({ host: 'a', slot: 1 });
    expect(
      place(
        hosts,
        [
          { host: 'b', slot: 1 },
          { host: 'a', slot: 1 },
        ],
        0,
      ),
    ).toEqual({ host: 'b', slot: 2 });
    expect(freePlaces(hosts, [{ host: 'b', slot: 1 }], 0)).toBe(4);
  });

  it('backs a host off twice as long per fault in a row, and forgets its faults once it works', () => {
    let hosts: HostState[] = newHosts([{ name: 'a', slots: 1 }]);
    hosts = hostFault(hosts, 'a', 'x', 100, 1000);
    expect(hosts[0]!.down).toEqual({ reason: 'x', since: 100, until: 1100, tried: false });
    expect(place(hosts, [], 500)).toBeNull();
    expect(allDownSince(hosts, 500)).toBe(100);
    // The same fault told again while it is down changes nothing.
    expect(hostFault(hosts, 'a', 'y', 600, 1000)).toEqual(hosts);
    // Left idle after its back-off, a fault starts a new streak (twice as long a back-off still).
    expect(hostFault(hosts, 'a', 'idle', 5000, 1000)[0]!.down).toEqual({ reason: 'idle', since: 5000, until: 7000, tried: false });
    // Tried again after its back-off, it fails again: twice as long, the streak's start kept.
    expect(place(hosts, [], 1100)).toEqual({ host: 'a', slot: 1 });
    hosts = hostTried(hosts, 'a');
    hosts = hostFault(hosts, 'a', 'z', 1200, 1000);
    expect(hosts[0]!.down).toEqual({ reason: 'z', since: 100, until: 3200, tried: false });
    expect(hosts[0]!.faults).toBe(2);
    hosts = hostWorks(hosts, 'a');
    expect(hosts[0]).toEqual({ name: 'a', slots: 1, down: null, faults: 0 });
  });
});
