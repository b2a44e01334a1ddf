// Limits: the run's limiter (core/limiter.ts) hears every refusal and every response served. A
// worker refused before it did anything may be stopped (no attempt spent); one a limit ended after
// it had done something pauses, keeping its worktree and conversation, and resumes when the
// limiter lets it; the run wakes when a hold ends.

import { type WorkerRun, describeWorkerFailure } from '../worker-run.ts';
import { limitWords } from '../limit-words.ts';
import { type Limiter, type LimiterSettings, type Refusal, allowed, holding, overdue, refused, served } from '../limiter.ts';
import { byPriority } from '../schedule.ts';
import { type RunningAttempt, IN_FLIGHT, PAUSED, tasksIn } from './attempt.ts';
import { type StepDraft, attemptIn, emit, isIn, kept, stopWith } from './draft.ts';
import { startable, unheld } from './queries.ts';
import type { EngineConfig } from './state.ts';
import { taskAt } from '../plan.ts';

/** The limiter's settings from the run's configuration (`ceiling`: the concurrency asked for). */
export const limiterSettings = (config: EngineConfig, ceiling: number = config.concurrency): LimiterSettings => ({
  ceiling,
  backoffMs: config.backoffMs,
  maxWaitMs: config.limitWaitMs,
});

/** The refusal a worker's failure is, when it is a limit's (a 429, a 529), or null. */
export function refusalOf(run: Pick<WorkerRun, 'outcome'> | undefined): Refusal | null {
  if (run?.outcome.kind !== 'failed') return null;
  const failure = run.outcome.failure;
  if (failure.reason === 'rate-limited') {
    return {
      kind: failure.resetAt !== undefined ? 'usage-limit' : 'rate-limit',
      ...(failure.retryAfterMs !== undefined ? { delayMs: failure.retryAfterMs } : {}),
      ...(failure.resetAt !== undefined ? { resetAt: failure.resetAt } : {}),
    };
  }
  if (failure.reason === 'overloaded') return { kind: 'overloaded', ...(failure.retryAfterMs !== undefined ? { delayMs: failure.retryAfterMs } : {}) };
  if (failure.reason === 'api-unreachable') return { kind: 'api-unreachable', message: failure.message };
  return null;
}

/** A subagent that ran and reported (or failed its own way), not one a limit refused nor one whose worktree was never made. */
export const gotThrough = (run: WorkerRun): boolean =>
  run.outcome.kind === 'reported' || (refusalOf(run) === null && run.outcome.failure.reason !== 'no-worktree' && run.outcome.failure.reason !== 'interrupted');

/**
 * A worker the API refused while it ran; its CLI asks again after the delay it named. One that
 * has done nothing yet is stopped unless this is the first refusal of a streak, within what the
 * run may have at once, and its CLI waits out the hold by itself: refused again (or in a streak
 * the API keeps up), crowding the API, or asking again before the hold ends, it would only be
 * refused again. Its task waits (a resumed one pauses again), no attempt spent, nothing of it
 * lost. One that has done something is never cut short.
 */
export function workerRefused(building: StepDraft, task: number, refusal: Refusal, progressed: boolean): void {
  refuse(building, task, refusal);
  const draft = building.draft;
  const attempt = building.attempts.get(task);
  if (!isIn(attempt, 'running')) return;
  building.attempts.set(task, { ...attempt, refused: true });
  const running = [...building.attempts.values()].filter((a) => a.stage === 'running' && a.stopping !== true).length;
  const crowded = running > allowed(draft.limiter, draft.config.concurrency);
  const again = attempt.refused === true || draft.limiter.strikes >= 2;
  const stopping = draft.stop?.reason === 'limited' || draft.stop?.reason === 'api-unreachable';
  const asksTooSoon = refusal.delayMs === undefined || draft.now + refusal.delayMs < draft.limiter.holdUntil || stopping;
  if (attempt.cancelled === undefined && attempt.stopping !== true && !progressed && draft.config.driver === 'headless' && (crowded || again || asksTooSoon)) {
    building.attempts.set(task, { ...attempt, refused: true, stopping: true });
    building.effects.push({ type: 'stop-worker', task });
  }
}

/** A worker was served a response: it has done something, and the limiter hears of it. */
export function workerServed(building: StepDraft, task: number): void {
  const draft = building.draft;
  const attempt = building.attempts.get(task);
  const refusedBefore = isIn(attempt, 'running') && attempt.refused === true;
  if (isIn(attempt, 'running') && (attempt.progressed !== true || attempt.refused === true)) {
    const { refused: _refused, ...rest } = attempt;
    building.attempts.set(task, { ...rest, progressed: true });
  }
  const before = draft.limiter;
  // A worker refused before is served again: the API serves it, the hold it was told to wait is over.
  draft.limiter = served(before, draft.now, limiterSettings(draft.config), false, refusedBefore);
  if (before.refusedSince !== null) announce(building, before, 'serving', null);
  else if (draft.limiter.working !== before.working) announce(building, before, 'raised', null);
}

/**
 * A refusal, to the limiter; said when it changes what the run may do; past --limit-wait, the run
 * drains (the API out of reach: stopping for `api-unreachable`). A run that stops waits for
 * nothing: a hold is said only while the run goes on.
 */
