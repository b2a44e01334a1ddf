// The /execute skill's steps as code. In that skill a Claude Code session is the lead and its
// Task subagents are the workers; everything mechanical — setting up, choosing what starts,
// judging and verifying what came back, retries, cascades, the breaker, commits — happens here,
// through the same functions the headless engine uses. The lead calls these steps through
// `plan.ts setup | next | finalize | commit` and reads only their JSON, never plan.json.
//
// Isolation in a session: the workers are Task subagents, which foreman does not start. The lead
// dispatches each with `isolation: "worktree"`, so Claude Code gives it a worktree of its own
// (`<repo>/.claude/worktrees/agent-<id>`, from the session's HEAD) and names it in the Task
// result; `finalize` captures and verifies the attempt there with the headless engine's stage
// functions, then removes that worktree and its branch. Because a subagent starts from HEAD,
// `commit` integrates the verified work onto the plan's integration ref and lands it on the
// branch at once (continuous landing): a dependant handed out later sees its blockers' work.
//
// Between steps the lead keeps no state of its own: plan.json is the state, plus a small
// session file in `.design/prompts/` (the round counter, the settings chosen at setup, the
// branch landing goes to, the run's id, when and at which commit each running task was handed
// out, and the verified attempts' captured work until `commit` integrates it).
//
// Each step also writes the run's events to the journal (`.design/events.jsonl`), as a headless
// run does, so `status`, `report` and `history` show an in-session run. What the plan tool can
// see it records: when `next` handed a task out and when `finalize` judged it (the attempt's
// duration). What it cannot see it records as unknown, never as zero: a Task subagent's cost,
// tokens and permission denials (Claude Code does not report them to the plan tool; see
// docs/skills.md).

import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { agentWorktree, describeAgentWorktreeProblem, removeAgentWorktree } from '../adapters/agent-worktrees.ts';
import { type Git, runGit } from '../adapters/git.ts';
import { integrationRef, park, parkedWork, readRef } from '../adapters/git-integration.ts';
import { type GateFinished, afterGateRun, culpritDecision, emptyGateQueue, enqueue, flakeNotice, gateFinishedEvent, nextSegment } from '../core/gate.ts';
import { symlinkDirectoriesOf } from '../adapters/worktree-pool.ts';
import { WORKTREE_INCLUDE } from '../adapters/scratch.ts';
import { type GitFailure, describeGitFailure } from '../core/git-text.ts';
import { describeLandingProblem } from '../core/landing.ts';
import { commandHint } from '../core/command-hint.ts';
import { ownLayout } from '../adapters/layout.ts';
import type { CapturedWork } from '../core/work.ts';
import { journalPathFor, newRunId, openJournal, readJournal } from '../adapters/journal.ts';
import { ProcessRegistry, describeOrphans, killOrphans, registryPathFor } from '../adapters/orphans.ts';
import { type SandboxDecision, type SandboxMode, SANDBOX_MODES, decideSandbox, installAdvice } from '../adapters/sandbox.ts';
import { writeFileAtomic, writePlanAtomic } from '../adapters/plan-store.ts';
import { type RunEventBody, type RunOutcome, type StopReason, type TaskOutcome, skippedEvents } from '../core/events.ts';
import { type Result, type WorkerRun, err, ok } from '../core/failure.ts';
import { holding, outcomeOf, reasonOf } from '../core/engine-step.ts';
import { type Verification, decide, judgeRun, verificationWarnings } from '../core/finalize.ts';
import { type BreakerDecision, type Skip, countByStatus, depsOf, longestRemainingPath, readySet, stall } from '../core/graph.ts';
import { computeOverlaps, overlapSets } from '../core/overlap.ts';
import { groupRuns } from '../core/report.ts';
import { type Plan, type TaskStatus, UNKNOWN, attemptsOf, modelOf, statusOf } from '../core/plan.ts';
import { parseStatusLine, workerPrompt } from '../core/prompt.ts';
import { clipMiddle } from '../core/format.ts';
import { pickStarts } from '../core/schedule.ts';
import { type Applied, applyDecision, markStarted } from '../core/transition.ts';
import { archivePlan, promptsDirFor } from './archive.ts';
import { ensurePlanId, roundMessage } from './commit.ts';
import { Isolation } from './isolation.ts';
import { type BaselineState, type SessionGate, type SessionGateConfig, endGateProcess, gateAlive, gateFromJson, gateToJson, launchGate, noSessionGate, readGateState } from './lead-gate.ts';
import { publishHandOut, removeStaleHandOuts, withdrawHandOut } from './lead-hand-out.ts';
import { type AssumptionResult, type SetupProblem, setupRun } from './setup.ts';
import { DEFAULTS } from './settings.ts';
import { type StageContext, verifyAttempt } from './stages.ts';

/** Reasons and outputs handed to the lead are clipped: its context should not grow with logs. */
const CLIP = 1500;
/** How many overlapping ready tasks `next` names; it counts the rest. */
const WAITING_LISTED = 20;

export interface LeadContext {
  repo: string;
  planPath: string;
  git: Git;
  env?: NodeJS.ProcessEnv;
}

/** An attempt `finalize` verified, waiting for `commit`: its task, the result it reported and its captured work. */
export interface VerifiedAttempt {
  task: number;
  result: string;
  work: CapturedWork;
}

/** What became of integrating: the integration commit (null when nothing changed) and the tasks it recorded. */
export interface CommitOutcome {
  commit: string | null;
  tasks: number[];
}

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

/** What the lead's session remembers between steps. */
export interface Session {
  round: number;
  concurrency: number;
  maxAttempts: number;
  checkTimeoutMs: number;
  /** The branch checked out at setup (`refs/heads/…`), where integrated work lands; null on a detached HEAD. */
  branch: string | null;
  /** When the session's run started. */
  startedAt: string;
  /** The run's id in the journal; null until a step starts a run. */
  runId: string | null;
  /** True once a step wrote the run's run-finished event: the next task handed out starts a new run. */
  runFinished: boolean;
  /** When `next` handed each running task out (ISO time, by task index): its attempt's duration runs from here to `finalize`. */
  started: Record<string, string>;
  /** The commit HEAD was at when `next` handed each running task out (by task index): its subagent's worktree starts there. */
  bases: Record<string, string>;
  /**
   * Attempts `finalize` verified and `commit` has not integrated yet. Their tasks stay in progress
   * in plan.json until then (holding their files), as in a headless run.
   */
  verified: VerifiedAttempt[];
  /** The merge queue (`core/gate.ts`) and the gate run in the background; no config: no gate. */
  gate: SessionGate;
  /** The sandbox mode `setup` was given and what it found: checks, the gate and workers' Bash use it. Null in a session file of an earlier version. */
  sandbox: SessionSandbox | null;
}

/** The session's sandbox: the mode asked for and whether commands run in it (or why not). */
export type SessionSandbox = { mode: SandboxMode } & SandboxDecision;

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** A captured work read back from the session file, or null when it is not one. */
function workOf(value: unknown): CapturedWork | null {
  const work = value as { base?: unknown; entries?: unknown } | null;
  if (!work || typeof work !== 'object' || typeof work.base !== 'string' || !OBJECT_ID.test(work.base) || !Array.isArray(work.entries)) return null;
  const entries = work.entries.filter((entry: unknown) => {
    const e = entry as { path?: unknown; mode?: unknown; object?: unknown; deleted?: unknown } | null;
    if (!e || typeof e.path !== 'string') return false;
    return e.deleted === true || (typeof e.mode === 'string' && typeof e.object === 'string' && OBJECT_ID.test(e.object));
  });
  return entries.length === work.entries.length ? { base: work.base, entries: entries as CapturedWork['entries'] } : null;
}


export const sessionPathFor = (planPath: string): string => join(promptsDirFor(planPath), 'session.json');
export const promptPathFor = (planPath: string, index: number): string => join(promptsDirFor(planPath), `task-${index}.md`);

const defaultSession = (): Session => ({
  round: 0,
  concurrency: DEFAULTS.concurrency,
  maxAttempts: DEFAULTS.maxAttempts,
  checkTimeoutMs: DEFAULTS.checkTimeoutMs,
  branch: null,
  startedAt: new Date().toISOString(),
  runId: null,
  runFinished: false,
  started: {},
  bases: {},
  verified: [],
  gate: noSessionGate(),
  sandbox: null,
});

