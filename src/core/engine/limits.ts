// Limits: the run's limiter (core/limits/limiter.ts) hears every refusal and every response served (with
// hosts of more than one account, each account's limiter those of its hosts' workers:
// core/engine/accounts.ts). A worker refused before it did anything may be stopped (no attempt
// spent); one a limit ended after it had done something pauses, keeping its worktree and
// conversation, and resumes when the limiter lets it; the run wakes when a hold ends.

import { describeWorkerFailure, type WorkerRun } from '../attempt/index.ts';
import { holding, type Limiter, type LimiterSettings, limitWords, overdue, type Refusal, refused, served } from '../limits/index.ts';
import { byPriority, taskAt } from '../plan/index.ts';
import {
  type Account,
  accountOfAttempt,
  accountSettings,
  accountsOf,
  allowedOn,
  ceilingOf,
  givenUp,
  hostsOfAccount,
  inFlightOn,
  limiterOf,
  setLimiter,
} from './accounts.ts';
import { IN_FLIGHT, PAUSED, type RunningAttempt, tasksIn } from './attempt.ts';
import { attemptIn, emit, isIn, kept, type StepDraft, stopWith } from './draft.ts';
import { startable, unheld } from './queries.ts';
import type { EngineConfig } from './state.ts';

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
  // Its account's limiter, and the workers of its account's hosts.
  const account = accountOfAttempt(draft, attempt);
  const limiter = limiterOf(draft, account);
  const running = [...building.attempts.values()].filter((a) => a.stage === 'running' && a.stopping !== true && accountOfAttempt(draft, a) === account).length;
  const crowded = running > allowedOn(draft, account);
  const again = attempt.refused === true || limiter.strikes >= 2;
  const stopping = draft.stop?.reason === 'limited' || draft.stop?.reason === 'api-unreachable';
  const asksTooSoon = refusal.delayMs === undefined || draft.now + refusal.delayMs < limiter.holdUntil || stopping;
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
  const account = accountOfAttempt(draft, attempt);
  const before = limiterOf(draft, account);
  // A worker refused before is served again: the API serves it, the hold it was told to wait is over.
  const after = served(before, draft.now, accountSettings(draft, account), false, refusedBefore);
  setLimiter(draft, account, after);
  if (before.refusedSince !== null) announce(building, before, 'serving', null, account);
  else if (after.working !== before.working) announce(building, before, 'raised', null, account);
}

/**
 * A refusal, to the limiter of the task's account; said when it changes what the run may do; past
 * --limit-wait, the run drains (the API out of reach: stopping for `api-unreachable`), unless
 * another account's hosts need not wait that long: then the run goes on on them (`givenUp`: the
 * paused attempts of this account's hosts end, their tasks pending again to start there). A run
 * that stops waits for nothing: a hold is said only while the run goes on.
 */
export function refuse(building: StepDraft, task: number, refusal: Refusal): void {
  const draft = building.draft;
  const account = accountOfAttempt(draft, building.attempts.get(task));
  const settings = accountSettings(draft, account);
  const before = limiterOf(draft, account);
  const after = refused(before, refusal, draft.now, settings, draft.config.driver === 'session');
  setLimiter(draft, account, after);
  const late = draft.config.driver === 'headless' ? overdue(after, draft.now, settings) : null;
  if (late !== null && draft.stop === null && !givenUp(draft, account)) {
    const words = limitWords(after, ceilingOf(draft, account), draft.now);
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
    announce(building, before, 'hold', task, account);
  else if (after.working !== before.working) announce(building, before, 'lowered', task, account);
}

/**
 * Emit the limiter's state, as changed by `change` (the task whose refusal it was): `account`'s,
 * naming its hosts when there is more than one account. A run that stops waits for nothing: once
 * it drains, what ran is still served and the limiter hears of it, but the run says neither that
 * the API serves again nor what it would wait for.
 */
export function announce(
  building: StepDraft,
  before: Limiter,
  change: 'hold' | 'lowered' | 'serving' | 'raised',
  task: number | null,
  account: Account = undefined,
): void {
  const draft = building.draft;
  if (draft.stop !== null) return;
  const limiter = limiterOf(draft, account);
  const words = limitWords(limiter, ceilingOf(draft, account), draft.now);
  const message = change === 'serving' && before.refusedSince !== null ? words.serving() : words.now();
  const hosts = draft.limiters === undefined ? null : hostsOfAccount(draft, account);
  emit(building, {
    type: 'limit',
    change,
    ...words.state,
    refusals: limiter.refusals,
    task,
    message: hosts === null ? message : `${accountLabel(hosts, account)}: ${message}`,
    ...(hosts !== null ? { hosts } : {}),
  });
}

/** Whose limit it is, with more than one account: `the account of build2 (not this machine's)`. */
const accountLabel = (hosts: readonly string[], account: Account): string =>
  `the account of ${hosts.join(', ')}${account === undefined ? " (this machine's)" : " (not this machine's)"}`;

/**
 * The attempt may wait for the limit with its worktree and conversation: headless, its worker has
 * done something, and the run goes on, and waits for its account.
 */
export const mayPause = (building: StepDraft, attempt: RunningAttempt): boolean =>
  building.draft.config.driver === 'headless' &&
  building.draft.stop === null &&
  !building.draft.aborted &&
  attempt.progressed === true &&
  attempt.cancelled === undefined &&
  !givenUp(building.draft, accountOfAttempt(building.draft, attempt));

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

/**
 * Paused attempts go on first, highest priority first, as far as their account's limiter lets
 * workers run on its hosts (and `--concurrency` across every host).
 */
export function resumePaused(building: StepDraft): void {
  const draft = building.draft;
  for (const task of byPriority(tasksIn(building, PAUSED), draft.priority)) {
    const account = accountOfAttempt(draft, building.attempts.get(task));
    if (holding(limiterOf(draft, account), draft.now)) continue;
    if (inFlightOn(draft, account) >= allowedOn(draft, account) || tasksIn(building, IN_FLIGHT).length >= draft.config.concurrency) continue;
    resume(building, task);
  }
}

/**
 * Ask for a tick when a limit's hold ends (the first to end of the accounts' the run waits for), if
 * anything waits for it (a paused attempt, a task that would start). Whether it did.
 */
export function wakeForHold(building: StepDraft): boolean {
  const draft = building.draft;
  if (draft.stop !== null) return false;
  const ends = accountsOf(draft).flatMap((account) => {
    const limiter = limiterOf(draft, account);
    return holding(limiter, draft.now) && !givenUp(draft, account) ? [limiter.holdUntil] : [];
  });
  if (ends.length === 0) return false;
  if (tasksIn(building, PAUSED).length === 0 && startable(unheld(draft)).length === 0) return false;
  building.effects.push({ type: 'wake', at: Math.min(...ends) });
  return true;
}