export function refuse(building: StepDraft, task: number, refusal: Refusal): void {
  const draft = building.draft;
  const settings = limiterSettings(draft.config);
  const before = draft.limiter;
  draft.limiter = refused(before, refusal, draft.now, settings, draft.config.driver === 'session');
  const after = draft.limiter;
  const late = draft.config.driver === 'headless' ? overdue(after, draft.now, settings) : null;
  if (late !== null && draft.stop === null) {
    const words = limitWords(after, draft.config.concurrency, draft.now);
    stopWith(
      building,
      after.kind === 'api-unreachable'
        ? { reason: 'api-unreachable', message: words.unreachable(draft.config.limitWaitMs, draft.config.apiUrl) }
        : { reason: 'limited', message: words.stop(late.until, draft.config.limitWaitMs), resumeAfter: late.until },
    );
    emit(building, { type: 'draining', running: tasksIn(building, IN_FLIGHT) });
  }
  if (draft.stop !== null) return;
  // A new hold, or a hold for another limit (a usage limit's reset), is news; a lower working concurrency too.
  if ((!holding(before, draft.now) || after.kind !== before.kind || after.resetAt !== before.resetAt) && holding(after, draft.now))
    announce(building, before, 'hold', task);
  else if (after.working !== before.working) announce(building, before, 'lowered', task);
}

/**
 * Emit the limiter's state, as changed by `change` (the task whose refusal it was). A run that
 * stops waits for nothing: once it drains, what ran is still served and the limiter hears of it,
 * but the run says neither that the API serves again nor what it would wait for.
 */
export function announce(building: StepDraft, before: Limiter, change: 'hold' | 'lowered' | 'serving' | 'raised', task: number | null): void {
  const draft = building.draft;
  if (draft.stop !== null) return;
  const words = limitWords(draft.limiter, draft.config.concurrency, draft.now);
  emit(building, {
    type: 'limit',
    change,
    ...words.state,
    refusals: draft.limiter.refusals,
    task,
    message: change === 'serving' && before.refusedSince !== null ? words.serving() : words.now(),
  });
}

/**
 * The attempt may wait for the limit with its worktree and conversation: headless, its worker has
 * done something, and the run goes on.
 */
export const mayPause = (building: StepDraft, attempt: RunningAttempt): boolean =>
  building.draft.config.driver === 'headless' &&
  building.draft.stop === null &&
  !building.draft.aborted &&
  attempt.progressed === true &&
  attempt.cancelled === undefined;

/**
 * A limit ended the worker after it had done something: the attempt keeps its worktree and
 * conversation (`sessionId`), and resumes when the limiter lets it.
 */
export function pause(building: StepDraft, attempt: RunningAttempt, run: WorkerRun, sessionId: string, reason: string): void {
  building.attempts.set(attempt.task, { ...kept(attempt), stage: 'paused', run, sessionId });
  emit(building, {
    type: 'task-paused',
    task: attempt.task,
    subject: taskAt(building.draft.plan.tasks, attempt.task).subject,
    attempt: attempt.number,
    reason,
    sessionId,
  });
}

/** A paused attempt goes on: its worker continues its conversation in the worktree it kept. */
function resume(building: StepDraft, task: number): void {
  const attempt = attemptIn(building, task, 'paused');
  const draft = building.draft;
  // It has done something: a limit never costs it that.
  building.attempts.set(task, { ...kept(attempt), stage: 'running', run: attempt.run, progressed: true });
  const logPath = `${draft.config.logDir}/worker-${task}.log`;
  const place = attempt.place;
  const where = place !== undefined ? { host: place.host, slot: place.slot } : {};
  emit(building, { type: 'task-resumed', task, subject: taskAt(draft.plan.tasks, task).subject, attempt: attempt.number, logPath, ...where });
  const failure = attempt.run.outcome.kind === 'failed' ? describeWorkerFailure(attempt.run.outcome.failure) : 'a limit';
  building.effects.push({
    type: 'start-worker',
    task,
    attempt: attempt.number,
    logPath,
    resume: { sessionId: attempt.sessionId, reason: failure },
    ...(place !== undefined ? { place } : {}),
  });
}

/** Paused attempts go on first, highest priority first, as far as the limiter lets workers run. */
export function resumePaused(building: StepDraft): void {
  const draft = building.draft;
  if (holding(draft.limiter, draft.now)) return;
  const free = allowed(draft.limiter, draft.config.concurrency) - tasksIn(building, IN_FLIGHT).length;
  for (const task of byPriority(tasksIn(building, PAUSED), draft.priority).slice(0, Math.max(0, free))) resume(building, task);
}

/** Ask for a tick when a limit's hold ends, if anything waits for it (a paused attempt, a task that would start). Whether it did. */
export function wakeForHold(building: StepDraft): boolean {
  const draft = building.draft;
  if (draft.stop !== null || !holding(draft.limiter, draft.now)) return false;
  if (tasksIn(building, PAUSED).length === 0 && startable(unheld(draft)).length === 0) return false;
  building.effects.push({ type: 'wake', at: draft.limiter.holdUntil });
  return true;
}
