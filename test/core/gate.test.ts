// The merge queue's decisions against a model of a test suite: some candidates break the build
// whenever they are in the stack (culprits), and a flaky suite fails some runs at random. What
// lands always passed; culprits are found and only culprits; a green batch costs one run.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterGateRun, emptyGateQueue, enqueue, type GateQueue, nextSegment } from '../../src/core/engine/gate.ts';

interface Outcome {
  integrated: number[];
  culprits: number[];
  flakes: number;
  runs: number;
  /** Every stack that was integrated, as tested: tip (integrated so far) + segment. */
  landedStacks: number[][];
}

/** Drains the queue; `failsRun(stack, run)` says whether the gate fails on that stack. */
function drain(candidates: number[], batchSize: number, failsRun: (stack: number[], run: number) => boolean): Outcome {
  let queue: GateQueue = enqueue(emptyGateQueue(), candidates);
  const out: Outcome = { integrated: [], culprits: [], flakes: 0, runs: 0, landedStacks: [] };
  for (let guard = 0; guard < 1000; guard++) {
    const next = nextSegment(queue, batchSize);
    if (next === null) return out;
    queue = next.queue;
    const stack = [...out.integrated, ...next.segment];
    const passed = !failsRun(stack, out.runs++);
    const after = afterGateRun(queue, passed);
    queue = after.queue;
    if (after.verdict.integrate.length > 0) {
      out.landedStacks.push([...out.integrated, ...after.verdict.integrate]);
      out.integrated.push(...after.verdict.integrate);
    }
    if (after.verdict.flake) out.flakes++;
    if (after.verdict.culprit !== null) out.culprits.push(after.verdict.culprit);
  }
  throw new Error('the gate did not finish');
}

const breaks = (bad: ReadonlySet<number>) => (stack: number[]) => stack.some((task) => bad.has(task));

describe('the merge queue', () => {
  it('a green batch costs one run', () => {
    const out = drain([0, 1, 2, 3], 8, () => false);
    expect(out).toMatchObject({ integrated: [0, 1, 2, 3], culprits: [], runs: 1 });
  });

  it('a batch of four with one culprit: the other three integrate and the culprit is confirmed in at most four more runs', () => {
    for (const culprit of [0, 1, 2, 3]) {
      const out = drain([0, 1, 2, 3], 8, breaks(new Set([culprit])));
      expect(out.culprits).toEqual([culprit]);
      expect(out.integrated.sort()).toEqual([0, 1, 2, 3].filter((t) => t !== culprit));
      expect(out.runs - 1).toBeLessThanOrEqual(4);
    }
  });

  it('two tasks that break only together: the first integrates, the second is the culprit', () => {
    const together = (stack: number[]) => stack.includes(0) && stack.includes(1);
    const out = drain([0, 1], 8, together);
    expect(out.integrated).toEqual([0]);
    expect(out.culprits).toEqual([1]);
  });

  it('a gate that fails once and then passes fails no task', () => {
    const out = drain([0, 1, 2, 3], 8, (_stack, run) => run === 0);
    expect(out.culprits).toEqual([]);
    expect(out.integrated.sort()).toEqual([0, 1, 2, 3]);
    expect(out.flakes).toBe(1);
  });

  it('a candidate alone in its batch that fails once is tested again before it is blamed', () => {
    expect(drain([5], 8, (_stack, run) => run === 0)).toMatchObject({ integrated: [5], culprits: [], flakes: 1, runs: 2 });
    expect(drain([5], 8, () => true)).toMatchObject({ integrated: [], culprits: [5], runs: 2 });
  });

  it('batches hold at most --gate-batch candidates', () => {
    const out = drain([0, 1, 2, 3, 4], 2, () => false);
    expect(out.runs).toBe(3);
    expect(out.landedStacks).toEqual([
      [0, 1],
      [0, 1, 2, 3],
      [0, 1, 2, 3, 4],
    ]);
  });

  it('with a deterministic suite, nothing that lands fails it, every culprit breaks it and every candidate ends integrated or blamed', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 16 }),
        fc.func(fc.boolean()),
        fc.integer({ min: 1, max: 16 }),
        (candidates, isBad, batchSize) => {
          const bad = new Set(candidates.filter((task) => isBad(task)));
          const fails = breaks(bad);
          const out = drain(candidates, batchSize, fails);
          for (const stack of out.landedStacks) expect(fails(stack)).toBe(false);
          expect(new Set(out.culprits)).toEqual(bad);
          expect([...out.integrated, ...out.culprits].sort((a, b) => a - b)).toEqual([...candidates].sort((a, b) => a - b));
          expect(out.flakes).toBe(0);
          if (bad.size === 0) expect(out.runs).toBe(Math.ceil(candidates.length / batchSize));
        },
      ),
    );
  });

  it('with a flaky suite, every candidate still ends integrated or blamed (none lost, none twice)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        fc.integer({ min: 1, max: 12 }),
        (candidates, flaky, batchSize) => {
          const out = drain(candidates, batchSize, (_stack, run) => flaky[run % flaky.length]!);
          expect([...out.integrated, ...out.culprits].sort((a, b) => a - b)).toEqual([...candidates].sort((a, b) => a - b));
        },
      ),
    );
  });
});
