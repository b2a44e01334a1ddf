// A task's status changes in one place: the step function (core/engine/), through the
// transitions it calls (core/attempt/transition.ts, and the cascade of skips in core/plan/cascade-skips.ts). The
// person's own decisions between runs (approve, reject, retry, skip: core/attempt/interventions.ts) are
// the one other door. This reads the source with the TypeScript compiler's type checker
// (test/support/status-writes.ts), so a new writer anywhere else fails here, in any form: the
// detector itself is checked on a snippet of each.

import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { programOf, type StatusWrite, statusWrites, TASK_MODULE } from '../support/status-writes.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path).split('\\').join('/');
const paths = sources(SRC);
const files = paths.map((path) => ({ path: rel(path), text: readFileSync(path, 'utf8') }));

/** Where a task may be given a status, and why. */
const ALLOWED: ReadonlyArray<{ file: string; within?: string; forms?: ReadonlyArray<StatusWrite['form']>; why: string }> = [
  { file: 'src/core/attempt/transition.ts', why: 'the transitions the step function applies' },
  { file: 'src/core/plan/cascade-skips.ts', within: 'applyCascade', why: "the skips a failure (or a person's decision) leads to" },
  { file: 'src/core/attempt/finalize.ts', within: 'trimCompleted', why: 'a completed task keeps the status it has' },
  { file: 'src/core/attempt/interventions.ts', why: "the person's decisions between runs" },
  { file: 'src/core/plan/validate.ts', within: 'withDefaults', why: '`plan check --fix` writes out the status a task has (statusOf)' },
  {
    file: 'src/core/engine/record.ts',
    forms: ['replacement'],
    why: 'the step function records results and commits on new task objects, giving none a status (that would be a literal)',
  },
];

const allowedBy = (write: StatusWrite) =>
  ALLOWED.find(
    (a) => a.file === rel(write.file) && (a.within === undefined || a.within === write.within) && (a.forms === undefined || a.forms.includes(write.form)),
  );

/** The functions that change task states, and who may call them. */
const TRANSITIONS: Record<string, readonly string[]> = {
  applyDecision: [
    'src/core/engine/conclude.ts',
    'src/core/engine/hosts.ts',
    'src/core/engine/merge-queue.ts',
    'src/core/engine/record.ts',
    'src/core/engine/review.ts',
    'src/core/engine/set-aside.ts',
  ],
  markStarted: ['src/core/engine/start.ts'],
  applySetupFindings: ['src/core/engine/step.ts'],
  applyCancelled: ['src/core/engine/speculation.ts'],
  // A failure's skips (through applyDecision) and the skips after a person's decision.
  applyCascade: ['src/core/attempt/transition.ts', 'src/core/attempt/interventions.ts'],
};

describe('task states change only through the step function', () => {
  const writes = statusWrites(programOf(paths), paths);

  it('reads the whole source, and sees the writes that exist (the test would pass vacuously otherwise)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(writes.filter((w) => rel(w.file) === 'src/core/attempt/transition.ts' && w.form === 'assignment').length).toBeGreaterThan(0);
  });

  it('no module outside the transitions gives a task a status or replaces a task, in any form', () => {
    expect(
      writes.filter((w) => allowedBy(w) === undefined).map((w) => `${rel(w.file)}:${w.line} (${w.form}${w.within ? ` in ${w.within}` : ''}): ${w.text}`),
    ).toEqual([]);
    // Every allowance is still needed: one no longer used would let a writer in unseen.
    for (const allowance of ALLOWED)
      expect(
        writes.some((w) => allowedBy(w) === allowance),
        allowance.why,
      ).toBe(true);
  });

  it('the step function replaces task objects only from the task itself, to record results and commits', () => {
    const replaced = writes.filter((w) => rel(w.file) === 'src/core/engine/record.ts');
    expect(replaced.length).toBeGreaterThan(0);
    for (const write of replaced) expect(write.text).toMatch(/^draft\.plan\.tasks\[task\] = \{ \.\.\.taskAt\(draft\.plan\.tasks, task\), (result|commit)\b/);
  });

  it('the transitions are called only by the step function (and the cascade by the transitions)', () => {
    for (const [name, callers] of Object.entries(TRANSITIONS)) {
      const using = files
        .filter((file) => new RegExp(`\\b${name}\\(`).test(file.text) && !new RegExp(`export function ${name}\\(`).test(file.text))
        .map((file) => file.path);
      expect({ name, callers: using.sort() }).toEqual({ name, callers: [...callers].sort() });
    }
  });
});

