// `plan next`: ask the step function what may start now — ready, its blockers' work on the branch,
// not overlapping anything under way, highest priority first, at most `concurrency` running — and
// write each task's full worker prompt to `.design/prompts/task-<i>.md`. Work a task set aside,
// once the task is widened to declare it, is re-checked here instead of handed out.

import { mkdir, writeFile } from 'node:fs/promises';
import {
  type ChangedFile,
  changeSummary,
  clipForLead,
  countByStatus,
  describeGitFailure,
  type EngineEffect,
  type EngineEvent,
  type EngineState,
  err,
  type GitFailure,
  handOutLimit,
  initialState,
  isComplete,
  modelOf,
  nextStall,
  type NextStall,
  type Notice,
  ok,
  overlapping,
  type Plan,
  readySet,
  recheckRun,
  type Result,
  type SessionLimit,
  startable,
  statusOf,
  taskAt,
  type TaskRef,
  type TaskStatus,
  type Verification,
  workerFinishedEvent,
  workerPrompt,
  workspaceFailedEvent,
} from '../../core/index.ts';
import { promptsDirFor } from '../archive.ts';
import type { SessionPlaces } from './io.ts';
import type { Workspace } from '../workspace/index.ts';
import { nextEvents, unmetEffects } from './driver.ts';
import { promptPathFor, readSession } from './file.ts';
import { type Session, sessionConfig } from './session-state.ts';
import { type Opened, type Ran, type Recorded, sandboxedIn, type SessionStep, stateOf, type StepContext, type StepScope } from './skeleton.ts';

/** How many overlapping ready tasks `next` names; it counts the rest. */
const WAITING_LISTED = 20;

export interface NextOutput {
  round: number;
  /**
   * Dispatch each with `isolation: "worktree"`: Claude Code makes its worktree from HEAD, which
   * is `base` (it holds the work of every task it depends on); for a revision (`plan revise`),
   * `base` is its parked work's, where foreman's hook moves the worktree, that work in it.
   */
  tasks: Array<TaskRef & { activeForm: string; model: string; attempt: number; promptFile: string; isolation: 'worktree'; base: string }>;
  /** Ready tasks that did not start because they overlap a task that did (or runs); at most WAITING_LISTED of them. */
  waiting: Array<TaskRef & { overlapsWith: number[] }>;
  /** Every ready task that did not start: those overlapping, and those for which no slot was free. */
  queued: number;
  inProgress: number[];
  stall: NextStall;
  /**
   * With `deadlock`: the pending tasks that can never start; with `awaiting_approval`: the tasks
   * awaiting approval; with `landing`: ready tasks held back because their blockers' work is integrated but
   * not on the branch yet (`plan commit` says what blocks the landing).
   */
  stuck: number[];
  counts: Record<TaskStatus, number>;
  complete: boolean;
  /** Only when the plan is gone because the last `commit` archived it, finished: where it went. */
  archived?: string;
  /**
   * A limit that holds the round back (stall `limit`: a usage limit until its reset) or narrows it
   * (a round a limit refused some of leaves the next no more than it got through): tell the user.
   */
  limit?: SessionLimit;
  /** Present when something needs saying: the plan file changed since the last step. */
  notices?: Notice[];
  /**
   * With `awaiting_approval`: the tasks whose work is parked for the person's review, what it
   * changes, and the git command that shows the whole diff. The skill asks the person: approve,
   * request changes (`plan revise`), or reject.
   */
  review?: ReviewEntry[];
  /**
   * Tasks whose set-aside work this step re-checked instead of handing them out (they were widened
   * to declare it, `plan declare`): `completed` waits for `plan commit`; otherwise a worker does
   * the task at a later `next`.
   */
  rechecked?: Array<TaskRef & { outcome: string; reason?: string; warnings: string[] }>;
}

/** A task awaiting approval, with its parked work, for the person to review. */
export type ReviewEntry = TaskRef & { files: ChangedFile[]; summary: string; diff: string };

interface NextRan extends Ran {
  review: ReviewEntry[];
}

interface NextOpened extends Opened {
  /** Integrated tasks whose work is not on the branch (HEAD) yet. */
  unlanded: number[];
  /** Tasks in progress as the step found them. */
  running: number[];
  /** The tasks handed out, as the step's effects hand them out. */
  handedOut: NextOutput['tasks'];
  rechecks: Rechecks;
}

