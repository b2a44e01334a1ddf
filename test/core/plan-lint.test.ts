// The plan lint (src/core/plan/lint/plan-lint.ts): a table of hazard plans, each with the exact lines it must
// give; a table of sound plans (the realistic examples among them) that must give none; the
// acceptances; and the index-based search against a brute-force pairwise reference on random plans.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Plan, statusOf, type Task, type TaskStatus } from '../../src/core/plan/plan.ts';
import { lintPlan, PLAN_WARNING_KINDS, type PlanWarning, warningNotices } from '../../src/core/plan/lint/plan-lint.ts';
import { lockfilesOf, promptPaths } from '../../src/core/plan/lint/lint-repository.ts';
import { validatePlan } from '../../src/core/plan/validate.ts';
import { validText } from '../plans/corpus.ts';
import { PATH_POOL, planArb, reachable } from '../support/arbitraries.ts';

const ROOT = join(import.meta.dirname, '..', '..');

interface Spec {
  create?: string[];
  modify?: string[];
  mayChange?: string[];
  reads?: string[];
  blockedBy?: number[];
  prompt?: string;
  status?: TaskStatus;
  contextFiles?: string[];
  /** Acceptance checks' commands. */
  checks?: string[];
  model?: string;
}

function task(spec: Spec, i: number): Task {
  const t: Task = {
    subject: `task ${i}`,
    prompt: spec.prompt ?? `Do task ${i}.`,
    blockedBy: spec.blockedBy ?? [],
    metadata: {
      files: { create: spec.create ?? [], modify: spec.modify ?? [], ...(spec.mayChange ? { mayChange: spec.mayChange } : {}) },
      ...(spec.reads ? { reads: spec.reads } : {}),
    },
  };
  if (spec.status) t.status = spec.status;
  if (spec.contextFiles) t.agent = { contextFiles: spec.contextFiles.map((path) => ({ path, reason: 'read it first' })) };
  if (spec.checks) t.agent = { ...t.agent, acceptanceCriteria: spec.checks.map((check) => ({ criterion: 'it works', check })) };
  if (spec.model) t.agent = { ...t.agent, model: spec.model };
  return t;
}

function planOf(specs: Spec[], extra: Partial<Plan> = {}): Plan {
  const plan: Plan = { schemaVersion: 3, goal: 'a goal', tasks: specs.map(task), ...extra };
  // Every plan here is a valid one: the lint runs after validation.
  const valid = validatePlan(structuredClone(plan));
  if (!valid.ok) throw new Error(valid.error.join('\n'));
  return plan;
}

const lines = (plan: Plan, tracked: readonly string[] | null): string[] =>
  lintPlan(plan, tracked === null ? null : new Set(tracked)).warnings.map((w) => w.message);

interface HazardCase {
  name: string;
  tasks: Spec[];
  /** The files of the last commit; null: no repository. */
  tracked: string[] | null;
  expected: string[];
}

