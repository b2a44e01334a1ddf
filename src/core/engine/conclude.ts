// What a finished attempt becomes: its worker's run judged (its work verified next, or decided
// now), its verification decided, and the decision applied: verified work waits for the lane; a
// retry, a failure, a block or a requeue goes into the plan; a limit's refusal pauses it. A
// paused attempt the run cannot resume ends here too.

import { assertNever } from '../result.ts';
import {
  applyDecision,
  decideAttempt,
  type Decided,
  type Decision,
  describeWorkerFailure,
  judgeRun,
  recordUndeclared,
  type Verification,
  verificationWarnings,
  type WorkerRun,
} from '../attempt/index.ts';
import { served } from '../limits/index.ts';
import { addUsage, emptyUsage, taskAt } from '../plan/index.ts';
import { type Attempt, PAUSED, type RunningAttempt, tasksIn, type VerifyingAttempt } from './attempt.ts';
import { attemptIn, emit, kept, runFigure, runOf, type StepDraft, stopWith } from './draft.ts';
import { gotThrough, limiterSettings, mayPause, pause, refusalOf, refuse } from './limits.ts';
import { type Concluded, concludeRecheck, undeclaredOf, widened } from './set-aside.ts';
import { applyReviewed } from './review.ts';
import { endLost, hostServed } from './hosts.ts';
import { endCancelled } from './speculation.ts';
import { abortWorkers, checkBudget, reportCascade } from './stop.ts';
import { finishedEvent, outcomeOf, reasonOf } from './task-finished.ts';

/**
 * The decision for a finished attempt, after the run-wide rule: after an interrupt nothing but
 * verified work stands. A limit never becomes a failure, however often it comes.
 */
export function settleRules(decided: Decided, context: { interrupted: boolean }): Decided {
  if (context.interrupted && !decided.passed) return { passed: false, decision: { kind: 'interrupted' } };
  return decided;
}

export function workerFinished(building: StepDraft, task: number, run: WorkerRun): void {
  const attempt = attemptIn(building, task, 'running');
  const draft = building.draft;
  draft.usage = addUsage(draft.usage, runFigure(run));
  draft.timing = { ...draft.timing, workers: draft.timing.workers + 1, workerMs: draft.timing.workerMs + run.durationMs };
  // A resumed worker went on with the conversation of the one before it: one attempt, their runs together.
  const whole = attempt.run !== undefined ? joinRuns(attempt.run, run) : run;
  const current: RunningAttempt = whole.progressed === true ? { ...attempt, progressed: true } : attempt;
  if (attempt.cancelled !== undefined) {
    endCancelled(building, current, whole, true, attempt.cancelled);
    return;
  }
  if (attempt.lost !== undefined) {
    endLost(building, { ...current, run: whole }, attempt.lost);
    return;
  }
  hostServed(building, attempt);
  const judgement = judgeRun(run);
  if (judgement.kind === 'verify' && !draft.aborted) {
    building.attempts.set(task, { ...kept(attempt), stage: 'verifying', run: whole });
    building.effects.push({ type: 'verify', task });
    return;
  }
  // A COMPLETED report after the workers were told to stop is not verified: the run is ending.
  const decided: Decided = judgement.kind === 'verify' ? { passed: false, decision: { kind: 'interrupted' } } : decideFor(building, task, whole);
  conclude(building, current, whole, decided, undeclaredOf(current, whole));
}

/** A paused attempt's worker runs, then its resumed worker's: what they cost and did together, and how the last ended. */
function joinRuns(before: WorkerRun, after: WorkerRun): WorkerRun {
  const unmeasured = before.unmeasured === true || after.unmeasured === true;
  const sessionId = after.sessionId ?? before.sessionId;
  return {
    ...after,
    ...(unmeasured ? { unmeasured: true as const } : {}),
    usage: addUsage(before.usage, after.usage),
    durationMs: before.durationMs + after.durationMs,
    permissionDenials: [...before.permissionDenials, ...after.permissionDenials],
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(before.progressed === true || after.progressed === true ? { progressed: true as const } : {}),
  };
}

