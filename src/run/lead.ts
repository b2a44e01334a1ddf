// The /execute skill's steps as code. In that skill a Claude Code session is the lead and its
// Task subagents are the workers. Each step (`plan setup | next | finalize | commit`) is a
// process of its own that posts events to the engine's step function (core/engine-step.ts, the
// same one the headless engine drives) and carries out the effects it asks for, as
// run/engine.ts does: the step function decides what starts, what an attempt's outcome means,
// what the gate's verdict does, when the run ends; no run logic is written here again. Between
// steps its state lives in the session file (run/session.ts).
//
//   setup     → a run's first state; `integrate` (work an earlier session verified), `landed`
//   next      → `landed` (what HEAD lacks), `hand-out`: the tasks to dispatch, their prompt files
//   finalize  → `worker-finished` for each subagent's report, `verified` after checking its worktree
//   commit    → `integrate`, the gate's `gated` verdicts (its process runs in the background), `landed`
//
// Isolation in a session: the workers are Task subagents, which foreman does not start. The lead
// dispatches each with `isolation: "worktree"`, so Claude Code gives it a worktree of its own
// (`<repo>/.claude/worktrees/agent-<id>`, from the session's HEAD) and names it in the Task
// result; `finalize` captures and verifies the attempt there with the headless engine's stage
// functions, then removes that worktree and its branch. Because a subagent starts from HEAD,
// `commit` lands integrated work on the branch at once, and the step function starts a
// dependant only once its blockers' work has landed.
//
// What a step does to the repository, Claude Code's worktrees, the gate process, the journal and
// the clock goes through run/lead-io.ts: the real adapters, or a test's (the in-process session
// rig); the session file, the plan and the prompts are files beside the plan.
//
// Each step also writes the run's events to the journal (`.design/events.jsonl`), as a headless
// run does. What the plan tool cannot see it records as unknown, never as zero: a Task subagent's
// cost, tokens and permission denials (see docs/skills.md).

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { newRunId } from '../adapters/journal.ts';
import { ownLayout } from '../adapters/layout.ts';
import { ProcessRegistry, describeOrphans, killOrphans, registryPathFor } from '../adapters/orphans.ts';
import { PlanKeeper } from '../adapters/plan-store.ts';
import { type SandboxMode, installAdvice } from '../adapters/sandbox.ts';
import { commandHint } from '../core/command-hint.ts';
import { type EngineState, type HeldCandidate, initialState, startable, step, tasksIn } from '../core/engine-step.ts';
import type { RunEventBody, StopReason, TaskOutcome } from '../core/events.ts';
import { type Result, err, ok, recheckRun } from '../core/failure.ts';
import { clipTail } from '../core/format.ts';
import { type GitFailure, describeGitFailure } from '../core/git-text.ts';
import { neededPaths } from '../core/widen.ts';
import { landingProblemSentence } from '../core/landing.ts';
import { type BreakerDecision, countByStatus, readySet } from '../core/graph.ts';
import { type Plan, type TaskStatus, type UsageFigure, modelOf, statusOf } from '../core/plan.ts';
import { workerPrompt } from '../core/prompt.ts';
import { type SessionLimit, handOutLimit, roundLimit } from '../core/limit-words.ts';
import {
  type CommitOutcome,
  type GateReport,
  type NextStall,
  type Notice,
  type RetryRef,
  type SkipRef,
  type TaskRef,
  breakerReport,
  clipForLead,
  gateReport,
  integratedBy,
  isComplete,
  nextStall,
  overlapping,
  retriesOf,
  roundSummary,
  skippedBy,
} from '../core/session-report.ts';
import { promptsDirFor } from './archive.ts';
import { ensurePlanId } from './commit.ts';
import { type LeadIo, type LeadIsolation, type LeadPlace, realLeadIo } from './lead-io.ts';
import { finishPlan, lander, noGateNotice, runFinishedEvent, runStartedEvent } from './lifecycle.ts';
import {
  type StepHooks,
  StepRun,
  commitEvents,
  finalizeEvent,
  gateVerdictEvents,
  landedEvents,
  nextEvents,
  post,
  runEnd,
  sessionEndedEvents,
  setUpEvent,
  setupEvents,
} from './session-driver.ts';
import {
  type GateRunRecord,
  type Session,
  type SessionGateConfig,
  type SessionSandbox,
  defaultSession,
  promptPathFor,
  readSession,
  sessionConfig,
  withPlan,
  writeSession,
} from './session.ts';
import type { AssumptionResult, SetupProblem } from './setup.ts';
import { DEFAULTS } from './settings.ts';

export type { CommitOutcome, GateReport, GateRunReport, NextStall, Notice, SkipRef, TaskRef } from '../core/session-report.ts';
export type { SessionSandbox } from './session.ts';
export { promptPathFor, sessionPathFor } from './session.ts';

/** How many overlapping ready tasks `next` names; it counts the rest. */
const WAITING_LISTED = 20;
/** How long a step waits for a gate run before it returns `running` (`--wait`): well inside the Bash tool's two minutes. */
export const DEFAULT_GATE_WAIT_MS = 90_000;

export interface LeadContext extends LeadPlace {
  /** The plan file as the step read it: a person's edit made while the step holds the plan is kept aside. */
  planText?: string;
  /** The steps' I/O a test replaces (run/lead-io.ts); the rest is the real one. */
  io?: Partial<LeadIo>;
}

