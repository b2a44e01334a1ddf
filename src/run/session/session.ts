// The /execute skill's steps as code. In that skill a Claude Code session is the lead and its
// Task subagents are the workers. Each step (`plan setup | next | finalize | commit`) is a
// process of its own that posts events to the engine's step function (core/engine/step.ts, the
// same one the headless engine drives) and carries out the effects it asks for, as
// run/headless/engine.ts does: the step function decides what starts, what an attempt's outcome means,
// what the gate's verdict does, when the run ends; no run logic is written here again. Between
// steps its state lives in the session file (run/session/file.ts).
//
//   setup     → a run's first state; `integrate` (work an earlier session verified), `landed`
//   next      → `landed` (what HEAD lacks), `hand-out`: the tasks to dispatch, their prompt files
//   finalize  → `worker-finished` for each subagent's report, `verified` after checking its worktree
//   commit    → `integrate`, the gate's `gated` verdicts (its process runs in the background), `landed`
//
// Every step follows one skeleton (session/skeleton.ts: read, run the step, record, report, write);
// each is an object supplying what differs (session/setup-step.ts, next-step.ts, finalize-step.ts, commit-step.ts), and
// what it reports is worded by core/engine/session-report.ts.
//
// Workspaces in a session: the workers are Task subagents, which foreman does not start. The lead
// dispatches each with `isolation: "worktree"`, so Claude Code gives it a worktree of its own
// (`<repo>/.claude/worktrees/agent-<id>`, from the session's HEAD) and names it in the Task
// result; `finalize` takes that worktree as the attempt's workspace (run/workspace/subagent.ts),
// captures and verifies the attempt there as a headless run does, then removes it and its branch. Because a subagent starts from HEAD,
// `commit` lands integrated work on the branch at once, and the step function starts a
// dependant only once its blockers' work has landed.
//
// What a step does to the repository, Claude Code's worktrees, the gate process, the journal and
// the clock goes through run/session/io.ts: the real adapters, or a test's (the in-process session
// rig); the session file, the plan and the prompts are files beside the plan.
//
// Each step also writes the run's events to the journal (`.design/events.jsonl`), as a headless
// run does. What the plan tool cannot see it records as unknown, never as zero: a Task subagent's
// cost, tokens and permission denials (see docs/skills.md).

import { assertNever, type Plan, type Result } from '../../core/index.ts';
import { type CommitProblem, CommitStep, type CommitStepOutput } from './commit-step.ts';
import { type FinalizeOutput, type FinalizeProblem, FinalizeStep, type WorkerResult } from './finalize-step.ts';
import { type NextOutput, NextStep } from './next-step.ts';
import { type SetupOutput, type SetupSettings, SetupStep } from './setup-step.ts';
import { performStep, type SessionContext } from './skeleton.ts';
import type { SetupProblem } from '../refusals.ts';

/** `plan setup`: start a session's run (session/setup-step.ts). */
export function sessionSetup(plan: Plan, context: SessionContext, settings: SetupSettings = {}): Promise<Result<SetupOutput, SetupProblem>> {
  return performStep(context, plan, new SetupStep(settings));
}

/** `plan next`: hand out what may start now (session/next-step.ts). */
export async function sessionNext(plan: Plan, context: SessionContext, options: { concurrency?: number } = {}): Promise<NextOutput> {
  const next = await performStep(context, plan, new NextStep(options));
  return next.ok ? next.value : assertNever(next.error, 'next problem');
}

/** `plan finalize`: judge and verify each subagent's report (session/finalize-step.ts). */
export function sessionFinalize(
  plan: Plan,
  context: SessionContext,
  results: readonly WorkerResult[],
  options: { maxAttempts?: number; checkTimeoutMs?: number } = {},
): Promise<Result<FinalizeOutput, FinalizeProblem>> {
  return performStep(context, plan, new FinalizeStep(results, options));
}

/** `plan commit`: integrate the verified work, through the gate when there is one, and land it (session/commit-step.ts). */
export function sessionCommit(plan: Plan, context: SessionContext, options: { waitMs?: number } = {}): Promise<Result<CommitStepOutput, CommitProblem>> {
  return performStep(context, plan, new CommitStep(options));
}
