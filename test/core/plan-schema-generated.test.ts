// The plan schema's validator is compiled ahead of time (scripts/plan-validator.ts): the committed
// file must be what the schema makes, and it must judge every plan as ajv compiling the schema at
// run time would, errors included.

import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validate as generated } from '../../src/core/plan-schema.generated.ts';
import { PLAN_SCHEMA_FILE, PLAN_VALIDATOR, PLAN_VALIDATOR_FILE, validatorFor } from '../../scripts/plan-validator.ts';
import { brokenCorpus, validText } from '../plans/corpus.ts';
import { planArb } from '../support/arbitraries.ts';
import { repoRoot } from '../support/execute.ts';

const compiled = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(join(repoRoot, PLAN_SCHEMA_FILE), 'utf8')));

/** What a validator says of `data`: valid, or its errors. */
function verdict(validate: { (data: unknown): boolean; errors?: unknown }, data: unknown) {
  return validate(data) ? 'valid' : validate.errors;
}

describe('the generated plan validator', () => {
  it('is what the schema makes (run `npm run build` after changing the schema)', async () => {
    expect(await readFile(join(repoRoot, PLAN_VALIDATOR_FILE), 'utf8')).toBe(await validatorFor(repoRoot, PLAN_VALIDATOR));
  });

  it('judges the broken-plan corpus and a valid plan as ajv compiling at run time does, errors included', () => {
    const plans = [...brokenCorpus().map((c) => c.text), validText('minimal')].flatMap((text) => {
      try {
        return [JSON.parse(text) as unknown];
      } catch {
        return [];
      }
    });
    expect(plans.length).toBeGreaterThan(10);
    for (const plan of plans) expect(verdict(generated, plan)).toEqual(verdict(compiled, plan));
  });

  it('judges arbitrary plans, and arbitrary values put into them, as ajv compiling at run time does', () => {
    const anyValue = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.constant(null),
      fc.boolean(),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.constant(''),
      fc.constant('\u{1F600}'),
    );
    fc.assert(
      fc.property(
        planArb(),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('subject', 'prompt', 'blockedBy', 'status', 'attempts', 'agent', 'metadata'), anyValue), { maxLength: 3 }),
        (plan, edits) => {
          const data = structuredClone(plan) as unknown as { tasks: Array<Record<string, unknown>> };
          for (const [index, field, value] of edits) if (data.tasks.length > 0) data.tasks[index % data.tasks.length]![field] = value;
          expect(verdict(generated, data)).toEqual(verdict(compiled, data));
        },
      ),
      { numRuns: 200 },
    );
  });
});