const HAZARDS: HazardCase[] = [
  {
    name: 'a task modifies a file another creates, with no dependency between them',
    tasks: [{ create: ['src/a.ts'] }, { modify: ['src/a.ts'] }],
    tracked: null,
    expected: ['tasks[1] modifies src/a.ts, which tasks[0] creates, but does not depend on it: add 0 to tasks[1].blockedBy'],
  },
  {
    name: 'the same, the creator a directory above the file',
    tasks: [{ create: ['src/new/'] }, { modify: ['src/new/a.ts'] }],
    tracked: [],
    expected: ['tasks[1] modifies src/new/a.ts, which tasks[0] (src/new/) creates, but does not depend on it: add 0 to tasks[1].blockedBy'],
  },
  {
    name: 'two creators of the file the task modifies, neither a blocker',
    tasks: [{ create: ['src/a.ts'] }, { create: ['src/a.ts'], blockedBy: [0] }, { modify: ['src/a.ts'], blockedBy: [] }],
    tracked: null,
    expected: [
      'tasks[1] creates src/a.ts, which tasks[0] creates before it: move src/a.ts from create to modify in tasks[1]',
      'tasks[2] modifies src/a.ts, which tasks[0] and tasks[1] create, but does not depend on them: add 0 and 1 to tasks[2].blockedBy',
    ],
  },
  {
    name: 'the creator depends on the task that modifies the file',
    tasks: [{ modify: ['src/a.ts'] }, { create: ['src/a.ts'], blockedBy: [0] }],
    tracked: null,
    expected: [
      'tasks[0] modifies src/a.ts, which tasks[1] creates, but it depends on tasks[0] and runs after it: move src/a.ts from modify to create in tasks[0], and from create to modify in tasks[1]',
    ],
  },
  {
    name: 'two tasks create the same file, neither depending on the other',
    tasks: [{ create: ['src/a.ts'] }, { create: ['src/a.ts'] }],
    tracked: null,
    expected: [
      'tasks[1] creates src/a.ts, which tasks[0] creates too, and neither depends on the other: move src/a.ts from create to modify in tasks[1] and add 0 to tasks[1].blockedBy',
    ],
  },
  {
    name: 'two tasks create the same file, the lower index running second',
    tasks: [{ create: ['src/a.ts'], blockedBy: [1] }, { create: ['src/a.ts'] }],
    tracked: null,
    expected: ['tasks[0] creates src/a.ts, which tasks[1] creates before it: move src/a.ts from create to modify in tasks[0]'],
  },
  {
    name: 'a pending task creates a file a completed one created',
    tasks: [{ create: ['src/a.ts'], status: 'completed' }, { create: ['src/a.ts'] }],
    tracked: ['src/a.ts'],
    expected: ['tasks[1] creates src/a.ts, which tasks[0] created already: move src/a.ts from create to modify in tasks[1]'],
  },
  {
    name: 'a modify of a file the last commit does not have and no task creates',
    tasks: [{ modify: ['src/old.ts'] }],
    tracked: ['src/a.ts'],
    expected: [
      "tasks[0] modifies src/old.ts, which the repository's last commit does not have and no task creates: correct the path, or move it from modify to create in tasks[0]",
    ],
  },
  {
    name: 'a modify of a directory with no file of the last commit under it',
    tasks: [{ modify: ['src/gen/'] }],
    tracked: ['src/a.ts', 'src/generated.ts'],
    expected: [
      "tasks[0] modifies src/gen/, which the repository's last commit does not have and no task creates: correct the path, or move it from modify to create in tasks[0]",
    ],
  },
  {
    name: "a prompt names a tracked file the task does not declare (the issue's case)",
    tasks: [{ create: ['src/feature.ts'], prompt: 'Create src/feature.ts and export it from src/index.ts.' }],
    tracked: ['src/index.ts', 'package.json'],
    expected: [
      'tasks[0].prompt names src/index.ts, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
    ],
  },
  {
    name: 'prompt paths in Markdown, with a line number, a leading ./ and a build file',
    tasks: [{ modify: ['src/a.ts'], prompt: 'Edit `src/a.ts`, then see **src/b.ts:12**, [the docs](./docs/guide.md) and update the Makefile.' }],
    tracked: ['src/a.ts', 'src/b.ts', 'docs/guide.md', 'Makefile'],
    expected: [
      'tasks[0].prompt names Makefile, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
      'tasks[0].prompt names docs/guide.md, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
      'tasks[0].prompt names src/b.ts, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
    ],
  },
  {
    name: 'a task reads a file another changes, with no dependency either way',
    tasks: [{ modify: ['src/a.ts'] }, { create: ['src/b.ts'], reads: ['src/a.ts'] }],
    tracked: ['src/a.ts'],
    expected: [
      'tasks[1] reads src/a.ts, which tasks[0] changes, but neither depends on the other: add 0 to tasks[1].blockedBy to read it after the change, or 1 to tasks[0].blockedBy to read it before',
    ],
  },
  {
    name: 'a directory read holding what two tasks write',
    tasks: [{ create: ['src/x/a.ts'] }, { modify: ['src/x/b.ts'] }, { create: ['docs/x.md'], reads: ['src/x/'] }],
    tracked: ['src/x/b.ts'],
    expected: [
      'tasks[2] reads src/x/, which tasks[0] (src/x/a.ts) and tasks[1] (src/x/b.ts) change, but no dependency orders tasks[2] with them: add 0 and 1 to tasks[2].blockedBy to read it after the changes, or 2 to the blockedBy of tasks[0] and tasks[1] to read it before',
    ],
  },
  {
    name: 'a file read under a directory another task writes',
    tasks: [{ create: ['src/x/'] }, { create: ['docs/x.md'], reads: ['src/x/a.ts'] }],
    tracked: [],
    expected: [
      'tasks[1] reads src/x/a.ts, which tasks[0] (src/x/) changes, but neither depends on the other: add 0 to tasks[1].blockedBy to read it after the change, or 1 to tasks[0].blockedBy to read it before',
    ],
  },
  {
    name: 'a manifest modified without its lockfile',
    tasks: [{ modify: ['package.json'] }],
    tracked: ['package.json', 'package-lock.json'],
    expected: [
      'tasks[0] modifies package.json but does not declare package-lock.json, which installing its dependencies may rewrite: add package-lock.json to tasks[0].metadata.files.mayChange',
    ],
  },
  {
    name: 'a workspace package: the lockfile at the root',
    tasks: [{ modify: ['packages/a/package.json'] }],
    tracked: ['package.json', 'pnpm-lock.yaml', 'packages/a/package.json'],
    expected: [
      'tasks[0] modifies packages/a/package.json but does not declare pnpm-lock.yaml, which installing its dependencies may rewrite: add pnpm-lock.yaml to tasks[0].metadata.files.mayChange',
    ],
  },
  {
    name: 'Cargo, Go, uv and Poetry',
    tasks: [{ modify: ['Cargo.toml'] }, { modify: ['svc/go.mod'] }, { modify: ['py/pyproject.toml'] }, { modify: ['tool/pyproject.toml'] }],
    tracked: ['Cargo.toml', 'Cargo.lock', 'svc/go.mod', 'svc/go.sum', 'py/pyproject.toml', 'py/uv.lock', 'tool/pyproject.toml', 'tool/poetry.lock'],
    expected: [
      'tasks[0] modifies Cargo.toml but does not declare Cargo.lock, which installing its dependencies may rewrite: add Cargo.lock to tasks[0].metadata.files.mayChange',
      'tasks[1] modifies svc/go.mod but does not declare svc/go.sum, which installing its dependencies may rewrite: add svc/go.sum to tasks[1].metadata.files.mayChange',
      'tasks[2] modifies py/pyproject.toml but does not declare py/uv.lock, which installing its dependencies may rewrite: add py/uv.lock to tasks[2].metadata.files.mayChange',
      'tasks[3] modifies tool/pyproject.toml but does not declare tool/poetry.lock, which installing its dependencies may rewrite: add tool/poetry.lock to tasks[3].metadata.files.mayChange',
    ],
  },
  {
    name: 'an acceptance check needs a file the last commit does not have and no task creates',
    tasks: [{ create: ['src/x.ts'], checks: ['npm test', 'test -f dist/x.mjs'] }],
    tracked: ['package.json'],
    expected: [
      "tasks[0].agent.acceptanceCriteria[1].check needs dist/x.mjs, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add dist/x.mjs to tasks[0].metadata.files.create",
    ],
  },
  {
    name: 'checks needing files as a reader, a script and a command run by its path',
    tasks: [{ modify: ['src/a.ts'], checks: ['grep -q "export const a" src/b.ts && ./bin/tool --check', 'node scripts/verify.mjs'] }],
    tracked: ['src/a.ts'],
    expected: [
      "tasks[0].agent.acceptanceCriteria[0].check needs bin/tool, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add bin/tool to tasks[0].metadata.files.create",
      "tasks[0].agent.acceptanceCriteria[0].check needs src/b.ts, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add src/b.ts to tasks[0].metadata.files.create",
      "tasks[0].agent.acceptanceCriteria[1].check needs scripts/verify.mjs, which the repository's last commit does not have and no task creates, so the check fails whatever the worker does: correct the check, or add scripts/verify.mjs to tasks[0].metadata.files.create",
    ],
  },
];

