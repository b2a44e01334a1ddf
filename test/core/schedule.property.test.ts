// The engine's own state machine (`core/engine/`) run in simulated time by
// `core/engine/simulation.ts`: random plans, concurrency, durations and outcomes; the invariants are
// checked whenever simulated time moves on, and over the whole timeline.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimingFiles } from '../../src/core/engine/queries.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import { cascade, depsOf, depths, longestRemainingPath, readySet, stall } from '../../src/core/plan/graph.ts';
import { computeOverlaps, overlapSets } from '../../src/core/plan/overlap.ts';
import { attemptsOf, clonePlan, type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { parallelGroups, pickStarts, projectedRounds } from '../../src/core/plan/schedule.ts';
import { simulateRun, SIMULATION_DEFAULTS, type SimulationTrace } from '../../src/core/engine/simulation.ts';
import { conflictBrute, MAX_SIM_TASKS, planArb, reachable, type Simulation, simulationArb } from '../support/arbitraries.ts';

const MAX_ATTEMPTS = 3;

interface Interval {
  task: number;
  start: number;
  end: number;
  ok: boolean;
}

interface SimResult {
  plan: Plan;
  intervals: Interval[];
  makespan: number;
  trace: SimulationTrace;
}

/** Run the simulation through the engine's step function, asserting the invariants as time moves on. */
function simulate(sim: Simulation, needsApproval: readonly boolean[] = []): SimResult {
  const start = clonePlan(sim.plan);
  start.tasks.forEach((t, i) => {
    if (needsApproval[i]) t.gate = 'human-approval';
  });
  const completedAt = new Map<number, number>();
  let steps = 0;
  const observe = (state: EngineState) => {
    expect(steps++).toBeLessThan(10_000);
    const tasks = state.plan.tasks;
    const running = [...state.attempts.values()].filter((a) => a.stage === 'running').map((a) => a.task);
    expect(running.length).toBeLessThanOrEqual(sim.concurrency);
    for (const r of running) {
      // Only tasks whose blockers all completed run.
      for (const d of tasks[r]!.blockedBy) expect(statusOf(tasks[d]!)).toBe('completed');
      // Nothing running beside it touches the same files.
      for (const other of running) if (other !== r) expect(conflictBrute(tasks[r]!, tasks[other]!)).toBe(false);
    }
    // The engine already cascaded whatever an outcome made impossible.
    expect(cascade(tasks)).toEqual([]);
    // Work-conserving: whatever is still ready waits only for a full slot count or an overlap
    // with a running task or with work that claims its files (awaiting approval).
    if (state.stop === null && running.length < sim.concurrency) {
      const claiming = claimingFiles(state);
      for (const r of readySet(tasks)) {
        const waitsOnOverlap = [...running, ...claiming].some((x) => conflictBrute(tasks[r]!, tasks[x]!));
        expect(waitsOnOverlap).toBe(true);
      }
    }
  };
  const trace = simulateRun(
    start,
    { ...SIMULATION_DEFAULTS, maxAttempts: MAX_ATTEMPTS, concurrency: sim.concurrency, schedule: 'continuous' },
    (task, attempt) => ({ durationMs: sim.durations[task]!, report: attempt <= sim.failuresBefore[task]! ? 'FAILED' : 'COMPLETED' }),
    observe,
  );
  const intervals: Interval[] = [];
  for (const x of trace.intervals) {
    // Every attempt ran to an outcome: completed, a retry, failed for good, or awaiting approval.
    expect(['completed', 'awaiting_approval', 'retry', 'failed']).toContain(x.outcome);
    const ok = x.outcome === 'completed' || x.outcome === 'awaiting_approval';
    if (x.outcome === 'completed') completedAt.set(x.task, x.end);
    intervals.push({ task: x.task, start: x.start, end: x.end, ok });
  }
  // A task started only after its blockers completed.
  for (const x of trace.intervals) for (const d of trace.state.plan.tasks[x.task]!.blockedBy) expect(completedAt.get(d)!).toBeLessThanOrEqual(x.start);
  // No attempt counted twice: each task's attempts are its runs.
  for (const [i, t] of trace.state.plan.tasks.entries()) expect(attemptsOf(t)).toBe(trace.intervals.filter((x) => x.task === i).length);
  expect(trace.state.attempts.size).toBe(0);
  return { plan: trace.state.plan, intervals, makespan: trace.makespan, trace };
}

/** Checks over the whole recorded timeline. */
function checkTimeline(sim: Simulation, r: SimResult): void {
  const { intervals } = r;
  // Never more than `concurrency` at once, never two conflicting tasks at once.
  for (const a of intervals) {
    const concurrent = intervals.filter((b) => b.start < a.end && a.start < b.end);
    // Intervals are half-open; count those alive at a's start.
    const aliveAtStart = intervals.filter((b) => b.start <= a.start && a.start < b.end);
    expect(aliveAtStart.length).toBeLessThanOrEqual(sim.concurrency);
    for (const b of concurrent) {
      if (b === a) continue;
      expect(b.task).not.toBe(a.task);
      expect(conflictBrute(r.plan.tasks[a.task]!, r.plan.tasks[b.task]!)).toBe(false);
    }
  }
  // A task starts only after every blocker's successful attempt ended.
  const reach = reachable(depsOf(r.plan.tasks));
  for (const a of intervals) {
    for (const d of reach[a.task]!) {
      const done = intervals.find((b) => b.task === d && b.ok);
      expect(done).toBeDefined();
      expect(done!.end).toBeLessThanOrEqual(a.start);
    }
  }
}

describe('scheduler simulation', () => {
  it('respects blockers, overlaps and concurrency, and always terminates with every task terminal', () => {
    fc.assert(
      fc.property(simulationArb(), (sim) => {
        const r = simulate(sim);
        checkTimeline(sim, r);
        // The circuit breaker may stop the run: then what is left is pending, and the breaker's rule held.
        const stopped = r.trace.state.stop?.reason === 'breaker';
        if (stopped) expect(r.trace.events.some((e) => e.type === 'breaker')).toBe(true);
        for (const [i, t] of r.plan.tasks.entries()) {
          const s = statusOf(t);
          if (stopped && s === 'pending') continue;
          expect(['completed', 'failed', 'skipped']).toContain(s);
          // A task fails for good only after MAX_ATTEMPTS attempts, and completes when it had fewer failures.
          if (s === 'failed') expect(attemptsOf(t)).toBe(MAX_ATTEMPTS);
          if (s === 'completed') expect(attemptsOf(t)).toBe(sim.failuresBefore[i]! + 1);
          if (s === 'skipped') {
            expect(t.skippedBy).toBeDefined();
            expect(statusOf(r.plan.tasks[t.skippedBy!]!)).toBe('failed');
            expect(attemptsOf(t)).toBe(0);
          }
        }
        if (!stopped) expect(stall(r.plan.tasks).kind).toBe('none');
      }),
      { numRuns: 200 },
    );
  });

  it('with every attempt succeeding, every task completes exactly once', () => {
    fc.assert(
      fc.property(simulationArb({ allSucceed: true }), (sim) => {
        const r = simulate(sim);
        checkTimeline(sim, r);
        expect(r.plan.tasks.every((t) => statusOf(t) === 'completed' && attemptsOf(t) === 1)).toBe(true);
        expect(r.intervals.map((x) => x.task).sort((a, b) => a - b)).toEqual(r.plan.tasks.map((_, i) => i));
        // Work on the critical path alone bounds the makespan from below; serial work from above.
        const durations = r.plan.tasks.map((_, i) => sim.durations[i]!);
        const lrp = longestRemainingPath(depsOf(r.plan.tasks), (i) => durations[i]!);
        expect(r.makespan).toBeGreaterThanOrEqual(Math.max(...lrp));
        expect(r.makespan).toBeLessThanOrEqual(durations.reduce((a, b) => a + b, 0));
      }),
      { numRuns: 200 },
    );
  });

  it('with enough slots and no overlaps, every task starts the moment its last blocker completes', () => {
    fc.assert(
      fc.property(simulationArb({ allSucceed: true }), (sim) => {
        const plain: Simulation = {
          ...sim,
          concurrency: MAX_SIM_TASKS,
          plan: { ...sim.plan, tasks: sim.plan.tasks.map((t) => ({ ...t, metadata: { files: { create: [], modify: [] } } })) },
        };
        const r = simulate(plain);
        const end = new Map(r.intervals.map((x) => [x.task, x.end]));
        for (const x of r.intervals) {
          const blockers = r.plan.tasks[x.task]!.blockedBy;
          expect(x.start).toBe(Math.max(0, ...blockers.map((d) => end.get(d)!)));
        }
      }),
      { numRuns: 100 },
    );
  });

  it('with tasks to approve and no failures, a run that stops short is waiting on approval, never deadlocked', () => {
    fc.assert(
      fc.property(simulationArb({ allSucceed: true }), fc.array(fc.boolean(), { minLength: MAX_SIM_TASKS, maxLength: MAX_SIM_TASKS }), (sim, needsApproval) => {
        const r = simulate(sim, needsApproval);
        const tasks = r.plan.tasks;
        for (const [i, t] of tasks.entries()) {
          const s = statusOf(t);
          expect(['completed', 'awaiting_approval', 'pending']).toContain(s);
          if (s === 'completed') expect(needsApproval[i]).toBeFalsy();
          if (s === 'awaiting_approval') expect(needsApproval[i]).toBe(true);
        }
        const pending = tasks.some((t) => statusOf(t) === 'pending');
        // Pending work that overlaps work awaiting approval is ready but held, so the engine's own verdict is the one to check.
        const approvalLeft = tasks.some((t) => statusOf(t) === 'awaiting_approval');
        expect(r.trace.state.stop?.reason).toBe(approvalLeft ? 'awaiting_approval' : 'all-done');
        if (!pending) expect(stall(tasks).kind).toBe('none');
      }),
      { numRuns: 150 },
    );
  });
});

describe('pickStarts', () => {
  it('is maximal: every ready task left out is held back by capacity, an overlap or the round', () => {
    fc.assert(
      fc.property(
        planArb({ statuses: 'consistent' }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { minLength: MAX_SIM_TASKS, maxLength: MAX_SIM_TASKS }),
        (plan, concurrency, admit) => {
          const tasks = plan.tasks;
          const overlaps = overlapSets(computeOverlaps(tasks));
          const priority = longestRemainingPath(depsOf(tasks));
          const running = new Set(tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' ? [i] : [])));
          const admitted = new Set(tasks.flatMap((_, i) => (admit[i] ? [i] : [])));
          const picked = pickStarts({ tasks, running, overlaps, concurrency, priority, admitted });
          const busy = new Set([...running, ...picked]);
          expect(picked.length).toBeLessThanOrEqual(Math.max(0, concurrency - running.size));
          for (const p of picked) {
            expect(readySet(tasks)).toContain(p);
            expect(admitted.has(p)).toBe(true);
            for (const b of busy) expect(overlaps[p]!.has(b)).toBe(false);
          }
          // Picked in priority order.
          for (let k = 1; k < picked.length; k++) expect(priority[picked[k - 1]!]!).toBeGreaterThanOrEqual(priority[picked[k]!]!);
          const full = busy.size >= concurrency;
          for (const r of readySet(tasks)) {
            if (picked.includes(r)) continue;
            const held = full || !admitted.has(r) || [...busy].some((b) => overlaps[r]!.has(b));
            expect(held).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('parallelGroups and projectedRounds', () => {
  it('parallelGroups partitions the ready set into groups with no overlap inside a group', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'consistent' }), (plan) => {
        const overlaps = overlapSets(computeOverlaps(plan.tasks));
        const ready = readySet(plan.tasks);
        const groups = parallelGroups(ready, overlaps, longestRemainingPath(depsOf(plan.tasks)));
        expect(groups.flat().sort((a, b) => a - b)).toEqual(ready);
        for (const g of groups) {
          expect(g.length).toBeGreaterThan(0);
          expect(g).toEqual([...g].sort((a, b) => a - b));
          for (const a of g) for (const b of g) if (a !== b) expect(conflictBrute(plan.tasks[a]!, plan.tasks[b]!)).toBe(false);
        }
        // Greedy colouring: every task in group k > 0 overlaps some task in each earlier group.
        groups.forEach((g, k) => {
          for (const i of g) for (const earlier of groups.slice(0, k)) expect(earlier.some((j) => overlaps[i]!.has(j))).toBe(true);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('projectedRounds: one round per depth level, every pending task exactly once, after its blockers', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'pending' }), (plan) => {
        const deps = depsOf(plan.tasks);
        const overlaps = overlapSets(computeOverlaps(plan.tasks));
        const rounds = projectedRounds(plan.tasks, overlaps, longestRemainingPath(deps));
        const d = depths(deps);
        expect(rounds.length).toBe(Math.max(...d));
        rounds.forEach((round, k) => {
          for (const i of round.flat()) expect(d[i]).toBe(k + 1);
          for (const g of round) for (const a of g) for (const b of g) if (a !== b) expect(overlaps[a]!.has(b)).toBe(false);
        });
        expect(rounds.flat(2).sort((a, b) => a - b)).toEqual(plan.tasks.map((_, i) => i));
        // The input is not mutated.
        expect(plan.tasks.every((t) => statusOf(t) === 'pending')).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