/** A step's context with its I/O. */
type Lead = LeadContext & { io: LeadIo };
const withIo = (ctx: LeadContext): Lead => ({ ...ctx, io: { ...realLeadIo(ctx), ...ctx.io } });

/** Landing the integration tip on the session's branch, as a step reports it. */
export interface LandingReport {
  /** True when everything integrated so far is on the branch. */
  landed: boolean;
  /** Files the landing updated now (0 when the branch was up to date). */
  files: number;
  /** The integration commit the branch is at after landing, or null when it could not land. */
  commit: string | null;
  /** What blocks landing and how to land by hand; empty when it landed. */
  problem: string[];
}

// ---------------------------------------------------------------------------------------------
// The run's journal

/** Appends events to the journal: a step's, each stamped when it happened (`run.times`), or a list stamped now. */
function journal(io: LeadIo, runId: string | null, source: readonly RunEventBody[] | StepRun): void {
  const events = source instanceof StepRun ? source.events : source;
  if (runId === null || events.length === 0) return;
  const now = io.now();
  io.journal.append(events.map((e, k) => ({ ...e, runId, at: new Date(source instanceof StepRun ? (source.times[k] ?? now) : now).toISOString() })));
}

/** Starts a run in the session (a new id, `run-started`); the caller saves the session. */
function startRun(plan: Plan, ctx: Lead, session: Session, resumed: boolean): void {
  session.runId = newRunId();
  session.runFinished = false;
  session.startedAt = new Date(ctx.io.now()).toISOString();
  journal(ctx.io, session.runId, [
    runStartedEvent(plan, { planPath: ctx.planPath, resumed, concurrency: session.concurrency, schedule: 'rounds', mode: 'session' }),
  ]);
}

/** Ends the session's run (`run-finished`), once, as the lifecycle words it; `lastMs`: when it was last seen working (else now). */
function finishRun(
  plan: Plan,
  ctx: Lead,
  session: Session,
  end: { reason: StopReason; message: string; usage: UsageFigure },
  landing: { landed: boolean; advice: string },
  archived: string | null,
  lastMs: number = ctx.io.now(),
): void {
  if (session.runId === null || session.runFinished) return;
  session.runFinished = true;
  const durationMs = Math.max(0, lastMs - Date.parse(session.startedAt));
  journal(ctx.io, session.runId, [
    runFinishedEvent(
      plan,
      { ...end, durationMs: Number.isFinite(durationMs) ? durationMs : 0 },
      { layout: ownLayout(), planPath: ctx.planPath, landing, archived, resumeHint: `/foreman:execute again` },
    ),
  ]);
}

// ---------------------------------------------------------------------------------------------
// The sandbox, and what the worker hook is told

/** Whether this session's checks, gate runs and workers' Bash commands run in the sandbox (`auto` asked now for a session file of an earlier version). */
const sandboxedIn = async (session: Session, io: LeadIo): Promise<boolean> => (session.sandbox ?? (await io.sandbox())).sandboxed;

/** What `setup` says, once, when the session goes without the sandbox. */
function sandboxNotices(sandbox: SessionSandbox): Notice[] {
  if (sandbox.sandboxed) return [];
  const what = 'the acceptance and assumption checks and the gate run unsandboxed, and each Bash command of a worker asks you before it runs';
  if (sandbox.unavailable === null) return [{ level: 'warning', message: `--sandbox off: ${what}` }];
  return [{ level: 'warning', message: `running without the sandbox: ${sandbox.unavailable}. So ${what}; to sandbox them, ${installAdvice()}` }];
}

/** Tell the worker hook what this session hands out now; once its run has finished, nothing. */
async function syncHandOut(plan: Plan, ctx: Lead, session: Session): Promise<void> {
  if (session.runFinished || session.runId === null) return ctx.io.handOut.withdraw();
  const sandbox = session.sandbox ?? (await ctx.io.sandbox());
  await ctx.io.handOut.publish(plan, {
    running: session.engine === null ? [] : tasksIn(session.engine, new Set(['running'])),
    sandbox: sandbox.sandboxed
      ? { available: true, network: plan.context?.checkNetwork ?? [] }
      : { available: false, reason: sandbox.unavailable ?? '--sandbox off' },
    promptFile: (index) => promptPathFor(ctx.planPath, index),
  });
}

// ---------------------------------------------------------------------------------------------
// Carrying out the step function's effects

/**
 * A step's writes of the plan: through a PlanKeeper, as a headless run's, so an edit a person
 * makes while the step holds the plan is kept aside, byte for byte, never written over. The step
 * says where (`report`).
 */
class PlanWrites {
  private readonly kept: string[] = [];

  private constructor(
    private readonly keeper: PlanKeeper,
    private readonly planPath: string,
    private readonly step: string,
  ) {}

  /** `ctx.planText`: the file as the step read it (else as it is now). */
  static async of(ctx: LeadContext, step: string): Promise<PlanWrites> {
    const text = ctx.planText ?? (await readFile(ctx.planPath, 'utf8').catch(() => ''));
    return new PlanWrites(new PlanKeeper(ctx.planPath, text), ctx.planPath, step);
  }

