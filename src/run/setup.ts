// Setting up a run (headless or the /execute skill's `plan.ts setup`): refusals (run/refusals.ts),
// the plan's integration ref and workspaces, a
// landing a crash cut short, resume detection, and what the run must know before it starts: work
// the integration ref holds, interrupted attempts, approved work (held on a candidate ref: the step
// function integrates it, after the gate when there is one), missing files and blocking assumptions
// (checked in a worktree of the integration tip). Task states are not changed here, nor the
// integration ref moved: the findings go to the step function (`set-up` event).

import { type Commands, completeLanding, type Git, integrationRef, ownLayout, ownSandboxNotice, uncommittedChangesNotice } from '../adapters/index.ts';
import {
  commitAfter,
  depsOf,
  depths,
  ensurePlanId,
  err,
  type GitFailure,
  type HeldCandidate,
  landingNotice,
  namedTasks,
  noFindings,
  ok,
  type Plan,
  type Result,
  type SetupFindings,
  statusAfter,
  statusOf,
} from '../core/index.ts';
import { integratedFindings } from './commit.ts';
import type { Integration } from './integration.ts';
import type { Workspaces } from './workspace/index.ts';
import { assumptionFindings, type AssumptionResult } from './assumptions.ts';
import { refusalBeforeWork, type SetupProblem, startWarnings } from './refusals.ts';
import { dropRejected, holdWaitingWork } from './held-work.ts';
import { revertLostWork } from './lost-work.ts';

/** Where a run's work goes: the plan's integration ref, and the workspaces its attempts work in. */
export interface RunPlaces<S extends Workspaces = Workspaces> {
  integration: Integration;
  workspaces: S;
}

export interface SetupReport<W extends RunPlaces = RunPlaces> {
  goal: string;
  taskCount: number;
  maxDepth: number;
  resumed: boolean;
  /** What the step function applies before the run starts (`set-up`): the lists below come from it. */
  findings: SetupFindings;
  /** Tasks whose integration commit landed though plan.json had not recorded it. */
  recovered: number[];
  /** Tasks found `in_progress` (interrupted): cleaned up and back to pending. */
  reset: number[];
  /** Completed tasks whose created files are gone: back to pending. */
  reverted: number[];
  assumptions: AssumptionResult[];
  blocked: number[];
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
  /** The plan's integration ref and the workspaces its attempts work in. */
  places: W;
  /**
   * Verified work an earlier run held for the merge queue, and approved work setup held now: it
   * rejoins the queue first (without a gate, it integrates at the step function's first record).
   */
  held: HeldCandidate[];
}

export interface SetupOptions<W extends RunPlaces = RunPlaces> {
  repo: string;
  planPath: string;
  git: Git;
  /** Opens the plan's integration ref and workspaces, once the plan is known to be safe to run. */
  open: () => Promise<Result<W, GitFailure>>;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  /** Runs the assumption checks. */
  commands: Commands;
  /** Tasks an earlier session verified, waiting to be recorded: left in progress for the caller. */
  verified?: readonly number[];
  /** Run assumption checks in the operating-system sandbox (writes: the repository and their own TMPDIR). */
  sandbox?: boolean;
  /**
   * Writes the plan once setup gave it its id, after the refusals and before anything is made
   * under that id (a refused run leaves the plan file as it was); none when the caller wrote it.
   */
  savePlan?: (plan: Plan) => Promise<void>;
}

