import { describe, expect, it } from 'vitest';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { computeOverlaps } from '../../src/core/plan/overlap.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';
import {
  editRuleProblem,
  editRules,
  escapeRulePath,
  explicitPermissions,
  planPermissions,
  rootProblem,
  workerPermissions,
  workerSettings,
} from '../../src/core/plan/scope.ts';

const task = (create: string[], modify: string[] = [], extra: Partial<Task> = {}): Task => ({
  subject: 's',
  prompt: 'p',
  blockedBy: [],
  metadata: { files: { create, modify } },
  ...extra,
});
const plan = (tasks: Task[], context?: Plan['context']): Plan => ({ schemaVersion: 3, goal: 'g', tasks, ...(context ? { context } : {}) });
const value = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.error)}`);
  return r.value;
};

describe('escapeRulePath', () => {
  it('escapes every pattern character, so the CLI reads the path literally', () => {
    expect(escapeRulePath('src/[id].ts')).toBe('src/\\[id\\].ts');
    expect(escapeRulePath('a*b{c,d}(e)!f#g\\h')).toBe('a\\*b\\{c,d\\}\\(e\\)\\!f\\#g\\\\h');
    expect(escapeRulePath('my file.txt')).toBe('my file.txt');
  });
});

describe('metadata.files.mayChange', () => {
  it('gives the worker an Edit rule for each path it may change, counts in overlaps, and may not repeat a create or modify path', () => {
    const mayChange = task(['src/a.ts'], ['package.json'], {
      metadata: { files: { create: ['src/a.ts'], modify: ['package.json'], mayChange: ['package-lock.json'] } },
    });
    expect(value(workerPermissions(plan([mayChange]), 0, '/repo')).allow).toContain('Edit(//repo/package-lock.json)');
    expect(computeOverlaps([mayChange, task([], [], { metadata: { files: { create: [], modify: [], mayChange: ['package-lock.json'] } } })])).toEqual([
      [1],
      [0],
    ]);
    const twice = parsePlan(JSON.stringify(plan([task(['a.ts'], [], { metadata: { files: { create: ['a.ts'], modify: [], mayChange: ['a.ts', '../x'] } } })])));
    expect(twice.ok).toBe(false);
    if (!twice.ok) {
      expect(twice.error.join('\n')).toContain('"a.ts" is listed under mayChange and under create');
      expect(twice.error.join('\n')).toContain('tasks[0].metadata.files.mayChange[1]');
    }
  });
});

describe('editRules', () => {
  it('anchors each declared file at the repository (//abs form) and denies anything under it', () => {
    expect(value(editRules('/work/repo', ['src/a.ts', 'notes.txt']))).toEqual({
      allow: ['Edit(//work/repo/src/a.ts)', 'Edit(//work/repo/notes.txt)'],
      deny: ['Edit(//work/repo/src/a.ts/*)', 'Edit(//work/repo/notes.txt/*)'],
    });
  });

  it('gives a declared directory everything under it, and no deny rule', () => {
    expect(value(editRules('/r', ['docs/', 'docs/api/']))).toEqual({ allow: ['Edit(//r/docs/**)', 'Edit(//r/docs/api/**)'], deny: [] });
  });

  it('escapes glob characters in the paths and in the repository path', () => {
    expect(value(editRules('/tmp/my [repo]', ['src/[id].ts', 'a{b}/']))).toEqual({
      allow: ['Edit(//tmp/my \\[repo\\]/src/\\[id\\].ts)', 'Edit(//tmp/my \\[repo\\]/a\\{b\\}/**)'],
      deny: ['Edit(//tmp/my \\[repo\\]/src/\\[id\\].ts/*)'],
    });
  });

  it('lists a path declared twice once, and a trailing slash on the root changes nothing', () => {
    expect(value(editRules('/r/', ['a.ts', 'a.ts']))).toEqual({ allow: ['Edit(//r/a.ts)'], deny: ['Edit(//r/a.ts/*)'] });
  });

  it('refuses what no rule can express exactly, naming each path', () => {
    const r = editRules('/r', ['ok.ts', 'what?.ts', 'trailing .ts ', 'dir /x.ts', 'new\nline.ts']);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toHaveLength(4);
    expect(r.error[0]).toMatch(/"what\?\.ts" contains "\?"/);
    expect(r.error[1]).toMatch(/"trailing \.ts " has a name ending in whitespace/);
    expect(r.error[2]).toMatch(/"dir \/x\.ts" has a name ending in whitespace/);
    expect(r.error[3]).toMatch(/control character/);
  });

  it('refuses a repository path that cannot anchor a rule', () => {
    expect(rootProblem('relative/repo')).toMatch(/not an absolute POSIX path/);
    expect(rootProblem('/tmp/why?')).toMatch(/"\?"/);
    expect(rootProblem('/tmp/x /repo')).toMatch(/whitespace/);
    expect(rootProblem('/tmp/fine repo')).toBeNull();
    expect(editRules('/tmp/why?', ['a.ts']).ok).toBe(false);
  });

  it('accepts spaces, parentheses and glob characters inside names', () => {
    for (const p of ['my file.txt', 'a(b).txt', 'src/[id].ts', 'x*y', '#h', '!b', '{a,b}.ts', 'dir with space/']) expect(editRuleProblem(p)).toBeNull();
  });
});

describe('workerPermissions', () => {
  it('reads anywhere, edits exactly the declared files, runs exactly the judged commands; no bare Write or Edit', () => {
    const p = plan(
      [
        task(['src/new.ts'], ['src/old.ts', 'lib/'], {
          agent: {
            acceptanceCriteria: [
              { criterion: 'builds', check: ' npm run build ' },
              { criterion: 'tests', check: 'npm test' },
            ],
          },
        }),
      ],
      { testCommand: 'npm test', buildCommand: 'npm run build' },
    );
    const rules = value(workerPermissions(p, 0, '/repo'));
    expect(rules.allow).toEqual([
      'Read',
      'Glob',
      'Grep',
      'Edit(//repo/src/new.ts)',
      'Edit(//repo/src/old.ts)',
      'Edit(//repo/lib/**)',
      'Bash(npm test)',
      'Bash(npm run build)',
    ]);
    expect(rules.deny).toEqual(['Edit(//repo/src/new.ts/*)', 'Edit(//repo/src/old.ts/*)']);
    expect(rules.allow).not.toContain('Write');
    expect(rules.allow).not.toContain('Edit');
  });

  it('gives a task with no declared files no edit rule at all', () => {
    expect(value(workerPermissions(plan([task([])]), 0, '/repo'))).toEqual({ allow: ['Read', 'Glob', 'Grep'], deny: [] });
  });

  it('names the task of a path it refuses; planPermissions collects every problem', () => {
    const p = plan([task(['a?.ts']), task(['fine.ts']), task(['b ', 'c?'])]);
    const one = workerPermissions(p, 0, '/r');
    expect(one.ok).toBe(false);
    if (!one.ok) expect(one.error[0]).toMatch(/^task 0: "a\?\.ts"/);
    const all = planPermissions(p, '/r');
    expect(all.ok).toBe(false);
    if (!all.ok) expect(all.error.map((e) => e.slice(0, 7))).toEqual(['task 0:', 'task 2:', 'task 2:']);
    expect(value(planPermissions(plan([task(['x.ts']), task(['y/'])]), '/r')).map((r) => r.allow.at(-1))).toEqual(['Edit(//r/x.ts)', 'Edit(//r/y/**)']);
  });
});

describe('explicitPermissions and workerSettings', () => {
  it('--allowed-tools replaces the computed rules', () => {
    expect(explicitPermissions(['Read', 'Write', 'Bash(make *)'])).toEqual({ allow: ['Read', 'Write', 'Bash(make *)'], deny: [] });
  });

  it("carries over only the login keys of the person's settings, never their permissions", () => {
    const inherited = {
      apiKeyHelper: 'get-key',
      env: { ANTHROPIC_BASE_URL: 'http://x' },
      permissions: { allow: ['Write', 'Bash(*)'] },
      hooks: { PreToolUse: [] },
      model: 'opus',
    };
    expect(workerSettings({ allow: ['Read'], deny: ['Edit(//r/a/*)'] }, inherited)).toEqual({
      apiKeyHelper: 'get-key',
      env: { ANTHROPIC_BASE_URL: 'http://x' },
      permissions: { allow: ['Read'], deny: ['Edit(//r/a/*)'] },
    });
  });
});

describe('plan validation', () => {
  it('refuses (plan check, exit 2) a declared file no permission rule can express, but not a read', () => {
    const raw = (create: string[], reads: string[] = []) =>
      JSON.stringify({
        schemaVersion: 3,
        goal: 'g',
        tasks: [{ subject: 's', prompt: 'p', blockedBy: [], metadata: { files: { create, modify: [] }, reads } }],
      });
    const bad = parsePlan(raw(['src/what?.ts']));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toEqual([expect.stringMatching(/^tasks\[0\]\.metadata\.files\.create\[0\]: "src\/what\?\.ts" contains "\?"/)]);
    expect(parsePlan(raw(['src/[id].ts'], ['docs/what?.md'])).ok).toBe(true);
  });
});
