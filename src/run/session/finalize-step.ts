// `plan finalize`: post each subagent's report to the step function. It judges the status line
// and, for COMPLETED, asks for verification — the attempt's work captured from the worktree
// Claude Code made for the subagent, the spot-check and the acceptance checks there (as its
// workspace, run/workspace/subagent.ts) — then decides (completed, retry, failed, blocked), cascades and trips
// the breaker. Undeclared changes are set aside (named in `warnings`). The subagent's worktree and
// branch are removed once its work is captured. Saves after each task, so running it again with
// the same results only reports the tasks already settled as `ignored`.

import { describeOrphans, type KilledOrphan } from '../../adapters/index.ts';
import {
  type BreakerDecision,
  breakerReport,
  clipForLead,
  countByStatus,
  err,
  type GitFailure,
  isComplete,
  neededPaths,
  type Notice,
  ok,
  type Plan,
  type Result,
  retriesOf,
  type RetryRef,
  roundLimit,
  roundSummary,
  type SessionLimit,
  setAsideBy,
  skippedBy,
  type SkipRef,
  statusOf,
  taskAt,
  type TaskOutcome,
  type TaskRef,
  tasksIn,
  type TaskStatus,
  type Verification,
  warning,
} from '../../core/index.ts';
import { finalizeEvent, unmetEffects } from './driver.ts';
import { readSession } from './file.ts';
import type { SessionPlaces } from './io.ts';
import { type Opened, type Ran, type Recorded, sandboxedIn, type SessionStep, stateOf, type StepContext, type StepScope } from './skeleton.ts';

export interface WorkerResult {
  task: number;
  /** The worker's final text, or at least its last line (`COMPLETED: …`, `FAILED: …`, `BLOCKED: …`). */
  output: string;
  /**
   * The `worktreePath` of the Task result: the worktree Claude Code made for the subagent. Absent
   * when it changed nothing (Claude Code removed its worktree and named none).
   */
  worktree?: string;
}

/** Why `finalize` stopped, before it finalized anything: a result naming a worktree that is not a subagent's, or git failing. */
export type FinalizeProblem = { kind: 'bad-worktree'; task: number; message: string } | { kind: 'git-failed'; doing: string; failure: GitFailure };

/** What became of a result: the journal's outcome of its attempt, or `ignored` (not a task in progress). */
export type FinalizeOutcome = TaskOutcome | 'ignored';

/** What became of one result. */
export type FinalizedResult = TaskRef & { outcome: FinalizeOutcome; attempt: number; result?: string; reason?: string; warnings: string[]; needs?: string[] };

export interface FinalizeOutput {
  round: number;
  /**
   * `needs`: for a task blocked (or failed) wanting files it does not declare, what foreman knows
   * it wanted; `plan declare N --needed` declares them and puts the task back.
   */
  results: FinalizedResult[];
  /** Tasks that go back to pending for another attempt: the next `next` starts them with a retry prompt. */
  retry: RetryRef[];
  skipped: SkipRef[];
  breaker: BreakerDecision;
  counts: Record<TaskStatus, number>;
  complete: boolean;
  /** One line for the lead to show: the round's progress. */
  summary: string;
  /** A limit refused subagents of this round (handed back, no attempt spent): what that means for the next round; tell the user. */
  limit?: SessionLimit;
  /** Present when something needs saying beyond the results: processes an earlier, killed step left running. */
  notices?: Notice[];
}

interface FinalizeOpened extends Opened {
  /** Where this step's acceptance checks are recorded while they run. */
  /** Processes a killed step left running, ended before anything else. */
  orphans: KilledOrphan[];
}

interface FinalizeRan extends Ran {
  results: FinalizedResult[];
}

/** Why a revision's attempt cannot be verified when no worker of it read its prompt file (so foreman's hook never put its parked work in). */
export const UNREVISED =
  "the revision's worker never read its prompt file, so foreman's hook did not put the task's parked work in its worktree (is the plugin's hook installed?): what it left is not the whole change";

