// Worked examples for the graph, overlap and scheduling functions (the properties are in
// *.property.test.ts).

import { describe, expect, it } from 'vitest';
import { countByStatus, criticalPath, depths, findCycles, longestRemainingPath, readySet, topologicalOrder } from '../../src/core/plan/graph.ts';
import { computeOverlaps, overlapSets } from '../../src/core/plan/overlap.ts';
import type { Plan, Task, TaskStatus } from '../../src/core/plan/plan.ts';
import { byPriority, parallelGroups, pickStarts, projectedRounds } from '../../src/core/plan/schedule.ts';

interface Spec {
  blockedBy?: number[];
  create?: string[];
  modify?: string[];
  reads?: string[];
  status?: TaskStatus;
}

const tasks = (specs: Spec[]): Task[] =>
  specs.map((s, i) => ({
    subject: `T${i}`,
    prompt: 'p',
    blockedBy: s.blockedBy ?? [],
    metadata: { files: { create: s.create ?? [], modify: s.modify ?? [] }, ...(s.reads ? { reads: s.reads } : {}) },
    ...(s.status ? { status: s.status } : {}),
  }));

describe('findCycles', () => {
  it('reports a self-loop, a 2-cycle and a 3-cycle as closed walks along blockedBy', () => {
    expect(findCycles([[0]])).toEqual([[0, 0]]);
    expect(findCycles([[2], [], [0]])).toEqual([[0, 2, 0]]);
    expect(findCycles([[1], [2], [0], [2]])).toEqual([[0, 1, 2, 0]]);
  });

  it('reports disjoint cycles separately, in order of their smallest task', () => {
    expect(findCycles([[], [], [3], [2], [], [5]])).toEqual([
      [2, 3, 2],
      [5, 5],
    ]);
  });

  it('finds nothing in a DAG, and survives a long chain', () => {
    expect(findCycles([[], [0], [0, 1]])).toEqual([]);
    const chain = Array.from({ length: 20_000 }, (_, i) => (i === 0 ? [] : [i - 1]));
    expect(findCycles(chain)).toEqual([]);
    chain[0] = [19_999];
    const cycles = findCycles(chain);
    expect(cycles).toHaveLength(1);
    expect(cycles[0]).toHaveLength(20_001);
  });

  it('topologicalOrder refuses a cycle', () => {
    expect(() => topologicalOrder([[1], [0]])).toThrow(/cycle/);
  });
});

describe('depths, longest remaining path, critical path', () => {
  // 0 ← 1 ← 3 ; 0 ← 2 ; 4 alone
  const deps = [[], [0], [0], [1], []];
  it('computes them', () => {
    expect(depths(deps)).toEqual([1, 2, 2, 3, 1]);
    expect(longestRemainingPath(deps)).toEqual([3, 2, 1, 1, 1]);
    expect(longestRemainingPath(deps, (i) => (i === 2 ? 10 : 1))).toEqual([11, 2, 10, 1, 1]);
    expect(criticalPath(deps)).toEqual([0, 1, 3]);
    expect(criticalPath(deps, (i) => (i === 2 ? 10 : 1))).toEqual([0, 2]);
    expect(criticalPath([])).toEqual([]);
  });
});

describe('readySet and countByStatus', () => {
  it('ready = pending with every blocker completed', () => {
    const ts = tasks([
      { status: 'completed' },
      { blockedBy: [0] },
      { blockedBy: [0, 1] },
      { status: 'failed' },
      { blockedBy: [3] },
      {},
      { status: 'in_progress' },
    ]);
    expect(readySet(ts)).toEqual([1, 5]);
    const plan: Plan = { schemaVersion: 3, goal: 'g', tasks: ts };
    expect(countByStatus(plan)).toEqual({ pending: 4, in_progress: 1, completed: 1, failed: 1, blocked: 0, skipped: 0, awaiting_approval: 0 });
  });
});

