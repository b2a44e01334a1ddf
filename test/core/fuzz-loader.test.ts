// Fuzzing the plan loader: random mutations of valid plans either validate or are refused with
// one-line messages (exit 2 from the tool); never an unhandled exception.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';
import { validText } from '../plans/corpus.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path (list of keys) into a JSON value. */
function paths(v: Json, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const out: Array<Array<string | number>> = [prefix];
  if (Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...paths(x, [...prefix, i]));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...prefix, k]));
  return out;
}

const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    null,
    true,
    -1,
    0,
    1.5,
    1e308,
    Number.MAX_SAFE_INTEGER,
    '',
    '../etc/passwd',
    '/etc/passwd',
    '.git/hooks/pre-commit',
    'a//b',
    './a',
    'src/',
    'C:\\x',
    '\u0000',
    'pending',
    'done',
    [],
    {},
    [0],
    [99],
    ['x'],
    { create: 'x', modify: [] },
  ),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

type Mutation = { kind: 'delete' | 'set' | 'append'; at: number; value: Json };

function mutate(plan: Json, m: Mutation): Json {
  const copy = structuredClone(plan);
  const all = paths(copy);
  const target = all[m.at % all.length]!;
  if (target.length === 0) return m.kind === 'set' ? m.value : copy;
  const parentPath = target.slice(0, -1);
  const key = target[target.length - 1]!;
  let parent: Json = copy;
  for (const k of parentPath) parent = (parent as Record<string | number, Json>)[k]!;
  const container = parent as Record<string | number, Json> & Json[];
  switch (m.kind) {
    case 'delete':
      if (Array.isArray(container)) container.splice(key as number, 1);
      else delete container[key];
      break;
    case 'set':
      container[key] = m.value;
      break;
    case 'append': {
      const node = container[key];
      if (Array.isArray(node)) node.push(m.value);
      else container[key] = m.value;
      break;
    }
  }
  return copy;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('delete' as const, 'set' as const, 'append' as const),
  at: fc.nat(),
  value: hostileValue,
});

const bases = ['minimal', 'extra-fields', 'realistic'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-fuzz-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('plan loader fuzzing', () => {
  it('parsePlan never throws and reports problems as one-line messages', async () => {
    const texts = bases.map((b) => validText(b));
    let refused = 0;
    fc.assert(
      fc.property(fc.nat(bases.length - 1), fc.array(mutation, { minLength: 1, maxLength: 4 }), (base, ms) => {
        let plan = JSON.parse(texts[base]!) as Json;
        for (const m of ms) plan = mutate(plan, m);
        const r = parsePlan(JSON.stringify(plan));
        if (!r.ok) {
          refused++;
          expect(r.error.length).toBeGreaterThan(0);
          for (const line of r.error) {
            expect(line).not.toContain('\n');
            expect(line.length).toBeGreaterThan(5);
          }
        }
      }),
      { numRuns: 600 },
    );
    // The mutations must actually exercise the refusals, not only harmless edits.
    expect(refused).toBeGreaterThan(200);
  });

  it('cut or corrupted text is refused, never thrown', async () => {
    const text = validText('realistic');
    fc.assert(
      fc.property(fc.nat(text.length), fc.string({ maxLength: 3 }), (cut, junk) => {
        const r = parsePlan(text.slice(0, cut) + junk);
        expect(r.ok || r.error.length > 0).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('the plan tool exits 0 or 2 on mutated plans, with messages on stderr for 2', async () => {
    const texts = bases.map((b) => validText(b));
    const file = join(dir, 'plan.json');
    await fc.assert(
      fc.asyncProperty(fc.nat(bases.length - 1), fc.array(mutation, { minLength: 1, maxLength: 3 }), async (base, ms) => {
        let plan = JSON.parse(texts[base]!) as Json;
        for (const m of ms) plan = mutate(plan, m);
        await writeFile(file, JSON.stringify(plan));
        const err: string[] = [];
        const io: Io = { out: () => undefined, err: (t) => err.push(t), cwd: dir, env: {}, isTTY: false, columns: 100 };
        const code = await runProgram('plan.ts', planCommands, ['check', '--plan', file], io);
        expect([0, 2]).toContain(code);
        if (code === 2) expect(err.length).toBeGreaterThan(0);
      }),
      { numRuns: 150 },
    );
  });
});
