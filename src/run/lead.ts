// The /execute skill's steps as code. In that skill a Claude Code session is the lead and its
// Task subagents are the workers; everything mechanical — setting up, choosing what starts,
// judging and verifying what came back, retries, cascades, the breaker, commits — happens here,
// through the same functions the headless engine uses. The lead calls these steps through
// `plan.ts setup | next | finalize | commit` and reads only their JSON, never plan.json.
//
// Between steps the lead keeps no state of its own: plan.json is the state, plus a small
// session file in `.design/prompts/` (the round counter, the settings chosen at setup, the
// paths that were already dirty when the session started, the run's id and when each running
// task was handed out).
//
// Each step also writes the run's events to the journal (`.design/events.jsonl`), as a headless
// run does, so `status`, `report` and `history` show an in-session run. What the plan tool can
// see it records: when `next` handed a task out and when `finalize` judged it (the attempt's
// duration). What it cannot see it records as unknown, never as zero: a Task subagent's cost,
// tokens and permission denials (Claude Code does not report them to the plan tool; see
// docs/skills.md).

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Git } from '../adapters/git.ts';
import type { GitFailure } from '../core/git-text.ts';
import { journalPathFor, newRunId, openJournal, readJournal } from '../adapters/journal.ts';
import { ProcessRegistry, describeOrphans, killOrphans, registryPathFor } from '../adapters/orphans.ts';
import { checksSandboxed } from '../adapters/sandbox.ts';
import { writeFileAtomic, writePlanAtomic } from '../adapters/plan-store.ts';
import { type RunEventBody, type RunOutcome, type StopReason, type TaskOutcome, skippedEvents } from '../core/events.ts';
import { type Result, type WorkerRun, err, ok } from '../core/failure.ts';
import { holding, outcomeOf, reasonOf } from '../core/engine-step.ts';
import { decide, judgeRun } from '../core/finalize.ts';
import { type BreakerDecision, type Skip, countByStatus, depsOf, longestRemainingPath, readySet, stall } from '../core/graph.ts';
import { computeOverlaps, overlapSets } from '../core/overlap.ts';
import { groupRuns } from '../core/report.ts';
import { type Plan, type TaskStatus, UNKNOWN, attemptsOf, modelOf, statusOf } from '../core/plan.ts';
import { parseStatusLine, workerPrompt } from '../core/prompt.ts';
import { clipMiddle } from '../core/format.ts';
import { pickStarts } from '../core/schedule.ts';
import { type Applied, markStarted } from '../core/transition.ts';
import { archivePlan, promptsDirFor } from './archive.ts';
import { type CommitOutcome, type VerifiedAttempt, recordVerified } from './commit.ts';
import { type AssumptionResult, type SetupProblem, setupRun } from './setup.ts';
import { DEFAULTS } from './settings.ts';
import { type StageContext, settleAttempt, verifyAttempt } from './stages.ts';
import { sharedTree } from './workspace.ts';

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

/** What the lead's session remembers between steps. */
export interface Session {
  round: number;
  concurrency: number;
  maxAttempts: number;
  checkTimeoutMs: number;
  /** Paths dirty before the session started (a person's unrelated edits): never reported as a worker's. */
  baselineDirty: string[];
  /** When the session's run started. */
  startedAt: string;
  /** The run's id in the journal; null until a step starts a run. */
  runId: string | null;
  /** True once a step wrote the run's run-finished event: the next task handed out starts a new run. */
  runFinished: boolean;
  /** When `next` handed each running task out (ISO time, by task index): its attempt's duration runs from here to `finalize`. */
  started: Record<string, string>;
  /**
   * Attempts `finalize` verified and `commit` has not recorded yet. Their tasks stay in progress
   * in plan.json until then (holding their files), as in a headless run.
   */
  verified: VerifiedAttempt[];
}


export const sessionPathFor = (planPath: string): string => join(promptsDirFor(planPath), 'session.json');
export const promptPathFor = (planPath: string, index: number): string => join(promptsDirFor(planPath), `task-${index}.md`);