describe('computeOverlaps', () => {
  it('a chain A → B → C writing the same file: no overlaps', () => {
    expect(computeOverlaps(tasks([{ modify: ['src/a.ts'] }, { modify: ['src/a.ts'], blockedBy: [0] }, { modify: ['src/a.ts'], blockedBy: [1] }]))).toEqual([
      [],
      [],
      [],
    ]);
  });

  it('a chain listed out of order (C, A, B) is still a chain', () => {
    expect(computeOverlaps(tasks([{ create: ['x'], blockedBy: [2] }, { modify: ['x'] }, { modify: ['x'], blockedBy: [1] }]))).toEqual([[], [], []]);
  });

  it('siblings writing the same file overlap; through a transitive order they do not', () => {
    // 0 → {1, 2} → 3; 1 and 2 both modify x; 3 modifies x after both.
    const ts = tasks([{ create: ['x'] }, { modify: ['x'], blockedBy: [0] }, { modify: ['x'], blockedBy: [0] }, { modify: ['x'], blockedBy: [1, 2] }]);
    expect(computeOverlaps(ts)).toEqual([[], [2], [1], []]);
  });

  it('a directory covers everything under it, for writes and for reads', () => {
    const ts = tasks([
      { create: ['src/'] }, // 0 writes the whole src/
      { modify: ['src/lib/c.ts'] }, // 1 under src/
      { reads: ['src/lib/'] }, // 2 reads under src/
      { create: ['srcx/e.ts'] }, // 3 a sibling directory with a shared prefix
      { reads: ['src/a.ts'] }, // 4 reads only
      { create: ['docs/'] }, // 5 unrelated
    ]);
    expect(computeOverlaps(ts)).toEqual([[1, 2, 4], [0, 2], [0, 1], [], [0], []]);
  });

  it('two readers never overlap; a reader and a writer do', () => {
    expect(computeOverlaps(tasks([{ reads: ['a'] }, { reads: ['a'] }]))).toEqual([[], []]);
    expect(computeOverlaps(tasks([{ reads: ['a'] }, { create: ['a'] }]))).toEqual([[1], [0]]);
  });
});

describe('scheduling examples', () => {
  // 0 → 1 → 2 (a chain), 3 and 4 alone; 3 and 4 write the same file.
  const ts = tasks([{}, { blockedBy: [0] }, { blockedBy: [1] }, { create: ['x'] }, { modify: ['x'] }]);
  const overlaps = overlapSets(computeOverlaps(ts));
  const priority = longestRemainingPath(ts.map((t) => t.blockedBy));

  it('byPriority: longest remaining path first, then index', () => {
    expect(byPriority([4, 3, 0], priority)).toEqual([0, 3, 4]);
  });

  it('pickStarts: the critical path first, overlapping tasks apart, within capacity', () => {
    expect(pickStarts({ tasks: ts, running: new Set(), overlaps, concurrency: 1, priority })).toEqual([0]);
    expect(pickStarts({ tasks: ts, running: new Set(), overlaps, concurrency: 4, priority })).toEqual([0, 3]);
    expect(pickStarts({ tasks: ts, running: new Set([3]), overlaps, concurrency: 4, priority })).toEqual([0]);
    expect(pickStarts({ tasks: ts, running: new Set([0, 3]), overlaps, concurrency: 2, priority })).toEqual([]);
  });

  it('pickStarts with rounds: only the admitted wave starts', () => {
    expect(pickStarts({ tasks: ts, running: new Set(), overlaps, concurrency: 4, priority, admitted: new Set([4]) })).toEqual([4]);
  });

  it('parallelGroups and projectedRounds', () => {
    expect(parallelGroups([0, 3, 4], overlaps, priority)).toEqual([[0, 3], [4]]);
    expect(projectedRounds(ts, overlaps, priority)).toEqual([[[0, 3], [4]], [[1]], [[2]]]);
  });
});