interface SoundCase {
  name: string;
  plan: () => Plan;
  tracked: string[] | null;
}

const exampleFile = (path: string): Plan => JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Plan;

/** The example plan in skills/design/plan-format.md, the one /foreman:design is shown. */
function designSkillExample(): Plan {
  const text = readFileSync(join(ROOT, 'skills/design/plan-format.md'), 'utf8');
  return JSON.parse(/```json\n([\s\S]*?)\n```/.exec(text)![1]!) as Plan;
}

/** What the rate-limit examples' repository holds before the plan runs (the survey's notes: its completed task 0 made them). */
const RATE_LIMIT_REPOSITORY = [
  'package.json',
  'package-lock.json',
  'src/config/schema.ts',
  'src/config/load.ts',
  'src/server/hooks.ts',
  'src/metrics/index.ts',
  'docs/index.md',
  'docs/notes/rate-limit-survey.md',
  'README.md',
];

const SOUND: SoundCase[] = [
  { name: 'test/plans/valid/minimal.json', plan: () => JSON.parse(validText('minimal')) as Plan, tracked: ['README.md'] },
  { name: 'test/plans/valid/realistic.json', plan: () => JSON.parse(validText('realistic')) as Plan, tracked: RATE_LIMIT_REPOSITORY },
  { name: 'test/plans/valid/realistic.json, no repository', plan: () => JSON.parse(validText('realistic')) as Plan, tracked: null },
  { name: '.design/examples/plan.json', plan: () => exampleFile('.design/examples/plan.json'), tracked: RATE_LIMIT_REPOSITORY },
  { name: "the design skill's example (plan-format.md)", plan: designSkillExample, tracked: RATE_LIMIT_REPOSITORY },
  {
    name: 'a modify after its creator, transitively',
    plan: () => planOf([{ create: ['src/a.ts'] }, { create: ['src/b.ts'], blockedBy: [0] }, { modify: ['src/a.ts'], blockedBy: [1] }]),
    tracked: [],
  },
  {
    name: 'a modify of a file a completed task created, not a blocker',
    plan: () => planOf([{ create: ['src/a.ts'], status: 'completed' }, { modify: ['src/a.ts'] }]),
    tracked: [],
  },
  {
    name: 'acceptance checks that need only what the commit has or a task writes, or that the lint cannot follow',
    plan: () =>
      planOf([
        { create: ['src/x.ts', 'dist/'], checks: ['test -f src/x.ts', 'test -s dist/x.mjs', '[ -d src ]', 'cat README.md', 'test -d dist/'] },
        {
          modify: ['src/a.ts'],
          mayChange: ['snapshots/a.snap'],
          blockedBy: [0],
          checks: ['grep -q a src/a.ts', 'test -f snapshots/a.snap', 'test -f src/x.ts'],
        },
        {
          create: ['docs/a.md'],
          checks: [
            // Made by the check itself, or before it by a command that may make files.
            'npm run build && test -f build/out.js',
            'node scripts/build.mjs > /dev/null; test -f build/out.js',
            // Negated, tolerated, conditional, substituted, expanded, absolute, outside the repository.
            'test ! -f tmp/lock',
            '! test -e tmp/lock',
            'test -f out/a.txt || echo none',
            'test -f out/a.txt -o -f out/b.txt',
            'if [ -f out/a.txt ]; then cat out/a.txt; fi',
            'test "$(cat out/a.txt)" = ok',
            'test -f "$OUT/a.txt"',
            'ls out/*.txt',
            'test -f /etc/hosts',
            'test -f ../sibling/a.txt',
            // What a setup command or .worktreeinclude provides.
            'test -x node_modules/.bin/tsc',
            'test -f .env',
            // A grep pattern and an option's value are no files.
            'grep -A 3 "x.y" docs/a.md',
            'grep -e "a.b" -e c docs/a.md',
            'head -n 5 docs/a.md',
            // Output written, not read.
            'echo ok > out/log.txt',
            // A test runner's operands may be filters.
            'npx vitest run test/missing.test.ts',
          ],
        },
        { create: ['src/y.ts'], status: 'completed', checks: ['test -f dist/gone.mjs'] },
      ]),
    tracked: ['README.md', 'src/a.ts', 'src/y.ts', 'scripts/build.mjs'],
  },
  {
    name: 'an acceptance check naming a missing file, outside a repository (nothing to compare with)',
    plan: () => planOf([{ create: ['src/x.ts'], checks: ['test -f dist/x.mjs'] }]),
    tracked: null,
  },
  {
    name: 'models the Claude Code CLI knows, and a completed task with one it does not',
    plan: () =>
      planOf([
        { create: ['a.ts'], model: 'opus' },
        { create: ['b.ts'], model: 'Sonnet' },
        { create: ['c.ts'], model: 'opusplan' },
        { create: ['d.ts'], model: 'sonnet[1m]' },
        { create: ['e.ts'], model: 'claude-sonnet-4-5-20250929' },
        { create: ['f.ts'], model: 'us.anthropic.claude-opus-4-1-20250805-v1:0' },
        { create: ['g.ts'], model: 'haiku-4', status: 'completed' },
      ]),
    tracked: ['g.ts'],
  },
  {
    name: 'keys starting x- and the fields foreman writes, at every level',
    plan: () => {
      const plan = planOf(
        [
          { create: ['a.ts'], checks: ['true'] },
          { create: ['b.ts'], status: 'completed' },
        ],
        {
          'x-owner': 'me',
          planId: '0b7c1e0e-6f2e-4c3b-9a61-2f6d8f1e0c11',
          $schema: 'https://example.com/plan.schema.json',
          context: { testCommand: 'npm test', 'x-ci': { provider: 'github' }, lsp: { typescript: true } },
          progress: { completedTasks: [1], surprises: [], decisions: [], 'x-mood': 'fine' },
        },
      );
      Object.assign(plan.tasks[0]!, {
        'x-estimate': '30m',
        status: 'failed',
        attempts: 3,
        result: 'FAILED: no',
        retryAdvice: 'look again',
        undeclaredWrites: ['stray.txt'],
        setAside: { attempt: 3, paths: ['stray.txt'], commit: 'a'.repeat(40) },
        usage: { costUsd: 0.1, inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheCreationTokens: 0 },
        rejectedAt: '2026-11-29T08:00:00.000Z',
        fileOverlaps: [],
      });
      plan.tasks[0]!.metadata['x-team'] = 'data';
      (plan.tasks[0]!.metadata.files as unknown as Record<string, unknown>)['x-note'] = 'n';
      plan.tasks[0]!.agent!.acceptanceCriteria![0]!['x-why'] = 'it says so';
      Object.assign(plan.tasks[1]!, { usage: 'unknown', commit: 'b'.repeat(40), approvedAt: '2026-11-29T08:00:00.000Z', recheck: false });
      return plan;
    },
    tracked: ['b.ts'],
  },
  {
    name: 'modifies of files the last commit has, by unordered tasks (the overlap keeps them apart)',
    plan: () => planOf([{ modify: ['src/a.ts', 'src/'] }, { modify: ['src/a.ts'] }]),
    tracked: ['src/a.ts'],
  },
  {
    name: 'a read ordered either way round: after the writer, or before it',
    plan: () =>
      planOf([
        { modify: ['src/a.ts'] },
        { create: ['docs/a.md'], reads: ['src/a.ts'], blockedBy: [0] },
        { create: ['docs/b.md'], reads: ['src/b.ts'] },
        { modify: ['src/b.ts'], blockedBy: [2] },
      ]),
    tracked: ['src/a.ts', 'src/b.ts'],
  },
  {
    name: 'reads of the same path by unordered tasks, no writer',
    plan: () =>
      planOf([
        { create: ['a.md'], reads: ['src/'] },
        { create: ['b.md'], reads: ['src/a.ts'] },
      ]),
    tracked: ['src/a.ts'],
  },
  {
    name: 'prompts naming declared, read, context and untracked files, and prose',
    plan: () =>
      planOf([
        {
          create: ['src/feature.ts'],
          modify: ['src/index.ts'],
          reads: ['src/config/'],
          contextFiles: ['src/server/hooks.ts'],
          prompt:
            'Create src/feature.ts (see src/config/load.ts and src/server/hooks.ts), export it from src/index.ts, e.g. as `feature`. Use Node.js and the index. Mention test/feature.test.ts, which the next task writes. Do not read .env.',
        },
      ]),
    tracked: ['src/index.ts', 'src/config/load.ts', 'src/server/hooks.ts', 'index', 'Node.js'.toLowerCase()],
  },
  {
    name: 'a manifest with its lockfile declared, in modify, in mayChange or under a directory',
    plan: () =>
      planOf([
        { modify: ['package.json', 'package-lock.json'] },
        { modify: ['a/package.json'], mayChange: ['a/yarn.lock'], blockedBy: [0] },
        { modify: ['b/Cargo.toml', 'b/'], blockedBy: [1] },
      ]),
    tracked: ['package.json', 'package-lock.json', 'a/package.json', 'a/yarn.lock', 'b/Cargo.toml', 'b/Cargo.lock'],
  },
  {
    name: 'a manifest with no lockfile in the repository (go.sum is never looked for above go.mod)',
    plan: () => planOf([{ modify: ['package.json'] }, { modify: ['svc/go.mod'], blockedBy: [0] }]),
    tracked: ['package.json', 'svc/go.mod', 'go.sum'],
  },
  {
    name: 'completed tasks: hazards only they held are past',
    plan: () =>
      planOf([
        { create: ['src/a.ts'], status: 'completed' },
        { modify: ['src/a.ts'], reads: ['src/b.ts'], status: 'completed', prompt: 'Edit src/a.ts and src/b.ts.' },
        { modify: ['src/b.ts'] },
      ]),
    tracked: ['src/a.ts', 'src/b.ts'],
  },
];

