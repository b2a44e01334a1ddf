// `plan approve` integrating the approved tasks' parked work onto the plan's integration ref at once
// (one commit), and what it says when that fails.

import { integrate, type IntegrationFailure, integrationRef, ownLayout, parkedWork, readRef, startIntegrationRef } from '../../adapters/index.ts';
import { assertNever, type CapturedWork, commandHint, describeGitFailure, err, listIndices, ok, type Plan, type Result } from '../../core/index.ts';
import { roundMessage } from '../commit.ts';
import { planIdOf } from './plan-landing.ts';

/**
 * Integrates the work parked for `tasks` (approved) onto the plan's integration ref, made at HEAD
 * when it does not exist yet: one commit for all of them, so either all of it integrates or none
 * does. The commit (null when the work changed nothing) and the tasks whose work was parked, or
 * null when none of them has work parked. The parked refs are left for the caller to drop once the
 * plan records the commit.
 */
export async function integrateParked(
  repo: string,
  plan: Plan,
  tasks: readonly number[],
): Promise<Result<{ commit: string | null; tasks: number[] } | null, IntegrationFailure>> {
  const planId = planIdOf(plan);
  if (planId === null) return ok(null);
  const parked: Array<{ task: number; work: CapturedWork }> = [];
  for (const task of tasks) {
    const work = await parkedWork(repo, planId, task);
    if (!work.ok) return err({ kind: 'git-failed', failure: work.error });
    if (work.value !== null) parked.push({ task, work: work.value });
  }
  if (parked.length === 0) return ok(null);
  const ref = integrationRef(planId);
  const found = await readRef(repo, ref);
  if (!found.ok) return err({ kind: 'git-failed', failure: found.error });
  let tip = found.value;
  if (tip === null) {
    const started = await startIntegrationRef(repo, ref);
    if (!started.ok) {
      // Another process made the ref meanwhile, or HEAD has no commit.
      const actual = await readRef(repo, ref);
      if (!actual.ok) return err({ kind: 'git-failed', failure: actual.error });
      return err(actual.value !== null ? { kind: 'moved', expected: null, actual: actual.value } : { kind: 'git-failed', failure: started.error });
    }
    tip = started.value;
  }
  const integratedTasks = parked.map((p) => p.task);
  const { message, trailers } = roundMessage(plan, 0, integratedTasks);
  const integrated = await integrate(repo, ref, tip, { tasks: integratedTasks, message, trailers, works: parked.map((p) => p.work) });
  if (!integrated.ok) return integrated;
  return ok({ commit: integrated.value === tip ? null : integrated.value, tasks: integratedTasks });
}

/** One line for an integration of the approved work of `tasks` that failed. */
export function describeIntegrationFailure(failure: IntegrationFailure, tasks: readonly number[]): string {
  switch (failure.kind) {
    case 'conflict': {
      const layout = ownLayout();
      const numbers = tasks.join(' ');
      if (tasks.length === 1)
        return `task ${numbers}'s approved work changes ${failure.paths.join(', ')}, which integrated work changed after its attempt started: reject it (\`${commandHint('plan', `reject ${numbers} --reason …`, layout)}\`) and retry the task (\`${commandHint('plan', `retry ${numbers}`, layout)}\`)`;
      return `the approved work of tasks ${listIndices(tasks)} changes ${failure.paths.join(', ')}, which integrated work changed after their attempts started or more than one of them changes: approve them one at a time to find which, then reject it (\`${commandHint('plan', 'reject N --reason …', layout)}\`) and retry it (\`${commandHint('plan', 'retry N', layout)}\`)`;
    }
    case 'moved':
      return `the integration ref moved while foreman was writing it (expected ${failure.expected ?? 'none'}, found ${failure.actual ?? 'none'}): is another foreman process working on this plan?`;
    case 'git-failed':
      return describeGitFailure(failure.failure);
    default:
      return assertNever(failure, 'integration failure');
  }
}