/** A session file's sandbox, or null when it has none (an earlier version's) or it is damaged. */
function sandboxOf(value: unknown): SessionSandbox | null {
  const v = value as { mode?: unknown; sandboxed?: unknown; unavailable?: unknown } | null;
  if (!v || typeof v !== 'object' || !(SANDBOX_MODES as readonly unknown[]).includes(v.mode)) return null;
  if (v.sandboxed === true) return { mode: v.mode as SandboxMode, sandboxed: true };
  return v.sandboxed === false && (v.unavailable === null || typeof v.unavailable === 'string') ? { mode: v.mode as SandboxMode, sandboxed: false, unavailable: v.unavailable } : null;
}

/** The session file, or the defaults when there is none (a lead that skipped `setup`) or it is damaged. */
export async function readSession(planPath: string): Promise<Session> {
  const base = defaultSession();
  try {
    const data = JSON.parse(await readFile(sessionPathFor(planPath), 'utf8')) as Partial<Session>;
    const int = (v: unknown, min: number, fallback: number) => (Number.isInteger(v) && (v as number) >= min ? (v as number) : fallback);
    return {
      round: int(data.round, 0, base.round),
      concurrency: int(data.concurrency, 1, base.concurrency),
      maxAttempts: int(data.maxAttempts, 1, base.maxAttempts),
      checkTimeoutMs: int(data.checkTimeoutMs, 1, base.checkTimeoutMs),
      branch: typeof data.branch === 'string' && data.branch.startsWith('refs/heads/') ? data.branch : null,
      startedAt: typeof data.startedAt === 'string' ? data.startedAt : base.startedAt,
      runId: typeof data.runId === 'string' ? data.runId : null,
      runFinished: data.runFinished === true,
      started:
        data.started && typeof data.started === 'object'
          ? Object.fromEntries(Object.entries(data.started).filter(([, at]) => typeof at === 'string' && Number.isFinite(Date.parse(at))))
          : {},
      bases:
        data.bases && typeof data.bases === 'object'
          ? Object.fromEntries(Object.entries(data.bases).filter(([, commit]) => typeof commit === 'string' && OBJECT_ID.test(commit)))
          : {},
      // An entry whose work cannot be read back is dropped: its task runs again (setup resets it).
      verified: Array.isArray(data.verified)
        ? data.verified.flatMap((v: unknown) => {
            const entry = v as { task?: unknown; result?: unknown; work?: unknown } | null;
            const work = workOf(entry?.work);
            return entry && Number.isInteger(entry.task) && typeof entry.result === 'string' && work !== null ? [{ task: entry.task as number, result: entry.result, work }] : [];
          })
        : [],
      gate: gateFromJson(data.gate),
      sandbox: sandboxOf(data.sandbox),
    };
  } catch {
    return base;
  }
}

async function writeSession(planPath: string, session: Session): Promise<void> {
  await mkdir(promptsDirFor(planPath), { recursive: true });
  await writeFileAtomic(sessionPathFor(planPath), `${JSON.stringify({ ...session, gate: gateToJson(session.gate) }, null, 2)}\n`);
}

// ---------------------------------------------------------------------------------------------
// The run's journal

/** Appends the step's events to the journal, all stamped now. */
function journal(planPath: string, runId: string, events: readonly RunEventBody[]): void {
  if (events.length === 0) return;
  const j = openJournal(planPath);
  const at = new Date().toISOString();
  try {
    for (const e of events) j.append({ ...e, runId, at });
  } finally {
    void j.close();
  }
}

/** Starts a run in the session (a new id, `run-started`); the caller saves the session. */
function startRun(plan: Plan, ctx: LeadContext, session: Session, resumed: boolean): void {
  session.runId = newRunId();
  session.runFinished = false;
  session.startedAt = new Date().toISOString();
  journal(ctx.planPath, session.runId, [
    {
      type: 'run-started',
      goal: plan.goal,
      planPath: ctx.planPath,
      taskCount: plan.tasks.length,
      maxDepth: longestRemainingPath(depsOf(plan.tasks)).reduce((m, n) => Math.max(m, n), 0),
      resumed,
      concurrency: session.concurrency,
      schedule: 'rounds',
      pid: process.pid,
      mode: 'session',
    },
  ]);
}

/**
 * Ends the session's run (`run-finished`), once; `extra` events (a stop's reason) go first.
 * `lastMs`: when the run was last seen working, for a run that ended unnoticed (else now).
 */
function finishRun(
  plan: Plan,
  ctx: LeadContext,
  session: Session,
  end: { outcome: RunOutcome; reason: StopReason; exitCode: number; message: string },
  extra: RunEventBody[] = [],
  lastMs: number = Date.now(),
): void {
  if (session.runId === null || session.runFinished) return;
  session.runFinished = true;
  const durationMs = Math.max(0, lastMs - Date.parse(session.startedAt));
  // The run's workers were Task subagents: what they cost is not known here.
  journal(ctx.planPath, session.runId, [...extra, { type: 'run-finished', ...end, counts: countByStatus(plan), usage: UNKNOWN, durationMs: Number.isFinite(durationMs) ? durationMs : 0 }]);
}


/** `auto`, asked now: for a setup given no decision, and a session file of an earlier version. */
async function autoSandbox(): Promise<SessionSandbox> {
  const decided = await decideSandbox('auto');
  return { mode: 'auto', ...(decided.ok ? decided.value : { sandboxed: false, unavailable: decided.error }) };
}

/** Whether this session's checks, gate runs and workers' Bash commands run in the sandbox. */
const sandboxedIn = async (session: Session): Promise<boolean> => (session.sandbox ?? (await autoSandbox())).sandboxed;

/** What `setup` says, once, when the session goes without the sandbox. */
function sandboxNotices(sandbox: SessionSandbox): Array<{ level: 'info' | 'warning'; message: string }> {
  if (sandbox.sandboxed) return [];
  const what = 'the acceptance and assumption checks and the gate run unsandboxed, and each Bash command of a worker asks you before it runs';
  if (sandbox.unavailable === null) return [{ level: 'warning', message: `--sandbox off: ${what}` }];
  return [{ level: 'warning', message: `running without the sandbox: ${sandbox.unavailable}. So ${what}; to sandbox them, ${installAdvice()}` }];
}

/** Tell the worker hook what this session hands out now; once its run has finished, nothing. */
async function syncHandOut(plan: Plan, ctx: LeadContext, session: Session): Promise<void> {
  const env = ctx.env ?? process.env;
  if (session.runFinished || session.runId === null) return withdrawHandOut(env);
  const sandbox = session.sandbox ?? (await autoSandbox());
  await publishHandOut(plan, {
    repo: ctx.repo,
    planPath: ctx.planPath,
    env,
    started: session.started,
    verified: session.verified.map((v) => v.task),
    sandbox: sandbox.sandboxed ? { available: true, network: plan.context?.checkNetwork ?? [] } : { available: false, reason: sandbox.unavailable ?? '--sandbox off' },
    promptFile: (index) => promptPathFor(ctx.planPath, index),
  });
}

/** Keeps the first line (what failed) and the end (where commands print their error). */
const clip = (text: string, max = CLIP) => clipMiddle(text, max);
const indicesWith = (plan: Plan, want: (s: TaskStatus) => boolean) => plan.tasks.flatMap((t, i) => (want(statusOf(t)) ? [i] : []));
const isComplete = (plan: Plan) => plan.tasks.every((t) => statusOf(t) === 'completed');

export interface TaskRef {
  index: number;
  subject: string;
}
export interface SkipRef extends TaskRef {
  rootCause: number;
}
const skipRefs = (plan: Plan, skips: readonly Skip[]): SkipRef[] => skips.map((s) => ({ index: s.index, subject: plan.tasks[s.index]!.subject, rootCause: s.rootCause }));

// ---------------------------------------------------------------------------------------------
// Isolation, integration and landing, shared by the steps

