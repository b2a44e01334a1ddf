import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ancestorMatrix,
  cascade,
  criticalPath,
  dependantsOf,
  depsOf,
  depths,
  findCycles,
  longestRemainingPath,
  readySet,
  stall,
  topologicalOrder,
} from '../../src/core/plan/graph.ts';
import { computeOverlaps } from '../../src/core/plan/overlap.ts';
import { statusOf } from '../../src/core/plan/plan.ts';
import { dagArb, graphArb, hasCycleBrute, overlapsBrute, planArb, reachable } from '../support/arbitraries.ts';

const runs = { numRuns: 200 };
const DEAD = new Set(['failed', 'blocked', 'skipped']);

describe('graph properties', () => {
  it('topologicalOrder is a permutation with every task after its blockers', () => {
    fc.assert(
      fc.property(dagArb(), (deps) => {
        const order = topologicalOrder(deps);
        expect([...order].sort((a, b) => a - b)).toEqual(deps.map((_, i) => i));
        const pos = new Map(order.map((v, k) => [v, k]));
        for (const [i, ds] of deps.entries()) for (const d of ds) expect(pos.get(d)!).toBeLessThan(pos.get(i)!);
      }),
      runs,
    );
  });

  it('ancestorMatrix matches plain reachability', () => {
    fc.assert(
      fc.property(dagArb(), (deps) => {
        const anc = ancestorMatrix(deps);
        const reach = reachable(deps);
        for (const i of deps.keys()) for (const j of deps.keys()) expect(anc[i]![j]).toBe(reach[i]!.has(j));
      }),
      runs,
    );
  });

  it('readySet is exactly the pending tasks whose blockers all completed', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'any' }), (plan) => {
        const ready = new Set(readySet(plan.tasks));
        plan.tasks.forEach((t, i) => {
          const expected = statusOf(t) === 'pending' && t.blockedBy.every((d) => statusOf(plan.tasks[d]!) === 'completed');
          expect(ready.has(i)).toBe(expected);
        });
        expect(readySet(plan.tasks)).toEqual([...ready].sort((a, b) => a - b));
      }),
      runs,
    );
  });

  it('depth = 1 + the deepest blocker (1 without blockers)', () => {
    fc.assert(
      fc.property(dagArb(), (deps) => {
        const d = depths(deps);
        for (const [i, ds] of deps.entries()) expect(d[i]).toBe(1 + Math.max(0, ...ds.map((b) => d[b]!)));
      }),
      runs,
    );
  });

  it('longest remaining path ≥ 1 + that of any dependant, with equality for the longest one', () => {
    fc.assert(
      fc.property(dagArb(), fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 8, maxLength: 8 }), (deps, ws) => {
        const dependants = dependantsOf(deps);
        const unit = longestRemainingPath(deps);
        deps.forEach((_, v) => {
          for (const w of dependants[v]!) expect(unit[v]!).toBeGreaterThanOrEqual(1 + unit[w]!);
          expect(unit[v]).toBe(1 + Math.max(0, ...dependants[v]!.map((w) => unit[w]!)));
        });
        const weight = (i: number) => ws[i]!;
        const weighted = longestRemainingPath(deps, weight);
        for (const v of deps.keys()) expect(weighted[v]).toBe(weight(v) + Math.max(0, ...dependants[v]!.map((w) => weighted[w]!)));
      }),
      runs,
    );
  });

  it('criticalPath is a blockedBy chain as long as the longest remaining path', () => {
    fc.assert(
      fc.property(dagArb(), (deps) => {
        const path = criticalPath(deps);
        const lrp = longestRemainingPath(deps);
        expect(path.length).toBe(Math.max(...lrp));
        for (let k = 1; k < path.length; k++) expect(deps[path[k]!]).toContain(path[k - 1]);
        expect(deps[path[0]!]).toEqual([]);
      }),
      runs,
    );
  });

  it('findCycles finds a cycle iff topologicalOrder throws iff the graph has a cycle', () => {
    fc.assert(
      fc.property(graphArb(), (deps) => {
        const cycles = findCycles(deps);
        let threw = false;
        try {
          topologicalOrder(deps);
        } catch {
          threw = true;
        }
        expect(cycles.length > 0).toBe(threw);
        expect(threw).toBe(hasCycleBrute(deps));
      }),
      { numRuns: 400 },
    );
  });

  it('every reported cycle is a closed walk along blockedBy edges, one per strongly connected component', () => {
    fc.assert(
      fc.property(graphArb(), (deps) => {
        const cycles = findCycles(deps);
        const reach = reachable(deps);
        const seen = new Set<number>();
        for (const c of cycles) {
          expect(c.length).toBeGreaterThanOrEqual(2);
          expect(c[0]).toBe(c[c.length - 1]);
          for (let k = 0; k + 1 < c.length; k++) expect(deps[c[k]!]).toContain(c[k + 1]);
          // An elementary cycle: no task repeats except the closing one.
          expect(new Set(c.slice(0, -1)).size).toBe(c.length - 1);
          // Different cycles come from different components: no task is shared, and no two are mutually reachable.
          for (const v of c.slice(0, -1)) {
            expect(seen.has(v)).toBe(false);
          }
          for (const v of seen) expect(reach[v]!.has(c[0]!) && reach[c[0]!]!.has(v)).toBe(false);
          for (const v of c.slice(0, -1)) seen.add(v);
        }
        // Every task on some cycle belongs to a component that was reported.
        deps.forEach((_, i) => {
          if (!reach[i]!.has(i)) return;
          const reported = cycles.some((c) => c[0] === i || (reach[i]!.has(c[0]!) && reach[c[0]!]!.has(i)));
          expect(reported).toBe(true);
        });
      }),
      { numRuns: 400 },
    );
  });

  it('cascade skips exactly the pending tasks with a failed/blocked/skipped ancestor, each with a real root cause', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'consistent' }), (plan) => {
        const deps = depsOf(plan.tasks);
        const reach = reachable(deps);
        const status = plan.tasks.map(statusOf);
        const skips = cascade(plan.tasks);
        const skipped = new Map(skips.map((s) => [s.index, s]));
        expect(skipped.size).toBe(skips.length);
        plan.tasks.forEach((_, i) => {
          const expected = status[i] === 'pending' && [...reach[i]!].some((a) => DEAD.has(status[a]!));
          expect(skipped.has(i)).toBe(expected);
        });
        for (const s of skips) {
          expect(DEAD.has(status[s.rootCause]!)).toBe(true);
          expect(reach[s.index]!.has(s.rootCause)).toBe(true);
          expect(deps[s.index]).toContain(s.via);
          expect(s.via === s.rootCause || reach[s.via]!.has(s.rootCause)).toBe(true);
        }
        expect(skips.map((s) => s.index)).toEqual([...skips.map((s) => s.index)].sort((a, b) => a - b));
      }),
      runs,
    );
  });

  it('stall: with nothing running, "none" means nothing is pending or something is ready', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'consistent' }), (plan) => {
        const s = stall(plan.tasks);
        const pending = plan.tasks.flatMap((t, i) => (statusOf(t) === 'pending' ? [i] : []));
        if (s.kind === 'none') expect(pending.length === 0 || readySet(plan.tasks).length > 0).toBe(true);
        else expect(readySet(plan.tasks)).toEqual([]);
        if (s.kind === 'deadlock') expect(s.pending).toEqual(pending);
        if (s.kind === 'awaiting_approval') {
          expect(s.waiting).toEqual(pending);
          for (const g of s.awaitingApproval) expect(statusOf(plan.tasks[g]!)).toBe('awaiting_approval');
        }
        expect(stall(plan.tasks, new Set([0])).kind).toBe('none');
      }),
      runs,
    );
  });
});