describe('the plan lint: hazard plans', () => {
  it.each(HAZARDS.map((c) => [c.name, c] as const))('%s', (_, c) => {
    expect(lines(planOf(c.tasks), c.tracked)).toEqual(c.expected);
  });

  it('every line names the task the fix is for first, and the file', () => {
    for (const c of HAZARDS) {
      for (const w of lintPlan(planOf(c.tasks), c.tracked === null ? null : new Set(c.tracked)).warnings) {
        expect(w.message.startsWith(`tasks[${w.task}]`), w.message).toBe(true);
        expect(w.message).toContain(` ${w.path}`);
        for (const other of w.others) expect(w.message).toContain(`tasks[${other}]`);
        expect(w.message).not.toContain('\n');
      }
    }
  });

  it('the fix it names takes the warning away: the plan with the fix applied is sound', () => {
    const fixed: Array<{ tasks: Spec[]; tracked: string[] | null }> = [
      { tasks: [{ create: ['src/a.ts'] }, { modify: ['src/a.ts'], blockedBy: [0] }], tracked: null },
      { tasks: [{ create: ['src/a.ts'] }, { modify: ['src/a.ts'], blockedBy: [0] }], tracked: null },
      { tasks: [{ create: ['src/a.ts'] }, { create: ['src/b.ts'], reads: ['src/a.ts'], blockedBy: [0] }], tracked: [] },
      {
        tasks: [{ create: ['src/feature.ts'], modify: ['src/index.ts'], prompt: 'Create src/feature.ts and export it from src/index.ts.' }],
        tracked: ['src/index.ts'],
      },
      { tasks: [{ modify: ['package.json'], mayChange: ['package-lock.json'] }], tracked: ['package.json', 'package-lock.json'] },
      { tasks: [{ create: ['src/x.ts', 'dist/x.mjs'], checks: ['npm test', 'test -f dist/x.mjs'] }], tracked: ['package.json'] },
    ];
    for (const f of fixed) expect(lines(planOf(f.tasks), f.tracked)).toEqual([]);
  });

  it('without a repository, only the hazards between the tasks are looked for', () => {
    const plan = planOf([{ modify: ['package.json', 'src/gone.ts'], prompt: 'Edit src/index.ts.' }]);
    expect(lines(plan, null)).toEqual([]);
    expect(lines(plan, ['package.json', 'package-lock.json', 'src/index.ts']).map((l) => l.split(' ').slice(0, 3).join(' '))).toEqual([
      'tasks[0] modifies src/gone.ts,',
      'tasks[0].prompt names src/index.ts,',
      'tasks[0] modifies package.json',
    ]);
  });
});