const defaultSession = (): Session => ({
  round: 0,
  concurrency: DEFAULTS.concurrency,
  maxAttempts: DEFAULTS.maxAttempts,
  checkTimeoutMs: DEFAULTS.checkTimeoutMs,
  baselineDirty: [],
  startedAt: new Date().toISOString(),
  runId: null,
  runFinished: false,
  started: {},
  verified: [],
});

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
      baselineDirty: Array.isArray(data.baselineDirty) ? data.baselineDirty.filter((p): p is string => typeof p === 'string') : [],
      startedAt: typeof data.startedAt === 'string' ? data.startedAt : base.startedAt,
      runId: typeof data.runId === 'string' ? data.runId : null,
      runFinished: data.runFinished === true,
      started:
        data.started && typeof data.started === 'object'
          ? Object.fromEntries(Object.entries(data.started).filter(([, at]) => typeof at === 'string' && Number.isFinite(Date.parse(at))))
          : {},
      verified: Array.isArray(data.verified)
        ? data.verified.filter((v): v is VerifiedAttempt => Number.isInteger((v as VerifiedAttempt | null)?.task) && typeof (v as VerifiedAttempt).result === 'string')
        : [],
    };
  } catch {
    return base;
  }
}

async function writeSession(planPath: string, session: Session): Promise<void> {
  await mkdir(promptsDirFor(planPath), { recursive: true });
  await writeFileAtomic(sessionPathFor(planPath), `${JSON.stringify(session, null, 2)}\n`);
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
// Committing verified work



// ---------------------------------------------------------------------------------------------
// setup

export interface SetupSettings {
  concurrency?: number;
  maxAttempts?: number;
  checkTimeoutMs?: number;
}

export interface SetupOutput {
  goal: string;
  taskCount: number;
  maxDepth: number;
  isResume: boolean;
  /** Tasks whose commit had landed though plan.json had not recorded it: now completed. */
  recovered: number[];
  /** Tasks an earlier session left in progress: their files were restored; they run again. */
  reset: number[];
  /** Completed tasks whose created files are gone: pending again. */
  reverted: number[];
  /** Verified work an earlier session did not commit, committed now. */
  committed: CommitOutcome;
  /** Counts over every assumption checked; only the failed ones are listed (the output stays small however big the plan). */
  assumptions: { total: number; passed: number; failed: AssumptionResult[] };
  blocked: Array<TaskRef & { reason: string }>;
  skipped: SkipRef[];
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
  counts: Record<TaskStatus, number>;
  pending: number;
  nothingToDo: boolean;
  /** Where the plan went when every task was already completed, else null. */
  archived: string | null;
  concurrency: number;
  maxAttempts: number;
}

/**
 * Validate the working tree against the plan and prepare it for a session: resume detection,
 * cleanup of interrupted work, blocking assumptions (all `setupRun`), then commit any verified
 * work left uncommitted, save the plan and start a fresh session file.
 */
export async function leadSetup(plan: Plan, ctx: LeadContext, settings: SetupSettings = {}): Promise<Result<SetupOutput, SetupProblem>> {
  const session: Session = {
    ...defaultSession(),
    concurrency: settings.concurrency ?? DEFAULTS.concurrency,
    maxAttempts: settings.maxAttempts ?? DEFAULTS.maxAttempts,
    checkTimeoutMs: settings.checkTimeoutMs ?? DEFAULTS.checkTimeoutMs,
  };
  // Checks a killed step left behind may still be writing files: stop them before anything else.
  const registryPath = registryPathFor(ctx.planPath);
  const orphans = await killOrphans(registryPath);
  const registry = new ProcessRegistry(registryPath);
  // Work an earlier session verified is recorded, not reset.
  const earlier = await readSession(ctx.planPath);
  const setup = await setupRun(plan, { repo: ctx.repo, git: ctx.git, commit: true, checkTimeoutMs: session.checkTimeoutMs, env: ctx.env, registry, verified: earlier.verified, sandbox: await checksSandboxed(ctx.env) }).finally(() => registry.clear());
  if (!setup.ok) return setup;
  const report = setup.value;
  if (orphans.length > 0) report.notices.unshift({ level: 'warning', message: describeOrphans(orphans) });
  const committed = report.committed;
  await writePlanAtomic(ctx.planPath, plan);

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
  session.baselineDirty = report.baselineDirty;
  startRun(plan, ctx, session, report.resumed);
  journal(ctx.planPath, session.runId!, [
    ...report.assumptions.map((a): RunEventBody => ({ type: 'assumption-checked', task: a.task, claim: a.claim, severity: a.severity, passed: a.passed, output: a.output })),
    ...skippedEvents(plan.tasks, report.skipped),
    ...(committed.commit !== null ? [{ type: 'round-committed', round: 0, tasks: committed.tasks, commit: committed.commit } as const] : []),
  ]);

  const counts = countByStatus(plan);
  if (counts.pending === 0 && !isComplete(plan)) finishRun(plan, ctx, session, { outcome: 'incomplete', reason: 'failures', exitCode: 1, message: 'nothing left to run: the tasks that did not complete failed, were blocked or skipped' });
  await writeSession(ctx.planPath, session);
  const archived = isComplete(plan) ? await archivePlan(ctx.planPath) : null;
  // Archiving removed the session file with the prompts: the finished run needs it no more.
  if (archived !== null) finishRun(plan, ctx, session, { outcome: 'completed', reason: 'all-done', exitCode: 0, message: `every task was already completed; the plan was moved to ${archived}` });
  return ok({
    goal: report.goal,
    taskCount: report.taskCount,
    maxDepth: report.maxDepth,
    isResume: report.resumed,
    recovered: report.recovered,
    reset: report.reset,
    reverted: report.reverted,
    committed,
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
  });
}

// ---------------------------------------------------------------------------------------------
// next

export type NextStall = 'none' | 'running' | 'deadlock' | 'awaiting_approval' | 'done';

export interface NextOutput {
  round: number;
  tasks: Array<TaskRef & { activeForm: string; model: string; attempt: number; promptFile: string }>;
  /** Ready tasks that did not start because they overlap a task that did (or runs); at most WAITING_LISTED of them. */
  waiting: Array<TaskRef & { overlapsWith: number[] }>;
  /** Every ready task that did not start: those overlapping, and those for which no slot was free. */
  queued: number;
  inProgress: number[];
  stall: NextStall;
  /** With `deadlock`: the pending tasks that can never start; with `awaiting_approval`: the gated tasks. */
  stuck: number[];
  counts: Record<TaskStatus, number>;
  complete: boolean;
}

/**
 * The tasks to start now — ready, not overlapping each other or anything in progress, highest
 * priority first (the longest remaining path), at most `concurrency` running in all. Marks them
 * in progress and writes each one's full worker prompt to `.design/prompts/task-<i>.md`.
 */
export async function leadNext(plan: Plan, ctx: LeadContext, options: { concurrency?: number } = {}): Promise<NextOutput> {
  const session = await readSession(ctx.planPath);
  const running = new Set(indicesWith(plan, (s) => s === 'in_progress'));
  const overlaps = overlapSets(computeOverlaps(plan.tasks));
  // Every in-progress task counts as running here, so only gated work is held.
  const gates = [...holding({ plan, attempts: new Map() })];
  const picks = pickStarts({
    tasks: plan.tasks,
    running,
    overlaps,
    concurrency: options.concurrency ?? session.concurrency,
    priority: longestRemainingPath(depsOf(plan.tasks)),
    holding: new Set(gates),
  });

  const tasks: NextOutput['tasks'] = [];
  if (picks.length > 0) {
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
      tasks.push({ index: i, subject: task.subject, activeForm: task.activeForm ?? task.subject, model: modelOf(task), attempt: attemptsOf(task) + 1, promptFile });
      // A Task subagent keeps no log foreman can point to.
      events.push({ type: 'task-started', task: i, subject: task.subject, attempt: attemptsOf(task) + 1, model: modelOf(task), logPath: '' });
      session.started[String(i)] = startedAt;
      markStarted(plan, i);
    }
    await writePlanAtomic(ctx.planPath, plan);
    journal(ctx.planPath, session.runId!, events);
    await writeSession(ctx.planPath, session);
  }

  const busy = new Set([...running, ...picks, ...gates]);
  const queued = readySet(plan.tasks);
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
  return { round: session.round, tasks, waiting, queued: queued.length, inProgress: [...running].sort((a, b) => a - b), stall: stallKind, stuck, counts: countByStatus(plan), complete: isComplete(plan) };
}