/** The `finalize` step of `results`, with `options` over the session's. */
export class FinalizeStep implements SessionStep<FinalizeOpened, FinalizeRan, FinalizeOutput, FinalizeProblem> {
  readonly name = 'finalize';

  constructor(
    private readonly results: readonly WorkerResult[],
    private readonly options: { maxAttempts?: number; checkTimeoutMs?: number },
  ) {}

  async open(context: StepContext, plan: Plan): Promise<Result<FinalizeOpened, FinalizeProblem>> {
    const { results, options } = this;
    const { io } = context;
    const session = await readSession(context.planPath, plan);
    let state = stateOf(context, session, plan);
    if (options.maxAttempts !== undefined) state = { ...state, config: { ...state.config, maxAttempts: options.maxAttempts } };
    const running = (task: number) => state.attempts.get(task)?.stage === 'running';
    // Every worktree named must be a subagent's worktree of this repository, before anything changes.
    const worktrees = new Map<number, string>();
    for (const result of results) {
      // A result settled already (finalize run again with the same results) names a worktree removed since: it is ignored below.
      if (result.worktree === undefined || !running(result.task)) continue;
      const found = await io.subagents.find(result.worktree);
      if (!found.ok) return err({ kind: 'bad-worktree', task: result.task, message: found.error });
      worktrees.set(result.task, found.value);
    }
    // Checks a killed step left behind are ended first (a fresh registry would forget them); this
    // step's acceptance checks are recorded while they run, so the step after a crash ends them.
    const orphans = await io.processes.endLeftovers();
    const sandbox = await sandboxedIn(session, io);
    const checkTimeoutMs = options.checkTimeoutMs ?? session.checkTimeoutMs;
    const opened = await io.repository.open(plan, { sandbox, checkTimeoutMs, strictScope: session.strictScope });
    if (!opened.ok) return err({ kind: 'git-failed', doing: "open the plan's integration ref", failure: opened.error });
    const places = opened.value;
    return ok({
      session,
      state,
      orphans,
      effects: {
        ...unmetEffects,
        verify: async (task, current) => {
          const handed = session.handedOut[String(task)];
          const worktree = worktrees.get(task);
          // A revision's work is what changed since its parked work's base: only with that work in its worktree is it the whole change.
          const attempt = current.attempts.get(task)?.number ?? 0;
          if (handed?.parked !== undefined && !(await io.handOut.bound(task, attempt))) return err(UNREVISED);
          return verifySubagent(places, current.plan, task, worktree, handed?.base);
        },
        release: async (task) => {
          delete session.handedOut[String(task)];
          const worktree = worktrees.get(task);
          // What Claude Code made for the subagent is removed once its work is captured (or dropped).
          const problem = worktree === undefined ? null : await io.subagents.remove(worktree);
          return problem !== null ? [`could not remove the subagent's worktree ${worktree}: ${problem}`] : [];
        },
      },
    });
  }

