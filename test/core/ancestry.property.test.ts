// The ancestry that overlaps and stalls are computed from (bitsets over chosen members) against
// references, on DAGs large enough to span several 32-bit words of a bitset.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ancestry, type Deps, depsOf, stall, topologicalOrder } from '../../src/core/plan/graph.ts';
import { computeOverlaps } from '../../src/core/plan/overlap.ts';
import { statusOf, type Task } from '../../src/core/plan/plan.ts';
import { dagArb, graphArb, hasCycleBrute, overlapsBrute, planArb, reachable } from '../support/arbitraries.ts';

const runs = { numRuns: 150 };

/** The n × n matrix foreman filled before `ancestry` (row v = its blockers and their rows). */
function matrixOracle(deps: Deps): boolean[][] {
  const n = deps.length;
  const anc = deps.map(() => new Array<boolean>(n).fill(false));
  for (const v of topologicalOrder(deps)) {
    for (const d of deps[v]!) {
      anc[v]![d] = true;
      for (let j = 0; j < n; j++) if (anc[d]![j]) anc[v]![j] = true;
    }
  }
  return anc;
}

/** A DAG and a subset of its tasks (possibly empty, possibly all of them). */
const dagWithMembers = dagArb({ maxTasks: 100, maxDeps: 4 }).chain((deps) => fc.tuple(fc.constant(deps), fc.subarray(deps.map((_, i) => i))));

describe('ancestry', () => {
  it('dependsOn and unordered match the old matrix for every task against every member', () => {
    fc.assert(
      fc.property(dagWithMembers, ([deps, members]) => {
        const matrix = matrixOracle(deps);
        const ancestors = ancestry(deps, members);
        // One comparison per property run: an expect per pair makes the test slow, not stricter.
        expect(deps.map((_, task) => members.map((m) => ancestors.dependsOn(task, m)))).toEqual(deps.map((_, task) => members.map((m) => matrix[task]![m])));
        expect(members.map((a) => members.map((b) => ancestors.unordered(a, b)))).toEqual(
          members.map((a) => members.map((b) => !matrix[a]![b] && !matrix[b]![a])),
        );
      }),
      runs,
    );
  });

  it('refuses to answer about a task that is not a member', () => {
    const ancestors = ancestry([[], [0], [1]], [0, 2]);
    expect(ancestors.dependsOn(2, 0)).toBe(true);
    expect(() => ancestors.dependsOn(2, 1)).toThrow(/not a member/);
  });

  it('refuses a cyclic graph, members or not', () => {
    fc.assert(
      fc.property(graphArb({ maxTasks: 12 }), (deps) => {
        const build = () => [ancestry(deps, []), ancestry(deps, deps.keys())];
        if (hasCycleBrute(deps)) expect(build).toThrow(/cycle/);
        else expect(build).not.toThrow();
      }),
      runs,
    );
  });
});

describe('overlaps and stalls on larger plans', () => {
  // 60 tasks drawing from 13 paths: large groups of tasks sharing a file or a directory.
  const largePlan = planArb({ maxTasks: 60, maxDeps: 3, statuses: 'any' });

  it('computeOverlaps matches the brute-force definition', () => {
    fc.assert(
      fc.property(largePlan, (plan) => {
        expect(computeOverlaps(plan.tasks)).toEqual(overlapsBrute(plan.tasks));
      }),
      runs,
    );
  });

  it('stall says awaiting_approval exactly when every pending task depends on a task awaiting approval', () => {
    fc.assert(
      fc.property(planArb({ maxTasks: 60, maxDeps: 3, statuses: 'consistent' }), (plan) => {
        const tasks: readonly Task[] = plan.tasks;
        const reach = reachable(depsOf(tasks));
        const pending = tasks.flatMap((t, i) => (statusOf(t) === 'pending' ? [i] : []));
        const awaitingApproval = tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [i] : []));
        const s = stall(tasks);
        if (s.kind === 'none') return;
        const allWait = awaitingApproval.length > 0 && pending.every((i) => awaitingApproval.some((g) => reach[i]!.has(g)));
        expect(s.kind).toBe(allWait ? 'awaiting_approval' : 'deadlock');
      }),
      { numRuns: 300 },
    );
  });
});