function decideFor(building: StepDraft, task: number, run: WorkerRun, verification?: Verification): Decided {
  const draft = building.draft;
  return decideAttempt({
    task: taskAt(draft.plan.tasks, task),
    judgement: judgeRun(run),
    verification,
    permissionDenials: run.permissionDenials,
    maxAttempts: draft.config.maxAttempts,
    strictScope: draft.config.strictScope ?? false,
  });
}

export function verified(building: StepDraft, task: number, verification: Verification): void {
  const attempt = attemptIn(building, task, 'verifying');
  if (attempt.cancelled !== undefined) {
    endCancelled(building, attempt, attempt.run, true, attempt.cancelled);
    return;
  }
  if (attempt.lost !== undefined) {
    endLost(building, attempt, attempt.lost);
    return;
  }
  const run = attempt.run;
  // An interrupt during the acceptance checks makes their verdict meaningless.
  const decided: Decided = building.draft.aborted ? { passed: false, decision: { kind: 'interrupted' } } : decideFor(building, task, run, verification);
  const warnings = verificationWarnings(verification, decided.decision, judgeRun(run));
  conclude(building, attempt, run, decided, { warnings, ...undeclaredOf(attempt, run, verification) });
}

/** The worktree could not be made ready: the task goes back to pending, no attempt counted, and the run stops. */
export function workspaceFailed(building: StepDraft, task: number, reason: string): void {
  const attempt = attemptIn(building, task, 'running');
  // Stopped while its worktree was being made ready: the speculation was cancelled, nothing failed.
  if (attempt.cancelled !== undefined) {
    endCancelled(building, attempt, runOf(attempt), true, attempt.cancelled);
    return;
  }
  if (attempt.lost !== undefined) {
    endLost(building, attempt, attempt.lost);
    return;
  }
  building.attempts.delete(task);
  building.effects.push({ type: 'release-workspace', task });
  if (attempt.recheck === true) {
    // The work set aside could not be checked out (unreadable, or its worktree's setup failed): a
    // worker does the task instead, as in a session; a setup command that fails stops it there.
    const why = `the work its last attempt set aside could not be re-checked (${reason}); a worker does the task next, with no attempt counted`;
    applyDecision(building.draft.plan, task, { kind: 'interrupted', reason: why }, emptyUsage());
    building.effects.push({ type: 'save' });
    emit(building, { type: 'notice', level: 'warning', message: `task ${task}: ${why}` });
    return;
  }
  applyDecision(building.draft.plan, task, { kind: 'interrupted' }, emptyUsage());
  building.effects.push({ type: 'save' });
  emit(building, { type: 'notice', level: 'warning', message: `task ${task} could not start: ${reason}` });
  stopWith(building, {
    reason: 'setup-failed',
    message: `${reason}. No attempt was spent; fix the setup command (context.setupCommand in the plan) and run the same command again`,
  });
}

/**
 * What happens to an attempt once it is decided: its workers did `run`; with a decision that
 * passed, it is verified and holds the work that passed.
 */