/** The plan's integration ref and worktree pool, opened as a headless run opens them. */
async function openIsolation(plan: Plan, ctx: LeadContext, options: { sandbox: boolean; checkTimeoutMs: number; registry?: ProcessRegistry }): Promise<Result<Isolation, GitFailure>> {
  return Isolation.open(plan, { repo: ctx.repo, planPath: ctx.planPath, env: ctx.env ?? process.env, sandbox: options.sandbox, setupTimeoutMs: options.checkTimeoutMs, ...(options.registry ? { registry: options.registry } : {}) });
}

/**
 * Integrate the verified attempts whose tasks are still in progress onto the integration ref, in
 * one commit whose trailers carry their results, then mark them completed with that commit.
 * Mutates `plan`; the caller saves it (after the commit, so a crash in between is reconciled
 * from the ref's history at the next setup).
 */
async function integrateVerified(plan: Plan, isolation: Isolation, verified: readonly VerifiedAttempt[], round: number): Promise<Result<CommitOutcome, { tasks: number[]; failure: GitFailure }>> {
  const attempts = verified.filter((v) => plan.tasks[v.task] !== undefined && statusOf(plan.tasks[v.task]!) === 'in_progress');
  if (attempts.length === 0) return ok({ commit: null, tasks: [] });
  const tasks = attempts.map((a) => a.task).sort((a, b) => a - b);
  // The results go into the commit's trailers.
  for (const attempt of attempts) plan.tasks[attempt.task] = { ...plan.tasks[attempt.task]!, result: attempt.result };
  const integrated = await isolation.integrateWork(plan, round, attempts.map((a) => ({ task: a.task, work: a.work })));
  if (!integrated.ok) return err({ tasks, failure: integrated.error });
  for (const attempt of attempts) {
    applyDecision(plan, attempt.task, { kind: 'completed', result: attempt.result }, UNKNOWN);
    if (integrated.value !== null) plan.tasks[attempt.task] = { ...plan.tasks[attempt.task]!, commit: integrated.value };
  }
  return ok({ commit: integrated.value, tasks });
}

/** Land the integration tip on the session's branch as commits; never touches a file the person changed. */
async function landOnBranch(isolation: Isolation, session: Session): Promise<LandingReport> {
  const landed = await isolation.land({ branch: session.branch, mode: 'commit' });
  if (!landed.ok) return { landed: false, files: 0, commit: null, problem: describeLandingProblem(landed.error, isolation.ref, ownLayout()) };
  return { landed: true, files: landed.value.upToDate ? 0 : landed.value.paths.length, commit: landed.value.to, problem: [] };
}

/** When the plan is complete and everything landed: remove its worktrees and refs, and archive it. */
async function finishPlan(plan: Plan, ctx: LeadContext, isolation: Isolation, landing: LandingReport): Promise<string | null> {
  if (!isComplete(plan) || !landing.landed) return null;
  await isolation.removeWorktrees();
  // The gate process's own pool.
  const gatePool = await Isolation.open(plan, { repo: ctx.repo, planPath: ctx.planPath, env: ctx.env ?? process.env, sandbox: false, setupTimeoutMs: 1000, role: 'gate' });
  if (gatePool.ok) await gatePool.value.removeWorktrees();
  await endGateProcess(ctx.planPath);
  await isolation.removeRefs();
  return archivePlan(ctx.planPath);
}

/** A notice for the landing of a step, when there is something to say. */
function landingNotices(landing: LandingReport, branch: string | null): Array<{ level: 'info' | 'warning'; message: string }> {
  if (!landing.landed) return [{ level: 'warning', message: `the integrated work could not land: ${landing.problem.join(' ')}` }];
  if (landing.files === 0) return [];
  return [{ level: 'info', message: `landed ${landing.files} file${landing.files === 1 ? '' : 's'} on ${branch === null ? 'the detached HEAD' : branch.replace(/^refs\/heads\//, '')} (${landing.commit?.slice(0, 12)})` }];
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
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
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
}

/**
 * Validate the working tree against the plan and prepare it for a session: resume detection,
 * interrupted work back to pending, approved work integrated, blocking assumptions (all
 * `setupRun`, as a headless run does), then integrate the verified work an earlier session left,
 * land what is integrated, save the plan and start a fresh session file.
 */
