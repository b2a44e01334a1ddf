// `plan setup`: validate the working tree against the plan and start a session's run — resume
// detection, interrupted work back to pending, approved work held as a candidate, blocking
// assumptions (all `setupRun`, as a headless run does); then the step function's first state,
// with approved work and the work an earlier session verified integrated (or, with a gate, queued
// for it), landed, and the gate's check of the starting commit.

import { rm } from 'node:fs/promises';
import { describeOrphans, installAdvice, type SandboxMode } from '../../adapters/index.ts';
import {
  clipForLead,
  type CommitOutcome,
  countByStatus,
  driveNow,
  emitsInto,
  type EngineState,
  err,
  EventQueue,
  gateReport,
  type GateReport,
  type HeldCandidate,
  initialState,
  integratedBy,
  type LandingState,
  noGateNotice,
  type Notice,
  noticeOf,
  ok,
  type Plan,
  type Result,
  type RunEventBody,
  skippedBy,
  type SkipRef,
  taskAt,
  type TaskRef,
  type TaskStatus,
  warning,
} from '../../core/index.ts';
import { promptsDirFor } from '../archive.ts';
import type { SessionPlaces } from './io.ts';
import { post, runEnd, sessionEndedEvents, setUpEvent, setupEvents, StepRun, unmetEffects } from './driver.ts';
import { readSession } from './file.ts';
import { defaultSession, type Session, sessionConfig, type SessionGateConfig, type SessionSandbox } from './session-state.ts';
import type { SetupReport } from '../setup.ts';
import type { SetupProblem } from '../refusals.ts';
import { assumptionCheckedEvent, type AssumptionResult } from '../assumptions.ts';
import { DEFAULTS } from '../settings.ts';
import { type BaselineFailed, GateDriver } from './gate-driver.ts';
import { type Opened, type PlanWrites, type Ran, type Recorded, RunJournal, type SessionStep, stateOf, type StepContext, type StepScope } from './skeleton.ts';

export interface SetupSettings {
  concurrency?: number;
  maxAttempts?: number;
  checkTimeoutMs?: number;
  /** `--gate CMD`: the merge queue's gate instead of the plan's `context.testCommand`. */
  gate?: string;
  /** `--no-gate`: verified work integrates as soon as `commit` sees it. */
  noGate?: boolean;
  gateBatch?: number;
  gateTimeoutMs?: number;
  /** How long setup waits for the baseline gate run before it returns `running`. */
  waitMs?: number;
  /** The sandbox mode and what the CLI found (`--sandbox`, `FOREMAN_SANDBOX`); default `auto`, asked here. */
  sandbox?: SessionSandbox;
  /** `--speculate N`, when given: a session cannot build on candidates (its subagents start from HEAD), and says so. */
  speculate?: number;
  /** `--strict-scope`: a change outside a task's declared files fails its attempt (else it is set aside). */
  strictScope?: boolean;
}

export interface SetupOutput {
  goal: string;
  taskCount: number;
  maxDepth: number;
  isResume: boolean;
  /** Tasks whose work had been integrated though plan.json had not recorded it: now completed. */
  recovered: number[];
  /** Tasks an earlier session left in progress: their work never left their worktrees; they run again. */
  reset: number[];
  /** Completed tasks whose created files are gone: pending again. */
  reverted: number[];
  /** Approved tasks whose parked work was integrated now (with a gate: none; it passes the gate first). */
  approved: CommitOutcome;
  /** Work an earlier session verified and did not integrate, integrated now. */
  integrated: CommitOutcome;
  /** Landing what is integrated (an earlier session's work included) on the branch. */
  landing: LandingState;
  /** Counts over every assumption checked; only the failed ones are listed (the output stays small however big the plan). */
  assumptions: { total: number; passed: number; failed: AssumptionResult[] };
  blocked: Array<TaskRef & { reason: string }>;
  skipped: SkipRef[];
  notices: Notice[];
  counts: Record<TaskStatus, number>;
  pending: number;
  nothingToDo: boolean;
  /** Where the plan went when every task was already completed (and landed), else null. */
  archived: string | null;
  concurrency: number;
  maxAttempts: number;
  /** The merge queue; `baseline: "failed"` refuses the session (the CLI exits 2). */
  gate: GateReport;
  /** The sandbox mode and whether checks, gate runs and workers' Bash commands run in it (`notices` says why not). */
  sandbox: { mode: SandboxMode; sandboxed: boolean };
  /** Speculation asked for, and used: none in a session. */
  speculate: { asked: number; depth: 0 };
}

/** What setup found before the run started. */
interface SetupOpened extends Opened {
  /** The session an earlier setup started (its run may still be under way). */
  earlier: Session;
  report: SetupReport<SessionPlaces>;
  /** Tasks the findings skipped. */
  skips: Array<Extract<RunEventBody, { type: 'task-skipped' }>>;
  /** Said before the run started: what was left running, what setup found, the sandbox, speculation. */
  notices: Notice[];
  places: SessionPlaces;
  gate: GateDriver;
  sandbox: SessionSandbox;
}

