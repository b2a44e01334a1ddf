// The schemas' validators are compiled ahead of time (scripts/plan-validator.ts): each committed
// file must be what its schema makes, and it must judge every plan (every session file, every part
// of one read on its own) as ajv compiling the schema at run time would, errors included.

import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validate as generated } from '../../src/core/plan/plan-schema.generated.ts';
import { GENERATED_VALIDATORS, PLAN_SCHEMA_FILE, SESSION_VALIDATOR, validatorFor } from '../../scripts/plan-validator.ts';
import { brokenCorpus, validText } from '../plans/corpus.ts';
import { planArb } from '../support/arbitraries.ts';
import { repoRoot } from '../support/execute.ts';
import { SANDBOX_MODES } from '../../src/adapters/sandbox/sandbox.ts';
import type { AttemptStage } from '../../src/core/engine/attempt.ts';
import type { Baseline } from '../../src/core/engine/state.ts';
import type { ReportedStatus, WorkerFailure } from '../../src/core/attempt/worker-run.ts';
import type { LimitKind } from '../../src/core/limits/limiter.ts';
import * as sessionValidators from '../../src/run/session/session-schema.generated.ts';

const compiled = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(join(repoRoot, PLAN_SCHEMA_FILE), 'utf8')));

/** What a validator says of `data`: valid, or its errors. */
function verdict(validate: { (data: unknown): boolean; errors?: unknown }, data: unknown) {
  return validate(data) ? 'valid' : validate.errors;
}

describe('the generated validators', () => {
  it.each(GENERATED_VALIDATORS.map((validator) => [validator.file, validator] as const))(
    '%s is what its schema makes (run `npx tsx scripts/plan-validator.ts` after changing the schema)',
    async (file, validator) => {
      expect(await readFile(join(repoRoot, file), 'utf8')).toBe(await validatorFor(repoRoot, validator));
    },
  );
});

