// Loading a plan for a command: read, validate, and turn every problem into a CliError (exit 2).

import { access, realpath } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { ownLayout, ownPlanFormatPath, readPlanFile, topLevel } from '../adapters/index.ts';
import { clipHead, parsePlan, type Plan, plural, statusOf, type ValidateOptions } from '../core/index.ts';
import { archivedPlans, repositoryOf } from '../run/index.ts';
import { CliError, EXIT, gitFailedError } from './exit.ts';

export const DEFAULT_PLAN = '.design/plan.json';

/**
 * The plan a plan command reads: `--plan FILE` (relative to the current folder `cwd`), else the
 * one `findPlan` finds from `cwd`. No git process when `cwd` holds the plan.
 */
export async function planPathFrom(values: { plan?: unknown }, cwd: string): Promise<string> {
  if (typeof values.plan === 'string') return resolve(cwd, values.plan);
  const here = join(cwd, DEFAULT_PLAN);
  return (await exists(here)) ? here : findPlan(cwd, await repositoryTop(cwd));
}

/**
 * The plan a command that locks it before reading it (to edit it) works on: as `planPathFrom` finds
 * it, and there, else the missing plan's line (exit 2): the lock is made beside the plan, so
 * without the plan's folder taking it would fail, and say nothing of the plan.
 */
export async function existingPlanPath(values: { plan?: unknown }, cwd: string): Promise<string> {
  const path = await planPathFrom(values, cwd);
  if (!(await exists(path))) throw new CliError(EXIT.invalid, [await missingPlanLine(path)]);
  return path;
}

/**
 * The plan a command uses when it is not told, found as git finds its repository:
 * `.design/plan.json` in `start`, else in the nearest folder above it, up to the top of its
 * repository (`top`); with none, the top's (outside any repository, `start`'s), which the
 * message for a missing plan then names.
 */
export async function findPlan(start: string, top: string | null): Promise<string> {
  const candidates = [start];
  if (top !== null) {
    const topReal = await realpath(top).catch(() => top);
    let dir = await realpath(start).catch(() => start);
    while (dir.startsWith(`${topReal}${sep}`)) {
      dir = dirname(dir);
      candidates.push(dir === topReal ? top : dir);
    }
  }
  for (const dir of candidates) if (await exists(join(dir, DEFAULT_PLAN))) return join(dir, DEFAULT_PLAN);
  return join(top ?? start, DEFAULT_PLAN);
}

/**
 * The top of the git working tree holding `dir` (as `git rev-parse --show-toplevel` says, or
 * `dir` as written when it is the top); null outside any working tree, or when `dir` is not there.
 * When git cannot say (a repository another user owns), exit 4 with what git said: taken for no
 * repository, it would read as a missing plan.
 */
export async function repositoryTop(dir: string): Promise<string | null> {
  if (!(await exists(dir))) return null;
  const found = await topLevel(dir);
  if (!found.ok) throw gitFailedError(`find the git repository holding ${dir}`, found.error);
  const top = found.value;
  if (top === null) return null;
  const [dirReal, topReal] = await Promise.all([realpath(dir).catch(() => dir), realpath(top).catch(() => top)]);
  return dirReal === topReal ? dir : top;
}

/** The repository holding the plan at `planPath` (real path), or null outside any; exit 4 when git cannot say (`repositoryTop`). */
export async function planRepository(planPath: string): Promise<string | null> {
  const found = await repositoryOf(planPath);
  if (!found.ok) throw gitFailedError(`find the git repository holding ${dirname(planPath)}`, found.error);
  return found.value;
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * The line for a plan path with no plan. After a plan finished it was moved to `history/`: the
 * line names that archive, so a person who just ran one is not only told to write one.
 */
export async function missingPlanLine(path: string): Promise<string> {
  const last = (await archivedPlans(path))[0];
  if (last === undefined) return `no plan at ${path}: write one (${howToWriteAPlan()}), or pass --plan FILE`;
  const completed = last.plan.tasks.filter((task) => statusOf(task) === 'completed').length;
  const goal = clipHead(last.plan.goal.replace(/\s+/g, ' '), 60);
  return `no plan at ${path}: the last one ("${goal}", ${completed} of ${plural(last.plan.tasks.length, 'task')} completed) was archived to ${last.path}; write a new one (${howToWriteAPlan()}), or pass --plan FILE`;
}

/** Both ways to write a plan, for a person in Claude Code and one at a terminal. */
const howToWriteAPlan = (): string => `in Claude Code: /foreman:design <goal>; by hand: the format is in ${ownPlanFormatPath()}`;

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
    throw new CliError(EXIT.invalid, [
      `${path}: the plan is invalid (${parsed.error.length} problem${parsed.error.length === 1 ? '' : 's'}):`,
      ...parsed.error.map((p) => `  ${p}`),
    ]);
  }
  return { plan: parsed.value, text: read.value.text };
}