  /** Write `plan`: where an edit found in the file was kept, or null. */
  readonly write = async (plan: Plan): Promise<string | null> => {
    const kept = await this.keeper.save(plan);
    if (kept !== null) this.kept.push(kept);
    return kept;
  };

  readonly save = async (plan: Plan): Promise<void> => {
    await this.write(plan);
  };

  /** The edits kept aside by this step, said once: journaled with `run`'s events, and for the step's output. */
  report(run: StepRun): Notice[] {
    const notices = this.kept.splice(0).map(
      (kept): Notice => ({
        level: 'warning',
        message: `${this.planPath} was changed while \`plan ${this.step}\` held it: the step did not take the change in, and kept it, byte for byte, in ${kept}. To use it, copy ${kept} over ${this.planPath}: the next step works with it`,
      }),
    );
    for (const notice of notices) run.note({ type: 'notice', ...notice });
    return notices;
  }
}

/** The session's step-function state with the plan as this step read it (a new run's first state when there is none). */
function engineOf(session: Session, plan: Plan, ctx: Lead): EngineState {
  return session.engine !== null ? withPlan(session.engine, plan) : initialState(plan, sessionConfig(session, ctx.planPath), ctx.io.now());
}

/** Land the integration tip on the session's branch (as commits, never over a change of the person's), and tell the step function. */
async function land(
  state: EngineState,
  isolation: LeadIsolation,
  session: Session,
  ctx: Lead,
  run: StepRun,
): Promise<{ state: EngineState; landing: LandingReport; notices: Notice[] }> {
  const landing = lander(isolation, { branch: session.branch, commit: true, planPath: ctx.planPath, layout: ownLayout() });
  const notice = await landing.land();
  const report: LandingReport = { ...landing.state };
  const next = await post(state, landedEvents(landing.landed ? [] : [...state.unlanded], ctx.io.now()), run);
  return { state: next, landing: report, notices: notice === null ? [] : [{ level: notice.level, message: notice.message }] };
}

/**
 * The close of a step that landed (`setup`, `commit`): when the run ended, the plan is finished
 * (archived once all is done); the step's events are journaled and the run's end recorded.
 */
async function closeLandedStep(
  state: EngineState,
  landing: LandingReport,
  run: StepRun,
  isolation: LeadIsolation,
  session: Session,
  ctx: Lead,
  writes: PlanWrites,
) {
  const end = runEnd(state, run);
  const { archived, notice } = await finishPlan(end, state.plan, isolation, {
    planPath: ctx.planPath,
    landed: landing.landed,
    save: writes.write,
    endGate: ctx.io.gate.end,
  });
  if (notice !== null) run.note(notice);
  const kept = writes.report(run);
  journal(ctx.io, session.runId, run);
  if (end !== null) finishRun(state.plan, ctx, session, end, { landed: landing.landed, advice: landingProblemSentence(landing.problem) }, archived);
  return { archived, notice, kept };
}

// ---------------------------------------------------------------------------------------------
// The merge queue's gate process (it outlives a step; its queue is the step function's)

interface GateDriving {
  ctx: Lead;
  session: Session;
  isolation: LeadIsolation;
  run: StepRun;
  notices: string[];
}

/**
 * Start the gate process on `tasks` stacked on the integration tip (none: the baseline), `state`
 * being the step function's with those tasks being gated; false when it did not start.
 */
