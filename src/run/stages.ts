// The stages of an attempt that do I/O, shared by the headless engine and the in-session plan
// tool (`plan.ts finalize` and `commit`): verify what a worker did in its worktree, and record
// verified work on the integration ref. What each outcome means is decided in the pure core
// (`core/finalize.ts`, `core/engine/`); starting a worker is the engine's own stage (in a
// Claude Code session, the lead starts Task subagents instead).

import { checkSandbox } from '../adapters/sandbox.ts';
import type { Commands } from '../adapters/commands.ts';
import { type Result, ok } from '../core/failure.ts';
import { asideRef } from '../adapters/git/refs.ts';
import type { CapturedWork } from '../core/work.ts';
import type { RecordRequest } from '../core/engine/effects.ts';
import type { Verification } from '../core/finalize.ts';
import type { GitFailure } from '../core/git-text.ts';
import type { Plan } from '../core/plan.ts';
import type { Isolation } from './isolation.ts';
import { verifyTask } from './verify.ts';

export interface StageContext {
  isolation: Isolation;
  checkTimeoutMs: number;
  /** Runs the acceptance checks. */
  commands: Commands;
  /** Run acceptance checks in the operating-system sandbox (writes: the worktree and their own TMPDIR). */
  sandbox?: boolean;
  /** A change outside a task's declared files fails its attempt (`--strict-scope`). */
  strictScope?: boolean;
}

/** Verify task `task`'s work in `dir`, its worktree. */
export function verifyAttempt(
  context: StageContext,
  plan: Plan,
  task: number,
  input: { dir: string; kept?: readonly string[]; base?: string; signal?: AbortSignal },
): Promise<Verification> {
  const workspace = context.isolation.workspaceOf(task);
  const base = input.base ?? workspace?.base;
  const isolation = context.isolation;
  const keepAside = async (work: CapturedWork) => {
    const parked = await isolation.park(
      task,
      work,
      `foreman: task ${task} (${plan.tasks[task]!.subject}): an attempt's work with what it changed outside its declared files`,
      'aside',
    );
    return parked.ok ? ok({ commit: parked.value, ref: asideRef(isolation.planId, task) }) : parked;
  };
  return verifyTask(plan.tasks[task]!, {
    dir: input.dir,
    kept: input.kept ?? workspace?.kept ?? [],
    ...(base !== undefined ? { base } : {}),
    checkTimeoutMs: context.checkTimeoutMs,
    signal: input.signal,
    commands: context.commands,
    task,
    ...(context.sandbox ? { sandbox: checkSandbox(input.dir, plan, context.isolation.repo) } : {}),
    ...(context.strictScope ? { strictScope: true } : {}),
    keepAside,
  });
}

/** Record verified work: integrated onto the plan's ref in one commit; work awaiting approval parked. */
export function recordAttempts(context: StageContext, plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>> {
  return context.isolation.record(plan, request);
}