function conclude(building: StepDraft, attempt: RunningAttempt | VerifyingAttempt, run: WorkerRun, decidedFirst: Decided, concluded: Concluded = {}): void {
  const warnings = concluded.warnings ?? [];
  if (run.recheck === true) {
    concludeRecheck(building, attempt, run, decidedFirst, warnings);
    return;
  }
  const draft = building.draft;
  const task = attempt.task;
  const decided = settleRules(decidedFirst, { interrupted: draft.stop?.reason === 'interrupted' });
  // A worker a limit ended (not one the limiter stopped: that refusal was heard already) was refused once more.
  const refusal = decidedFirst.decision.kind === 'requeued' ? refusalOf(run) : null;
  if (refusal !== null && !(attempt.stage === 'running' && attempt.stopping === true)) refuse(building, task, refusal);
  // In a session the lead hands out rounds: a subagent that reached the API and reported got through.
  if (draft.config.driver === 'session' && refusal === null && gotThrough(run))
    draft.limiter = served(draft.limiter, draft.now, limiterSettings(draft.config), true);
  const sessionId = run.sessionId;
  if (decided.decision.kind === 'requeued' && refusal !== null && sessionId !== undefined && attempt.stage === 'running' && mayPause(building, attempt)) {
    pause(building, attempt, run, sessionId, decided.decision.reason);
    checkBudget(building);
    return;
  }
  const setAside = concluded.setAside ?? null;
  const base = {
    ...finishedEvent(building, attempt, run),
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(setAside !== null ? { setAside: { paths: setAside.paths, ...(setAside.commit !== undefined ? { commit: setAside.commit } : {}) } } : {}),
  };
  const usage = runFigure(run);
  // Judged work (not an interruption, a limit or a missing agent) says what it did outside its files.
  const judged = ['completed', 'awaiting_approval', 'retry', 'failed', 'blocked'].includes(decided.decision.kind);
  if (judged) recordUndeclared(draft.plan, task, concluded.undeclared ?? [], setAside);
  // Whatever was decided, the worktree has served this attempt (its work is captured).
  const release = () => building.effects.push({ type: 'release-workspace', task });
  if (decided.passed) {
    release();
    // What it did outside its files is the plan's record now: saved, as an in-session step reads the plan back.
    if (judged && (setAside !== null || (concluded.undeclared ?? []).length > 0)) building.effects.push({ type: 'save' });
    // Verified: it holds its files until the lane has integrated (or parked) its work.
    building.attempts.set(task, { ...kept(attempt), stage: 'verified', decision: decided.decision, work: decided.work, verifiedBy: { kind: 'this-run', run } });
    emit(building, { ...base, outcome: decided.decision.kind, result: decided.decision.result });
    checkBudget(building);
    return;
  }
  const decision = widened(building, task, decided.decision, concluded.wanted ?? []);
  release();
  switch (decision.kind) {
    case 'retry':
    case 'failed':
    case 'interrupted':
    case 'abort-run': {
      // Nothing to undo: the attempt's work never left its worktree.
      const applied = applyReviewed(building, task, decision, usage);
      building.attempts.delete(task);
      building.effects.push({ type: 'save' });
      emit(building, { ...base, outcome: outcomeOf(decision), reason: reasonOf(decision) ?? 'interrupted' });
      reportCascade(building, applied);
      if (decision.kind === 'abort-run') {
        stopWith(building, { reason: 'agent-unavailable', message: describeWorkerFailure(decision.failure), agentFailure: decision.failure });
        abortWorkers(building);
      }
      break;
    }
    case 'blocked':
      reportCascade(building, applyReviewed(building, task, decision, usage));
      building.attempts.delete(task);
      building.effects.push({ type: 'save' });
      emit(building, { ...base, outcome: 'blocked', reason: decision.reason });
      break;
    case 'requeued':
      // Pending again, no attempt spent: it starts when the limiter lets it.
      applyDecision(draft.plan, task, decision, usage);
      building.attempts.delete(task);
      building.effects.push({ type: 'save' });
      emit(building, { ...base, outcome: 'requeued', reason: decision.reason });
      break;
    default:
      assertNever(decision, 'decision');
  }
  checkBudget(building);
}

/**
 * The run stops: paused attempts will not resume; their tasks wait for the next run (no attempt
 * spent), their worktrees go. `which`: only those, and `why` they will not resume (the run goes on,
 * and their tasks start again elsewhere).
 */
export function endPaused(building: StepDraft, which: (attempt: Attempt) => boolean = () => true, why = 'the run stopped before it could go on'): void {
  const interrupted = building.draft.stop?.reason === 'interrupted';
  for (const task of tasksIn(building, PAUSED)) {
    const attempt = attemptIn(building, task, 'paused');
    if (!which(attempt)) continue;
    building.attempts.delete(task);
    building.effects.push({ type: 'release-workspace', task });
    const decision: Decision = interrupted
      ? { kind: 'interrupted' }
      : { kind: 'requeued', reason: `${reasonOf(decideFor(building, task, attempt.run).decision) ?? 'a limit'}; ${why}` };
    applyDecision(building.draft.plan, task, decision, runFigure(attempt.run));
    building.effects.push({ type: 'save' });
    emit(building, { ...finishedEvent(building, attempt, attempt.run), outcome: outcomeOf(decision), reason: reasonOf(decision) ?? 'interrupted' });
  }
}
