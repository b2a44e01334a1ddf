// A task's status changes in one place: the step function (core/engine-step.ts), through the
// transitions it calls (core/transition.ts, and the cascade of skips in core/finalize.ts). The
// person's own decisions between runs (approve, reject, retry, skip: core/interventions.ts) are
// the one other door. This reads the source, so a new writer anywhere else fails here.

import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(SRC).map((path) => ({ path: relative(ROOT, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));

/** Where a task's status may be written. */
const WRITERS = new Set(['src/core/transition.ts', 'src/core/finalize.ts', 'src/core/interventions.ts']);

/** The functions that change task states, and who may call them. */
const TRANSITIONS: Record<string, readonly string[]> = {
  applyDecision: ['src/core/engine-step.ts'],
  markStarted: ['src/core/engine-step.ts'],
  applySetupFindings: ['src/core/engine-step.ts'],
  applyCancelled: ['src/core/engine-step.ts'],
  // A failure's skips (through applyDecision) and the skips after a person's decision.
  applyCascade: ['src/core/transition.ts', 'src/core/interventions.ts'],
};

const STATUS_WRITES = [
  // task.status = …
  /\.status\s*=(?!=)/,
  // { …, status: 'completed' }
  /\bstatus:\s*'(pending|in_progress|completed|failed|blocked|skipped|awaiting_approval)'/,
  // plan.tasks[i] = … (a new task object may carry another status)
  /\btasks\[[^\]]+\]\s*=(?!=)/,
];

function lines(text: string, pattern: RegExp): number[] {
  return text.split('\n').flatMap((line, i) => (pattern.test(line) && !line.trim().startsWith('//') && !line.trim().startsWith('*') ? [i + 1] : []));
}

describe('task states change only through the step function', () => {
  it('finds the source it reads (the test would pass vacuously otherwise)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(files.some((f) => f.path === 'src/core/engine-step.ts')).toBe(true);
    // The patterns do see the writes that exist.
    expect(lines(files.find((f) => f.path === 'src/core/transition.ts')!.text, STATUS_WRITES[0]!).length).toBeGreaterThan(0);
  });

  it('no module outside the transitions writes a task status or replaces a task', () => {
    const writes = files
      .filter((file) => !WRITERS.has(file.path) && file.path !== 'src/core/engine-step.ts')
      .flatMap((file) => STATUS_WRITES.flatMap((pattern) => lines(file.text, pattern).map((line) => `${file.path}:${line}`)));
    expect(writes).toEqual([]);
  });

  it('the step function replaces task objects only to record results and commits, never a status', () => {
    const engine = files.find((f) => f.path === 'src/core/engine-step.ts')!.text;
    const replaced = engine.split('\n').filter((line) => /\btasks\[[^\]]+\]\s*=(?!=)/.test(line));
    expect(replaced.length).toBeGreaterThan(0);
    for (const line of replaced) expect(line).not.toMatch(/status/);
    expect(lines(engine, STATUS_WRITES[0]!)).toEqual([]);
    expect(lines(engine, STATUS_WRITES[1]!)).toEqual([]);
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