interface SetupRan extends Ran {
  landing: LandingState;
  /** Approved work, integrated now. */
  approved: CommitOutcome;
  /** What the earlier session verified, integrated now. */
  integrated: CommitOutcome;
  /** What landing said. */
  landed: Notice[];
  baselineFailed?: BaselineFailed;
}

/** The `setup` step with `settings`. */
export class SetupStep implements SessionStep<SetupOpened, SetupRan, SetupOutput, SetupProblem> {
  readonly name = 'setup';

  constructor(private readonly settings: SetupSettings) {}

  async open(context: StepContext, plan: Plan, writes: PlanWrites): Promise<Result<SetupOpened, SetupProblem>> {
    const { settings } = this;
    const { io } = context;
    const sandbox = settings.sandbox ?? (await io.sandbox());
    // Checks a killed step left behind may still be writing files: stop them before anything else.
    const orphans = await io.processes.endLeftovers();
    // A gate process a killed session left running is ended; its candidates are queued again below.
    const endedGate = await io.gate.end();
    const earlier = await readSession(context.planPath, plan);
    // Work an earlier session verified is integrated, not reset.
    const verified = verifiedEarlier(earlier.engine);
    await io.handOut.removeStale();
    const branch = await io.repository.branch();
    const gateCommand = settings.noGate === true ? undefined : (settings.gate ?? plan.context?.testCommand);
    const gateConfig: SessionGateConfig | null =
      gateCommand === undefined || gateCommand.trim() === ''
        ? null
        : {
            command: gateCommand,
            batchSize: settings.gateBatch ?? DEFAULTS.gateBatch,
            timeoutMs: settings.gateTimeoutMs ?? settings.checkTimeoutMs ?? DEFAULTS.checkTimeoutMs,
          };
    const session: Session = {
      ...defaultSession(),
      concurrency: settings.concurrency ?? DEFAULTS.concurrency,
      maxAttempts: settings.maxAttempts ?? DEFAULTS.maxAttempts,
      checkTimeoutMs: settings.checkTimeoutMs ?? DEFAULTS.checkTimeoutMs,
      branch: branch === null ? null : `refs/heads/${branch}`,
      sandbox,
      strictScope: settings.strictScope === true,
      gate: { config: gateConfig, current: null },
    };
    const setup = await io.repository
      .setUp(plan, {
        checkTimeoutMs: session.checkTimeoutMs,
        verified: verified.map((v) => v.task),
        sandbox: sandbox.sandboxed,
        // The plan's id is written by setup, once nothing refuses the session, before anything is made under it.
        savePlan: (given) => writes.save(given),
      })
      .finally(() => io.processes.forget());
    if (!setup.ok) return err(setup.error);
    const report = setup.value;
    // What setup found is applied by the step function, as every later change of a task's state.
    const emitted: RunEventBody[] = [];
    const setUp = driveNow(
      initialState(plan, sessionConfig(session, context.planPath), io.clock.now(), report.held, verified),
      new EventQueue([setUpEvent(report.findings, io.clock.now())]),
      emitsInto(emitted),
    );
    const skips = emitted.flatMap((event) => (event.type === 'task-skipped' ? [event] : []));
    const notices: Notice[] = [
      ...(endedGate.length > 0 ? [warning(`stopped ${endedGate.join(', ')} left running by an earlier session: its candidates are tested again`)] : []),
      ...(orphans.length > 0 ? [warning(describeOrphans(orphans))] : []),
      ...report.notices,
      ...sandboxNotices(sandbox),
      ...((settings.speculate ?? 0) > 0 && gateConfig !== null
        ? [
            {
              level: 'info' as const,
              message: `no speculation in a session: each subagent starts from your branch's HEAD, so a dependant starts once its blockers' work has passed the gate and landed (a headless run builds dependants on candidates: execute --speculate)`,
            },
          ]
        : []),
    ];
    await writes.save(setUp.state.plan);
    const gate = new GateDriver(context, session, report.places.integration);
    return ok({
      session,
      state: setUp.state,
      effects: { ...unmetEffects, ...gate.effects },
      earlier,
      report,
      skips,
      notices,
      places: report.places,
      gate,
      sandbox,
    });
  }

