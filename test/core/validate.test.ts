import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeOverlaps } from '../../src/core/plan/overlap.ts';
import { type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { jsonPathOf, parsePlan, validatePlan, withDefaults } from '../../src/core/plan/validate.ts';
import { brokenCorpus, brokenText, validText } from '../plans/corpus.ts';
import { planArb } from '../support/arbitraries.ts';

function problemsOf(text: string): string[] {
  const r = parsePlan(text);
  if (r.ok) throw new Error('expected the plan to be invalid');
  return r.error;
}

describe('the broken-plan corpus', () => {
  const corpus = brokenCorpus();

  it('has at least 20 cases', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(20);
  });

  it.each(corpus.map((c) => [c.name, c] as const))('%s: one message per problem, each naming where it is', (_, c) => {
    const problems = problemsOf(c.text);
    // Exactly one line per problem: no duplicates and nothing extra.
    expect(problems, problems.join('\n')).toHaveLength(c.expected.length);
    expect(new Set(problems).size).toBe(problems.length);
    for (const line of c.expected) {
      expect(
        problems.some((p) => p.startsWith(line)),
        `expected a problem starting with\n  ${line}\ngot\n  ${problems.join('\n  ')}`,
      ).toBe(true);
    }
    // Every message is one line and starts with a location: `plan`, a field path, or `tasks …` for cycles.
    for (const p of problems) {
      expect(p).not.toContain('\n');
      expect(p).toMatch(/^(plan|schemaVersion|goal|tasks|progress|context)(\[\d+\])?([.[][^:]*)?(: | \d)/);
    }
  });
});

describe('valid plans', () => {
  it('accepts the minimal hand-written plan from the issue', () => {
    const r = parsePlan(validText('minimal'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.tasks).toHaveLength(1);
    expect(statusOf(r.value.tasks[0]!)).toBe('pending');
  });

  it('keeps unknown fields at every level', () => {
    const text = validText('extra-fields');
    const r = parsePlan(text);
    expect(r.ok, r.ok ? '' : r.error.join('\n')).toBe(true);
    if (!r.ok) return;
    expect(r.value).toEqual(JSON.parse(text));
    expect(r.value.designer).toEqual({ name: 'claude', notes: ['kept verbatim'] });
    expect(r.value.tasks[0]!.estimate).toBe('30m');
    expect(r.value.tasks[0]!.metadata.owner).toBe('data team');
    expect(r.value.tasks[1]!['x-custom']).toEqual({ nested: [1, 2, { deep: true }] });
  });

  it('accepts the realistic plan and computes its overlaps (directory reads included)', () => {
    const r = parsePlan(validText('realistic'));
    expect(r.ok, r.ok ? '' : r.error.join('\n')).toBe(true);
    if (!r.ok) return;
    expect(r.value.tasks).toHaveLength(8);
    // Every task that reads what another writes depends on it: nothing overlaps.
    expect(computeOverlaps(r.value.tasks).every((o) => o.length === 0)).toBe(true);
    // Task 4 writes under src/metrics/, which task 7 reads; once nothing orders them, they overlap.
    r.value.tasks[7]!.blockedBy = [1];
    const overlaps = computeOverlaps(r.value.tasks);
    expect(overlaps[4]).toEqual([7]);
    expect(overlaps[7]).toEqual([4]);
    expect(overlaps.filter((o) => o.length > 0)).toHaveLength(2);
  });

  it('accepts the realistic plan once --fix defaults are written, and fixing twice changes nothing', () => {
    const r = parsePlan(validText('realistic'));
    if (!r.ok) throw new Error(r.error.join('\n'));
    const fixed = withDefaults(r.value);
    const again = validatePlan(JSON.parse(JSON.stringify(fixed)));
    expect(again.ok, again.ok ? '' : again.error.join('\n')).toBe(true);
    expect(withDefaults(fixed)).toEqual(fixed);
    // Completed tasks stay trimmed: no prompt, no fileOverlaps, no agent defaults added.
    expect(fixed.tasks[0]).not.toHaveProperty('fileOverlaps');
    expect(fixed.tasks[0]).not.toHaveProperty('prompt');
    expect(fixed.tasks[0]!.agent).toEqual({ role: 'researcher', model: 'haiku' });
    expect(fixed.tasks[1]!.fileOverlaps).toEqual([]);
    expect(fixed.tasks[4]!.fileOverlaps).toEqual([]);
    expect(fixed.tasks[2]!.agent!.model).toBe('sonnet');
    expect(fixed.tasks[2]!.agent!.fallback).toBe('use a fixed window counter instead');
    expect(fixed.tasks.map((t) => t.attempts)).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
  });
});

describe('validation rules', () => {
  const base = (): Plan => JSON.parse(validText('realistic')) as Plan;

  it('a completed task may omit its prompt; a pending one may not', () => {
    const p = base();
    expect(p.tasks[0]!.prompt).toBeUndefined();
    expect(validatePlan(p).ok).toBe(true);
    p.tasks[0]!.status = 'failed';
    const r = validatePlan(p);
    expect(r.ok ? [] : r.error).toEqual(['tasks[0]: missing required field "prompt" (only completed tasks may omit it)']);
  });

  it('reports several problems at once, not only the first', () => {
    const p = base();
    p.tasks[1]!.blockedBy = [1];
    p.tasks[2]!.metadata.files.create = ['/abs.ts', 'ok.ts', '../up.ts'];
    p.tasks[5]!.blockedBy = [8];
    const r = validatePlan(p);
    expect(r.ok ? [] : r.error).toEqual([
      'tasks[1].blockedBy[0]: task 1 cannot depend on itself',
      'tasks[2].metadata.files.create[0]: "/abs.ts" is absolute; paths are relative to the repository root',
      'tasks[2].metadata.files.create[2]: "../up.ts" leaves the repository',
      'tasks[5].blockedBy[0]: task 8 does not exist (the plan has 8 tasks)',
    ]);
  });

  it('says "1 task" for a one-task plan', () => {
    const p = JSON.parse(validText('minimal')) as Plan;
    p.tasks[0]!.blockedBy = [1];
    const r = validatePlan(p);
    expect(r.ok ? [] : r.error).toEqual(['tasks[0].blockedBy[0]: task 1 does not exist (the plan has 1 task)']);
  });

  it('accepts stale fileOverlaps when asked to ignore them (what check --fix does)', () => {
    const text = brokenText('file-overlaps-stale');
    expect(parsePlan(text).ok).toBe(false);
    expect(parsePlan(text, { ignoreDeclaredOverlaps: true }).ok).toBe(true);
    // Out-of-range declared overlaps are rewritten by --fix as well.
    const past = brokenText('file-overlaps-past-end');
    expect(parsePlan(past, { ignoreDeclaredOverlaps: true }).ok).toBe(true);
  });

  it('still refuses other problems when ignoring declared overlaps', () => {
    for (const name of ['cycle-2', 'path-parent', 'status-done', 'blocked-by-past-end']) {
      const text = brokenText(name);
      expect(parsePlan(text, { ignoreDeclaredOverlaps: true }).ok, name).toBe(false);
    }
  });

  it('withDefaults brings a completed task’s declared fileOverlaps up to date', () => {
    const p = base();
    // Nothing orders task 7 (it reads src/metrics/) and task 4 (it writes there): they overlap.
    p.tasks[7]!.blockedBy = [1];
    p.tasks[4]!.status = 'completed';
    p.tasks[4]!.fileOverlaps = [];
    expect(validatePlan(p).ok).toBe(false);
    const fixed = withDefaults(p);
    expect(fixed.tasks[4]!.fileOverlaps).toEqual([7]);
    expect(validatePlan(fixed).ok).toBe(true);
  });

  it('does not mutate its input', () => {
    const p = base();
    const copy = structuredClone(p);
    validatePlan(p);
    withDefaults(p);
    expect(p).toEqual(copy);
  });

  it('turns JSON pointers into readable locations', () => {
    expect(jsonPathOf('')).toBe('plan');
    expect(jsonPathOf('/tasks')).toBe('tasks');
    expect(jsonPathOf('/tasks/3/blockedBy/0')).toBe('tasks[3].blockedBy[0]');
    expect(jsonPathOf('/tasks/0/metadata/files/create/2')).toBe('tasks[0].metadata.files.create[2]');
    expect(jsonPathOf('/a~1b/c~0d')).toBe('a/b.c~d');
  });
});

describe('validation properties', () => {
  it('random valid plans validate, and --fix output validates without ignoring overlaps', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'any' }), (plan) => {
        const r = validatePlan(plan);
        expect(r.ok, r.ok ? '' : r.error.join('\n')).toBe(true);
        const fixed = JSON.parse(JSON.stringify(withDefaults(plan))) as Plan;
        const again = validatePlan(fixed);
        expect(again.ok, again.ok ? '' : again.error.join('\n')).toBe(true);
        expect(withDefaults(fixed)).toEqual(fixed);
        const overlaps = computeOverlaps(plan.tasks);
        fixed.tasks.forEach((t, i) => {
          if (statusOf(t) !== 'completed') expect(t.fileOverlaps).toEqual(overlaps[i]);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('a declared overlap that differs from the computed one is reported at that task', () => {
    fc.assert(
      fc.property(planArb(), fc.nat(), fc.nat(), (plan, a, b) => {
        const fixed = withDefaults(plan);
        const i = a % fixed.tasks.length;
        const j = b % fixed.tasks.length;
        const declared = fixed.tasks[i]!.fileOverlaps!;
        // Toggle j in task i's declared overlaps.
        fixed.tasks[i]!.fileOverlaps = declared.includes(j) ? declared.filter((x) => x !== j) : [...declared, j];
        const r = validatePlan(fixed);
        expect(r.ok).toBe(false);
        if (r.ok) return;
        expect(r.error).toHaveLength(1);
        expect(r.error[0]).toMatch(new RegExp(`^tasks\\[${i}\\]\\.fileOverlaps: \\[.*\\] does not match the computed overlaps`));
      }),
      { numRuns: 200 },
    );
  });
});