describe('the generated plan validator', () => {
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

/** Every place in `value`, as the keys that lead to it. */
function placesIn(value: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  const inner = Array.isArray(value)
    ? value.flatMap((item, index) => placesIn(item, [...at, index]))
    : typeof value === 'object' && value !== null
      ? Object.entries(value).flatMap(([key, item]) => placesIn(item, [...at, key]))
      : [];
  return [at, ...inner];
}

/** `value` with what stands at `place` replaced by `replacement` (or removed, for `undefined`). */
function withAt(value: unknown, place: ReadonlyArray<string | number>, replacement: unknown): unknown {
  if (place.length === 0) return replacement;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of place.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = place[place.length - 1]!;
  if (replacement === undefined) delete parent[last];
  else parent[last] = replacement;
  return copy;
}

describe('the generated session file validator', () => {
  const schema = JSON.parse(readFileSync(join(repoRoot, SESSION_VALIDATOR.schema), 'utf8'));
  const ajv = new Ajv({ ...SESSION_VALIDATOR.options, strict: false });
  ajv.addSchema(schema);
  const pairs = Object.entries(SESSION_VALIDATOR.exports).map(([name, pointer]) => ({
    name,
    generated: (sessionValidators as Record<string, { (data: unknown): boolean; errors?: unknown }>)[name]!,
    compiled: ajv.getSchema(pointer === '#' ? schema.$id : `${schema.$id}${pointer}`)!,
  }));
  const pair = (name: string) => pairs.find((p) => p.name === name)!;
  const fixture = (path: string) => JSON.parse(readFileSync(join(repoRoot, 'test/fixtures', path), 'utf8'));
  const files = [
    fixture('resume/session/design/prompts/session.json'),
    fixture('session-file/3b4a9a1/session.json'),
    fixture('session-file/3b4a9a1/read.json'),
  ];
  const attempts: unknown[] = files.flatMap((file) => file.engine.attempts);
  const anyValue = fc.oneof(
    fc.constant(undefined),
    fc.string({ maxLength: 3 }),
    fc.integer({ min: -2, max: 3 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constant(null),
    fc.boolean(),
    fc.constant([]),
    fc.constant({}),
    fc.constantFrom('unknown', 'running', 'completed', 'awaiting_approval', 'rate-limited', 'a'.repeat(40), 'refs/heads/main'),
  );

  it('exports the file’s validator and one for each part read on its own', () => {
    expect(pairs.map((p) => p.name)).toEqual(['validateSessionFile', 'validateAttempt', 'validateEarlierVerified']);
    expect(Object.keys(sessionValidators).sort()).toEqual(pairs.map((p) => p.name).sort());
  });

  it('names in its lists every member of the types the reading code gives them, and nothing else', () => {
    // Each record below must name every member of its type and no other (tsc holds it to that);
    // the reasons a run stops for are the journal's (test/ui/render.test.ts holds those to StopReason).
    const runFinished = JSON.parse(readFileSync(join(repoRoot, 'schemas/event.schema.json'), 'utf8')).oneOf.find(
      (event: any) => event.title === 'run-finished',
    );
    const failureReasons: Record<WorkerFailure['reason'], true> = {
      'agent-missing': true,
      'not-authenticated': true,
      'rate-limited': true,
      overloaded: true,
      'api-unreachable': true,
      interrupted: true,
      'timed-out': true,
      'max-turns': true,
      'max-budget': true,
      'api-error': true,
      'no-result': true,
      'garbage-output': true,
      'no-worktree': true,
    };
    const limitKinds: Record<LimitKind, true> = { 'rate-limit': true, overloaded: true, 'usage-limit': true, 'api-unreachable': true };
    const baselines: Record<Baseline, true> = { none: true, due: true, testing: true, passed: true, failed: true };
    const statuses: Record<ReportedStatus, true> = { COMPLETED: true, FAILED: true, BLOCKED: true };
    const stages: Record<AttemptStage, true> = { running: true, paused: true, verifying: true, verified: true, recording: true, queued: true, gating: true };
    const { definitions } = schema;
    const sorted = (values: unknown[]) => values.map(String).sort();
    expect(sorted(definitions.stop.properties.reason.enum)).toEqual(sorted(runFinished.properties.reason.enum));
    expect(sorted(definitions.workerFailure.oneOf.map((shape: any) => shape.properties.reason.const))).toEqual(sorted(Object.keys(failureReasons)));
    expect(sorted(definitions.limiter.properties.kind.enum.filter((kind: unknown) => kind !== null))).toEqual(sorted(Object.keys(limitKinds)));
    expect(sorted(definitions.engine.properties.baseline.enum)).toEqual(sorted(Object.keys(baselines)));
    expect(sorted(definitions.workerRun.properties.outcome.oneOf[0].properties.statusLine.oneOf[0].properties.status.enum)).toEqual(
      sorted(Object.keys(statuses)),
    );
    expect(sorted(definitions.attempt.oneOf.flatMap((shape: any) => shape.properties.stage.enum ?? [shape.properties.stage.const]))).toEqual(
      sorted(Object.keys(stages)),
    );
    for (const sandbox of schema.properties.sandbox.oneOf.slice(0, 2)) expect(sandbox.properties.mode.enum).toEqual([...SANDBOX_MODES]);
  });

  it('passes the session files of earlier versions and every attempt record in them', () => {
    for (const file of files) expect(verdict(pair('validateSessionFile').generated, file)).toBe('valid');
    expect(attempts.length).toBeGreaterThan(10);
    for (const attempt of attempts) expect(verdict(pair('validateAttempt').generated, attempt)).toBe('valid');
  });

  it('judges those files, and any value put anywhere in them, as ajv compiling at run time does', () => {
    const file = pair('validateSessionFile');
    for (const sample of files) {
      const places = placesIn(sample);
      let refused = 0;
      fc.assert(
        fc.property(fc.constantFrom(...places), anyValue, (place, value) => {
          const data = withAt(sample, place, value);
          const judged = verdict(file.generated, data);
          if (judged !== 'valid') refused++;
          expect(judged).toEqual(verdict(file.compiled, data));
        }),
        { numRuns: 300 },
      );
      // Not a schema that passes anything: most values put in the wrong place are refused.
      expect(refused).toBeGreaterThan(30);
    }
  });

  it('judges attempt records, and the earlier version’s verified entries, with any value put anywhere in them, as ajv compiling at run time does', () => {
    const attempt = pair('validateAttempt');
    const earlier = pair('validateEarlierVerified');
    const verifiedEntry = { task: 1, result: 'made b', work: files[1].engine.attempts[3].work };
    expect(verdict(earlier.generated, verifiedEntry)).toBe('valid');
    fc.assert(
      fc.property(
        fc.constantFrom(...attempts, verifiedEntry).chain((record) => fc.tuple(fc.constant(record), fc.constantFrom(...placesIn(record)), anyValue)),
        ([record, place, value]) => {
          const data = withAt(record, place, value);
          for (const { generated: mine, compiled } of [attempt, earlier]) expect(verdict(mine, data)).toEqual(verdict(compiled, data));
        },
      ),
      { numRuns: 500 },
    );
  });
});