describe('overlap properties', () => {
  it('matches the brute-force definition, is symmetric, irreflexive and never between ordered tasks', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'any' }), (plan) => {
        const overlaps = computeOverlaps(plan.tasks);
        expect(overlaps).toEqual(overlapsBrute(plan.tasks));
        const reach = reachable(depsOf(plan.tasks));
        overlaps.forEach((os, i) => {
          expect(os).toEqual([...os].sort((a, b) => a - b));
          expect(os).not.toContain(i);
          for (const j of os) {
            expect(overlaps[j]).toContain(i);
            expect(reach[i]!.has(j) || reach[j]!.has(i)).toBe(false);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('tasks in one blockedBy chain never overlap, whatever they write', () => {
    fc.assert(
      fc.property(planArb({ shuffle: true }), (plan) => {
        const order = topologicalOrder(depsOf(plan.tasks));
        // Chain every task onto the previous one in a topological order.
        const chained = plan.tasks.map((t) => ({ ...t, blockedBy: [...t.blockedBy] }));
        for (let k = 1; k < order.length; k++) chained[order[k]!]!.blockedBy.push(order[k - 1]!);
        chained.forEach((t) => {
          t.blockedBy = [...new Set(t.blockedBy)];
        });
        expect(computeOverlaps(chained).every((o) => o.length === 0)).toBe(true);
      }),
      runs,
    );
  });
});