  async run(scope: StepScope, opened: FinalizeOpened): Promise<FinalizeRan> {
    const { session } = scope;
    const { io } = scope.context;
    const out: FinalizedResult[] = [];
    const seen = new Set<number>();
    let state = opened.state;
    for (const { task: index, output } of this.results) {
      const task = state.plan.tasks[index];
      if (!task) {
        out.push({
          index,
          subject: '',
          outcome: 'ignored',
          attempt: 0,
          reason: `there is no task ${index} (the plan has ${state.plan.tasks.length})`,
          warnings: [],
        });
        continue;
      }
      const attempt = state.attempts.get(index);
      if (seen.has(index) || attempt?.stage !== 'running') {
        const why = seen.has(index)
          ? 'it appears twice in the results'
          : attempt !== undefined
            ? 'its work is verified already and waits for `plan commit`'
            : `it is ${statusOf(task)}, not in progress (settled already?)`;
        out.push({
          index,
          subject: task.subject,
          outcome: 'ignored',
          attempt: attempt?.number ?? 0,
          reason: `task ${index} was left as it is: ${why}`,
          warnings: [],
        });
        continue;
      }
      seen.add(index);
      const handed = session.handedOut[String(index)];
      const durationMs = handed === undefined ? 0 : Math.max(0, io.clock.now() - Date.parse(handed.at));
      // The undeclared writes the worker hook refused this attempt's worker: the task wanted those files.
      const denied = await io.handOut.deniedWrites(index, attempt.number);
      state = await scope.post(state, [finalizeEvent(index, output, durationMs, io.clock.now(), denied)]);
      const ended = scope.run.of('task-finished').find((e) => e.task === index);
      if (ended !== undefined) {
        const result = ended.outcome === 'completed' || ended.outcome === 'awaiting_approval' ? ended.result : undefined;
        const needs = ended.outcome === 'blocked' || ended.outcome === 'failed' ? neededPaths(taskAt(state.plan.tasks, index)) : [];
        out.push({
          index,
          subject: task.subject,
          outcome: ended.outcome,
          attempt: ended.attempt,
          ...(result !== undefined ? { result: clipForLead(result) } : {}),
          ...(ended.reason !== undefined ? { reason: clipForLead(ended.reason) } : {}),
          warnings: ended.warnings ?? [],
          ...(needs.length > 0 ? { needs } : {}),
        });
      }
      // Saved after each task, with the plan: a crash later in the step loses nothing verified.
      await scope.keep(state);
    }
    await scope.context.io.processes.forget();
    return { state, end: scope.run.finished, landing: { landed: true, problem: [] }, results: out };
  }

  report(scope: StepScope, opened: FinalizeOpened, ran: FinalizeRan, recorded: Recorded): Result<FinalizeOutput, FinalizeProblem> {
    const { state } = ran;
    const events = scope.run.events;
    const counts = countByStatus(state.plan);
    const limit = roundLimit(state.limiter, scope.session.concurrency, scope.context.io.clock.now());
    const skipped = skippedBy(events);
    const breaker = breakerReport(events, state.plan.tasks.length, counts.pending);
    const retry = retriesOf(ran.results);
    const summary = roundSummary({
      round: state.round + 1,
      settled: ran.results.filter((r) => r.outcome !== 'ignored'),
      retries: retry.length,
      skipped: skipped.length,
      setAside: setAsideBy(events),
      tripped: breaker.trip,
      counts,
      verifiedWaiting: tasksIn(state, new Set(['verified', 'recording', 'queued', 'gating'])).length,
      totalTasks: state.plan.tasks.length,
    });
    const said: Notice[] = [...(opened.orphans.length > 0 ? [warning(describeOrphans(opened.orphans))] : []), ...recorded.kept];
    return ok({
      round: state.round + 1,
      results: ran.results,
      retry,
      skipped,
      breaker,
      counts,
      complete: isComplete(state.plan),
      summary,
      ...(limit !== null ? { limit } : {}),
      ...(said.length > 0 ? { notices: said } : {}),
    });
  }
}

/**
 * Verify a COMPLETED report in the subagent's worktree, from the commit `next` handed it out at.
 * A subagent that changed nothing has no worktree (Claude Code removed it): its work is empty,
 * so the spot-check fails for every declared file; a task that declares none is checked in a
 * workspace of the integration tip.
 */
async function verifySubagent(places: SessionPlaces, plan: Plan, index: number, worktree: string | undefined, base: string | undefined): Promise<Verification> {
  if (worktree !== undefined) {
    const adopted = await places.subagent(worktree, base);
    return adopted.ok ? adopted.value.verify(plan, index) : adopted;
  }
  const { create, modify } = taskAt(plan.tasks, index).metadata.files;
  if (create.length > 0 || modify.length > 0) {
    return ok({
      missingCreated: [...create],
      unchangedModified: [...modify],
      outsideChanges: [],
      acceptance: [],
      work: { base: base ?? places.integration.tip, entries: [] },
    });
  }
  const made = await places.workspaces.make({ task: index, commit: places.integration.tip });
  if (!made.ok) return made;
  try {
    return await made.value.verify(plan, index);
  } finally {
    made.value.release();
  }
}
