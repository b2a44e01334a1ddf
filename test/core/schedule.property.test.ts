// A simulation of the engine's event loop over the pure scheduler: random plans, concurrency,
// durations and outcomes; the invariants are checked at every step.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyCascade, decide, type Judgement } from '../../src/core/finalize.ts';
import { depsOf, depths, longestRemainingPath, readySet, stall } from '../../src/core/graph.ts';
import { computeOverlaps, overlapSets } from '../../src/core/overlap.ts';
import { type Plan, attemptsOf, clonePlan, statusOf } from '../../src/core/plan.ts';
import { parallelGroups, pickStarts, projectedRounds } from '../../src/core/schedule.ts';
import { applyDecision, markStarted } from '../../src/core/transition.ts';
import { MAX_SIM_TASKS, type Simulation, conflictBrute, planArb, reachable, simulationArb } from '../support/arbitraries.ts';

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
}

const passing = { missingCreated: [], unchangedModified: [], outsideChanges: [], acceptance: [] };

/** Run the simulation, asserting the per-step invariants as it goes. */
function simulate(sim: Simulation, gated: readonly boolean[] = []): SimResult {
  const plan = clonePlan(sim.plan);
  plan.tasks.forEach((t, i) => {
    if (gated[i]) t.gate = 'human-approval';
  });
  const tasks = plan.tasks;
  const overlaps = overlapSets(computeOverlaps(tasks));
  const priority = longestRemainingPath(depsOf(tasks));
  const running = new Map<number, { start: number; end: number }>();
  const intervals: Interval[] = [];
  const completedAt = new Map<number, number>();
  let now = 0;

  for (let step = 0; ; step++) {
    expect(step).toBeLessThan(10_000);
    const starts = pickStarts({ tasks, running: new Set(running.keys()), overlaps, concurrency: sim.concurrency, priority, now });
    expect(new Set(starts).size).toBe(starts.length);
    for (const s of starts) {
      const task = tasks[s]!;
      // Only pending tasks whose blockers all completed (and completed before now) start.
      expect(statusOf(task)).toBe('pending');
      for (const d of task.blockedBy) {
        expect(statusOf(tasks[d]!)).toBe('completed');
        expect(completedAt.get(d)!).toBeLessThanOrEqual(now);
      }
      // Nothing running beside it touches the same files.
      for (const r of running.keys()) expect(conflictBrute(task, tasks[r]!)).toBe(false);
      markStarted(plan, s);
      running.set(s, { start: now, end: now + sim.durations[s]! });
    }
    expect(running.size).toBeLessThanOrEqual(sim.concurrency);

    // Work-conserving: whatever is still ready is held back only by a full slot count or an overlap.
    if (running.size < sim.concurrency) {
      for (const r of readySet(tasks)) {
        const heldByOverlap = [...running.keys()].some((x) => conflictBrute(tasks[r]!, tasks[x]!));
        expect(heldByOverlap).toBe(true);
      }
    }

    if (running.size === 0) break;

    now = Math.min(...[...running.values()].map((r) => r.end));
    const finishing = [...running.entries()].filter(([, r]) => r.end === now).map(([i]) => i).sort((a, b) => a - b);
    for (const f of finishing) {
      const task = tasks[f]!;
      const span = running.get(f)!;
      running.delete(f);
      const fails = attemptsOf(task) < sim.failuresBefore[f]!;
      const judgement: Judgement = fails
        ? { kind: 'attempt-failed', failure: { reason: 'reported-failed', text: `attempt ${attemptsOf(task) + 1} broke` } }
        : { kind: 'verify', summary: `task ${f} done` };
      const decision = decide({ task, judgement, verification: fails ? undefined : passing, permissionDenials: [], maxAttempts: MAX_ATTEMPTS });
      intervals.push({ task: f, start: span.start, end: span.end, ok: !fails });
      expect(['completed', 'awaiting_approval', 'retry', 'failed']).toContain(decision.kind);
      const applied = applyDecision(plan, f, decision);
      expect(applied.attemptCounted).toBe(true);
      if (decision.kind === 'completed') completedAt.set(f, now);
      // applyDecision already cascaded whatever the outcome made impossible.
      expect(applyCascade(plan).skips).toEqual([]);
    }
  }
  return { plan, intervals, makespan: now };
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
        for (const [i, t] of r.plan.tasks.entries()) {
          const s = statusOf(t);
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
        expect(stall(r.plan.tasks).kind).toBe('none');
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

  it('with gates and no failures, a run that stops short is waiting on approval, never deadlocked', () => {
    fc.assert(
      fc.property(
        simulationArb({ allSucceed: true }),
        fc.array(fc.boolean(), { minLength: MAX_SIM_TASKS, maxLength: MAX_SIM_TASKS }),
        (sim, gated) => {
          const r = simulate(sim, gated);
          const tasks = r.plan.tasks;
          for (const [i, t] of tasks.entries()) {
            const s = statusOf(t);
            expect(['completed', 'awaiting_approval', 'pending']).toContain(s);
            if (s === 'completed') expect(gated[i]).toBeFalsy();
            if (s === 'awaiting_approval') expect(gated[i]).toBe(true);
          }
          const st = stall(tasks);
          const pending = tasks.some((t) => statusOf(t) === 'pending');
          expect(st.kind).toBe(pending ? 'awaiting-approval' : 'none');
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('pickStarts', () => {
  it('is maximal: every ready task left out is held back by capacity, an overlap, the round or a back-off', () => {
    fc.assert(
      fc.property(
        planArb({ statuses: 'consistent' }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.boolean(), { minLength: MAX_SIM_TASKS, maxLength: MAX_SIM_TASKS }),
        fc.array(fc.boolean(), { minLength: MAX_SIM_TASKS, maxLength: MAX_SIM_TASKS }),
        (plan, concurrency, admit, backingOff) => {
          const tasks = plan.tasks;
          const overlaps = overlapSets(computeOverlaps(tasks));
          const priority = longestRemainingPath(depsOf(tasks));
          const running = new Set(tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' ? [i] : [])));
          const admitted = new Set(tasks.flatMap((_, i) => (admit[i] ? [i] : [])));
          const notBefore = new Map(tasks.flatMap((_, i) => (backingOff[i] ? [[i, 2000] as [number, number]] : [])));
          const picked = pickStarts({ tasks, running, overlaps, concurrency, priority, admitted, notBefore, now: 1000 });
          const busy = new Set([...running, ...picked]);
          expect(picked.length).toBeLessThanOrEqual(Math.max(0, concurrency - running.size));
          for (const p of picked) {
            expect(readySet(tasks)).toContain(p);
            expect(admitted.has(p)).toBe(true);
            expect(backingOff[p]).toBe(false);
            for (const b of busy) expect(overlaps[p]!.has(b)).toBe(false);
          }
          // Picked in priority order.
          for (let k = 1; k < picked.length; k++) expect(priority[picked[k - 1]!]!).toBeGreaterThanOrEqual(priority[picked[k]!]!);
          const full = busy.size >= concurrency;
          for (const r of readySet(tasks)) {
            if (picked.includes(r)) continue;
            const held = full || !admitted.has(r) || backingOff[r] || [...busy].some((b) => overlaps[r]!.has(b));
            expect(held).toBe(true);
          }
          // Once the back-off expires the same tasks are eligible.
          const later = pickStarts({ tasks, running, overlaps, concurrency, priority, notBefore, now: 2000 });
          const plainPick = pickStarts({ tasks, running, overlaps, concurrency, priority, now: 2000 });
          expect(later).toEqual(plainPick);
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