/** The `next` step, handing out at most `concurrency` (default: the session's). */
export class NextStep implements SessionStep<NextOpened, NextRan, NextOutput, never> {
  readonly name = 'next';

  constructor(private readonly options: { concurrency?: number }) {}

  async open(context: StepContext, plan: Plan): Promise<Result<NextOpened, never>> {
    const { io } = context;
    const session = await readSession(context.planPath, plan);
    const head = await io.repository.head();
    const unlanded = await io.repository.unlanded(plan, head);
    const running = plan.tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' ? [i] : []));
    const state = stateOf(context, session, plan);
    const handedOut: NextOutput['tasks'] = [];
    const rechecks = new Rechecks(context, session, plan);
    const handOut = async (effect: Extract<EngineEffect, { type: 'start-worker' }>, current: EngineState): Promise<EngineEvent[] | undefined> => {
      // Setup refuses a repository without a commit; without one nothing can be handed out.
      if (head === null) throw new Error('no commit to hand work out from');
      const task = taskAt(current.plan.tasks, effect.task);
      // A review round's revision starts from its parked work: foreman's hook puts it in the
      // subagent's worktree (made at HEAD) and moves it to that work's base, where capture starts.
      // (A blamed candidate retried from its own work is a headless run's: core/engine/review.ts.)
      const parked = effect.from !== undefined && 'commit' in effect.from ? effect.from : undefined;
      const workSoFar = parked === undefined ? ok(undefined) : await io.repository.diff(parked.base, parked.commit);
      if (!workSoFar.ok) {
        const why = `task ${effect.task}'s parked work (commit ${parked!.commit.slice(0, 12)}) cannot be read: ${describeGitFailure(workSoFar.error)}`;
        return [workspaceFailedEvent(effect.task, why, io.clock.now())];
      }
      const promptFile = promptPathFor(context.planPath, effect.task);
      await mkdir(promptsDirFor(context.planPath), { recursive: true });
      const options = { maxAttempts: current.config.maxAttempts, ...(workSoFar.value !== undefined ? { workSoFar: workSoFar.value } : {}) };
      await writeFile(promptFile, workerPrompt(current.plan, effect.task, options));
      const base = parked?.base ?? head;
      session.handedOut[String(effect.task)] = { at: new Date(io.clock.now()).toISOString(), base, ...(parked !== undefined ? { parked: parked.commit } : {}) };
      handedOut.push({
        index: effect.task,
        subject: task.subject,
        activeForm: task.activeForm ?? task.subject,
        model: modelOf(task),
        attempt: effect.attempt,
        promptFile,
        isolation: 'worktree',
        base,
      });
      return undefined;
    };
    return ok({
      session,
      state,
      effects: {
        ...unmetEffects,
        verify: rechecks.verify,
        release: rechecks.release,
        startWorker: (effect, current) => (effect.recheck !== undefined ? rechecks.start(effect.task, effect.recheck) : handOut(effect, current)),
      },
      unlanded,
      running,
      handedOut,
      rechecks,
    });
  }

  async run(scope: StepScope, opened: NextOpened): Promise<NextRan> {
    const { context, session } = scope;
    const { io } = context;
    let state = opened.state;
    // A run that ended (a stall, the breaker) starts again when something could start now (a retry, an approval).
    if (state.finished || session.runId === null || session.runFinished) {
      // The gate's verdict on the starting commit stands for the session.
      const fresh: EngineState = {
        ...initialState(state.plan, sessionConfig(session, context.planPath), io.clock.now()),
        unlanded: new Set(opened.unlanded),
        baseline: state.baseline,
      };
      if (startable(fresh, this.options.concurrency).length > 0) {
        state = fresh;
        scope.journal.start(state.plan, true);
      }
    }
    if (!state.finished) state = await scope.post(state, nextEvents(opened.unlanded, this.options.concurrency, io.clock.now()));
    await opened.rechecks.done();
    const review = opened.handedOut.length === 0 ? await reviewOf(scope.context, state.plan) : [];
    return { state, end: scope.run.finished, landing: { landed: opened.unlanded.length === 0, problem: [] }, review };
  }

