// Round commits and their reconciliation with plan.json.
//
// Order of events for a task that passes verification (crash consistency):
//   1. git commit of exactly the round's declared files, with trailers naming the plan, the
//      tasks it holds and their results;
//   2. plan.json records the tasks as completed with the commit hash (atomic rename).
// A crash between 1 and 2 leaves tasks `in_progress` in plan.json whose work is committed. On
// resume, `reconcileWithHistory` reads `git log` for commits carrying this plan's id and marks
// those tasks completed instead of cleaning up and redoing them. A crash before 1 leaves
// uncommitted work that resume restores and reruns. So a task whose commit landed is never run
// again, and a task whose work was lost always is. The reverse order (plan first) could record a
// task as completed whose files were never committed and are then lost.

import { randomUUID } from 'node:crypto';
import type { Git } from '../adapters/git.ts';
import type { GitFailure } from '../core/git-text.ts';
import { type Result, err, ok } from '../core/failure.ts';
import { oneLine } from '../core/format.ts';
import { pathsIntersect } from '../core/paths.ts';
import { type Plan, UNKNOWN, statusOf, writesOf } from '../core/plan.ts';
import { applyDecision } from '../core/transition.ts';
import { trimCompleted } from '../core/finalize.ts';

export const TRAILER_PLAN = 'Foreman-Plan';
export const TRAILER_TASKS = 'Foreman-Tasks';
export const TRAILER_RESULT = 'Foreman-Result';

/** The plan's identity in commit trailers; written into the plan on its first run. */
export function ensurePlanId(plan: Plan): string {
  if (typeof plan.planId !== 'string' || plan.planId === '') plan.planId = randomUUID();
  return plan.planId as string;
}


export function roundMessage(plan: Plan, round: number, tasks: readonly number[]): { message: string; trailers: Array<[string, string]> } {
  const subjects = tasks.map((i) => `- task ${i}: ${plan.tasks[i]!.subject}`);
  const title = tasks.length === 1 ? `foreman: round ${round}: ${plan.tasks[tasks[0]!]!.subject}` : `foreman: round ${round}: tasks ${tasks.join(', ')}`;
  return {
    message: `${title}\n\nGoal: ${plan.goal}\n\n${subjects.join('\n')}`,
    trailers: [
      [TRAILER_PLAN, ensurePlanId(plan)],
      [TRAILER_TASKS, tasks.join(',')],
      ...tasks.map((i): [string, string] => [TRAILER_RESULT, `${i} ${oneLine(plan.tasks[i]!.result ?? '', 500) || 'completed'}`]),
    ],
  };
}

/**
 * Commit exactly the tasks' declared files. The commit hash, or null when nothing changed; a git
 * failure (a locked index that stays locked, signing, …) as a value, with nothing left staged.
 */
export async function commitTasks(git: Git, plan: Plan, round: number, tasks: readonly number[]): Promise<Result<string | null, GitFailure>> {
  const paths = [...new Set(tasks.flatMap((i) => writesOf(plan.tasks[i]!)))];
  if (paths.length === 0) return ok(null);
  const { message, trailers } = roundMessage(plan, round, tasks);
  // Round commits are checkpoints of verified work; the acceptance checks are the gate, so the
  // repository's own commit hooks (which may reformat, rewrite the message or reject) do not run.
  for (let attempt = 1; ; attempt++) {
    const committed = await git.commit({ paths, message, trailers, verify: false });
    // A worker running `git status` can hold index.lock for a moment: wait and try again.
    if (committed.ok || attempt >= 5 || !/index\.lock/.test(committed.error.stderr)) return committed;
    await new Promise((r) => setTimeout(r, 200 * attempt));
  }
}

/** Tasks a landed commit holds, with the results recorded in its trailers. */
export async function landedTasks(git: Git, planId: string): Promise<Map<number, { commit: string; result: string }>> {
  const out = new Map<number, { commit: string; result: string }>();
  for (const c of await git.commitsWithTrailer(TRAILER_TASKS)) {
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
  return out;
}

/** Mark tasks completed whose commit landed though plan.json did not record it. Mutates `plan`. */
export async function reconcileWithHistory(git: Git, plan: Plan): Promise<number[]> {
  if (typeof plan.planId !== 'string') return [];
  const landed = await landedTasks(git, plan.planId);
  const recovered: number[] = [];
  for (const [i, { commit, result }] of landed) {
    const task = plan.tasks[i];
    if (!task) continue;
    if (statusOf(task) === 'completed') {
      // Approved work committed at setup, then a crash before plan.json recorded the hash.
      task.commit ??= commit;
      continue;
    }
    if (statusOf(task) !== 'in_progress' && statusOf(task) !== 'pending') continue;
    task.status = 'completed';
    task.result = result;
    task.commit = commit;
    task.attempts = (task.attempts ?? 0) + 1;
    const done = (plan.progress ??= {}).completedTasks ?? [];
    if (!done.includes(i)) plan.progress.completedTasks = [...done, i];
    plan.tasks[i] = trimCompleted(task);
    recovered.push(i);
  }
  return recovered.sort((a, b) => a - b);
}

/** An attempt verified in the session, waiting for `commit`: its task and the result it reported. */
export interface VerifiedAttempt {
  task: number;
  result: string;
}

export interface CommitOutcome {
  commit: string | null;
  tasks: number[];
}

/**
 * Record verified work in one commit with the usual trailers: the attempts `finalize` verified
 * (their tasks become completed) and completed work left without a commit (approved gated work, a
 * commit that failed earlier). A completed task whose files overlap one still running waits: that
 * task's half-done edits must not ride along. Mutates `plan`; the caller saves it (after the
 * commit, so a crash in between is reconciled from git on resume).
 */
export async function recordVerified(
  git: Git,
  plan: Plan,
  verified: readonly VerifiedAttempt[],
  round: number,
): Promise<Result<CommitOutcome, { tasks: number[]; failure: GitFailure }>> {
  const inProgress = (task: number) => plan.tasks[task] !== undefined && statusOf(plan.tasks[task]) === 'in_progress';
  const attempts = verified.filter((v) => inProgress(v.task));
  const recording = new Set(attempts.map((v) => v.task));
  const busy = plan.tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' && !recording.has(i) ? writesOf(t) : []));
  const leftovers: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'completed') continue;
    const writes = writesOf(task);
    if (task.commit || writes.length === 0) continue;
    if (writes.some((w) => busy.some((b) => pathsIntersect(w, b)))) continue;
    if ((await git.changedPaths(writes)).size > 0) leftovers.push(i);
  }
  const tasks = [...recording, ...leftovers].sort((a, b) => a - b);
  if (tasks.length === 0) return ok({ commit: null, tasks: [] });
  // The results go into the commit's trailers.
  for (const attempt of attempts) plan.tasks[attempt.task] = { ...plan.tasks[attempt.task]!, result: attempt.result };
  const committed = await commitTasks(git, plan, round, tasks);
  if (!committed.ok) return err({ tasks, failure: committed.error });
  for (const attempt of attempts) applyDecision(plan, attempt.task, { kind: 'completed', result: attempt.result }, UNKNOWN);
  const commit = committed.value;
  if (commit !== null) for (const i of tasks) plan.tasks[i] = { ...plan.tasks[i]!, commit };
  return ok({ commit, tasks: commit !== null ? tasks : [...recording].sort((a, b) => a - b) });
}