// ---------------------------------------------------------------------------------------------
// finalize

export interface WorkerResult {
  task: number;
  /** The worker's final text, or at least its last line (`COMPLETED: …`, `FAILED: …`, `BLOCKED: …`). */
  output: string;
}

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
 * A Task subagent's final text, seen as the outcome of a worker run that reported. Only the
 * outcome: its usage, duration and permission denials are not known here, so none is made up.
 */
const reportedOutcome = (output: string): Pick<WorkerRun, 'outcome'> => ({ outcome: { kind: 'reported', resultText: output, statusLine: parseStatusLine(output) } });

/**
 * Judge, verify and settle the workers' results: the status line; for COMPLETED, the spot-check
 * and the acceptance checks; then the decision (completed, retry, failed, blocked), with the
 * task's files restored when its attempt is undone, the cascade and the breaker. Completed work
 * stays uncommitted until `commit`. Saves the plan after each task, so running it again with
 * the same results only reports the tasks already settled as `ignored`.
 */
export async function leadFinalize(
  plan: Plan,
  ctx: LeadContext,
  results: readonly WorkerResult[],
  options: { maxAttempts?: number; checkTimeoutMs?: number } = {},
): Promise<Result<FinalizeOutput, { task: number; failure: GitFailure }>> {
  const session = await readSession(ctx.planPath);
  const maxAttempts = options.maxAttempts ?? session.maxAttempts;
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
  const stages: StageContext = {
    workspace: sharedTree(ctx.repo, ctx.git),
    git: ctx.git,
    checkTimeoutMs: options.checkTimeoutMs ?? session.checkTimeoutMs,
    env: ctx.env,
    registry,
    // The checks run in the sandbox where it works, as a headless run's default (`--sandbox auto`).
    sandbox: await checksSandboxed(ctx.env),
    baselineDirty: new Set(session.baselineDirty),
  };

  for (const { task: index, output } of results) {
    const task = plan.tasks[index];
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
    const verification = judgement.kind === 'verify' ? await verifyAttempt(stages, plan, index) : undefined;
    // The subagent's permission denials are not known: the failure reason cannot list them.
    const decision = decide({ task, judgement, verification, permissionDenials: [], maxAttempts });
    let applied: Applied = { attemptCounted: true };
    if (decision.kind === 'completed') {
      // Verified: the task stays in progress, holding its files, until `commit` records it.
      session.verified = [...session.verified.filter((v) => v.task !== index), { task: index, result: decision.result }];
    } else {
      const settled = await settleAttempt(stages, plan, index, decision, UNKNOWN);
      // The task stays in progress (its decision is not applied) and this step stops here.
      if (!settled.ok) return err({ task: index, failure: settled.error });
      applied = settled.value;
      await writePlanAtomic(ctx.planPath, plan);
    }

    const outcome = outcomeOf(decision);
    const result = decision.kind === 'completed' || decision.kind === 'awaiting_approval' ? decision.result : undefined;
    const reason = reasonOf(decision);
    const startedAt = session.started[String(index)];
    delete session.started[String(index)];
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
      });
    }
    const warnings = verification && verification.outsideChanges.length > 0 ? [`changed files it did not declare: ${verification.outsideChanges.join(', ')}`] : [];
    // A stray change is reported once, not blamed again on every later task.
    for (const p of verification?.outsideChanges ?? []) if (!session.baselineDirty.includes(p)) session.baselineDirty.push(p);
    out.push({ index, subject: task.subject, outcome, attempt, ...(result !== undefined ? { result: clip(result) } : {}), ...(reason !== undefined ? { reason: clip(reason) } : {}), warnings });
    if (decision.kind === 'retry') retry.push({ index, subject: task.subject, attempt: attempt + 1, reason: clip(decision.failure, 300) });
    if (applied.cascade) {
      skips.push(...applied.cascade.skips);
      events.push(...skippedEvents(plan.tasks, applied.cascade.skips));
      breakers.push(applied.cascade.breaker);
    }
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
  // Verified work counts as completed here: `commit` records it next.
  const summary = `Round ${session.round}: ${done}/${settled.length} tasks completed (${counts.completed + session.verified.length}/${plan.tasks.length} overall)${tail.length > 0 ? `; ${tail.join(', ')}` : ''}`;
  if (session.runId !== null) journal(ctx.planPath, session.runId, events);
  // The skill stops on the breaker: so does the run.
  if (breaker.trip) {
    finishRun(plan, ctx, session, { outcome: 'incomplete', reason: 'breaker', exitCode: 1, message: `circuit breaker: ${breaker.wouldBeSkipped} of ${breaker.pendingCount} pending tasks would be skipped` }, [
      { type: 'breaker', pendingCount: breaker.pendingCount, wouldBeSkipped: breaker.wouldBeSkipped },
    ]);
  }
  await writeSession(ctx.planPath, session);
  const notices = orphans.length > 0 ? { notices: [{ level: 'warning' as const, message: describeOrphans(orphans) }] } : {};
  return ok({ round: session.round, results: out, retry, skipped: skipRefs(plan, skips), breaker, counts, complete: isComplete(plan), summary, ...notices });
}