async function launchRun(driving: GateDriving, tasks: number[], state: EngineState): Promise<boolean> {
  const { ctx, session, isolation } = driving;
  const record: GateRunRecord = {
    id: `${ctx.io.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    tasks,
    tip: isolation.tip,
    startedAt: new Date(ctx.io.now()).toISOString(),
  };
  session.gate.current = record;
  // Saved before it starts, with the state that gates these tasks: a step killed now finds the run and starts it again.
  session.engine = state;
  await writeSession(ctx.planPath, session);
  const started = await ctx.io.gate.launch(
    { repo: isolation.repo, planPath: ctx.planPath, env: ctx.env ?? process.env, config: session.gate.config!, sandbox: await sandboxedIn(session, ctx.io) },
    record,
  );
  if (started.ok) return true;
  session.gate.current = null;
  driving.notices.push(
    `could not start the gate process (\`plan gate --serve\`): ${started.error}; run \`${commandHint('plan', 'commit', ownLayout())}\` again`,
  );
  return false;
}

/** The gate failed on the starting commit: what it said, and the integration tip it ran on. */
interface BaselineFailed {
  output: string;
  tip: string;
}

/**
 * Drive the gate until `deadline`: collect the background run's result and post its verdict to
 * the step function (which integrates what passed and blames a culprit), start the next run it
 * asks for (the baseline first), and wait for it. A run still going at the deadline goes on in
 * the background; the next `commit` collects it. Returns the state after.
 */
async function driveGate(state: EngineState, driving: GateDriving, deadline: number): Promise<{ state: EngineState; baselineFailed?: BaselineFailed }> {
  const { ctx, session, isolation, run } = driving;
  let current = state;
  for (;;) {
    const out = session.gate.current;
    if (out === null) {
      // The step function asked for a run (the baseline: none gating) whose process never started.
      const gating = tasksIn(current, new Set(['gating']));
      if (gating.length > 0 || current.baseline === 'testing') {
        if (!(await launchRun(driving, gating, current))) return { state: current };
        continue;
      }
      return { state: current };
    }
    const gateState = await ctx.io.gate.read();
    if (gateState !== null && gateState.id === out.id && gateState.state === 'finished') {
      session.gate.current = null;
      if (out.tasks.length === 0) {
        // The starting commit's verdict: the step function opens the gate, or refuses the run.
        if (current.baseline !== 'testing') continue;
        current = await post(current, gateVerdictEvents([], gateState, ctx.io.now()), run);
        if (current.stop?.baselineFailure !== undefined)
          return { state: current, baselineFailed: { output: clipTail(gateState.output.trim(), 2000), tip: out.tip } };
        continue;
      }
      if (gateState.stale || isolation.tip !== out.tip) {
        // Nothing was tested on the tip as it is now: the same stack runs again.
        driving.notices.push(
          `the gate run on tasks ${out.tasks.join(', ')} is run again: ${gateState.stale ? gateState.output : 'the integration tip moved while it ran'}`,
        );
        if (!(await launchRun(driving, out.tasks, current))) return { state: current };
        continue;
      }
      // A run the state does not know (a step killed before it saved the state gating it) tells nothing.
      if (!out.tasks.every((t) => current.attempts.get(t)?.stage === 'gating')) continue;
      current = await post(current, gateVerdictEvents(out.tasks, gateState, ctx.io.now()), run);
      continue;
    }
    if (gateState !== null && gateState.id === out.id && gateState.state === 'running' && ctx.io.gate.alive(gateState)) {
      const left = deadline - ctx.io.now();
      if (left <= 0) return { state: current };
      await ctx.io.sleep(Math.min(200, left));
      continue;
    }
    // The process is gone without a result (killed): its stack is tested again.
    driving.notices.push(
      `the gate process for ${out.tasks.length === 0 ? 'the starting commit' : `tasks ${out.tasks.join(', ')}`} ended without a result: it runs again`,
    );
    if (!(await launchRun(driving, out.tasks, current))) return { state: current };
  }
}

/** The step hooks that record verified work (integrate, park, hold) and start the gate process. */
function recordingHooks(driving: GateDriving): Pick<StepHooks, 'record' | 'gate'> {
  return {
    record: (state, request) => driving.isolation.record(state.plan, request),
    gate: async (tasks, state) => {
      await launchRun(driving, tasks, state);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// setup

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
  /** Approved tasks whose parked work was integrated now. */
  approved: CommitOutcome;
  /** Work an earlier session verified and did not integrate, integrated now. */
  integrated: CommitOutcome;
  /** Landing what is integrated (an earlier session's work included) on the branch. */
  landing: LandingReport;
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

/** Work an earlier session verified and did not hold or integrate: its attempts, for the new run's first state. */
function verifiedEarlier(engine: EngineState | null): HeldCandidate[] {
  if (engine === null) return [];
  return [...engine.attempts.values()].flatMap((a) =>
    a.stage === 'verified' && !(a.verifiedBy.kind === 'earlier-run' && a.verifiedBy.held) && a.decision.kind === 'completed'
      ? [{ task: a.task, work: a.work, result: a.decision.result }]
      : [],
  );
}

/**
 * Validate the working tree against the plan and start a session's run: resume detection,
 * interrupted work back to pending, approved work integrated, blocking assumptions (all
 * `setupRun`, as a headless run does); then the step function's first state, with the work an
 * earlier session verified integrated (or, with a gate, held as candidates), landed, and the gate's
 * check of the starting commit.
 */
export async function leadSetup(given: Plan, context: LeadContext, settings: SetupSettings = {}): Promise<Result<SetupOutput, SetupProblem>> {
  let plan = given;
  const ctx = withIo(context);
  const { io } = ctx;
  const sandbox = settings.sandbox ?? (await io.sandbox());
  // Checks a killed step left behind may still be writing files: stop them before anything else.
  const registryPath = registryPathFor(ctx.planPath);
  const orphans = await killOrphans(registryPath);
  // A gate process a killed session left running is ended; its candidates are queued again below.
  const endedGate = await io.gate.end();
  const registry = new ProcessRegistry(registryPath);
  const earlier = await readSession(ctx.planPath, plan);
  // Work an earlier session verified is integrated, not reset.
  const verified = verifiedEarlier(earlier.engine);
  await io.handOut.removeStale();
  const branch = await io.repository.branch();
  const writes = await PlanWrites.of(ctx, 'setup');
  // The plan's id names its refs and worktrees: written before anything is made under it.
  if (typeof plan.planId !== 'string' || plan.planId === '') {
    ensurePlanId(plan);
    await writes.save(plan);
  }
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
      registry,
      verified: verified.map((v) => v.task),
      sandbox: sandbox.sandboxed,
      // Approved work joins the merge queue when a gate will run (as headless).
      gated: gateConfig !== null,
    })
    .finally(() => registry.clear());
  if (!setup.ok) return setup;
  const report = setup.value;
  // What setup found is applied by the step function, as every later change of a task's state.
  const setUp = step(initialState(plan, sessionConfig(session, ctx.planPath), io.now(), report.held, verified), setUpEvent(report.findings, io.now()));
  plan = setUp.state.plan;
  const setupSkips = setUp.effects.flatMap((effect) => (effect.type === 'emit' && effect.event.type === 'task-skipped' ? [effect.event] : []));
  const isolation = report.isolation;
  report.notices.push(...sandboxNotices(sandbox));
  if ((settings.speculate ?? 0) > 0 && gateConfig !== null) {
    report.notices.push({
      level: 'info',
      message: `no speculation in a session: each subagent starts from your branch's HEAD, so a dependant starts once its blockers' work has passed the gate and landed (a headless run builds dependants on candidates: execute --speculate)`,
    });
  }
  if (orphans.length > 0) report.notices.unshift({ level: 'warning', message: describeOrphans(orphans) });
  if (endedGate.length > 0)
    report.notices.unshift({
      level: 'warning',
      message: `stopped ${endedGate.join(', ')} left running by an earlier session: its candidates are tested again`,
    });
  await writes.save(plan);

  // An earlier session's run that no step finished ended with that session, some time after its last event.
  if (earlier.runId !== null && !earlier.runFinished) {
    const lastSeen = await io.journal.lastSeen(earlier.runId);
    const ended = new StepRun(writes, io.now);
    const state = await post(engineOf(earlier, plan, ctx), sessionEndedEvents(lastSeen, io.now()), ended);
    const end = runEnd(state, ended);
    if (end !== null) finishRun(plan, ctx, earlier, end, { landed: true, advice: '' }, null, lastSeen ?? io.now());
  }

  // A fresh scratch directory: prompts of an earlier session are stale.
  await rm(promptsDirFor(ctx.planPath), { recursive: true, force: true });
  startRun(plan, ctx, session, report.resumed);
  journal(io, session.runId, [
    ...report.assumptions.map(
      (a): RunEventBody => ({ type: 'assumption-checked', task: a.task, claim: a.claim, severity: a.severity, passed: a.passed, output: a.output }),
    ),
    ...setupSkips,
    ...(report.approved.commit !== null ? [{ type: 'round-committed', round: 0, tasks: report.approved.tasks, commit: report.approved.commit } as const] : []),
  ]);

  // The run's first state: candidates held on their refs, and what the earlier session verified.
  const driving: GateDriving = { ctx, session, isolation, run: new StepRun(writes, io.now), notices: [] };
  const run = new StepRun({ save: writes.save, ...recordingHooks(driving) }, io.now);
  driving.run = run;
  let state = await post(setUp.state, setupEvents(await io.repository.unlanded(plan, await io.repository.head()), io.now()), run);
  const integrated = integratedBy(run.events);
  // What is integrated and not on the branch yet (this session's start, or an earlier one cut short) lands now.
  const landed = await land(state, isolation, session, ctx, run);
  state = landed.state;
  report.notices.push(...landed.notices);

  // The gate's check of the starting commit, when the step function asked for it: waited for at most --wait.
  let baselineFailed: BaselineFailed | undefined;
  if (gateConfig !== null) {
    const gated = await driveGate(state, driving, io.now() + (settings.waitMs ?? DEFAULT_GATE_WAIT_MS));
    state = gated.state;
    baselineFailed = gated.baselineFailed;
  }
  session.engine = state;
  const { archived, notice, kept } = await closeLandedStep(state, landed.landing, run, isolation, session, ctx, writes);
  if (archived === null) await writeSession(ctx.planPath, session);
  await syncHandOut(state.plan, ctx, session);
  const counts = countByStatus(state.plan);
  return ok({
    goal: report.goal,
    taskCount: report.taskCount,
    maxDepth: report.maxDepth,
    isResume: report.resumed,
    recovered: report.recovered,
    reset: report.reset,
    reverted: report.reverted,
    approved: report.approved,
    integrated,
    landing: landed.landing,
    assumptions: {
      total: report.assumptions.length,
      passed: report.assumptions.filter((a) => a.passed).length,
      failed: report.assumptions.filter((a) => !a.passed).map((a) => ({ ...a, output: clipForLead(a.output.trim(), 500) })),
    },
    blocked: report.blocked.map((i) => ({ index: i, subject: state.plan.tasks[i]!.subject, reason: clipForLead(state.plan.tasks[i]!.result ?? '') })),
    skipped: [...skippedBy(setupSkips), ...skippedBy(run.events)],
    notices: [
      ...report.notices,
      ...driving.notices.map((message): Notice => ({ level: 'warning', message })),
      ...kept,
      ...(notice !== null ? [{ level: notice.level, message: notice.message }] : []),
    ],
    counts,
    pending: counts.pending,
    nothingToDo: counts.pending === 0,
    archived,
    concurrency: session.concurrency,
    maxAttempts: session.maxAttempts,
    gate: gateReport(session.gate, state, run.events, {
      notices: gateConfig !== null ? [] : [noGateNotice(settings.noGate === true)],
      ...(baselineFailed !== undefined ? { output: baselineFailed.output, failedOn: { ref: isolation.ref, tip: baselineFailed.tip } } : {}),
    }),
    sandbox: { mode: sandbox.mode, sandboxed: sandbox.sandboxed },
    speculate: { asked: settings.speculate ?? 0, depth: 0 },
  });
}

// ---------------------------------------------------------------------------------------------
// next

export interface NextOutput {
  round: number;
  /**
   * Dispatch each with `isolation: "worktree"`: Claude Code makes its worktree from HEAD, which
   * is `base` (it holds the work of every task it depends on).
   */
  tasks: Array<TaskRef & { activeForm: string; model: string; attempt: number; promptFile: string; isolation: 'worktree'; base: string }>;
  /** Ready tasks that did not start because they overlap a task that did (or runs); at most WAITING_LISTED of them. */
  waiting: Array<TaskRef & { overlapsWith: number[] }>;
  /** Every ready task that did not start: those overlapping, and those for which no slot was free. */
  queued: number;
  inProgress: number[];
  stall: NextStall;
  /**
   * With `deadlock`: the pending tasks that can never start; with `awaiting_approval`: the gated
   * tasks; with `landing`: ready tasks held back because their blockers' work is integrated but
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
   * Tasks whose set-aside work this step re-checked instead of handing them out (they were widened
   * to declare it, `plan declare`): `completed` waits for `plan commit`; otherwise a worker does
   * the task at a later `next`.
   */
  rechecked?: Array<TaskRef & { outcome: string; reason?: string; warnings: string[] }>;
}

const inProgressOf = (plan: Plan) => plan.tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' ? [i] : []));

/**
 * Ask the step function what may start now — ready, its blockers' work on the branch, not
 * overlapping anything under way, highest priority first, at most `concurrency` running — and
 * write each task's full worker prompt to `.design/prompts/task-<i>.md`.
 */
export async function leadNext(plan: Plan, context: LeadContext, options: { concurrency?: number } = {}): Promise<NextOutput> {
  const ctx = withIo(context);
  const { io } = ctx;
  const session = await readSession(ctx.planPath, plan);
  const head = await io.repository.head();
  const unlanded = await io.repository.unlanded(plan, head);
  const running = inProgressOf(plan);
  let state = engineOf(session, plan, ctx);
  // A run that ended (a stall, the breaker) starts again when something could start now (a retry, an approval).
  if (state.finished || session.runId === null || session.runFinished) {
    // The gate's verdict on the starting commit stands for the session.
    const fresh: EngineState = { ...initialState(plan, sessionConfig(session, ctx.planPath), io.now()), unlanded: new Set(unlanded), baseline: state.baseline };
    if (startable(fresh, options.concurrency).length > 0) {
      state = fresh;
      startRun(plan, ctx, session, true);
    }
  }
  const tasks: NextOutput['tasks'] = [];
  const writes = await PlanWrites.of(ctx, 'next');
  // A re-check runs in a worktree of foreman's, with the checks recorded as finalize's are.
  let recheckIsolation: Promise<Result<LeadIsolation, GitFailure>> | null = null;
  const registry = new ProcessRegistry(registryPathFor(ctx.planPath));
  const isolationForRecheck = (): Promise<Result<LeadIsolation, GitFailure>> =>
    (recheckIsolation ??= sandboxedIn(session, io).then((sandbox) =>
      io.repository.open(plan, { sandbox, checkTimeoutMs: session.checkTimeoutMs, registry, strictScope: session.strictScope }),
    ));
  // A re-check that could not be made ready fails its verification: a worker does the task next.
  const unprepared = new Map<number, string>();
  const run = new StepRun(
    {
      save: writes.save,
      verify: async (task, current) => {
        const opened = await isolationForRecheck();
        const unready = unprepared.get(task);
        if (unready !== undefined) return err(unready);
        if (!opened.ok) return err(`the plan's integration ref cannot be opened: ${describeGitFailure(opened.error)}`);
        return opened.value.verifyRecheck(current.plan, task);
      },
      release: async (task) => {
        const opened = await isolationForRecheck();
        if (opened.ok) opened.value.release(task);
        return [];
      },
      startWorker: async (effect, current) => {
        if (effect.recheck !== undefined) {
          const opened = await isolationForRecheck();
          const prepared = opened.ok ? await opened.value.prepareRecheck(effect.task, effect.recheck) : null;
          if (prepared !== null && !prepared.ok) unprepared.set(effect.task, prepared.error);
          return [{ type: 'worker-finished', task: effect.task, run: recheckRun(''), now: io.now() }];
        }
        // Setup refuses a repository without a commit; without one nothing can be handed out.
        if (head === null) throw new Error('no commit to hand work out from');
        const task = current.plan.tasks[effect.task]!;
        const promptFile = promptPathFor(ctx.planPath, effect.task);
        await mkdir(promptsDirFor(ctx.planPath), { recursive: true });
        await writeFile(promptFile, workerPrompt(current.plan, effect.task, { maxAttempts: current.config.maxAttempts }));
        session.handedOut[String(effect.task)] = { at: new Date(io.now()).toISOString(), base: head };
        tasks.push({
          index: effect.task,
          subject: task.subject,
          activeForm: task.activeForm ?? task.subject,
          model: modelOf(task),
          attempt: effect.attempt,
          promptFile,
          isolation: 'worktree',
          base: head,
        });
      },
    },
    io.now,
  );
  if (!state.finished) state = await post(state, nextEvents(unlanded, options.concurrency, io.now()), run);
  if (recheckIsolation !== null) await registry.clear();
  const rechecked = run.of('task-finished').map((e) => ({
    index: e.task,
    subject: e.subject,
    outcome: e.outcome,
    ...(e.reason !== undefined ? { reason: clipForLead(e.reason) } : {}),
    warnings: e.warnings ?? [],
  }));
  session.engine = state;
  const keptEdits = writes.report(run);
  journal(io, session.runId, run);
  if (run.finished !== null) finishRun(state.plan, ctx, session, run.finished, { landed: unlanded.length === 0, advice: '' }, null);
  await writeSession(ctx.planPath, session);
  await syncHandOut(state.plan, ctx, session);

  const limit = handOutLimit(state.limiter, options.concurrency ?? session.concurrency, io.now());
  // Why nothing was handed out, as the plan stands now.
  const { stall, stuck } = nextStall(state, { handedOut: tasks.length, running, now: io.now() });
  return {
    round: state.round + 1,
    tasks,
    waiting: overlapping(state, WAITING_LISTED),
    queued: readySet(state.plan.tasks).length,
    inProgress: running,
    stall,
    stuck,
    counts: countByStatus(state.plan),
    complete: isComplete(state.plan),
    ...(limit !== null ? { limit } : {}),
    ...(keptEdits.length > 0 ? { notices: keptEdits } : {}),
    ...(rechecked.length > 0 ? { rechecked } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// finalize

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

export interface FinalizeOutput {
  round: number;
  /**
   * `needs`: for a task blocked (or failed) wanting files it does not declare, what foreman knows
   * it wanted; `plan declare N --needed` declares them and puts the task back.
   */
  results: Array<TaskRef & { outcome: FinalizeOutcome; attempt: number; result?: string; reason?: string; warnings: string[]; needs?: string[] }>;
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

/**
 * Post each subagent's report to the step function: it judges the status line and, for
 * COMPLETED, asks for verification — the attempt's work captured from the worktree Claude Code
 * made for the subagent, the spot-check and the acceptance checks there (the headless engine's
 * verify stage) — then decides (completed, retry, failed, blocked), cascades and trips the
 * breaker. Undeclared changes are set aside (named in `warnings`). The subagent's worktree and branch are removed
 * once its work is captured. Saves after each task, so running it again with the same results
 * only reports the tasks already settled as `ignored`.
 */
export async function leadFinalize(
  plan: Plan,
  context: LeadContext,
  results: readonly WorkerResult[],
  options: { maxAttempts?: number; checkTimeoutMs?: number } = {},
): Promise<Result<FinalizeOutput, FinalizeProblem>> {
  const ctx = withIo(context);
  const { io } = ctx;
  const session = await readSession(ctx.planPath, plan);
  let state = engineOf(session, plan, ctx);
  if (options.maxAttempts !== undefined) state = { ...state, config: { ...state.config, maxAttempts: options.maxAttempts } };
  const checkTimeoutMs = options.checkTimeoutMs ?? session.checkTimeoutMs;
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
  const registryPath = registryPathFor(ctx.planPath);
  const orphans = await killOrphans(registryPath);
  const registry = new ProcessRegistry(registryPath);
  const sandbox = await sandboxedIn(session, io);
  const opened = await io.repository.open(plan, { sandbox, checkTimeoutMs, registry, strictScope: session.strictScope });
  if (!opened.ok) return err({ kind: 'git-failed', doing: "open the plan's integration ref", failure: opened.error });
  const isolation = opened.value;

  const out: FinalizeOutput['results'] = [];
  const seen = new Set<number>();
  const writes = await PlanWrites.of(ctx, 'finalize');
  const run = new StepRun(
    {
      save: writes.save,
      verify: (task, current) => {
        const handed = session.handedOut[String(task)];
        const worktree = worktrees.get(task);
        return isolation.verify(current.plan, task, {
          ...(worktree !== undefined ? { worktree } : {}),
          ...(handed !== undefined ? { base: handed.base } : {}),
        });
      },
      release: async (task) => {
        delete session.handedOut[String(task)];
        const worktree = worktrees.get(task);
        // What Claude Code made for the subagent is removed once its work is captured (or dropped).
        const problem = worktree === undefined ? null : await io.subagents.remove(worktree);
        return problem !== null ? [`could not remove the subagent's worktree ${worktree}: ${problem}`] : [];
      },
    },
    io.now,
  );
  for (const { task: index, output } of results) {
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
    const durationMs = handed === undefined ? 0 : Math.max(0, io.now() - Date.parse(handed.at));
    // The undeclared writes the worker hook refused this attempt's worker: the task wanted those files.
    const denied = await io.handOut.deniedWrites(index, attempt.number);
    state = await post(state, [finalizeEvent(index, output, durationMs, io.now(), denied)], run);
    const ended = run.of('task-finished').find((e) => e.task === index);
    if (ended !== undefined) {
      const result = ended.outcome === 'completed' || ended.outcome === 'awaiting_approval' ? ended.result : undefined;
      const needs = ended.outcome === 'blocked' || ended.outcome === 'failed' ? neededPaths(state.plan.tasks[index]!) : [];
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
    session.engine = state;
    await writeSession(ctx.planPath, session);
  }
  await registry.clear();
  const keptEdits = writes.report(run);
  const limit = roundLimit(state.limiter, session.concurrency, io.now());
  journal(io, session.runId, run);
  if (run.finished !== null) finishRun(state.plan, ctx, session, run.finished, { landed: true, advice: '' }, null);
  session.engine = state;
  await writeSession(ctx.planPath, session);
  await syncHandOut(state.plan, ctx, session);

  const counts = countByStatus(state.plan);
  const skipped = skippedBy(run.events);
  const breaker = breakerReport(run.events, state.plan.tasks.length, counts.pending);
  const retry = retriesOf(out);
  const summary = roundSummary({
    round: state.round + 1,
    settled: out.filter((r) => r.outcome !== 'ignored'),
    retries: retry.length,
    skipped: skipped.length,
    tripped: breaker.trip,
    counts,
    // Verified work counts as completed here: `commit` integrates it next.
    verifiedWaiting: tasksIn(state, new Set(['verified', 'recording', 'queued', 'gating'])).length,
    totalTasks: state.plan.tasks.length,
  });
  const said: Notice[] = [...(orphans.length > 0 ? [{ level: 'warning' as const, message: describeOrphans(orphans) }] : []), ...keptEdits];
  return ok({
    round: state.round + 1,
    results: out,
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

// ---------------------------------------------------------------------------------------------
// commit

export interface CommitStepOutput extends CommitOutcome {
  round: number;
  /** Landing the integration tip on the branch: subagents dispatched next start from it. */
  landing: LandingReport;
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

/**
 * Ask the step function to integrate the verified work: onto the plan's integration ref at once
 * (one commit, trailers naming each task and its result), or, with a gate, held as candidates
 * and integrated only in stacks the gate passes (its process runs in the background; this step
 * waits for it at most `waitMs`). Work awaiting approval is parked on its ref. Then land the
 * integration tip on the branch (the next subagents start from HEAD and must see this work); when
 * landing is blocked nothing of the person's is touched and `landing.problem` says what to do.
 * When the plan is complete and landed: its worktrees and refs are removed and it is archived.
 */
export async function leadCommit(plan: Plan, context: LeadContext, options: { waitMs?: number } = {}): Promise<Result<CommitStepOutput, CommitProblem>> {
  const ctx = withIo(context);
  const { io } = ctx;
  const session = await readSession(ctx.planPath, plan);
  const opened = await io.repository.open(plan, { sandbox: false, checkTimeoutMs: session.checkTimeoutMs });
  if (!opened.ok) return err({ kind: 'git-failed', failure: opened.error, tasks: [], notices: [] });
  const isolation = opened.value;
  // Work the person committed on top of everything integrated becomes the new starting point.
  await isolation.followHead();
  const writes = await PlanWrites.of(ctx, 'commit');
  const driving: GateDriving = { ctx, session, isolation, run: new StepRun(writes, io.now), notices: [] };
  let failure: GitFailure | null = null;
  const hooks = recordingHooks(driving);
  const run = new StepRun(
    {
      save: writes.save,
      ...hooks,
      record: async (state, request) => {
        const recorded = await hooks.record!(state, request);
        if (!recorded.ok && recorded.error.step !== 'integrate') failure = recorded.error;
        return recorded;
      },
    },
    io.now,
  );
  driving.run = run;
  let state = engineOf(session, plan, ctx);
  let baselineFailed: BaselineFailed | undefined;
  if (session.engine !== null && !state.finished) {
    state = await post(state, commitEvents(io.now()), run);
    if (session.gate.config !== null) {
      const gated = await driveGate(state, driving, io.now() + (options.waitMs ?? DEFAULT_GATE_WAIT_MS));
      state = gated.state;
      baselineFailed = gated.baselineFailed;
    }
  }
  const landed = await land(state, isolation, session, ctx, run);
  state = landed.state;
  session.engine = state;
  const failed = failure as GitFailure | null;
  const { archived, notice, kept } = await closeLandedStep(state, landed.landing, run, isolation, session, ctx, writes);
  const integrating = run.notices('integration-failed');
  const notices = [...integrating, ...(notice !== null ? [notice] : [])].map((n): Notice => ({ level: n.level, message: n.message })).concat(kept);
  // A step that stops says all the same: the gate's notices (a run started again) with the rest.
  const stopNotices = [...driving.notices.map((message): Notice => ({ level: 'warning', message })), ...notices];
  const refused = state.stop?.baselineFailure;
  if (refused !== undefined) {
    await writeSession(ctx.planPath, session);
    return err({
      kind: 'baseline-failed',
      command: session.gate.config?.command ?? '',
      // Refused again (it failed at an earlier step): the tip then is not known, the tip now is.
      ref: isolation.ref,
      tip: baselineFailed?.tip ?? isolation.tip,
      output: baselineFailed?.output ?? clipTail(refused.output.trim(), 2000),
      notices: stopNotices,
    });
  }
  if (archived === null) await writeSession(ctx.planPath, session);
  await syncHandOut(state.plan, ctx, session);
  if (failed !== null) return err({ kind: 'git-failed', failure: failed, tasks: [], notices: stopNotices });
  const committed = integratedBy(run.events);
  return ok({
    ...committed,
    round: state.round,
    landing: landed.landing,
    archived,
    counts: countByStatus(state.plan),
    complete: isComplete(state.plan),
    gate: gateReport(session.gate, state, run.events, { notices: driving.notices }),
    ...(notices.length > 0 ? { notices } : {}),
  });
}