  async run(scope: StepScope, opened: SetupOpened): Promise<SetupRan> {
    const { context } = scope;
    const { io } = context;
    const plan = opened.state.plan;
    // An earlier session's run that no step finished ended with that session, some time after its last event.
    const earlier = opened.earlier;
    if (earlier.runId !== null && !earlier.runFinished) {
      const lastSeen = await io.journal.lastSeen(earlier.runId);
      const ended = new StepRun(scope.writes.save, unmetEffects, io.clock.now);
      const state = await post(stateOf(context, earlier, plan), sessionEndedEvents(lastSeen, io.clock.now()), ended);
      const end = runEnd(state, ended);
      if (end !== null) new RunJournal(context, earlier).finish(plan, end, { landed: true, advice: '', archived: null, lastMs: lastSeen ?? io.clock.now() });
    }

    // A fresh scratch directory: prompts of an earlier session are stale.
    await rm(promptsDirFor(context.planPath), { recursive: true, force: true });
    const { report } = opened;
    scope.journal.start(plan, report.resumed);
    scope.journal.append([...report.assumptions.map(assumptionCheckedEvent), ...opened.skips]);

    // The run's first state: candidates held on their refs (approved work among them), and what the
    // earlier session verified; without a gate, they integrate now, in one round.
    const state = await scope.post(opened.state, setupEvents(await io.repository.unlanded(plan, await io.repository.head()), io.clock.now()));
    // One round integrated both: each list names the round's commit when it has a task in it.
    const rounds = integratedBy(scope.run.events);
    const outcome = (tasks: number[]): CommitOutcome => ({ commit: tasks.length > 0 ? rounds.commit : null, tasks });
    const approvedTasks = new Set(report.held.flatMap((candidate) => (candidate.approved === true ? [candidate.task] : [])));
    const approved = outcome(rounds.tasks.filter((task) => approvedTasks.has(task)));
    const integrated = outcome(rounds.tasks.filter((task) => !approvedTasks.has(task)));
    // What is integrated and not on the branch yet (this session's start, or an earlier one cut short) lands now.
    const landed = await scope.land(state, opened.places.integration);

    // The gate's check of the starting commit, when the step function asked for it: waited for at most --wait.
    const { state: gated, baselineFailed } = await opened.gate.drive(landed.state, this.settings.waitMs, scope.post);
    return {
      state: gated,
      end: runEnd(gated, scope.run),
      landing: landed.landing,
      finishing: opened.places,
      approved,
      integrated,
      landed: landed.notices,
      ...(baselineFailed !== undefined ? { baselineFailed } : {}),
    };
  }

  report(scope: StepScope, opened: SetupOpened, ran: SetupRan, recorded: Recorded): Result<SetupOutput, SetupProblem> {
    const { session } = scope;
    const { report } = opened;
    const { state } = ran;
    const counts = countByStatus(state.plan);
    return ok({
      goal: report.goal,
      taskCount: report.taskCount,
      maxDepth: report.maxDepth,
      isResume: report.resumed,
      recovered: report.recovered,
      reset: report.reset,
      reverted: report.reverted,
      approved: ran.approved,
      integrated: ran.integrated,
      landing: ran.landing,
      assumptions: {
        total: report.assumptions.length,
        passed: report.assumptions.filter((a) => a.passed).length,
        failed: report.assumptions.filter((a) => !a.passed).map((a) => ({ ...a, output: clipForLead(a.output.trim(), 500) })),
      },
      blocked: report.blocked.map((i) => ({
        index: i,
        subject: taskAt(state.plan.tasks, i).subject,
        reason: clipForLead(taskAt(state.plan.tasks, i).result ?? ''),
      })),
      skipped: [...skippedBy(opened.skips), ...skippedBy(scope.run.events)],
      notices: [
        ...opened.notices,
        ...ran.landed,
        ...opened.gate.notices.map(warning),
        ...recorded.kept,
        ...(recorded.notice !== null ? [noticeOf(recorded.notice)] : []),
      ],
      counts,
      pending: counts.pending,
      nothingToDo: counts.pending === 0,
      archived: recorded.archived,
      concurrency: session.concurrency,
      maxAttempts: session.maxAttempts,
      gate: gateReport(session.gate, state, scope.run.events, {
        notices: session.gate.config !== null ? [] : [noGateNotice(this.settings.noGate === true)],
        ...(ran.baselineFailed !== undefined
          ? { output: ran.baselineFailed.output, failedOn: { ref: opened.places.integration.ref, tip: ran.baselineFailed.tip } }
          : {}),
      }),
      sandbox: { mode: opened.sandbox.mode, sandboxed: opened.sandbox.sandboxed },
      speculate: { asked: this.settings.speculate ?? 0, depth: 0 },
    });
  }
}

/** Work an earlier session verified and did not hold or integrate: its attempts, for the new run's first state. */
function verifiedEarlier(engine: EngineState | null): HeldCandidate[] {
  if (engine === null) return [];
  return [...engine.attempts.values()].flatMap((a) =>
    a.stage === 'verified' && !(a.verifiedBy.kind === 'earlier-run' && a.verifiedBy.held) && a.decision.kind === 'completed'
      ? [{ task: a.task, work: a.work, result: a.decision.result }]
      : [],
  );
}

/** What `setup` says, once, when the session goes without the sandbox. */
function sandboxNotices(sandbox: SessionSandbox): Notice[] {
  if (sandbox.sandboxed) return [];
  const what = 'the acceptance and assumption checks and the gate run unsandboxed, and each Bash command of a worker asks you before it runs';
  if (sandbox.unavailable === null) return [warning(`--sandbox off: ${what}`)];
  return [warning(`running without the sandbox: ${sandbox.unavailable}. So ${what}; to sandbox them, ${installAdvice()}`)];
}