describe('the detector of status writes', () => {
  const task = `import type { Plan, Task } from '${TASK_MODULE}';\ndeclare const plan: Plan;\ndeclare const task: Task;\ndeclare const i: number;\n`;
  /** Each form a status can be given in: the detector must find every one. */
  const WRITES: Record<string, string> = {
    assigned: `task.status = 'completed';`,
    'assigned by index': `task['status'] = 'completed';`,
    'assigned by a key': `const key = 'status' as const;\ntask[key] = 'failed';`,
    'assigned when absent': `task.status ??= 'pending';`,
    'Object.assign': `Object.assign(task, { status: 'completed' });`,
    'Object.assign of a patch': `const patch = { status: 'failed' as const };\nObject.assign(plan.tasks[i]!, patch);`,
    'Reflect.set': `Reflect.set(task, 'status', 'completed');`,
    'Object.defineProperty': `Object.defineProperty(task, 'status', { value: 'completed' });`,
    splice: `plan.tasks.splice(i, 1, { ...plan.tasks[i]!, status: 'failed' });`,
    push: `plan.tasks.push({ subject: 's', blockedBy: [], metadata: { files: { create: [], modify: [] } }, status: 'completed' });`,
    'a new object put in the list': `const { status: _old, ...rest } = task;\nplan.tasks[i] = { ...rest, status: 'blocked' };`,
    'a copy shaped like a task': `const next = { ...task, status: 'pending' as const };\nvoid next;`,
    'a spread of a status': `plan.tasks[i] = { ...task, ...{ status: 'skipped' as const } };`,
    'a shorthand status': `const status = 'completed' as const;\nplan.tasks = plan.tasks.map((t) => ({ ...t, status }));`,
    'a computed key': `plan.tasks[i] = { ...task, ['status']: 'failed' };`,
    'a cast': `const made = { status: 'completed' } as Task;\nvoid made;`,
    'a task replaced whole': `declare const other: Task;\nplan.tasks[i] = other;`,
  };
  /** What is not a status write: reading one, another object's status, a task recorded without one. */
  const NOT_WRITES: Record<string, string> = {
    'a read': `const s = task.status;\nvoid s;`,
    "another object's status": `const run = { status: 'done', subject: 1 };\nrun.status = 'failed';`,
    'a copy without a status': `const copy = { ...task, result: 'done' };\nvoid copy;`,
    'a status of something else': `declare const probe: { status: string; checks: number[] };\nObject.assign(probe, { status: 'ok' });`,
  };
  const snippetPath = (name: string) => join(ROOT, 'test/core/status-write-snippets', `${name.replace(/\W+/g, '-')}.ts`);
  const snippets = new Map([...Object.entries(WRITES), ...Object.entries(NOT_WRITES)].map(([name, body]) => [snippetPath(name), `${task}${body}\n`]));
  const options = programOf([]).getCompilerOptions();
  const host = ts.createCompilerHost(options);
  const real = { getSourceFile: host.getSourceFile, fileExists: host.fileExists, readFile: host.readFile };
  host.getSourceFile = (name, language, ...rest) =>
    snippets.has(name) ? ts.createSourceFile(name, snippets.get(name)!, language) : real.getSourceFile(name, language, ...rest);
  host.fileExists = (name) => snippets.has(name) || real.fileExists(name);
  host.readFile = (name) => snippets.get(name) ?? real.readFile(name);
  const program = programOf([...snippets.keys()], host);

  it('the snippets are well-typed: what it finds is not an artefact of an error', () => {
    const errors = ts.getPreEmitDiagnostics(program).filter((d) => d.file !== undefined && snippets.has(d.file.fileName));
    expect(errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  });

  it.each(Object.keys(WRITES))('finds a status given by %s', (name) => {
    expect(statusWrites(program, [snippetPath(name)]).length, snippets.get(snippetPath(name))).toBeGreaterThan(0);
  });

  it.each(Object.keys(NOT_WRITES))('finds nothing in %s', (name) => {
    expect(statusWrites(program, [snippetPath(name)])).toEqual([]);
  });
});
