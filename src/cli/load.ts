// Loading a plan for a command: read, validate, and turn every problem into a CliError (exit 2).

import { resolve } from 'node:path';
import { ownLayout } from '../adapters/layout.ts';
import { readPlanFile } from '../adapters/plan-store.ts';
import { clipHead } from '../core/format.ts';
import { type Plan, statusOf } from '../core/plan.ts';
import { type ValidateOptions, parsePlan } from '../core/validate.ts';
import { archivedPlans } from '../run/plan-landing.ts';
import { CliError, EXIT } from './exit.ts';

export const DEFAULT_PLAN = '.design/plan.json';

export function planPathFrom(values: { plan?: unknown }, base: string): string {
  return resolve(base, typeof values.plan === 'string' ? values.plan : DEFAULT_PLAN);
}

/**
 * The line for a plan path with no plan. After a plan finished it was moved to `history/`: the
 * line names that archive, so a person who just ran one is not only told to write one.
 */
export async function missingPlanLine(path: string): Promise<string> {
  const last = (await archivedPlans(path))[0];
  if (last === undefined) return `no plan at ${path}: write one with /foreman:design <goal> first, or pass --plan FILE`;
  const completed = last.plan.tasks.filter((task) => statusOf(task) === 'completed').length;
  const goal = clipHead(last.plan.goal.replace(/\s+/g, ' '), 60);
  return `no plan at ${path}: the last one ("${goal}", ${completed} of ${last.plan.tasks.length} tasks completed) was archived to ${last.path}; write a new one with /foreman:design <goal>, or pass --plan FILE`;
}

export async function loadPlan(path: string, options: ValidateOptions = {}): Promise<Plan> {
  return (await loadPlanFile(path, options)).plan;
}

/** The plan and the text it was read from (a run keeps the text to notice edits made while it runs). */
export async function loadPlanFile(path: string, options: ValidateOptions = {}): Promise<{ plan: Plan; text: string }> {
  const read = await readPlanFile(path);
  if (!read.ok) {
    throw new CliError(EXIT.invalid, [read.error.kind === 'missing' ? await missingPlanLine(path) : `cannot read ${path}: ${read.error.message}`]);
  }
  const parsed = parsePlan(read.value.text, { layout: ownLayout(), ...options });
  if (!parsed.ok) {
    throw new CliError(EXIT.invalid, [`${path}: the plan is invalid (${parsed.error.length} problem${parsed.error.length === 1 ? '' : 's'}):`, ...parsed.error.map((p) => `  ${p}`)]);
  }
  return { plan: parsed.value, text: read.value.text };
}