describe('the plan lint: sound plans get no warning', () => {
  it.each(SOUND.map((c) => [c.name, c] as const))('%s', (_, c) => {
    const plan = c.plan();
    expect(validatePlan(structuredClone(plan)).ok).toBe(true);
    expect(lintPlan(plan, c.tracked === null ? null : new Set(c.tracked))).toEqual({ warnings: [], accepted: [] });
  });
});

describe('the plan lint: fields the schema does not define, and models', () => {
  const unknown = (where: string, key: string) =>
    `${where}: unknown field, kept but not read by foreman: remove it, or rename it "x-${key}" to keep it as your own data`;

  it("names every field of the extra-fields plan the schema does not define, at every level, the plan's own first; x- keys are silent", () => {
    const plan = JSON.parse(validText('extra-fields')) as Plan;
    const lint = lintPlan(plan, new Set(['src/model.ts', 'docs/export.md']));
    expect(lint.warnings.map((w) => [w.kind, w.task, w.path, w.message])).toEqual([
      ['unknown-field', null, null, unknown('context.ci', 'ci')],
      ['unknown-field', null, null, unknown('designer', 'designer')],
      ['unknown-field', null, null, unknown('progress.mood', 'mood')],
      ['unknown-field', null, null, unknown('reviewedAt', 'reviewedAt')],
      ['unknown-field', 0, null, unknown('tasks[0].agent.temperature', 'temperature')],
      ['unknown-field', 0, null, unknown('tasks[0].estimate', 'estimate')],
      ['unknown-field', 0, null, unknown('tasks[0].labels', 'labels')],
      ['unknown-field', 0, null, unknown('tasks[0].metadata.files.note', 'note')],
      ['unknown-field', 0, null, unknown('tasks[0].metadata.owner', 'owner')],
    ]);
  });

  it('names a field in an entry of a list: an acceptance check, an assumption, a context file, an acceptance', () => {
    const plan = planOf([{ create: ['a.ts'], checks: ['true'], contextFiles: ['README.md'] }]);
    plan.tasks[0]!.agent!.acceptanceCriteria![0]!.timeout = 30;
    plan.tasks[0]!.agent!.assumptions = [{ claim: 'c', verify: 'true', severity: 'warning', note: 'n' }];
    plan.tasks[0]!.agent!.contextFiles![0]!.why = 'w';
    plan.acceptedWarnings = [{ warning: unknown('tasks[0].agent.contextFiles[0].why', 'why'), reason: 'a note', by: 'me' }];
    expect(validatePlan(structuredClone(plan)).ok).toBe(true);
    const lint = lintPlan(plan, new Set(['README.md']));
    expect(lint.warnings.map((w) => w.message)).toEqual([
      unknown('acceptedWarnings[0].by', 'by'),
      unknown('tasks[0].agent.acceptanceCriteria[0].timeout', 'timeout'),
      unknown('tasks[0].agent.assumptions[0].note', 'note'),
    ]);
    expect(lint.accepted.map((a) => a.warning.message)).toEqual([unknown('tasks[0].agent.contextFiles[0].why', 'why')]);
  });

  it('an unknown field is accepted through acceptedWarnings like any warning', () => {
    const plan = planOf([{ create: ['a.ts'] }], { notes: 'mine' });
    expect(lines(plan, [])).toEqual([unknown('notes', 'notes')]);
    plan.acceptedWarnings = [{ warning: unknown('notes', 'notes'), reason: 'read by our own tooling' }];
    expect(lintPlan(plan, new Set())).toEqual({
      warnings: [],
      accepted: [
        { warning: { kind: 'unknown-field', task: null, others: [], path: null, message: unknown('notes', 'notes') }, reason: 'read by our own tooling' },
      ],
    });
  });

  it('a pending task whose model the Claude Code CLI would not know: the alias it nearly spells, else how to fix it', () => {
    const plan = planOf([
      { create: ['a.ts'], model: 'haiku-4' },
      { create: ['b.ts'], model: 'gpt-4o' },
      { create: ['c.ts'], model: 'sonet' },
    ]);
    const aliases = 'sonnet, opus, haiku, fable, best, sonnet[1m], opus[1m], fable[1m], opusplan';
    expect(lintPlan(plan, new Set()).warnings.map((w) => [w.kind, w.task, w.message])).toEqual([
      [
        'unknown-model',
        0,
        `tasks[0].agent.model "haiku-4" is neither an alias the Claude Code CLI accepts (${aliases}) nor a Claude model name (claude-…): write "haiku"`,
      ],
      [
        'unknown-model',
        1,
        `tasks[1].agent.model "gpt-4o" is neither an alias the Claude Code CLI accepts (${aliases}) nor a Claude model name (claude-…): correct it, or remove it to use "sonnet"`,
      ],
      [
        'unknown-model',
        2,
        `tasks[2].agent.model "sonet" is neither an alias the Claude Code CLI accepts (${aliases}) nor a Claude model name (claude-…): write "sonnet"`,
      ],
    ]);
  });
});