// ---------------------------------------------------------------------------------------------
// commit

export interface CommitStepOutput extends CommitOutcome {
  round: number;
  /** Where the plan went when this commit finished it (every task completed), else null. */
  archived: string | null;
  counts: Record<TaskStatus, number>;
  complete: boolean;
}

/** Commit the round's verified work; when that completes the plan, archive it (as a headless run does). */
export async function leadCommit(plan: Plan, ctx: LeadContext, options: { round?: number } = {}): Promise<Result<CommitStepOutput, GitFailure>> {
  const session = await readSession(ctx.planPath);
  const round = options.round ?? session.round;
  const result = await recordVerified(ctx.git, plan, session.verified, round);
  // Nothing is left staged; the verified attempts stay verified, for the next `commit`.
  if (!result.ok) return err(result.error.failure);
  const committed = result.value;
  const recorded = new Set(committed.tasks);
  session.verified = session.verified.filter((v) => !recorded.has(v.task) && plan.tasks[v.task] !== undefined && statusOf(plan.tasks[v.task]!) === 'in_progress');
  if (committed.tasks.length > 0) await writePlanAtomic(ctx.planPath, plan);
  await writeSession(ctx.planPath, session);
  if (committed.commit !== null && session.runId !== null) journal(ctx.planPath, session.runId, [{ type: 'round-committed', round, tasks: committed.tasks, commit: committed.commit }]);
  const counts = countByStatus(plan);
  const complete = isComplete(plan);
  const archived = complete ? await archivePlan(ctx.planPath) : null;
  if (archived !== null) {
    // Archiving removed the session file with the prompts: the finished run needs it no more.
    finishRun(plan, ctx, session, { outcome: 'completed', reason: 'all-done', exitCode: 0, message: `all ${plan.tasks.length} tasks completed; the plan was moved to ${archived}` });
  }
  return ok({ ...committed, round, archived, counts, complete });
}
