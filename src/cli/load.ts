// Loading a plan for a command: read, validate, and turn every problem into a CliError (exit 2).

import { resolve } from 'node:path';
import { ownLayout } from '../adapters/layout.ts';
import { readPlanFile } from '../adapters/plan-store.ts';
import type { Plan } from '../core/plan.ts';
import { type ValidateOptions, parsePlan } from '../core/validate.ts';
import { CliError, EXIT } from './exit.ts';

export const DEFAULT_PLAN = '.design/plan.json';

export function planPathFrom(values: { plan?: unknown }, base: string): string {
  return resolve(base, typeof values.plan === 'string' ? values.plan : DEFAULT_PLAN);
}

export async function loadPlan(path: string, options: ValidateOptions = {}): Promise<Plan> {
  return (await loadPlanFile(path, options)).plan;
}

/** The plan and the text it was read from (a run keeps the text to notice edits made while it runs). */
export async function loadPlanFile(path: string, options: ValidateOptions = {}): Promise<{ plan: Plan; text: string }> {
  const read = await readPlanFile(path);
  if (!read.ok) {
    throw new CliError(EXIT.invalid, [
      read.error.kind === 'missing' ? `no plan at ${path}: write one with /foreman:design <goal> first, or pass --plan FILE` : `cannot read ${path}: ${read.error.message}`,
    ]);
  }
  const parsed = parsePlan(read.value.text, { layout: ownLayout(), ...options });
  if (!parsed.ok) {
    throw new CliError(EXIT.invalid, [`${path}: the plan is invalid (${parsed.error.length} problem${parsed.error.length === 1 ? '' : 's'}):`, ...parsed.error.map((p) => `  ${p}`)]);
  }
  return { plan: parsed.value, text: read.value.text };
}
