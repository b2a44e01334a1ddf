// Widening a task's declared files (core/attempt/widen.ts, core/attempt/interventions.ts declareFiles): the
// patterns --widen takes, what a run may add, what a task still needs, and putting it back.

import { describe, expect, it } from 'vitest';
import { ok } from '../../src/core/result.ts';
import { declareFiles } from '../../src/core/attempt/interventions.ts';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { matchesPattern, neededPaths, recheckable, wantedPaths, widenRefusal, withDeclared } from '../../src/core/attempt/widen.ts';

const task = (over: Partial<Task> = {}): Task => ({
  subject: 's',
  prompt: 'p',
  blockedBy: [],
  metadata: { files: { create: ['src/feature.ts'], modify: [] } },
  ...over,
});
const plan = (tasks: Task[]): Plan => ({ schemaVersion: 3, goal: 'g', tasks });

describe('matchesPattern (git wildmatch)', () => {
  it.each([
    ['src/**', 'src/index.ts', true],
    ['src/**', 'src/deep/er/x.ts', true],
    ['src/**', 'srcx/a.ts', false],
    ['src/*.ts', 'src/a.ts', true],
    ['src/*.ts', 'src/deep/a.ts', false],
    ['**/package.json', 'package.json', true],
    ['**/package.json', 'pkg/a/package.json', true],
    ['src/?.ts', 'src/a.ts', true],
    ['src/[ab].ts', 'src/b.ts', true],
    ['src/[!ab].ts', 'src/c.ts', true],
    ['a.b', 'axb', false],
  ])('%s ~ %s: %s', (pattern, path, expected) => {
    expect(matchesPattern(path, pattern)).toBe(expected);
  });
});

describe('what --widen may add', () => {
  const p = plan([
    task(),
    task({ metadata: { files: { create: [], modify: ['src/owned.ts'] } } }),
    task({ status: 'completed', metadata: { files: { create: [], modify: ['src/landed.ts'] } } }),
  ]);
  it('a tracked file matching a pattern, outside .design/.git/.claude, that no other task not yet landed declares', () => {
    expect(widenRefusal(p, 0, { path: 'src/index.ts', tracked: true }, ['src/**'])).toBeNull();
    expect(widenRefusal(p, 0, { path: 'src/landed.ts', tracked: true }, ['src/**'])).toBeNull();
    expect(widenRefusal(p, 0, { path: 'src/owned.ts', tracked: true }, ['src/**'])).toBe('src/owned.ts is declared by task 1, which has not landed');
    expect(widenRefusal(p, 0, { path: 'docs/a.md', tracked: true }, ['src/**'])).toBe('docs/a.md matches no --widen pattern (src/**)');
    expect(widenRefusal(p, 0, { path: 'src/new.ts', tracked: false }, ['src/**'])).toMatch(/is not a file git tracks/);
    expect(widenRefusal(p, 0, { path: '.claude/settings.json', tracked: true }, ['**'])).toMatch(/under \.claude\/, which a run never widens a task into/);
    expect(widenRefusal(p, 0, { path: '.design/plan.json', tracked: true }, ['**'])).toMatch(/under \.design\//);
  });

  it('wantedPaths joins the set-aside changes and the refused writes, each once, tracked when either says so', () => {
    const verification = ok({
      missingCreated: [],
      unchangedModified: [],
      acceptance: [],
      outsideChanges: ['src/a.ts', 'new.txt'],
      setAside: { paths: ['src/a.ts', 'new.txt'], tracked: ['src/a.ts'], kept: null },
      work: { base: 'b'.repeat(40), entries: [] },
    });
    expect(wantedPaths(verification, [{ tool: 'Edit', path: 'src/b.ts', tracked: true }, { tool: 'Write', path: 'src/a.ts' }, { tool: 'Bash' }])).toEqual([
      { path: 'new.txt', tracked: false },
      { path: 'src/a.ts', tracked: true },
      { path: 'src/b.ts', tracked: true },
    ]);
  });
});

describe('what a task still needs, and its re-check', () => {
  it('neededPaths: what its attempts wanted that it does not declare; recheckable once its set-aside work is all declared and kept', () => {
    const t = task({ undeclaredWrites: ['src/index.ts'], setAside: { attempt: 2, paths: ['src/index.ts', 'package-lock.json'], commit: 'c'.repeat(40) } });
    expect(neededPaths(t)).toEqual(['package-lock.json', 'src/index.ts']);
    expect(recheckable(t)).toBe(false);
    const widened = withDeclared(withDeclared(t, ['src/index.ts'], 'modify'), ['package-lock.json'], 'mayChange');
    expect(widened.metadata.files).toEqual({ create: ['src/feature.ts'], modify: ['src/index.ts'], mayChange: ['package-lock.json'] });
    expect(neededPaths(widened)).toEqual([]);
    expect(recheckable(widened)).toBe(true);
    expect(recheckable({ ...widened, setAside: { attempt: 2, paths: ['src/index.ts'] } })).toBe(false);
  });
});

describe('declareFiles (plan declare)', () => {
  const blocked = task({
    status: 'blocked',
    attempts: 2,
    result: 'BLOCKED: needs src/index.ts',
    undeclaredWrites: ['src/index.ts'],
    setAside: { attempt: 2, paths: ['src/index.ts'], commit: 'c'.repeat(40) },
  });
  const dependant = task({ status: 'skipped', skippedBy: 0, blockedBy: [0], result: 'skipped: depends on task 0' });

  it('widens a blocked task and puts it back with its dependants, no attempt spent, its set-aside work to be re-checked', () => {
    const done = declareFiles(plan([blocked, dependant]), 0, { create: [], modify: ['src/index.ts'], mayChange: [] });
    if (!done.ok) throw new Error(done.error);
    const [widened, back] = done.value.plan.tasks;
    expect(widened).toMatchObject({
      status: 'pending',
      attempts: 0,
      recheck: true,
      metadata: { files: { create: ['src/feature.ts'], modify: ['src/index.ts'] } },
    });
    expect(widened!.undeclaredWrites).toBeUndefined();
    expect(back).toMatchObject({ status: 'pending' });
    expect(done.value.changes[0]!.note).toMatch(
      /^declares src\/index\.ts now; attempts reset to 0; its next start re-checks the work its last attempt set aside before a worker runs$/,
    );
  });

  it('widens a pending task as it is; refuses a task in progress or done, and nothing to declare', () => {
    const pending = declareFiles(plan([task()]), 0, { create: [], modify: [], mayChange: ['package-lock.json'] });
    expect(pending.ok && pending.value.plan.tasks[0]!.metadata.files.mayChange).toEqual(['package-lock.json']);
    expect(declareFiles(plan([task({ status: 'completed' })]), 0, { create: [], modify: ['a'], mayChange: [] })).toEqual({
      ok: false,
      error: expect.stringContaining('it is completed; only a task that is pending, blocked or failed can be widened'),
    });
    expect(declareFiles(plan([task()]), 0, { create: [], modify: [], mayChange: [] })).toEqual({
      ok: false,
      error: expect.stringMatching(/^nothing to declare/),
    });
  });
});