export async function leadSetup(plan: Plan, ctx: LeadContext, settings: SetupSettings = {}): Promise<Result<SetupOutput, SetupProblem>> {
  const session: Session = {
    ...defaultSession(),
    concurrency: settings.concurrency ?? DEFAULTS.concurrency,
    maxAttempts: settings.maxAttempts ?? DEFAULTS.maxAttempts,
    checkTimeoutMs: settings.checkTimeoutMs ?? DEFAULTS.checkTimeoutMs,
    sandbox: settings.sandbox ?? (await autoSandbox()),
  };
  // Checks a killed step left behind may still be writing files: stop them before anything else.
  const registryPath = registryPathFor(ctx.planPath);
  const orphans = await killOrphans(registryPath);
  // A gate process a killed session left running is ended; its candidates are queued again below.
  const endedGate = await endGateProcess(ctx.planPath);
  const registry = new ProcessRegistry(registryPath);
  // Work an earlier session verified is integrated, not reset.
  const earlier = await readSession(ctx.planPath);
  const sandbox = session.sandbox!.sandboxed;
  // Hand-outs an earlier session left for this plan: their workers are gone.
  await removeStaleHandOuts(ctx.planPath, ctx.env ?? process.env);
  const branch = await ctx.git.currentBranch();
  session.branch = branch === null ? null : `refs/heads/${branch}`;
  // The plan's id names its refs and worktrees: written before anything is made under it.
  if (typeof plan.planId !== 'string' || plan.planId === '') {
    ensurePlanId(plan);
    await writePlanAtomic(ctx.planPath, plan);
  }
  const setup = await setupRun(plan, {
    repo: ctx.repo,
    planPath: ctx.planPath,
    git: ctx.git,
    openIsolation: () => openIsolation(plan, ctx, { sandbox, checkTimeoutMs: session.checkTimeoutMs, registry }),
    checkTimeoutMs: session.checkTimeoutMs,
    env: ctx.env,
    registry,
    verified: earlier.verified.map((v) => v.task),
    sandbox,
    // Approved work joins the merge queue when a gate will run (as headless).
    gated: settings.noGate !== true && (settings.gate ?? plan.context?.testCommand ?? '').trim() !== '',
  }).finally(() => registry.clear());
  if (!setup.ok) return setup;
  const report = setup.value;
  const isolation = report.isolation;
  if (orphans.length > 0) report.notices.unshift({ level: 'warning', message: describeOrphans(orphans) });
  report.notices.push(...sandboxNotices(session.sandbox!));
  if (endedGate.length > 0) report.notices.unshift({ level: 'warning', message: `stopped ${endedGate.join(', ')} left running by an earlier session: its candidates are tested again` });
  const gateCommand = settings.noGate === true ? undefined : (settings.gate ?? plan.context?.testCommand);
  const gateConfig: SessionGateConfig | null =
    gateCommand === undefined || gateCommand.trim() === '' ? null : { command: gateCommand, batchSize: settings.gateBatch ?? DEFAULTS.gateBatch, timeoutMs: settings.gateTimeoutMs ?? session.checkTimeoutMs };
  // Said once, in the gate's report (`state: "off"`).
  const noGate =
    gateConfig !== null
      ? []
      : [settings.noGate === true ? 'no gate (--no-gate): verified work integrates as soon as it is verified, untested together' : 'no gate: the plan has no context.testCommand, so verified work integrates untested together (--gate CMD sets one)'];
  if (gateConfig !== null) {
    // Candidates an earlier session held (a gate run it was in included) rejoin the queue first: all tested, none lost.
    session.gate = { ...noSessionGate(), config: gateConfig, queue: enqueue(emptyGateQueue(), report.held.map((h) => h.task)) };
    session.round = earlier.round;
  }
  const integrated = gateConfig !== null ? await holdEarlier(plan, isolation, session, earlier.verified) : await integrateVerified(plan, isolation, earlier.verified, earlier.round);
  if (!integrated.ok) {
    // Nothing was integrated: those tasks run again.
    for (const task of integrated.error.tasks) plan.tasks[task] = { ...plan.tasks[task]!, status: 'pending' };
    report.reset.push(...integrated.error.tasks);
    report.notices.push({ level: 'warning', message: `could not integrate the work an earlier session verified for tasks ${integrated.error.tasks.join(', ')} (${describeGitFailure(integrated.error.failure)}): they run again` });
  }
  const committed = integrated.ok ? integrated.value : { commit: null, tasks: [] };
  await writePlanAtomic(ctx.planPath, plan);
  // What is integrated and not on the branch yet (this session's start, or an earlier one cut short) lands now.
  const landing = await landOnBranch(isolation, session);
  report.notices.push(...landingNotices(landing, session.branch));

  // An earlier session's run that no step finished ended with that session, some time after its last event.
  if (earlier.runId !== null && !earlier.runFinished) {
    const lastSeen = groupRuns((await readJournal(journalPathFor(ctx.planPath))).events).find((run) => run.runId === earlier.runId)?.lastMs;
    finishRun(
      plan,
      ctx,
      earlier,
      { outcome: 'interrupted', reason: 'interrupted', exitCode: 130, message: `the session ended before this run finished (its last step was at ${lastSeen ? new Date(lastSeen).toISOString() : 'an unknown time'}); a new \`plan setup\` started another` },
      [],
      lastSeen ?? Date.now(),
    );
  }

  // A fresh scratch directory: prompts of an earlier session are stale.
  await rm(promptsDirFor(ctx.planPath), { recursive: true, force: true });
  startRun(plan, ctx, session, report.resumed);
  journal(ctx.planPath, session.runId!, [
    ...report.assumptions.map((a): RunEventBody => ({ type: 'assumption-checked', task: a.task, claim: a.claim, severity: a.severity, passed: a.passed, output: a.output })),
    ...skippedEvents(plan.tasks, report.skipped),
    ...(report.approved.commit !== null ? [{ type: 'round-committed', round: 0, tasks: report.approved.tasks, commit: report.approved.commit } as const] : []),
    ...(committed.commit !== null ? [{ type: 'round-committed', round: 0, tasks: committed.tasks, commit: committed.commit } as const] : []),
  ]);

  // The baseline: a gate that already fails on the starting commit would blame every task.
  let gate = gateReport(session, [], { notices: noGate });
  if (gateConfig !== null && (plan.tasks.some((t) => statusOf(t) === 'pending') || session.gate.queue.waiting.length > 0)) {
    session.gate.baseline = 'running';
    const drive = await driveGate(plan, ctx, session, isolation, { round: session.round, deadline: Date.now() + (settings.waitMs ?? DEFAULT_GATE_WAIT_MS) });
    if (drive.ok) gate = drive.value.report;
    if ((session.gate.baseline as BaselineState) === 'failed') {
      finishRun(plan, ctx, session, { outcome: 'incomplete', reason: 'failures', exitCode: 2, message: `the gate \`${gateConfig.command}\` fails on the starting commit` });
    }
  }
  const counts = countByStatus(plan);
  if (counts.pending === 0 && !isComplete(plan) && session.gate.queue.waiting.length === 0 && session.gate.current === null) finishRun(plan, ctx, session, { outcome: 'incomplete', reason: 'failures', exitCode: 1, message: 'nothing left to run: the tasks that did not complete failed, were blocked or skipped' });
  await writeSession(ctx.planPath, session);
  const archived = await finishPlan(plan, ctx, isolation, landing);
  // Archiving removed the session file with the prompts: the finished run needs it no more.
  if (archived !== null) finishRun(plan, ctx, session, { outcome: 'completed', reason: 'all-done', exitCode: 0, message: `every task was already completed; the plan was moved to ${archived}` });
  await syncHandOut(plan, ctx, session);
  return ok({
    goal: report.goal,
    taskCount: report.taskCount,
    maxDepth: report.maxDepth,
    isResume: report.resumed,
    recovered: report.recovered,
    reset: report.reset,
    reverted: report.reverted,
    approved: report.approved,
    integrated: committed,
    landing,
    assumptions: {
      total: report.assumptions.length,
      passed: report.assumptions.filter((a) => a.passed).length,
      failed: report.assumptions.filter((a) => !a.passed).map((a) => ({ ...a, output: clip(a.output.trim(), 500) })),
    },
    blocked: report.blocked.map((i) => ({ index: i, subject: plan.tasks[i]!.subject, reason: clip(plan.tasks[i]!.result ?? '') })),
    skipped: skipRefs(plan, report.skipped),
    notices: report.notices,
    counts,
    pending: counts.pending,
    nothingToDo: counts.pending === 0,
    archived,
    concurrency: session.concurrency,
    maxAttempts: session.maxAttempts,
    gate,
    sandbox: { mode: session.sandbox!.mode, sandboxed: session.sandbox!.sandboxed },
  });
}

/** With a gate, the work an earlier session verified becomes candidates (never integrated untested). */
async function holdEarlier(plan: Plan, isolation: Isolation, session: Session, verified: VerifiedAttempt[]): Promise<Result<CommitOutcome, { tasks: number[]; failure: GitFailure }>> {
  session.verified = verified;
  const held = await holdVerified(plan, isolation, session);
  return held.ok ? ok({ commit: null, tasks: [] }) : held;
}

// ---------------------------------------------------------------------------------------------
// next

export type NextStall = 'none' | 'running' | 'deadlock' | 'awaiting_approval' | 'landing' | 'gate' | 'done';

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
  /** Present when something needs saying: the plan file changed since the last step. */
  notices?: Array<{ level: 'info' | 'warning'; message: string }>;
}

/**
 * The tasks to start now — ready, not overlapping each other or anything in progress, highest
 * priority first (the longest remaining path), at most `concurrency` running in all. Marks them
 * in progress and writes each one's full worker prompt to `.design/prompts/task-<i>.md`.
 */
