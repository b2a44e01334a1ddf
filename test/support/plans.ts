// Building plans for tests: tasks whose prompts carry a marker and a fake-worker directive.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Plan, Task } from '../../src/core/plan/plan.ts';

export interface FakeTaskSpec {
  subject?: string;
  create?: string[];
  modify?: string[];
  reads?: string[];
  blockedBy?: number[];
  /** The fake worker's directive (see test/fixtures/fake-worker.mjs). */
  fake?: unknown;
  acceptance?: Array<{ criterion: string; check: string }>;
  assumptions?: Array<{ claim: string; verify: string; severity: 'blocking' | 'warning' }>;
  fallback?: string;
  gate?: 'human-approval';
  maxBudgetUsd?: number;
  prompt?: string;
}

export function fakeTask(marker: string, spec: FakeTaskSpec): Task {
  const lines = [spec.prompt ?? `Do ${marker}.`, `TASK-MARKER: ${marker}`];
  if (spec.fake !== undefined) lines.push(`FAKE-WORKER: ${JSON.stringify(spec.fake)}`);
  const task: Task = {
    subject: spec.subject ?? `task ${marker}`,
    prompt: lines.join('\n'),
    blockedBy: spec.blockedBy ?? [],
    metadata: { files: { create: spec.create ?? [], modify: spec.modify ?? [] }, ...(spec.reads ? { reads: spec.reads } : {}) },
  };
  if (spec.acceptance || spec.assumptions || spec.fallback || spec.maxBudgetUsd) {
    task.agent = {
      ...(spec.acceptance ? { acceptanceCriteria: spec.acceptance } : {}),
      ...(spec.assumptions ? { assumptions: spec.assumptions } : {}),
      ...(spec.fallback ? { fallback: spec.fallback } : {}),
      ...(spec.maxBudgetUsd ? { maxBudgetUsd: spec.maxBudgetUsd } : {}),
    };
  }
  if (spec.gate) task.gate = spec.gate;
  return task;
}

export const makePlan = (tasks: Task[], extra: Partial<Plan> = {}): Plan => ({ schemaVersion: 3, goal: 'test goal', tasks, ...extra });

export async function writePlan(repo: string, plan: Plan, rel = '.design/plan.json'): Promise<string> {
  const path = join(repo, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(plan, null, 2)}\n`);
  return path;
}

export const readPlan = async (path: string): Promise<Plan> => JSON.parse(await readFile(path, 'utf8')) as Plan;

/** A task blocked because it needed a file it does not declare (`ext`: its files' extension), as a run leaves it. */
export const blockedOnUndeclared = (ext = 'js'): Task => ({
  subject: 'export the feature',
  prompt: `Create src/feature.${ext} and export it from src/index.${ext}.`,
  blockedBy: [],
  metadata: { files: { create: [`src/feature.${ext}`], modify: [] } },
  status: 'blocked',
  attempts: 1,
  result: `BLOCKED: needs to modify src/index.${ext}; it needs src/index.${ext}, which the task does not declare`,
  undeclaredWrites: [`src/index.${ext}`],
});
