// Plan validation: the JSON Schema first (ajv), then the rules a schema cannot say — indices,
// cycles, paths, overlaps. Every problem is one line naming where it is, e.g.
// `tasks[3].blockedBy[0]: task 7 does not exist (the plan has 5 tasks)`.

import type { ErrorObject, ValidateFunction } from 'ajv';
import { validate as generatedValidator } from './plan-schema.generated.ts';
import { commandHint, type Layout } from '../command-hint.ts';
import { err, ok, type Result } from '../result.ts';
import { findCycles } from './graph.ts';
import { describeJsonError } from './json-text.ts';
import { computeOverlaps } from './overlap.ts';
import { pathProblem } from './paths.ts';
import { describeNearMiss, misspellingNote, type UnknownField, unknownFields } from './plan-fields.ts';
import { editRuleProblem } from './scope.ts';
import { DEFAULT_MODEL, type Plan, SCHEMA_VERSION, statusOf } from './plan.ts';

// schemas/plan.schema.json compiled by ajv ahead of time (scripts/plan-validator.ts): loading ajv
// and compiling the schema at every start cost more than the rest of a plan step's start-up.
const validateSchema = generatedValidator as ValidateFunction;

/** `/tasks/3/blockedBy/0` → `tasks[3].blockedBy[0]` */
export function jsonPathOf(pointer: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let out = '';
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  return out === '' ? 'plan' : out;
}

/** The line for a required field `field` missing at `where`, with `why` it is required when the schema does not say. */
type MissingLine = (where: string, field: string, why?: string) => string;

function describeSchemaError(error: ErrorObject, data: unknown, missingLine: MissingLine): string {
  const where = jsonPathOf(error.instancePath);
  const value = valueAt(data, error.instancePath);
  switch (error.keyword) {
    case 'required':
      return missingLine(where, (error.params as { missingProperty: string }).missingProperty);
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ');
      if (where.endsWith('.status')) return `${where}: unknown status ${JSON.stringify(value)} (expected one of ${allowed})`;
      return `${where}: ${JSON.stringify(value)} is not one of ${allowed}`;
    }
    case 'minimum':
      if (where.endsWith('.attempts')) return `${where}: attempts cannot be negative (got ${JSON.stringify(value)})`;
      return `${where}: must be ≥ ${(error.params as { limit: number }).limit} (got ${JSON.stringify(value)})`;
    case 'minItems':
      return where === 'tasks' ? 'tasks: the plan has no tasks' : `${where}: must not be empty`;
    case 'minLength':
      return `${where}: must not be empty`;
    case 'type':
      return `${where}: must be ${withArticle((error.params as { type: string }).type)} (got ${typeName(value)})`;
    default:
      return `${where}: ${error.message ?? 'is invalid'}`;
  }
}

const withArticle = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);
const typeName = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'an array' : withArticle(typeof value));

function valueAt(data: unknown, pointer: string): unknown {
  let cur: unknown = data;
  for (const part of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** Parse and validate plan text. Every problem found is reported, not only the first. */
export interface ValidateOptions {
  /** Accept stale `fileOverlaps` (what `check --fix` is about to rewrite). */
  ignoreDeclaredOverlaps?: boolean;
  /** Where the problems are shown: stale `fileOverlaps` then say how to run `plan check --fix` (else they name no command). */
  layout?: Layout;
}

export function parsePlan(text: string, options: ValidateOptions = {}): Result<Plan, string[]> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return err([`plan: ${describeJsonError(text, e as Error)}`]);
  }
  return validatePlan(data, options);
}

export function validatePlan(data: unknown, options: ValidateOptions = {}): Result<Plan, string[]> {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return err([`plan: must be a JSON object (got ${typeName(data)})`]);
  }
  const version = (data as Record<string, unknown>).schemaVersion;
  if (version !== SCHEMA_VERSION) {
    return err([
      version === undefined
        ? `schemaVersion: missing; foreman reads schemaVersion ${SCHEMA_VERSION}`
        : `schemaVersion: ${JSON.stringify(version)} is not supported; foreman reads schemaVersion ${SCHEMA_VERSION}`,
    ]);
  }
  // A near miss of a defined field is refused with its correction; one that stands for a missing
  // required field is named on that field's line instead of a line of its own.
  const misspelt = unknownFields(data).filter((field) => field.meant.length > 0);
  const named = new Set<UnknownField>();
  const missingLine: MissingLine = (where, field, why = '') => {
    const spelt = misspelt.filter((f) => f.parent === where && f.meant.includes(field));
    for (const f of spelt) named.add(f);
    return `${where}: missing required field "${field}"${why}${misspellingNote(spelt)}`;
  };
  const nearMisses = () => misspelt.filter((field) => !named.has(field)).map(describeNearMiss);
  if (!validateSchema(data)) {
    // The const error for schemaVersion is handled above; ajv may also report an "if"-style duplicate.
    const problems = [...new Set((validateSchema.errors ?? []).map((e) => describeSchemaError(e, data, missingLine)))];
    return err([...problems, ...nearMisses()]);
  }
  const plan = data as Plan;
  const problems = semanticProblems(plan, options, missingLine);
  problems.push(...nearMisses());
  return problems.length > 0 ? err(problems) : ok(plan);
}