  report(scope: StepScope, opened: NextOpened, { state, review }: NextRan, recorded: Recorded): Result<NextOutput, never> {
    const { io } = scope.context;
    const rechecked = scope.run.of('task-finished').map((e) => ({
      index: e.task,
      subject: e.subject,
      outcome: e.outcome,
      ...(e.reason !== undefined ? { reason: clipForLead(e.reason) } : {}),
      warnings: e.warnings ?? [],
    }));
    const limit = handOutLimit(state.limiter, this.options.concurrency ?? scope.session.concurrency, io.clock.now());
    // Why nothing was handed out, as the plan stands now.
    const { stall, stuck } = nextStall(state, { handedOut: opened.handedOut.length, running: opened.running, now: io.clock.now() });
    return ok({
      round: state.round + 1,
      tasks: opened.handedOut,
      waiting: overlapping(state, WAITING_LISTED),
      queued: readySet(state.plan.tasks).length,
      inProgress: opened.running,
      stall,
      stuck,
      counts: countByStatus(state.plan),
      complete: isComplete(state.plan),
      ...(limit !== null ? { limit } : {}),
      ...(recorded.kept.length > 0 ? { notices: recorded.kept } : {}),
      ...(rechecked.length > 0 ? { rechecked } : {}),
      ...(stall === 'awaiting_approval' && review.length > 0 ? { review } : {}),
    });
  }
}

/**
 * The tasks awaiting approval whose work is parked, with what it changes. One whose parked work
 * git cannot read is left out (`plan status` names every task awaiting approval).
 */
async function reviewOf(context: StepContext, plan: Plan): Promise<ReviewEntry[]> {
  const review: ReviewEntry[] = [];
  for (const [index, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'awaiting_approval') continue;
    const parked = await context.io.repository.parked(plan, index);
    if (!parked.ok || parked.value === null) continue;
    const { base, commit, files } = parked.value;
    review.push({ index, subject: task.subject, files, summary: changeSummary(files), diff: `git diff ${base} ${commit}` });
  }
  return review;
}

/**
 * Re-checks of the work a task set aside, in a worktree of foreman's (opened once, when the first
 * is needed), their checks recorded as finalize's are, so the step after a crash ends them.
 */
class Rechecks {
  private opened: Promise<Result<SessionPlaces, GitFailure>> | null = null;
  /** Each re-check's workspace, or why it could not be made ready (its verification fails, and a worker does the task next). */
  private readonly workspaces = new Map<number, Result<Workspace, string>>();

  constructor(
    private readonly context: StepContext,
    private readonly session: Session,
    private readonly plan: Plan,
  ) {}

  private places(): Promise<Result<SessionPlaces, GitFailure>> {
    const { io } = this.context;
    const { session } = this;
    this.opened ??= sandboxedIn(session, io).then((sandbox) =>
      io.repository.open(this.plan, { sandbox, checkTimeoutMs: session.checkTimeoutMs, strictScope: session.strictScope }),
    );
    return this.opened;
  }

  /** Make the re-check's workspace ready at `commit`; the "worker" has finished at once. */
  readonly start = async (task: number, commit: string): Promise<EngineEvent[]> => {
    const opened = await this.places();
    if (opened.ok) {
      const { integration, workspaces } = opened.value;
      const start = await integration.startOf({ task, stack: [], recheck: commit });
      this.workspaces.set(task, start.ok ? await workspaces.make({ task, ...start.value }) : start);
    }
    return [workerFinishedEvent(task, recheckRun(''), this.context.io.clock.now())];
  };

  readonly verify = async (task: number, current: EngineState): Promise<Verification> => {
    const opened = await this.places();
    if (!opened.ok) return err(`the plan's integration ref cannot be opened: ${describeGitFailure(opened.error)}`);
    const workspace = this.workspaces.get(task);
    if (workspace === undefined) return err(`task ${task} has no re-check workspace`);
    return workspace.ok ? workspace.value.verify(current.plan, task) : workspace;
  };

  readonly release = async (task: number): Promise<string[]> => {
    const workspace = this.workspaces.get(task);
    this.workspaces.delete(task);
    if (workspace?.ok) workspace.value.release();
    return [];
  };

  /** The step is done with re-checks: their processes are no longer recorded. */
  async done(): Promise<void> {
    if (this.opened !== null) await this.context.io.processes.forget();
  }
}
