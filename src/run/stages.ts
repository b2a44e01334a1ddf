// The stages of an attempt that do I/O, shared by the headless engine and the in-session plan
// tool (`plan.ts finalize` and `commit`): verify what a worker did, put an undone attempt's files
// back, record verified work. What each outcome means is decided in the pure core
// (`core/finalize.ts`, `core/engine-step.ts`); starting a worker is the engine's own stage
// (in a Claude Code session, the lead starts Task subagents instead).

import type { Git } from '../adapters/git.ts';
import { checkSandbox } from '../adapters/sandbox.ts';
import type { GitFailure } from '../core/git-text.ts';
import type { ProcessRegistry } from '../adapters/orphans.ts';
import { type Result, ok } from '../core/failure.ts';
import { type Decision, type Verification, undoesAttempt } from '../core/finalize.ts';
import { type Plan, type UsageFigure, writesInFlight, writesOf } from '../core/plan.ts';
import { type Applied, applyDecision } from '../core/transition.ts';
import { commitTasks } from './commit.ts';
import { verifyTask } from './verify.ts';
import type { Workspace } from './workspace.ts';

export interface StageContext {
  workspace: Workspace;
  git: Git;
  checkTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  /** Where checks are recorded while they run, so a run after a crash ends them. */
  registry?: ProcessRegistry;
  /** Run acceptance checks in the operating-system sandbox (writes: the workspace and their own TMPDIR). */
  sandbox?: boolean;
  /** Paths dirty before the run started (a person's unrelated edits): never reported as a worker's. */
  baselineDirty: ReadonlySet<string>;
}

/** Verify task `task`'s work. Changes `reported` already (another task's strays) are not blamed on it. */
export function verifyAttempt(context: StageContext, plan: Plan, task: number, input: { reported?: readonly string[]; signal?: AbortSignal } = {}): Promise<Verification> {
  return verifyTask(plan.tasks[task]!, {
    workspace: context.workspace,
    checkTimeoutMs: context.checkTimeoutMs,
    env: context.env,
    signal: input.signal,
    declaredElsewhere: writesInFlight(plan, task),
    baselineDirty: new Set([...context.baselineDirty, ...(input.reported ?? [])]),
    ...(context.registry ? { record: { registry: context.registry, task } } : {}),
    ...(context.sandbox ? { sandbox: checkSandbox(context.workspace.dir, plan) } : {}),
  });
}

/** Put an undone attempt's declared files back as they are in HEAD (only its own: nothing overlapping runs beside it). */
export function restoreAttempt(context: StageContext, plan: Plan, task: number): Promise<Result<void, GitFailure>> {
  return context.workspace.restore(writesOf(plan.tasks[task]!));
}

/**
 * Put an undone attempt's files back, then apply the decision (the in-session path, which has no
 * state machine between its steps). Mutates `plan`. When the restore fails, the decision is not
 * applied: the task stays in progress, so the next run restores it again.
 */
export async function settleAttempt(context: StageContext, plan: Plan, task: number, decision: Decision, usage: UsageFigure): Promise<Result<Applied, GitFailure>> {
  if (undoesAttempt(decision)) {
    const restored = await restoreAttempt(context, plan, task);
    if (!restored.ok) return restored;
  }
  return ok(applyDecision(plan, task, decision, usage));
}

/** Record verified tasks: one commit of exactly their declared files (none with `commit` off). */
export function recordAttempts(context: StageContext, plan: Plan, tasks: readonly number[], round: number, commit: boolean): Promise<Result<string | null, GitFailure>> {
  return commit ? commitTasks(context.git, plan, round, tasks) : Promise.resolve(ok(null));
}
