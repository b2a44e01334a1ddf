// The fields of a plan the schema does not define, found by walking the plan beside the schema
// (schemas/plan.schema.json: its `properties`, `items`, `$ref`s and `oneOf` branches), so what is
// known at each level is the schema's word and nothing kept by hand. A field that nearly spells a
// defined field of its object (`acceptanceCritera`, `testcommand`, `blockedby`, `modfy`) is a
// mistake that silently removes a safety net: validation refuses it. Any other is kept as it is
// and the plan lint warns of it; a key starting `x-` is the person's own data, never reported.
// Pure.

import { planSchema } from './plan-schema.generated.ts';
import { editDistance } from './spelling.ts';

/** The part of JSON Schema the plan schema uses to say which fields an object has. */
interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  $ref?: string;
  oneOf?: SchemaNode[];
  anyOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

const ROOT = planSchema as SchemaNode & { definitions?: Record<string, SchemaNode> };

/** The prefix of the keys a person keeps their own data under. */
export const OWN_FIELD_PREFIX = 'x-';

export interface UnknownField {
  /** The object holding it, as problems name places: `tasks[2].agent` (`plan` for the top level). */
  parent: string;
  key: string;
  /** The task it is in (null outside `tasks`). */
  task: number | null;
  /** The defined fields of its object it nearly spells, the nearest (several when as near): empty when it is no near miss. */
  meant: string[];
}

/** `tasks[2].agent` + `notes` → `tasks[2].agent.notes`; a key that is no plain name is quoted. */
export function fieldPath(parent: string, key: string): string {
  const name = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
  if (parent === 'plan') return name === key ? key : `plan[${name}]`;
  return name === key ? `${parent}.${key}` : `${parent}[${name}]`;
}

/** A `#/definitions/…` reference resolved in the plan schema. */
function resolved(node: SchemaNode): SchemaNode {
  let current = node;
  for (let depth = 0; current.$ref !== undefined && depth < 16; depth++) {
    const name = /^#\/definitions\/(.+)$/.exec(current.$ref)?.[1];
    const target = name === undefined ? undefined : ROOT.definitions?.[name];
    if (target === undefined) throw new Error(`plan schema: unresolvable $ref ${current.$ref}`);
    current = target;
  }
  return current;
}

/** Every branch a value may match (`oneOf`, `anyOf`, `allOf`), references resolved. */
function branches(node: SchemaNode): SchemaNode[] {
  const here = resolved(node);
  const nested = [...(here.oneOf ?? []), ...(here.anyOf ?? []), ...(here.allOf ?? [])];
  return [here, ...nested.flatMap(branches)];
}

/** Each schema node's fields, worked out once: a plan of 20,000 tasks has 100,000 objects of a few kinds. */
const FIELDS = new WeakMap<SchemaNode, Map<string, SchemaNode> | null>();

/** The fields an object matching `node` may hold, with their schemas; null when it says none. */
function fieldsOf(node: SchemaNode): Map<string, SchemaNode> | null {
  if (FIELDS.has(node)) return FIELDS.get(node)!;
  const fields = fieldsOfBranches(node);
  FIELDS.set(node, fields);
  return fields;
}

function fieldsOfBranches(node: SchemaNode): Map<string, SchemaNode> | null {
  const properties = new Map<string, SchemaNode>();
  let any = false;
  for (const branch of branches(node)) {
    if (branch.properties === undefined) continue;
    any = true;
    for (const [key, schema] of Object.entries(branch.properties)) if (!properties.has(key)) properties.set(key, schema);
  }
  return any ? properties : null;
}

const ITEMS = new WeakMap<SchemaNode, SchemaNode | null>();

/** The schema of an array's items (the first branch that says), or null. */
function itemsOf(node: SchemaNode): SchemaNode | null {
  if (!ITEMS.has(node)) ITEMS.set(node, branches(node).find((branch) => branch.items !== undefined)?.items ?? null);
  return ITEMS.get(node)!;
}

/**
 * The defined fields `key` nearly spells: equal but for case, or within two edits (one for a
 * field of four letters or fewer, where two edits change half the word: `date` is not `gate`'s
 * misspelling twice over). The nearest ones: `gaet` is `gate` (one edit), not also `agent` (two).
 */
export function nearMisses(key: string, known: Iterable<string>): string[] {
  const lower = key.toLowerCase();
  const found: Array<{ field: string; distance: number }> = [];
  for (const field of known) {
    const distance = field.toLowerCase() === lower ? 0 : editDistance(key, field);
    if (distance <= (field.length <= 4 ? 1 : 2)) found.push({ field, distance });
  }
  const nearest = Math.min(...found.map((f) => f.distance));
  return found.filter((f) => f.distance === nearest).map((f) => f.field);
}

/**
 * Every field of `data` the plan schema does not define, at any level, but those starting `x-`.
 * Tolerates any value (it runs before and beside validation): only objects the schema describes
 * are looked into, and a field's value is looked into only when the field is defined.
 */
export function unknownFields(data: unknown): UnknownField[] {
  const found: UnknownField[] = [];
  const walk = (value: unknown, node: SchemaNode, where: string, task: number | null): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      const items = itemsOf(node);
      if (items === null) return;
      value.forEach((item, i) => {
        walk(item, items, `${where}[${i}]`, where === 'tasks' ? i : task);
      });
      return;
    }
    const fields = fieldsOf(node);
    if (fields === null) return;
    for (const [key, child] of Object.entries(value)) {
      const schema = fields.get(key);
      if (schema !== undefined) {
        walk(child, schema, fieldPath(where, key), task);
        continue;
      }
      if (key.startsWith(OWN_FIELD_PREFIX)) continue;
      const meant = nearMisses(key, fields.keys());
      found.push({ parent: where, key, task, meant });
    }
  };
  walk(data, ROOT, 'plan', null);
  return found;
}

/** `"a"`, `"a" or "b"`. */
const quotedChoices = (fields: readonly string[]): string => fields.map((field) => JSON.stringify(field)).join(' or ');

/** A near miss as validation words it: `tasks[2].acceptanceCritera: unknown field; did you mean "acceptanceCriteria"?` */
export const describeNearMiss = (field: UnknownField): string =>
  `${fieldPath(field.parent, field.key)}: unknown field; did you mean ${quotedChoices(field.meant)}?`;

/** What a "missing required field" line adds when near misses of it are there: ` (is "blockedby" a misspelling of it?)`. */
export function misspellingNote(misspelt: readonly UnknownField[]): string {
  return misspelt.length === 0 ? '' : ` (is ${misspelt.map((field) => JSON.stringify(field.key)).join(' or ')} a misspelling of it?)`;
}