export async function leadNext(plan: Plan, ctx: LeadContext, options: { concurrency?: number } = {}): Promise<NextOutput> {
  const session = await readSession(ctx.planPath);
  const running = new Set(indicesWith(plan, (s) => s === 'in_progress'));
  // Nothing starts before the gate has passed the starting commit: `plan commit` waits for it.
  if (session.gate.config !== null && (session.gate.baseline === 'running' || session.gate.baseline === 'failed')) {
    return { round: session.round, tasks: [], waiting: [], queued: readySet(plan.tasks).length, inProgress: [...running].sort((a, b) => a - b), stall: 'gate', stuck: [], counts: countByStatus(plan), complete: isComplete(plan) };
  }
  const overlaps = overlapSets(computeOverlaps(plan.tasks));
  // Every in-progress task counts as running here, so only gated work is held.
  const gates = [...holding({ plan, attempts: new Map() })];
  const head = await ctx.git.headCommit();
  // A subagent starts from HEAD: a task whose blockers' work has not landed there must wait.
  const unlanded = head === null ? new Set<number>() : await unlandedReady(plan, ctx.repo, head);
  const ready = readySet(plan.tasks);
  const picks = pickStarts({
    tasks: plan.tasks,
    running,
    overlaps,
    concurrency: options.concurrency ?? session.concurrency,
    priority: longestRemainingPath(depsOf(plan.tasks)),
    holding: new Set(gates),
    admitted: new Set(ready.filter((i) => !unlanded.has(i))),
  });

  const tasks: NextOutput['tasks'] = [];
  // Setup refuses a repository without a commit; without one nothing can be handed out.
  if (picks.length > 0 && head !== null) {
    // A lead that skipped setup, or goes on after its run finished (a stall, the breaker), starts a run here.
    if (session.runId === null || session.runFinished) startRun(plan, ctx, session, true);
    session.round++;
    await mkdir(promptsDirFor(ctx.planPath), { recursive: true });
    const startedAt = new Date().toISOString();
    const events: RunEventBody[] = [];
    for (const i of picks) {
      const task = plan.tasks[i]!;
      const promptFile = promptPathFor(ctx.planPath, i);
      // Built before the task is marked started; the prompt depends on its attempts and its blockers' results only.
      await writeFile(promptFile, workerPrompt(plan, i, { maxAttempts: session.maxAttempts }));
      tasks.push({ index: i, subject: task.subject, activeForm: task.activeForm ?? task.subject, model: modelOf(task), attempt: attemptsOf(task) + 1, promptFile, isolation: 'worktree', base: head! });
      // A Task subagent keeps no log foreman can point to.
      events.push({ type: 'task-started', task: i, subject: task.subject, attempt: attemptsOf(task) + 1, model: modelOf(task), logPath: '' });
      session.started[String(i)] = startedAt;
      session.bases[String(i)] = head!;
      markStarted(plan, i);
    }
    await writePlanAtomic(ctx.planPath, plan);
    journal(ctx.planPath, session.runId!, events);
    await writeSession(ctx.planPath, session);
  }

  const busy = new Set([...running, ...picks, ...gates]);
  const queued = readySet(plan.tasks);
  const heldBack = queued.filter((i) => unlanded.has(i));
  const waiting = queued
    .map((i) => ({ index: i, subject: plan.tasks[i]!.subject, overlapsWith: [...overlaps[i]!].filter((j) => busy.has(j)).sort((a, b) => a - b) }))
    .filter((w) => w.overlapsWith.length > 0)
    .slice(0, WAITING_LISTED);

  let stallKind: NextStall = 'none';
  let stuck: number[] = [];
  if (picks.length === 0) {
    const s = stall(plan.tasks, running);
    if (running.size > 0) stallKind = 'running';
    else if (s.kind === 'deadlock') [stallKind, stuck] = ['deadlock', s.pending];
    else if (s.kind === 'awaiting_approval') [stallKind, stuck] = ['awaiting_approval', s.gates];
    // Ready tasks held back only by gated work that overlaps them.
    else if (queued.length > 0 && gates.length > 0) [stallKind, stuck] = ['awaiting_approval', gates];
    // Ready tasks whose blockers' work waits to land: `plan commit` lands it once nothing blocks.
    else if (heldBack.length > 0) [stallKind, stuck] = ['landing', heldBack];
    else if (queued.length === 0) stallKind = 'done';
  }
  // The skill stops here: the run ends (a later `next` that hands work out starts another).
  if (stallKind === 'deadlock' || stallKind === 'awaiting_approval' || stallKind === 'done') {
    const stalled = stallKind === 'done' ? [] : [{ type: 'stalled', kind: stallKind, tasks: stuck } as const];
    const end =
      stallKind === 'deadlock'
        ? { outcome: 'incomplete' as const, reason: 'deadlock' as const, exitCode: 1, message: `tasks ${stuck.join(', ')} can never start` }
        : stallKind === 'awaiting_approval'
          ? { outcome: 'incomplete' as const, reason: 'awaiting_approval' as const, exitCode: 1, message: `tasks ${stuck.join(', ')} await approval` }
          : isComplete(plan)
            ? { outcome: 'completed' as const, reason: 'all-done' as const, exitCode: 0, message: 'every task is completed' }
            : { outcome: 'incomplete' as const, reason: 'failures' as const, exitCode: 1, message: 'nothing left to run: the tasks that did not complete failed, were blocked or skipped' };
    if (session.runId !== null && !session.runFinished) {
      finishRun(plan, ctx, session, end, [...stalled]);
      await writeSession(ctx.planPath, session);
    }
  }
  await syncHandOut(plan, ctx, session);
  return { round: session.round, tasks, waiting, queued: queued.length, inProgress: [...running].sort((a, b) => a - b), stall: stallKind, stuck, counts: countByStatus(plan), complete: isComplete(plan) };
}

/**
 * Ready tasks a blocker of which has an integration commit that HEAD does not contain (the
 * landing was blocked, or has not happened yet). When HEAD holds the whole integration ref, none.
 */
async function unlandedReady(plan: Plan, repo: string, head: string): Promise<Set<number>> {
  const held = new Set<number>();
  const tip = typeof plan.planId === 'string' ? await readRef(repo, integrationRef(plan.planId)) : null;
  if (tip === null || (await contains(repo, head, tip))) return held;
  const known = new Map<string, boolean>();
  for (const i of readySet(plan.tasks)) {
    for (const blocker of plan.tasks[i]!.blockedBy) {
      const commit = plan.tasks[blocker]?.commit;
      if (!commit) continue;
      if (!known.has(commit)) known.set(commit, await contains(repo, head, commit));
      if (!known.get(commit)) held.add(i);
    }
  }
  return held;
}

