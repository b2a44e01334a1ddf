// The walk of a plan beside its schema (src/core/plan/plan-fields.ts), as invariants over random plans:
// a plan of defined fields has no unknown one; `x-` keys anywhere change nothing; a defined field
// of a task written in another case is refused by validation, naming the key as written.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nearMisses, unknownFields } from '../../src/core/plan/plan-fields.ts';
import { lintPlan } from '../../src/core/plan/lint/plan-lint.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { validatePlan } from '../../src/core/plan/validate.ts';
import { planArb } from '../support/arbitraries.ts';

/** Every object of `value` (the value itself included), depth first. */
function objectsOf(value: unknown): Array<Record<string, unknown>> {
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap(objectsOf);
  const object = value as Record<string, unknown>;
  return [object, ...Object.values(object).flatMap(objectsOf)];
}

describe('fields the schema does not define', () => {
  it('a plan of defined fields has none', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'any', maxTasks: 6 }), (plan) => {
        expect(unknownFields(plan)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('keys starting x- at any level change nothing: the plan is as valid, and no warning names them', () => {
    fc.assert(
      fc.property(
        planArb({ statuses: 'any', maxTasks: 6 }),
        fc.array(fc.tuple(fc.nat(), fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 5 }),
        (plan, keys) => {
          const before = lintPlan(plan, null).warnings;
          const edited = structuredClone(plan);
          const objects = objectsOf(edited);
          for (const [at, name] of keys) objects[at % objects.length]![`x-${name}`] = { note: name };
          expect(validatePlan(structuredClone(edited)).ok).toBe(validatePlan(structuredClone(plan)).ok);
          expect(unknownFields(edited)).toEqual([]);
          expect(lintPlan(edited as Plan, null).warnings).toEqual(before);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a task's defined field written in another case is refused, naming the key as written", () => {
    fc.assert(
      fc.property(planArb({ statuses: 'pending', maxTasks: 4 }), fc.nat(), fc.nat(), (plan, pickTask, pickKey) => {
        const edited = structuredClone(plan) as unknown as { tasks: Array<Record<string, unknown>> };
        const task = edited.tasks[pickTask % edited.tasks.length]!;
        const keys = Object.keys(task);
        const key = keys[pickKey % keys.length]!;
        const shouted = key.toUpperCase();
        task[shouted] = task[key];
        delete task[key];
        const r = validatePlan(edited);
        expect(r.ok).toBe(false);
        expect((r.ok ? [] : r.error).some((line) => line.includes(`"${shouted}"`) || line.includes(`.${shouted}:`))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('a near miss is the nearest defined fields within its edits, in any case', () => {
    const task = ['subject', 'prompt', 'blockedBy', 'metadata', 'agent', 'gate', 'status', 'usage', 'commit'];
    expect(nearMisses('blockedby', task)).toEqual(['blockedBy']);
    expect(nearMisses('BLOCKEDBY', task)).toEqual(['blockedBy']);
    expect(nearMisses('blocked_by', task)).toEqual(['blockedBy']);
    expect(nearMisses('gaet', task)).toEqual(['gate']);
    expect(nearMisses('date', task)).toEqual(['gate']);
    expect(nearMisses('data', task)).toEqual([]);
    expect(nearMisses('estimate', task)).toEqual([]);
    expect(nearMisses('commits', task)).toEqual(['commit']);
  });
});
