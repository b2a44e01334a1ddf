// `plan commit`: ask the step function to integrate the verified work — onto the plan's
// integration ref at once (one commit, trailers naming each task and its result), or, with a gate,
// held as candidates and integrated only in stacks the gate passes (its process runs in the
// background; the step waits for it at most `waitMs`). Work awaiting approval is parked on its
// ref. Then land the integration tip on the branch (the next subagents start from HEAD and must
// see this work); when landing is blocked nothing of the person's is touched and
// `landing.problem` says what to do. When the plan is complete and landed: its worktrees and refs
// are removed and it is archived.

import {
  clipTail,
  type CommitOutcome,
  countByStatus,
  err,
  gateReport,
  type GateReport,
  type GitFailure,
  integratedBy,
  isComplete,
  type LandingState,
  type Notice,
  noticeOf,
  ok,
  type Plan,
  type Result,
  setAsideNotices,
  type TaskStatus,
  warning,
} from '../../core/index.ts';
import type { SessionPlaces } from './io.ts';
import { commitEvents, runEnd, unmetEffects } from './driver.ts';
import { readSession } from './file.ts';
import { type BaselineFailed, GateDriver } from './gate-driver.ts';
import { type Opened, type Ran, type Recorded, type SessionStep, stateOf, type StepContext, type StepScope } from './skeleton.ts';

export interface CommitStepOutput extends CommitOutcome {
  round: number;
  /** Landing the integration tip on the branch: subagents dispatched next start from it. */
  landing: LandingState;
  /** Where the plan went when this commit finished it (every task completed and landed), else null. */
  archived: string | null;
  counts: Record<TaskStatus, number>;
  complete: boolean;
  /** The merge queue: off, idle, or a gate run still going in the background (call `commit` again). */
  gate: GateReport;
  /** Present when something needs saying: the plan file changed since the last step, work that conflicts with what was integrated since. */
  notices?: Notice[];
}

/** Why `commit` stopped; `notices`: what the step had to say before it did (as its output's `notices` and `gate.notices`). */
export type CommitProblem =
  | { kind: 'git-failed'; failure: GitFailure; tasks: number[]; notices: Notice[] }
  /** The gate fails on the starting commit: it would blame every task. */
  | { kind: 'baseline-failed'; command: string; ref: string; tip: string; output: string; notices: Notice[] };

interface CommitOpened extends Opened {
  places: SessionPlaces;
  gate: GateDriver;
  /** Git failing to record verified work, other than its work conflicting with what was integrated since (that work runs again): the run stops. */
  failures: GitFailure[];
}

interface CommitRan extends Ran {
  landing: LandingState;
  baselineFailed?: BaselineFailed;
}

/** The `commit` step, waiting for a gate run at most `waitMs`. */
export class CommitStep implements SessionStep<CommitOpened, CommitRan, CommitStepOutput, CommitProblem> {
  readonly name = 'commit';

  constructor(private readonly options: { waitMs?: number }) {}

  async open(context: StepContext, plan: Plan): Promise<Result<CommitOpened, CommitProblem>> {
    const session = await readSession(context.planPath, plan);
    const opened = await context.io.repository.open(plan, { sandbox: false, checkTimeoutMs: session.checkTimeoutMs });
    if (!opened.ok) return err({ kind: 'git-failed', failure: opened.error, tasks: [], notices: [] });
    const places = opened.value;
    // Work the person committed on top of everything integrated becomes the new starting point.
    await places.integration.followHead();
    const gate = new GateDriver(context, session, places.integration);
    const failures: GitFailure[] = [];
    return ok({
      session,
      state: stateOf(context, session, plan),
      places,
      gate,
      failures,
      effects: {
        ...unmetEffects,
        ...gate.effects,
        record: async (state, request) => {
          const recorded = await gate.effects.record(state, request);
          if (!recorded.ok && recorded.error.step !== 'integrate') failures.push(recorded.error);
          return recorded;
        },
      },
    });
  }

  async run(scope: StepScope, opened: CommitOpened): Promise<CommitRan> {
    const { session } = scope;
    const { io } = scope.context;
    let state = opened.state;
    let baselineFailed: BaselineFailed | undefined;
    if (session.engine !== null && !state.finished) {
      const gated = await opened.gate.drive(await scope.post(state, commitEvents(io.clock.now())), this.options.waitMs, scope.post);
      state = gated.state;
      baselineFailed = gated.baselineFailed;
    }
    const landed = await scope.land(state, opened.places.integration);
    return {
      state: landed.state,
      end: runEnd(landed.state, scope.run),
      landing: landed.landing,
      finishing: opened.places,
      ...(baselineFailed !== undefined ? { baselineFailed } : {}),
    };
  }

  report(scope: StepScope, opened: CommitOpened, ran: CommitRan, recorded: Recorded): Result<CommitStepOutput, CommitProblem> {
    const { session } = scope;
    const { state } = ran;
    const { integration } = opened.places;
    const notices = [...scope.run.notices('integration-failed'), ...(recorded.notice !== null ? [recorded.notice] : [])].map(noticeOf).concat(recorded.kept);
    // The plan is finished: what its attempts set aside is said once more, with how to read it back.
    if (recorded.archived !== null) notices.push(...setAsideNotices(state.plan));
    // A step that stops says all the same: the gate's notices (a run started again) with the rest.
    const stopNotices = [...opened.gate.notices.map(warning), ...notices];
    const refused = state.stop?.baselineFailure;
    if (refused !== undefined) {
      return err({
        kind: 'baseline-failed',
        command: session.gate.config?.command ?? '',
        // Refused again (it failed at an earlier step): the tip then is not known, the tip now is.
        ref: integration.ref,
        tip: ran.baselineFailed?.tip ?? integration.tip,
        output: ran.baselineFailed?.output ?? clipTail(refused.output.trim(), 2000),
        notices: stopNotices,
      });
    }
    const failed = opened.failures.at(-1);
    if (failed !== undefined) return err({ kind: 'git-failed', failure: failed, tasks: [], notices: stopNotices });
    return ok({
      ...integratedBy(scope.run.events),
      round: state.round,
      landing: ran.landing,
      archived: recorded.archived,
      counts: countByStatus(state.plan),
      complete: isComplete(state.plan),
      gate: gateReport(session.gate, state, scope.run.events, { notices: opened.gate.notices }),
      ...(notices.length > 0 ? { notices } : {}),
    });
  }
}