/** Whether `commit` is in the history of `head`. */
async function contains(repo: string, head: string, commit: string): Promise<boolean> {
  return (await runGit(['merge-base', '--is-ancestor', commit, head], { cwd: repo })).ok;
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

/** Why `finalize` stopped: a result naming a worktree that is not a subagent's, or git failing. */
export type FinalizeProblem = { kind: 'bad-worktree'; task: number; message: string } | { kind: 'git-failed'; task: number; doing: string; failure: GitFailure };

/** What became of a result: the journal's outcome of its attempt, or `ignored` (not a task in progress). */
export type FinalizeOutcome = TaskOutcome | 'ignored';

export interface FinalizeOutput {
  round: number;
  results: Array<TaskRef & { outcome: FinalizeOutcome; attempt: number; result?: string; reason?: string; warnings: string[] }>;
  /** Tasks that go back to pending for another attempt: the next `next` starts them with a retry prompt. */
  retry: Array<TaskRef & { attempt: number; reason: string }>;
  skipped: SkipRef[];
  breaker: BreakerDecision;
  counts: Record<TaskStatus, number>;
  complete: boolean;
  /** One line for the lead to show: the round's progress. */
  summary: string;
  /** Present when something needs saying beyond the results: processes an earlier, killed step left running. */
  notices?: Array<{ level: 'info' | 'warning'; message: string }>;
}

/**
 * Verify a COMPLETED report in the subagent's worktree, from the commit `next` handed it out at.
 * A subagent that changed nothing has no worktree (Claude Code removed it): its work is empty,
 * so the spot-check fails for every declared file; a task that declares none is checked in a
 * worktree of the integration tip.
 */
async function verifySubagent(stages: StageContext, plan: Plan, index: number, input: { worktree?: string; base?: string; kept: string[]; repo: string }): Promise<Verification> {
  if (input.worktree !== undefined) {
    // The base must be where the worktree started: else (a lost session) its HEAD is.
    const head = await runGit(['rev-parse', '--verify', 'HEAD^{commit}'], { cwd: input.worktree });
    const base = input.base !== undefined && head.ok && (await contains(input.repo, head.value.trim(), input.base)) ? input.base : undefined;
    return verifyAttempt(stages, plan, index, { dir: input.worktree, kept: input.kept, ...(base !== undefined ? { base } : {}) });
  }
  const task = plan.tasks[index]!;
  const { create, modify } = task.metadata.files;
  if (create.length > 0 || modify.length > 0) {
    return { missingCreated: [...create], unchangedModified: [...modify], outsideChanges: [], acceptance: [], work: { base: input.base ?? stages.isolation.tip, entries: [] } };
  }
  const prepared = await stages.isolation.prepare(index);
  if (!prepared.ok) return { missingCreated: [], unchangedModified: [], outsideChanges: [], acceptance: [], captureFailure: prepared.error };
  try {
    return await verifyAttempt(stages, plan, index, { dir: prepared.value });
  } finally {
    stages.isolation.release(index);
  }
}

/**
 * A Task subagent's final text, seen as the outcome of a worker run that reported. Only the
 * outcome: its usage, duration and permission denials are not known here, so none is made up.
 */
const reportedOutcome = (output: string): Pick<WorkerRun, 'outcome'> => ({ outcome: { kind: 'reported', resultText: output, statusLine: parseStatusLine(output) } });

/**
 * What provisioning put in a subagent's worktree, never the worker's change: Claude Code links
 * the `worktree.symlinkDirectories` folders and copies the ignored files `.worktreeinclude` lists.
 */
async function claudeProvisioned(ctx: LeadContext): Promise<string[]> {
  const linked = await symlinkDirectoriesOf(ctx.repo);
  const includeFile = join(ctx.repo, WORKTREE_INCLUDE);
  const included = (await lstat(includeFile).catch(() => null))?.isFile() ? await ctx.git.ignoredFilesListedIn(includeFile) : [];
  return [...new Set([...linked, ...included])].sort();
}

/**
 * Judge, verify and settle the workers' results: the status line; for COMPLETED, the attempt's
 * work captured from the worktree Claude Code made for its subagent, the spot-check and the
 * acceptance checks there (the headless engine's verify stage); then the decision (completed,
 * retry, failed, blocked), the cascade and the breaker. Undeclared changes fail the attempt.
 * Work awaiting approval is parked on its ref; completed work waits in the session for
 * `commit`. Then the subagent's worktree and branch are removed. Nothing is ever restored in
 * the person's tree: the workers never worked there. Saves the plan after each task, so running
 * it again with the same results only reports the tasks already settled as `ignored`.
 */
export async function leadFinalize(
  plan: Plan,
  ctx: LeadContext,
  results: readonly WorkerResult[],
  options: { maxAttempts?: number; checkTimeoutMs?: number } = {},
): Promise<Result<FinalizeOutput, FinalizeProblem>> {
  const session = await readSession(ctx.planPath);
  const maxAttempts = options.maxAttempts ?? session.maxAttempts;
  const checkTimeoutMs = options.checkTimeoutMs ?? session.checkTimeoutMs;
  // Every worktree named must be a subagent's worktree of this repository, before anything changes.
  const worktrees = new Map<number, string>();
  for (const result of results) {
    // A result settled already (finalize run again with the same results) names a worktree removed since: it is ignored below.
    const settled = plan.tasks[result.task] === undefined || statusOf(plan.tasks[result.task]!) !== 'in_progress' || session.verified.some((v) => v.task === result.task);
    if (result.worktree === undefined || settled) continue;
    const found = await agentWorktree(ctx.repo, result.worktree);
    if (!found.ok) return err({ kind: 'bad-worktree', task: result.task, message: describeAgentWorktreeProblem(found.error) });
    worktrees.set(result.task, found.value.dir);
  }
  const out: FinalizeOutput['results'] = [];
  const retry: FinalizeOutput['retry'] = [];
  const skips: Skip[] = [];
  const breakers: BreakerDecision[] = [];
  const seen = new Set<number>();
  // Checks a killed step left behind are ended first (a fresh registry would forget them); this
  // step's acceptance checks are recorded while they run, so the step after a crash ends them.
  const registryPath = registryPathFor(ctx.planPath);
  const orphans = await killOrphans(registryPath);
  const registry = new ProcessRegistry(registryPath);
  const events: RunEventBody[] = [];
  // The checks run in the sandbox where it works, as a headless run's default (`--sandbox auto`).
  const sandbox = await sandboxedIn(session);
  const opened = await openIsolation(plan, ctx, { sandbox, checkTimeoutMs, registry });
  if (!opened.ok) return err({ kind: 'git-failed', task: results[0]?.task ?? -1, doing: "open the plan's integration ref", failure: opened.error });
  const isolation = opened.value;
  const stages: StageContext = { isolation, checkTimeoutMs, env: ctx.env, registry, sandbox };
  const kept = await claudeProvisioned(ctx);

  for (const { task: index, output } of results) {
    const task = plan.tasks[index];
    const worktree = worktrees.get(index);
    if (!task) {
      out.push({ index, subject: '', outcome: 'ignored', attempt: 0, reason: `there is no task ${index} (the plan has ${plan.tasks.length})`, warnings: [] });
      continue;
    }
    const alreadyVerified = session.verified.some((v) => v.task === index);
    if (seen.has(index) || statusOf(task) !== 'in_progress' || alreadyVerified) {
      const why = seen.has(index)
        ? 'it appears twice in the results'
        : alreadyVerified
          ? 'its work is verified already and waits for `plan commit`'
          : `it is ${statusOf(task)}, not in progress (settled already?)`;
      out.push({ index, subject: task.subject, outcome: 'ignored', attempt: attemptsOf(task), reason: `task ${index} was left as it is: ${why}`, warnings: [] });
      continue;
    }
    seen.add(index);
    const attempt = attemptsOf(task) + 1;
    const judgement = judgeRun(reportedOutcome(output));
    const base = session.bases[String(index)];
    const verification = judgement.kind === 'verify' ? await verifySubagent(stages, plan, index, { worktree, base, kept, repo: ctx.repo }) : undefined;
    // The subagent's permission denials are not known: the failure reason cannot list them.
    const decision = decide({ task, judgement, verification, permissionDenials: [], maxAttempts });
    let applied: Applied = { attemptCounted: true };
    if (decision.kind === 'completed') {
      // Verified: the task stays in progress, holding its files, until `commit` integrates it.
      session.verified = [...session.verified.filter((v) => v.task !== index), { task: index, result: decision.result, work: verification?.work ?? { base: base ?? (await ctx.git.headCommit())!, entries: [] } }];
    } else {
      if (decision.kind === 'awaiting_approval') {
        // Gated work waits on a ref of its own, holding no worktree; approving integrates it.
        const work = verification?.work ?? { base: base ?? (await ctx.git.headCommit())!, entries: [] };
        const { message } = roundMessage(plan, session.round, [index]);
        const parked = await park(isolation.repo, isolation.planId, index, work, message);
        // The task stays in progress (its decision is not applied) and this step stops here.
        if (!parked.ok) return err({ kind: 'git-failed', task: index, doing: `park the work of task ${index} for approval`, failure: parked.error });
      }
      // Nothing to restore: the attempt's work never left its worktree.
      applied = applyDecision(plan, index, decision, UNKNOWN);
      await writePlanAtomic(ctx.planPath, plan);
    }
    // What Claude Code made for the subagent is removed once its work is captured (or dropped).
    const removed = worktree === undefined ? null : await removeAgentWorktree(ctx.repo, worktree);
    const cleanup = removed !== null && !removed.ok ? [`could not remove the subagent's worktree ${worktree}: ${describeAgentWorktreeProblem(removed.error)}`] : [];
    const warnings = [...verificationWarnings(verification), ...cleanup];

    const outcome = outcomeOf(decision);
    const result = decision.kind === 'completed' || decision.kind === 'awaiting_approval' ? decision.result : undefined;
    const reason = reasonOf(decision);
    const startedAt = session.started[String(index)];
    delete session.started[String(index)];
    delete session.bases[String(index)];
    // Without the time `next` handed it out (a lost session file) the attempt has no duration to record.
    if (session.runId !== null && startedAt !== undefined) {
      events.push({
        type: 'task-finished',
        task: index,
        subject: task.subject,
        attempt,
        outcome,
        ...(reason !== undefined ? { reason } : {}),
        ...(result !== undefined ? { result } : {}),
        durationMs: Math.max(0, Date.now() - Date.parse(startedAt)),
        usage: UNKNOWN,
        logPath: '',
        permissionDenials: UNKNOWN,
        ...(warnings.length > 0 ? { warnings } : {}),
      });
    }
    out.push({ index, subject: task.subject, outcome, attempt, ...(result !== undefined ? { result: clip(result) } : {}), ...(reason !== undefined ? { reason: clip(reason) } : {}), warnings });
    if (decision.kind === 'retry') retry.push({ index, subject: task.subject, attempt: attempt + 1, reason: clip(decision.failure, 300) });
    if (applied.cascade) {
      skips.push(...applied.cascade.skips);
      events.push(...skippedEvents(plan.tasks, applied.cascade.skips));
      breakers.push(applied.cascade.breaker);
    }
    // Saved after each task, with the plan: a crash later in the step loses nothing verified.
    await writeSession(ctx.planPath, session);
  }

  await registry.clear();

  const counts = countByStatus(plan);
  const breaker = breakers.find((b) => b.trip) ?? { trip: false, totalTasks: plan.tasks.length, pendingCount: counts.pending, wouldBeSkipped: skips.length };
  const settled = out.filter((r) => r.outcome !== 'ignored');
  const done = settled.filter((r) => r.outcome === 'completed' || r.outcome === 'awaiting_approval').length;
  const tail = [
    retry.length > 0 ? `${retry.length} to retry` : '',
    skips.length > 0 ? `${skips.length} skipped` : '',
    breaker.trip ? 'circuit breaker tripped' : '',
  ].filter(Boolean);
  // Verified work counts as completed here: `commit` integrates it next.
  const summary = `Round ${session.round}: ${done}/${settled.length} tasks completed (${counts.completed + session.verified.length}/${plan.tasks.length} overall)${tail.length > 0 ? `; ${tail.join(', ')}` : ''}`;
  if (session.runId !== null) journal(ctx.planPath, session.runId, events);
  // The skill stops on the breaker: so does the run.
  if (breaker.trip) {
    finishRun(plan, ctx, session, { outcome: 'incomplete', reason: 'breaker', exitCode: 1, message: `circuit breaker: ${breaker.wouldBeSkipped} of ${breaker.pendingCount} pending tasks would be skipped` }, [
      { type: 'breaker', pendingCount: breaker.pendingCount, wouldBeSkipped: breaker.wouldBeSkipped },
    ]);
  }
  await writeSession(ctx.planPath, session);
  await syncHandOut(plan, ctx, session);
  const notices = orphans.length > 0 ? { notices: [{ level: 'warning' as const, message: describeOrphans(orphans) }] } : {};
  return ok({ round: session.round, results: out, retry, skipped: skipRefs(plan, skips), breaker, counts, complete: isComplete(plan), summary, ...notices });
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
  /** Present when something needs saying: the plan file changed since the last step. */
  notices?: Array<{ level: 'info' | 'warning'; message: string }>;
}

export type CommitProblem =
  | { kind: 'git-failed'; failure: GitFailure; tasks: number[]; retried: boolean }
  /** The gate fails on the starting commit: it would blame every task. */
  | { kind: 'baseline-failed'; command: string; tip: string; output: string };

/**
 * Integrate the round's verified work onto the plan's integration ref (one commit, trailers
 * naming each task and its result), mark those tasks completed with it, and land the
 * integration tip on the branch (continuous landing: the next subagents start from HEAD and must
 * see this work). When landing is blocked (a change of the person's on a file to update, the
 * branch switched or moved), nothing of theirs is touched and `landing.problem` says what to do;
 * running `commit` again lands it. When the plan is complete and landed: its worktrees and refs
 * are removed and it is archived (as a headless run does).
 */
export async function leadCommit(plan: Plan, ctx: LeadContext, options: { round?: number; waitMs?: number } = {}): Promise<Result<CommitStepOutput, CommitProblem>> {
  const session = await readSession(ctx.planPath);
  const round = options.round ?? session.round;
  const opened = await openIsolation(plan, ctx, { sandbox: false, checkTimeoutMs: session.checkTimeoutMs });
  if (!opened.ok) return err({ kind: 'git-failed', failure: opened.error, tasks: [], retried: false });
  const isolation = opened.value;
  // Work the person committed on top of everything integrated becomes the new starting point.
  await isolation.followHead();
  let committed: CommitOutcome;
  let gate: GateReport;
  if (session.gate.config !== null) {
    // The merge queue: verified work is held as candidates; only stacks the gate passed integrate.
    const held = await holdVerified(plan, isolation, session);
    if (!held.ok) return err({ kind: 'git-failed', failure: held.error.failure, tasks: held.error.tasks, retried: false });
    const drive = await driveGate(plan, ctx, session, isolation, { round, deadline: Date.now() + (options.waitMs ?? DEFAULT_GATE_WAIT_MS) });
    if (!drive.ok) return drive;
    committed = drive.value.committed;
    gate = drive.value.report;
    if (gate.baseline === 'failed') return err({ kind: 'baseline-failed', command: session.gate.config.command, tip: isolation.tip, output: gate.output ?? '' });
  } else {
    gate = gateReport(session, []);
    const integrated = await integrateVerified(plan, isolation, session.verified, round);
    if (!integrated.ok) {
      // The integration tip changed the same paths since the attempts started: they can never
      // integrate; their tasks run again (no attempt counted). Any other failure keeps them verified.
      const conflict = integrated.error.failure.step === 'integrate';
      if (conflict) {
        for (const task of integrated.error.tasks) plan.tasks[task] = { ...plan.tasks[task]!, status: 'pending' };
        session.verified = session.verified.filter((v) => !integrated.error.tasks.includes(v.task));
        await writePlanAtomic(ctx.planPath, plan);
        await writeSession(ctx.planPath, session);
      }
      return err({ kind: 'git-failed', failure: integrated.error.failure, tasks: integrated.error.tasks, retried: conflict });
    }
    committed = integrated.value;
    const recorded = new Set(committed.tasks);
    session.verified = session.verified.filter((v) => !recorded.has(v.task) && plan.tasks[v.task] !== undefined && statusOf(plan.tasks[v.task]!) === 'in_progress');
    if (committed.tasks.length > 0) await writePlanAtomic(ctx.planPath, plan);
    await writeSession(ctx.planPath, session);
    if (committed.commit !== null && session.runId !== null) journal(ctx.planPath, session.runId, [{ type: 'round-committed', round, tasks: committed.tasks, commit: committed.commit }]);
  }
  const landing = await landOnBranch(isolation, session);
  const counts = countByStatus(plan);
  const complete = isComplete(plan);
  const archived = await finishPlan(plan, ctx, isolation, landing);
  if (archived !== null) {
    // Archiving removed the session file with the prompts: the finished run needs it no more.
    finishRun(plan, ctx, session, { outcome: 'completed', reason: 'all-done', exitCode: 0, message: `all ${plan.tasks.length} tasks completed; the plan was moved to ${archived}` });
    await withdrawHandOut(ctx.env ?? process.env);
  }
  return ok({ ...committed, round, landing, archived, counts, complete, gate });
}

// ---------------------------------------------------------------------------------------------
// The merge queue (with a gate)

/** How long a step waits for a gate run before it returns `running` (`--wait`): well inside the Bash tool's two minutes. */
export const DEFAULT_GATE_WAIT_MS = 90_000;

/** One gate run as a step reports it: its journal record without the output. */
export type GateRunReport = Omit<GateFinished, 'type' | 'output'>;

/** The merge queue as a step reports it. */
export interface GateReport {
  /** `running`: a gate run goes on in the background; call `plan commit` again for its result. */
  state: 'off' | 'idle' | 'running';
  command: string | null;
  /** The gate on the starting commit: `running` until it has passed; `failed` refuses the run. */
  baseline: BaselineState;
  /** The candidates under test now, stacked in order on the integration tip (empty for the baseline). */
  testing: number[];
  /** Candidates waiting for a gate run after it. */
  waiting: number[];
  /** Gate runs this step saw finish. */
  runs: GateRunReport[];
  /** Culprits found by this step: back to pending with the gate's output (retry), or failed. */
  blamed: Array<TaskRef & { outcome: 'retry' | 'failed'; reason: string }>;
  /** Candidates whose gate failure did not repeat: a flaky test, which blamed nobody. */
  flakes: number[];
  /** What the gate said when the baseline failed. */
  output?: string;
  notices: string[];
}

function gateReport(session: Session, runs: GateRunReport[], extra: Partial<GateReport> = {}): GateReport {
  const gate = session.gate;
  const testing = gate.current?.tasks ?? [];
  const queued = [...gate.queue.segments.flat(), ...gate.queue.waiting].filter((t) => !testing.includes(t));
  return {
    state: gate.config === null ? 'off' : gate.current !== null ? 'running' : 'idle',
    command: gate.config?.command ?? null,
    baseline: gate.baseline,
    testing: [...testing],
    waiting: [...new Set(queued)],
    runs,
    blamed: [],
    flakes: [],
    notices: [],
    ...extra,
  };
}

/**
 * The verified attempts whose tasks are still in progress become candidates: held on their refs
 * (`refs/foreman-candidate/<planId>/<task>`) with their results in the plan, and queued. Their
 * tasks stay in progress until the gate has passed them.
 */
async function holdVerified(plan: Plan, isolation: Isolation, session: Session): Promise<Result<number[], { tasks: number[]; failure: GitFailure }>> {
  const attempts = session.verified.filter((v) => plan.tasks[v.task] !== undefined && statusOf(plan.tasks[v.task]!) === 'in_progress');
  if (attempts.length === 0) {
    session.verified = [];
    return ok([]);
  }
  for (const attempt of attempts) plan.tasks[attempt.task] = { ...plan.tasks[attempt.task]!, result: attempt.result };
  const held = await isolation.record(plan, { tasks: attempts.map((a) => a.task), round: session.round, integrate: [], park: [], hold: attempts.map((a) => ({ task: a.task, work: a.work })), drop: [] });
  if (!held.ok) return err({ tasks: attempts.map((a) => a.task), failure: held.error });
  session.gate.queue = enqueue(session.gate.queue, attempts.map((a) => a.task));
  session.verified = [];
  return ok(attempts.map((a) => a.task));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Drive the merge queue until `deadline`: collect the background gate run's result and apply it,
 * start the next run (the baseline first), and wait for it. Returns what was integrated and the
 * queue's report; a run still going at the deadline goes on in the background.
 */
async function driveGate(
  plan: Plan,
  ctx: LeadContext,
  session: Session,
  isolation: Isolation,
  options: { round: number; deadline: number },
): Promise<Result<{ committed: CommitOutcome; report: GateReport }, CommitProblem>> {
  const config = session.gate.config!;
  const runs: GateRunReport[] = [];
  const extra: Pick<GateReport, 'blamed' | 'flakes' | 'notices'> & { output?: string } = { blamed: [], flakes: [], notices: [] };
  const committed: CommitOutcome = { commit: null, tasks: [] };
  const events: RunEventBody[] = [];
  const flush = async () => {
    await writePlanAtomic(ctx.planPath, plan);
    await writeSession(ctx.planPath, session);
    if (session.runId !== null) journal(ctx.planPath, session.runId, events.splice(0));
  };
  const sandbox = await sandboxedIn(session);
  const launch = { repo: isolation.repo, planPath: ctx.planPath, env: ctx.env ?? process.env, config, sandbox };
  forgetGone(plan, session);
  for (;;) {
    const current = session.gate.current;
    if (current !== null) {
      const state = await readGateState(ctx.planPath);
      if (state !== null && state.id === current.id && state.state === 'finished') {
        session.gate.current = null;
        if (current.tasks.length === 0) {
          // The baseline.
          session.gate.baseline = state.passed ? 'passed' : 'failed';
          const finished = gateFinishedEvent([], state, null);
          events.push(finished);
          const { type: _type, output: _output, ...run } = finished;
          runs.push(run);
          if (!state.passed) extra.output = clipMiddle(state.output.trim(), 2000);
          await flush();
          if (!state.passed) break;
          continue;
        }
        if (state.stale || isolation.tip !== current.tip) {
          // Nothing was tested on the tip as it is now: the same segment runs again.
          extra.notices.push(`the gate run on tasks ${current.tasks.join(', ')} is run again: ${state.stale ? state.output : 'the integration tip moved while it ran'}`);
          await flush();
          continue;
        }
        const applied = await applyGateRun(plan, session, isolation, current.tasks, state, { round: options.round, events, report: extra, committed });
        runs.push(applied);
        await flush();
        continue;
      }
      if (state !== null && state.id === current.id && state.state === 'running' && gateAlive(state)) {
        const left = options.deadline - Date.now();
        if (left <= 0) break;
        await pause(Math.min(200, left));
        continue;
      }
      // The process is gone without a result (killed): its segment is tested again.
      extra.notices.push(`the gate process for ${current.tasks.length === 0 ? 'the starting commit' : `tasks ${current.tasks.join(', ')}`} ended without a result: it runs again`);
      session.gate.current = null;
      const started = await startGateRun(launch, session, isolation, current.tasks, events);
      await flush();
      if (!started.ok) {
        extra.notices.push(`could not start the gate process (\`plan gate --serve\`): ${started.error}; run \`${commandHint('plan', 'commit', ownLayout())}\` again`);
        break;
      }
      continue;
    }
    if (session.gate.baseline === 'failed') break;
    let tasks: number[];
    if (session.gate.baseline === 'running') tasks = [];
    else {
      const next = nextSegment(session.gate.queue, config.batchSize);
      if (next === null) break;
      session.gate.queue = next.queue;
      tasks = [...next.segment];
    }
    const started = await startGateRun(launch, session, isolation, tasks, events);
    await flush();
    if (!started.ok) {
      extra.notices.push(`could not start the gate process (\`plan gate --serve\`): ${started.error}; run \`${commandHint('plan', 'commit', ownLayout())}\` again`);
      break;
    }
  }
  await flush();
  return ok({ committed, report: gateReport(session, runs, extra) });
}

/** Candidates whose task is no longer in progress (reset, skipped by hand) leave the queue; a batch they were in is tested anew. */
function forgetGone(plan: Plan, session: Session): void {
  const queue = session.gate.queue;
  const inProgress = (task: number) => plan.tasks[task] !== undefined && statusOf(plan.tasks[task]!) === 'in_progress';
  const all = [...queue.segments.flat(), ...queue.waiting];
  if (all.every(inProgress)) return;
  const underTest = session.gate.current?.tasks ?? [];
  if (underTest.some((t) => !inProgress(t))) session.gate.current = null;
  session.gate.queue = enqueue(emptyGateQueue(), [...new Set(all)].filter(inProgress));
}

/** Start the gate process on `tasks` stacked on the integration tip (none: the baseline). */
async function startGateRun(launch: Parameters<typeof launchGate>[0], session: Session, isolation: Isolation, tasks: number[], events: RunEventBody[]): Promise<Result<void, string>> {
  const run = { id: `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`, tasks, tip: isolation.tip, startedAt: new Date().toISOString() };
  session.gate.current = run;
  // Saved before it starts: a step killed now finds the run in the session and starts it again.
  await writeSession(launch.planPath, session);
  if (tasks.length > 0) events.push({ type: 'gate-started', tasks: [...tasks], waiting: session.gate.queue.waiting.length });
  const started = await launchGate(launch, run);
  if (!started.ok) session.gate.current = null;
  return started;
}

/** A finished gate run's verdict, applied: integrate what passed, blame a culprit, report a flake. */
async function applyGateRun(
  plan: Plan,
  session: Session,
  isolation: Isolation,
  tasks: number[],
  state: { passed: boolean; output: string; durationMs: number },
  into: { round: number; events: RunEventBody[]; report: Pick<GateReport, 'blamed' | 'flakes' | 'notices'>; committed: CommitOutcome },
): Promise<GateRunReport> {
  const after = afterGateRun(session.gate.queue, state.passed);
  session.gate.queue = after.queue;
  const { integrate, culprit, flake } = after.verdict;
  into.events.push(gateFinishedEvent(tasks, state, after.verdict));
  if (flake) {
    into.report.flakes.push(tasks[0]!);
    into.events.push(flakeNotice(tasks[0]!));
  }
  if (culprit !== null) {
    const task = plan.tasks[culprit]!;
    const decision = culpritDecision(state.output, attemptsOf(task), session.maxAttempts);
    const applied = applyDecision(plan, culprit, decision, UNKNOWN);
    into.report.blamed.push({ index: culprit, subject: task.subject, outcome: decision.kind, reason: clip(decision.failure, 600) });
    if (applied.cascade) into.events.push(...skippedEvents(plan.tasks, applied.cascade.skips));
  }
  const items: Array<{ task: number; work: CapturedWork }> = [];
  for (const t of integrate) {
    const work = await parkedWork(isolation.repo, isolation.planId, t, 'candidate');
    if (work !== null) items.push({ task: t, work });
  }
  const recorded = await isolation.record(plan, { tasks: items.map((i) => i.task), round: into.round, integrate: items, park: [], hold: [], drop: culprit !== null ? [culprit] : [] });
  if (!recorded.ok) {
    // The stack passed but could not be committed: the candidates stay held and are tested again.
    into.report.notices.push(`could not integrate tasks ${integrate.join(', ')} after the gate passed them: ${describeGitFailure(recorded.error)}`);
    session.gate.queue = enqueue(session.gate.queue, integrate);
  } else if (items.length > 0) {
    for (const item of items) {
      applyDecision(plan, item.task, { kind: 'completed', result: plan.tasks[item.task]!.result ?? '' }, UNKNOWN);
      if (recorded.value !== null) plan.tasks[item.task] = { ...plan.tasks[item.task]!, commit: recorded.value };
    }
    into.committed.commit = recorded.value ?? into.committed.commit;
    into.committed.tasks.push(...items.map((i) => i.task));
    into.events.push({ type: 'round-committed', round: into.round, tasks: items.map((i) => i.task), commit: recorded.value });
  }
  return { tasks: [...tasks], passed: state.passed, durationMs: state.durationMs, integrated: [...integrate], culprit, flake };
}
