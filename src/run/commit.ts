// Integration commits and their reconciliation with plan.json.
//
// Order of events for a task that passes verification (crash consistency):
//   1. a commit on the plan's integration ref of exactly the declared files as the worker left
//      them, with trailers naming the plan, the tasks it holds and their results;
//   2. plan.json records the tasks as completed with the commit hash (atomic rename).
// A crash between 1 and 2 leaves tasks `in_progress` in plan.json whose work is integrated. On
// resume, `integratedFindings` reads the history of the integration ref (and HEAD) for commits
// carrying this plan's id, and the step function marks those tasks completed instead of running them again. A crash
// before 1 loses nothing the person made (the work was only in the attempt's worktree) and the
// task runs again. So an integrated task is never run again, and a task whose work was lost always is.

import type { Git } from '../adapters/index.ts';
import { ensurePlanId, type GitFailure, ok, oneLine, type Plan, type Result, type SetupFindings, statusOf, taskAt } from '../core/index.ts';

export const TRAILER_PLAN = 'Foreman-Plan';
export const TRAILER_TASKS = 'Foreman-Tasks';
export const TRAILER_RESULT = 'Foreman-Result';
/** On a held candidate's commit: the candidates its worker was built on, in queue order, or `tip`. */
export const TRAILER_STACK = 'Foreman-Stack';

/** A held candidate's `Foreman-Stack` trailer: what its worker was built on. */
export const stackTrailer = (stack: readonly number[]): [string, string] => [TRAILER_STACK, stack.length === 0 ? 'tip' : stack.join(',')];

/** The stack a `Foreman-Stack` trailer names, or null when it names none (no trailer: an earlier foreman's candidate). */
export function stackOfTrailer(trailers: ReadonlyArray<{ key: string; value: string }>): number[] | null {
  const value = trailers.find((t) => t.key.toLowerCase() === TRAILER_STACK.toLowerCase())?.value;
  if (value === 'tip') return [];
  return value !== undefined && /^\d+(,\d+)*$/.test(value) ? value.split(',').map(Number) : null;
}

export function roundMessage(plan: Plan, round: number, tasks: readonly number[]): { message: string; trailers: Array<[string, string]> } {
  const subjects = tasks.map((i) => `- task ${i}: ${taskAt(plan.tasks, i).subject}`);
  const title =
    tasks.length === 1 ? `foreman: round ${round}: ${taskAt(plan.tasks, taskAt(tasks, 0)).subject}` : `foreman: round ${round}: tasks ${tasks.join(', ')}`;
  return {
    message: `${title}\n\nGoal: ${plan.goal}\n\n${subjects.join('\n')}`,
    trailers: [
      [TRAILER_PLAN, ensurePlanId(plan)],
      [TRAILER_TASKS, tasks.join(',')],
      ...tasks.map((i): [string, string] => [TRAILER_RESULT, `${i} ${oneLine(taskAt(plan.tasks, i).result ?? '', 500) || 'completed'}`]),
    ],
  };
}

/** Tasks an integration commit reachable from `revisions` holds, with the results recorded in its trailers. */
export async function integratedTasks(
  git: Git,
  planId: string,
  revisions: readonly string[],
): Promise<Result<Map<number, { commit: string; result: string }>, GitFailure>> {
  const out = new Map<number, { commit: string; result: string }>();
  const commits = await git.commitsWithTrailer(TRAILER_TASKS, undefined, revisions);
  if (!commits.ok) return commits;
  for (const c of commits.value) {
    if (!c.trailers.some((t) => t.key === TRAILER_PLAN && t.value === planId)) continue;
    const results = new Map<number, string>();
    for (const t of c.trailers) {
      const m = t.key === TRAILER_RESULT ? /^(\d+) (.*)$/.exec(t.value) : null;
      if (m) results.set(Number(m[1]), m[2]!);
    }
    for (const v of c.values.flatMap((v) => v.split(','))) {
      const i = Number(v.trim());
      // Newest first: keep the newest commit for a task.
      if (Number.isInteger(i) && !out.has(i)) out.set(i, { commit: c.hash, result: results.get(i) ?? 'completed' });
    }
  }
  return ok(out);
}

/** Tasks whose work an integration commit holds though plan.json does not record it (or not its commit). */
export async function integratedFindings(
  git: Git,
  plan: Plan,
  revisions: readonly string[],
): Promise<Result<Pick<SetupFindings, 'recovered' | 'commits'>, GitFailure>> {
  const found: Pick<SetupFindings, 'recovered' | 'commits'> = { recovered: [], commits: [] };
  if (typeof plan.planId !== 'string') return ok(found);
  const integrated = await integratedTasks(git, plan.planId, revisions);
  if (!integrated.ok) return integrated;
  for (const [i, { commit, result }] of integrated.value) {
    const task = plan.tasks[i];
    if (!task) continue;
    // Approved work integrated at setup, then a crash before plan.json recorded the hash.
    if (statusOf(task) === 'completed' && task.commit === undefined) found.commits.push({ task: i, commit });
    if (statusOf(task) === 'in_progress' || statusOf(task) === 'pending') found.recovered.push({ task: i, commit, result });
  }
  found.recovered.sort((a, b) => a.task - b.task);
  return ok(found);
}
