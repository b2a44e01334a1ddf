import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readySet } from '../../src/core/plan/graph.ts';
import { taskAt } from '../../src/core/plan/plan.ts';
import { buildTask, planArb } from '../support/arbitraries.ts';

const runs = { numRuns: 200 };

/** An index no list of `length` holds: before it, at or past its end, or not a whole number. */
const outsideArb = (length: number): fc.Arbitrary<number> =>
  fc.oneof(
    fc.integer({ min: -1_000, max: -1 }),
    fc.integer({ min: length, max: length + 1_000 }),
    fc.double({ min: -1, max: length + 1, noNaN: true }).filter((x) => !Number.isInteger(x)),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  );

describe('taskAt', () => {
  it('gives the very task at every index of the plan', () => {
    fc.assert(
      fc.property(
        planArb().chain((plan) => fc.tuple(fc.constant(plan), fc.nat({ max: Math.max(0, plan.tasks.length - 1) }))),
        ([plan, index]) => {
          fc.pre(plan.tasks.length > 0);
          expect(taskAt(plan.tasks, index)).toBe(plan.tasks[index]);
        },
      ),
      runs,
    );
  });

  it('throws for an index out of range, naming the index and how many tasks there are', () => {
    fc.assert(
      fc.property(
        planArb().chain((plan) => fc.tuple(fc.constant(plan), outsideArb(plan.tasks.length))),
        ([plan, index]) => {
          expect(() => taskAt(plan.tasks, index)).toThrow(new Error(`task index ${index} is out of range: there are ${plan.tasks.length} tasks`));
        },
      ),
      runs,
    );
  });

  it("reads a group's task indices as it reads a plan's tasks", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { minLength: 1 }), (group) => {
        expect(taskAt(group, 0)).toBe(group[0]);
        expect(taskAt(group, group.length - 1)).toBe(group[group.length - 1]);
        expect(() => taskAt(group, group.length)).toThrow(`task index ${group.length} is out of range: there are ${group.length} tasks`);
      }),
      runs,
    );
    expect(() => taskAt([], 0)).toThrow('task index 0 is out of range: there are 0 tasks');
  });
});

describe('readySet with a blocker that is not in the plan', () => {
  it('leaves its dependant waiting instead of reading past the tasks', () => {
    const files = { create: ['a.txt'], modify: [], reads: [] };
    const tasks = [buildTask(0, [], files, 'completed'), buildTask(1, [0, 7], files, 'pending'), buildTask(2, [0], files, 'pending')];
    expect(readySet(tasks)).toEqual([2]);
  });
});