function semanticProblems(plan: Plan, options: ValidateOptions, missingLine: MissingLine): string[] {
  const problems: string[] = [];
  const n = plan.tasks.length;
  let indicesOk = true;

  plan.tasks.forEach((task, i) => {
    const at = `tasks[${i}]`;
    const seen = new Set<number>();
    task.blockedBy.forEach((d, k) => {
      if (d >= n) {
        problems.push(`${at}.blockedBy[${k}]: task ${d} does not exist (the plan has ${n} task${n === 1 ? '' : 's'})`);
        indicesOk = false;
      } else if (d === i) {
        problems.push(`${at}.blockedBy[${k}]: task ${i} cannot depend on itself`);
        indicesOk = false;
      } else if (seen.has(d)) {
        problems.push(`${at}.blockedBy[${k}]: task ${d} is listed twice`);
      }
      seen.add(d);
    });
    if (statusOf(task) !== 'completed' && task.prompt === undefined) {
      problems.push(missingLine(at, 'prompt', ' (only completed tasks may omit it)'));
    }
    const files = task.metadata.files;
    const pathLists: Array<[string, string[]]> = [
      ['metadata.files.create', files.create],
      ['metadata.files.modify', files.modify],
      ['metadata.files.mayChange', files.mayChange ?? []],
      ['metadata.reads', task.metadata.reads ?? []],
    ];
    for (const [field, list] of pathLists) {
      list.forEach((p, k) => {
        // A written path must also be expressible as an exact permission rule for the worker.
        const problem = pathProblem(p) ?? (field === 'metadata.reads' ? null : editRuleProblem(p));
        if (problem) problems.push(`${at}.${field}[${k}]: ${problem}`);
      });
    }
    const both = files.create.filter((p) => files.modify.includes(p));
    for (const p of both) problems.push(`${at}.metadata.files: "${p}" is listed under both create and modify`);
    for (const p of (files.mayChange ?? []).filter((q) => files.create.includes(q) || files.modify.includes(q))) {
      problems.push(
        `${at}.metadata.files: "${p}" is listed under mayChange and under ${files.create.includes(p) ? 'create' : 'modify'}: a path the task must change belongs in create or modify alone`,
      );
    }
    // `check --fix` rewrites fileOverlaps, so it accepts any declared value.
    if (!options.ignoreDeclaredOverlaps) {
      (task.fileOverlaps ?? []).forEach((o, k) => {
        if (o >= n) problems.push(`${at}.fileOverlaps[${k}]: task ${o} does not exist (the plan has ${n} tasks)`);
      });
    }
    if (task.skippedBy !== undefined && task.skippedBy >= n) {
      problems.push(`${at}.skippedBy: task ${task.skippedBy} does not exist (the plan has ${n} tasks)`);
    }
  });
  (plan.progress?.completedTasks ?? []).forEach((c, k) => {
    if (c >= n) problems.push(`progress.completedTasks[${k}]: task ${c} does not exist (the plan has ${n} tasks)`);
  });

  if (!indicesOk) return problems;
  const cycles = findCycles(plan.tasks.map((t) => t.blockedBy));
  for (const cycle of cycles) problems.push(`tasks ${cycle.join(' → ')} form a cycle`);
  if (cycles.length > 0 || options.ignoreDeclaredOverlaps) return problems;

  const computed = computeOverlaps(plan.tasks);
  plan.tasks.forEach((task, i) => {
    // An index past the end was reported above; a second "does not match" line would repeat it.
    if (task.fileOverlaps === undefined || task.fileOverlaps.some((o) => o >= n)) return;
    const declared = [...new Set(task.fileOverlaps)].sort((a, b) => a - b);
    const expected = computed[i]!;
    if (declared.join(',') !== expected.join(',')) {
      problems.push(
        `tasks[${i}].fileOverlaps: [${declared.join(', ')}] does not match the computed overlaps [${expected.join(', ')}]${options.layout ? ` (run \`${commandHint('plan', 'check --fix', options.layout)}\`)` : ''}`,
      );
    }
  });
  return problems;
}

/**
 * The plan with every default written out and overlaps computed: what `check --fix` saves.
 * Completed tasks stay trimmed (no prompt, no overlaps) so fixing never re-inflates them.
 * Requires a valid plan apart from fileOverlaps.
 */
export function withDefaults(plan: Plan): Plan {
  const overlaps = computeOverlaps(plan.tasks);
  return {
    ...plan,
    tasks: plan.tasks.map((task, i) => {
      const status = statusOf(task);
      const filled = { ...task, status, attempts: task.attempts ?? 0 };
      if (status === 'completed') {
        // Trimmed tasks stay trimmed, but a declared fileOverlaps is brought up to date.
        return task.fileOverlaps === undefined ? filled : { ...filled, fileOverlaps: overlaps[i]! };
      }
      return {
        ...filled,
        agent: { ...task.agent, model: task.agent?.model ?? DEFAULT_MODEL },
        fileOverlaps: overlaps[i]!,
      };
    }),
  };
}