export async function setupRun<W extends RunPlaces>(plan: Plan, options: SetupOptions<W>): Promise<Result<SetupReport<W>, SetupProblem>> {
  // Everything that can refuse the run comes before anything that changes the repository.
  const refusal = await refusalBeforeWork(plan, options);
  if (refusal.problem !== null) return err(refusal.problem);
  const { committed, staleIndexLock } = refusal;

  const resumed = plan.tasks.some((t) => statusOf(t) !== 'pending');
  // Asked of the repository first, said in the order `startWarnings` gives.
  const head = (await options.git.currentBranch()) === null ? ((await options.git.headCommit()) ?? '(no commit)') : null;
  // The person's deny rules foreman's own sandboxed commands cannot hold are said once, here.
  const unheld = options.sandbox ? await ownSandboxNotice(options.repo) : null;
  const notices: SetupReport['notices'] = startWarnings(plan, options.planPath, { committed, staleIndexLock, detachedAt: head, unheldRules: unheld });
  // The plan's id names its refs and worktrees: written before anything is made under it, so a
  // run killed at once leaves nothing a later run (with the same id) cannot find and clean up.
  if (typeof plan.planId !== 'string' || plan.planId === '') {
    ensurePlanId(plan);
    await options.savePlan?.(plan);
  }
  const findings = noFindings();
  const statusNow = (index: number) => statusAfter(plan, index, findings);

  // A landing a crash cut short is finished before anything else looks at the person's branch.
  const resumedLanding = await completeLanding(options.repo, options.planPath);
  const resumedNotice =
    resumedLanding === null
      ? null
      : landingNotice(resumedLanding, { ref: integrationRef(plan.planId as string), layout: ownLayout(), where: null, resumed: true });
  if (resumedNotice !== null) notices.push({ level: resumedNotice.level, message: resumedNotice.message });

  const opened = await options.open();
  if (!opened.ok) return err({ kind: 'git-failed', doing: "set up the plan's integration ref", failure: opened.error });
  const places = opened.value;
  const { integration } = places;
  // Work the person committed on top of everything integrated becomes the new starting point.
  await integration.followHead();

  const integrated = await integratedFindings(options.git, plan, [integration.ref, 'HEAD']);
  if (!integrated.ok) return err({ kind: 'git-failed', doing: "read the integration ref's history", failure: integrated.error });
  Object.assign(findings, integrated.value);
  const recovered = findings.recovered.map((r) => r.task);
  if (recovered.length > 0)
    notices.push({
      level: 'info',
      message: `${namedTasks(recovered)}: ${recovered.length === 1 ? 'its' : 'their'} work had been integrated; recorded as completed`,
    });

  // Approved work is held on a candidate ref, as verified work the merge queue waits for.
  const approvedTasks = [...plan.tasks.keys()].filter((i) => statusNow(i) === 'completed' && commitAfter(plan, i, findings) === undefined);
  const waiting = await holdWaitingWork(plan, integration, findings, approvedTasks, statusNow);
  if (!waiting.ok) return waiting;
  const { held } = waiting.value;
  notices.push(...waiting.value.notices);
  // Interrupted attempts: their work never left their worktrees, which are reset before reuse.
  const reset = plan.tasks.flatMap((_, i) => (statusNow(i) === 'in_progress' && !options.verified?.includes(i) && !held.some((h) => h.task === i) ? [i] : []));
  findings.interrupted.push(...reset);
  if (reset.length > 0)
    notices.push({ level: 'info', message: `${namedTasks(reset)} ${reset.length === 1 ? 'was interrupted: it' : 'were interrupted: they'} will run again` });

  const rejected = await dropRejected(plan, integration, findings);
  if (!rejected.ok) return err({ kind: 'git-failed', doing: 'list the work parked for approval', failure: rejected.error });

  const lost = await revertLostWork(plan, { repo: options.repo, tip: integration.tip }, findings, statusNow);
  const { reverted } = lost;
  notices.push(...lost.notices);

  const uncommitted = await uncommittedChangesNotice(options.repo, options.planPath, options.git);
  if (!uncommitted.ok) return err({ kind: 'git-failed', doing: 'list your uncommitted changes', failure: uncommitted.error });
  if (uncommitted.value !== null) notices.push({ level: 'warning', message: uncommitted.value });

  const checked = await assumptionFindings(plan, options, { workspaces: places.workspaces, tip: integration.tip }, findings, statusNow);
  if (!checked.ok) return err({ kind: 'setup-failed', reason: checked.error });
  const { assumptions, blocked } = checked.value;
  notices.push(...checked.value.notices);

  return ok({
    goal: plan.goal,
    taskCount: plan.tasks.length,
    maxDepth: Math.max(...depths(depsOf(plan.tasks))),
    resumed,
    findings,
    recovered,
    reset,
    reverted,
    assumptions,
    blocked,
    notices,
    places,
    held,
  });
}