describe('accepted warnings', () => {
  const hazard = (): Plan => planOf([{ create: ['src/a.ts'] }, { modify: ['src/a.ts'] }, { modify: ['src/b.ts'] }]);
  const unordered = 'tasks[1] modifies src/a.ts, which tasks[0] creates, but does not depend on it: add 0 to tasks[1].blockedBy';
  const missing =
    "tasks[2] modifies src/b.ts, which the repository's last commit does not have and no task creates: correct the path, or move it from modify to create in tasks[2]";

  it('an accepted warning is set apart with its reason and no longer reported; the others are', () => {
    const plan = hazard();
    plan.acceptedWarnings = [{ warning: `  ${unordered} `, reason: 'task 1 only appends; either order works' }];
    expect(validatePlan(structuredClone(plan)).ok).toBe(true);
    const lint = lintPlan(plan, new Set());
    expect(lint.warnings.map((w) => w.message)).toEqual([missing]);
    expect(lint.accepted).toEqual([
      {
        warning: expect.objectContaining({ kind: 'unordered-create', task: 1, path: 'src/a.ts', message: unordered }),
        reason: 'task 1 only appends; either order works',
      },
    ]);
  });

  it('an acceptance that matches no warning is reported, naming it, and is kept', () => {
    const plan = hazard();
    plan.tasks[1]!.blockedBy = [0];
    plan.acceptedWarnings = [
      { warning: unordered, reason: 'either order' },
      { warning: missing, reason: 'task 2 makes it with a generator' },
    ];
    const lint = lintPlan(plan, new Set());
    expect(lint.accepted.map((a) => a.reason)).toEqual(['task 2 makes it with a generator']);
    expect(lint.warnings).toEqual([
      {
        kind: 'stale-acceptance',
        task: null,
        others: [],
        path: null,
        message: `acceptedWarnings[0] accepts a warning the plan no longer has ("${unordered}"): remove it from acceptedWarnings`,
      },
    ]);
    expect(plan.acceptedWarnings).toHaveLength(2);
  });

  it('the schema takes acceptances with a warning and a reason, and refuses one without a reason', () => {
    const plan = hazard();
    plan.acceptedWarnings = [{ warning: unordered } as never];
    const r = validatePlan(plan);
    expect(r.ok ? [] : r.error).toEqual(['acceptedWarnings[0]: missing required field "reason"']);
    plan.acceptedWarnings = [{ warning: unordered, reason: '' }];
    const empty = validatePlan(plan);
    expect(empty.ok ? [] : empty.error).toEqual(['acceptedWarnings[0].reason: must not be empty']);
  });
});

describe('prompt paths and lockfiles', () => {
  it('a prompt path is a tracked file named exactly, never prose', () => {
    const tracked = new Set(['src/index.ts', 'README.md', 'Makefile', 'build', 'docs/a b.md']);
    expect(promptPaths('See src/index.ts: and README.md. Then build it with the Makefile; src/index.tsx is not it.', tracked).sort()).toEqual([
      'Makefile',
      'README.md',
      'src/index.ts',
    ]);
    expect(promptPaths('src/index.ts#L3 and "./README.md"', tracked).sort()).toEqual(['README.md', 'src/index.ts']);
  });

  it("the nearest directory holding a lockfile of the manifest's kind", () => {
    const tracked = new Set(['package-lock.json', 'yarn.lock', 'web/package.json', 'web/app/package.json', 'web/app/yarn.lock', 'go.sum', 'svc/go.mod']);
    expect(lockfilesOf('web/package.json', tracked)).toEqual(['package-lock.json', 'yarn.lock']);
    expect(lockfilesOf('web/app/package.json', tracked)).toEqual(['web/app/yarn.lock']);
    expect(lockfilesOf('svc/go.mod', tracked)).toEqual([]);
    expect(lockfilesOf('src/index.ts', tracked)).toEqual([]);
  });
});

describe('notices at the start of a run', () => {
  it('at most the limit, then how many more and the command listing them all', () => {
    const warnings: PlanWarning[] = ['a', 'b', 'c'].map((message) => ({ kind: 'missing-file', task: 0, others: [], path: 'x', message }));
    expect(warningNotices(warnings, 'plan check', 2)).toEqual(['plan warning: a', 'plan warning: b', 'plan warning: 1 more; `plan check` lists them all']);
    expect(warningNotices(warnings, 'plan check', 3)).toEqual(['plan warning: a', 'plan warning: b', 'plan warning: c']);
    expect(warningNotices([], 'plan check')).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The index against a brute-force pairwise reference.

const keyOf = (p: string) => (p.endsWith('/') ? p.slice(0, -1) : p);
/** `c` (a created path) makes `p` exist: the same path, or a directory holding it. */
const makes = (c: string, p: string) => keyOf(c) === keyOf(p) || (c.endsWith('/') && p.startsWith(c));
/** Two paths meet: the same, or one a directory holding the other. */
const meet = (a: string, b: string) => keyOf(a) === keyOf(b) || (a.endsWith('/') && b.startsWith(a)) || (b.endsWith('/') && a.startsWith(b));

/** The ordering hazards and missing files, pair by pair, as `kind task path others`. */
function orderingBrute(plan: Plan, tracked: ReadonlySet<string>): string[] {
  const tasks = plan.tasks;
  const reach = reachable(tasks.map((t) => t.blockedBy));
  const done = (i: number) => statusOf(tasks[i]!) === 'completed';
  const out: string[] = [];
  tasks.forEach((t, i) => {
    if (done(i)) return;
    for (const p of t.metadata.files.modify) {
      const creators = tasks.flatMap((c, j) => (c.metadata.files.create.some((x) => makes(x, p)) ? [j] : []));
      const live = creators.filter((j) => j !== i && !done(j));
      const unordered = live.filter((j) => !reach[i]!.has(j) && !reach[j]!.has(i));
      const after = live.filter((j) => reach[j]!.has(i));
      if (unordered.length > 0) out.push(`unordered-create ${i} ${p} ${unordered.join(',')}`);
      if (after.length > 0) out.push(`create-after-modify ${i} ${p} ${after.join(',')}`);
      const exists = p.endsWith('/')
        ? [...tracked].some((f) => f.startsWith(p)) || tasks.some((c) => c.metadata.files.create.some((x) => keyOf(x).startsWith(p)))
        : tracked.has(p);
      if (creators.length === 0 && !exists) out.push(`missing-file ${i} ${p} `);
    }
    for (const r of t.metadata.reads ?? []) {
      const writers = tasks.flatMap((w, j) =>
        j !== i && !done(j) && !reach[i]!.has(j) && !reach[j]!.has(i) && [...w.metadata.files.create, ...w.metadata.files.modify].some((x) => meet(x, r))
          ? [j]
          : [],
      );
      if (writers.length > 0) out.push(`unordered-read ${i} ${r} ${writers.join(',')}`);
    }
  });
  return out.sort();
}

const ORDERING = new Set(['unordered-create', 'create-after-modify', 'missing-file', 'unordered-read']);

describe('the plan lint against a brute-force reference', () => {
  it('finds exactly the ordering hazards and missing files pairwise comparison finds', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'consistent', maxTasks: 10 }), fc.subarray([...PATH_POOL].filter((p) => !p.endsWith('/'))), (plan, files) => {
        const tracked = new Set(files);
        const found = lintPlan(plan, tracked)
          .warnings.filter((w) => ORDERING.has(w.kind))
          .map((w) => `${w.kind} ${w.task} ${w.path} ${w.others.join(',')}`)
          .sort();
        expect(found).toEqual(orderingBrute(plan, tracked));
      }),
      { numRuns: 300 },
    );
  });

  it('on any valid plan: one line each, starting with the task it is for, kinds known, no duplicates', () => {
    fc.assert(
      fc.property(planArb({ statuses: 'any', maxTasks: 10 }), fc.subarray([...PATH_POOL]), (plan, files) => {
        const { warnings } = lintPlan(plan, new Set(files));
        for (const w of warnings) {
          expect(PLAN_WARNING_KINDS).toContain(w.kind);
          expect(w.message.startsWith(`tasks[${w.task}]`)).toBe(true);
          expect(w.task! < plan.tasks.length && w.others.every((o) => o < plan.tasks.length && o !== w.task)).toBe(true);
        }
        expect(new Set(warnings.map((w) => w.message)).size).toBe(warnings.length);
      }),
      { numRuns: 200 },
    );
  });
});
