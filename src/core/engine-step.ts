// The engine's state machine, pure: `step(state, event)` gives the next state and the effects the
// engine must carry out. Every attempt is a record moving through named stages:
//
//   running (the worker, in a worktree of its own) → verifying (its work captured, spot-check,
//   acceptance checks; then its worktree is released) → verified (waiting to be recorded) →
//   recording (in the lane: integrated onto the plan's integration ref, or parked for approval)
//   → gone (the plan says completed or awaiting approval)
//   With a gate (the plan's test command): verified → recording (held as a candidate) → queued
//   (in the merge queue, `core/gate.ts`) → gating (its stack under test, in the lane) → queued
//   again (a red stack is split) | recording (integrated) | gone (the culprit: retried or failed)
//   running | verifying → gone (pending, failed, …): nothing to undo, the person's tree was never
//   touched and the worktree is reset before its next use.
//   With a gate, before any of this: the gate on the starting commit (the baseline). Nothing starts
//   before it passed; when it fails the run is refused.
//
// The headless engine (src/run/engine.ts) executes the effects with real workers, checks and git;
// the in-session steps (src/run/lead.ts: `plan setup | next | finalize | commit`, their I/O in
// src/run/lead-io.ts) execute them across a Claude Code session, whose Task subagents are the
// workers; the scheduling bench and the property tests execute them in simulated time. Nothing
// here does I/O or reads a clock: time comes in with each event.
//
// The two drivers differ in three things, named by `config.driver`. Headless, the engine starts
// workers and integrates verified work as soon as it may. In a session, a task starts only when
// the lead asks (`hand-out`, the `next` step) and verified work integrates only when it asks
// (`integrate`, the `commit` step); and since a subagent's worktree starts from the person's
// branch, not from the integration ref, a task starts only once its blockers' work has landed
// there (`landed` says what has not).
//
// States are persistent: `step` never changes the state it is given. The plan inside is copied
// shallowly (its `tasks` array); task objects are replaced, never changed (see `applyDecision`).

import { skippedEvents } from './events.ts';
import { assertNever } from './failure.ts';
import { readySet } from './graph.ts';
import { holding, settleRound } from './limiter.ts';
import { type Plan, attemptsOf, modelOf, statusOf } from './plan.ts';
import { applySetupFindings, markStarted } from './transition.ts';
import { recheckable } from './widen.ts';
import { IN_FLIGHT, PAUSED, tasksIn } from './engine/attempt.ts';
import { endPaused, verified, workerFinished, workspaceFailed } from './engine/conclude.ts';
import { type Work, emit } from './engine/draft.ts';
import type { EngineEffect } from './engine/effects.ts';
import type { EngineEvent } from './engine/events.ts';
import { announce, resumePaused, wakeForHold, workerRefused, workerServed } from './engine/limits.ts';
import { baselineDue, candidatesWait, gated, laneBusy, startGate } from './engine/merge-queue.ts';
import { startable, unheld, waitingToLand } from './engine/queries.ts';
import { record, recorded } from './engine/record.ts';
import { speculativeStack } from './engine/speculation.ts';
import type { EngineState } from './engine/state.ts';
import { drain, finish, interrupt, sessionEnded } from './engine/stop.ts';

export { type HeldCandidate, admitHeld, initialState } from './engine/admission.ts';
export {
  type Attempt,
  type AttemptStage,
  type GatingAttempt,
  type PausedAttempt,
  type QueuedAttempt,
  type RecordingAttempt,
  type RunningAttempt,
  type VerifiedAttempt,
  type VerifiedBy,
  type VerifyingAttempt,
  tasksIn,
} from './engine/attempt.ts';
export { settleRules } from './engine/conclude.ts';
export type { EngineEffect, RecordFailure } from './engine/effects.ts';
export type { EngineEvent } from './engine/events.ts';
export { limiterSettings, refusalOf } from './engine/limits.ts';
export { claimingFiles, gateOpen, landedReady, readyOnRecord, startable, waitingPays, waitingToLand } from './engine/queries.ts';
export { speculativeReady, speculativeStack } from './engine/speculation.ts';
export type { Baseline, EngineConfig, EngineDriver, EngineState, EngineStop, Timing } from './engine/state.ts';
export { outcomeOf, reasonOf } from './engine/task-finished.ts';

export interface Step {
  state: EngineState;
  effects: EngineEffect[];
}

/** Where a headless worker's log is: `<logDir>/worker-<task>.log`, every attempt of the task in turn. */
export const workerLogPath = (logDir: string, task: number): string => `${logDir}/worker-${task}.log`;

export function step(state: EngineState, event: EngineEvent): Step {
  if (state.finished) return { state, effects: [] };
  const attempts = new Map(state.attempts);
  const plan: Plan = { ...state.plan, tasks: state.plan.tasks.slice() };
  const work: Work = {
    draft: { ...state, plan, attempts, now: Math.max(state.now, event.now) },
    attempts,
    effects: [],
    event,
  };
  switch (event.type) {
    case 'tick':
    case 'integrate':
      break;
    case 'hand-out': {
      // A session's rounds: what the last one got through sets what this one may hand out.
      const before = work.draft.limiter;
      work.draft.limiter = settleRound(before, event.concurrency ?? work.draft.config.concurrency);
      if (work.draft.limiter.working !== before.working) announce(work, before, work.draft.limiter.working < before.working ? 'lowered' : 'raised', null);
      break;
    }
    case 'worker-refused':
      workerRefused(work, event.task, event.refusal, event.progressed);
      break;
    case 'worker-served':
      workerServed(work, event.task);
      break;
    case 'landed':
      work.draft.unlanded = new Set(event.unlanded);
      break;
    case 'interrupt':
      interrupt(work);
      break;
    case 'session-ended':
      sessionEnded(work, event.lastStepAt);
      return { state: work.draft, effects: work.effects };
    case 'drain':
      drain(work);
      break;
    case 'set-up':
      // Setup's own skips trip no breaker: no attempt of this run failed yet.
      for (const skipped of skippedEvents(plan.tasks, applySetupFindings(plan, event.findings).skips)) emit(work, skipped);
      work.draft.baseline = baselineDue(work) ? 'due' : 'none';
      return { state: work.draft, effects: work.effects };
    case 'worker-finished':
      workerFinished(work, event.task, event.run);
      break;
    case 'verified':
      verified(work, event.task, event.verification);
      break;
    case 'workspace-failed':
      workspaceFailed(work, event.task, event.reason);
      break;
    case 'recorded':
      recorded(work, event.tasks, event.commit, event.failure);
      break;
    case 'gated':
      gated(work, event.tasks, event.passed, event.output, event.durationMs);
      break;
    default:
      assertNever(event, 'engine event');
  }
  schedule(work);
  return { state: work.draft, effects: work.effects };
}

/** Start (or resume) what may, hand verified work to the lane, wake when a limit's hold ends, or finish. */
function schedule(work: Work): void {
  if (work.draft.config.driver === 'session') {
    scheduleSession(work);
    return;
  }
  const draft = work.draft;
  const policy = draft.config.schedule;
  for (;;) {
    // Continuous: record what is verified whenever the lane is free; what is verified meanwhile goes into the next record.
    if (policy === 'continuous' && !laneBusy(work)) record(work);
    startGate(work);
    const recording = laneBusy(work);
    if (draft.stop === null) {
      if (policy === 'rounds' && draft.admitted === null && !recording) {
        const ready = readySet(draft.plan.tasks);
        if (ready.length > 0) draft.admitted = new Set(ready);
      }
      resumePaused(work);
      for (const task of startable(draft)) start(work, task);
    } else endPaused(work);
    const queued = candidatesWait(work);
    const busy = tasksIn(work, IN_FLIGHT).length > 0 || recording || queued;
    if (!busy && draft.admitted !== null) {
      // The round is over when none of its tasks runs or can still start (a limit holds some of them back).
      const waiting =
        tasksIn(work, PAUSED).length > 0 ||
        (holding(draft.limiter, draft.now) && [...draft.admitted].some((i) => statusOf(draft.plan.tasks[i]!) === 'pending'));
      if (!waiting || draft.stop !== null) {
        draft.admitted = null;
        record(work);
        continue;
      }
    }
    if (busy) {
      wakeForHold(work);
      return;
    }
    if (draft.stop !== null) {
      // Verified work is recorded even when the run stops.
      if (tasksIn(work, new Set(['verified'])).length > 0) {
        record(work);
        return;
      }
      finish(work);
      return;
    }
    // Nothing runs and what could start has started: wait for a limit's hold to end, or the run is over.
    if (!wakeForHold(work)) finish(work);
    return;
  }
}

/**
 * The session's schedule: the lead's `commit` (`integrate`) hands verified work to the lane, its
 * `next` (`hand-out`) starts what may start; the gate runs whenever the lane is free, as
 * headless. The run is over once nothing is under way, nothing verified waits for `commit`, and
 * nothing could start even if asked (nor waits for its blockers' work to land).
 */
function scheduleSession(work: Work): void {
  const draft = work.draft;
  if (work.event.type === 'integrate' && !laneBusy(work)) record(work);
  startGate(work);
  if (draft.stop === null && work.event.type === 'hand-out') {
    for (const task of startable(draft, work.event.concurrency)) start(work, task);
  }
  const queued = candidatesWait(work);
  const underWay = tasksIn(work, IN_FLIGHT).length > 0 || laneBusy(work) || queued || tasksIn(work, new Set(['verified'])).length > 0;
  if (underWay) return;
  // A usage limit holds the hand-outs until it resets: the run waits for the lead to come back.
  if (draft.stop === null && (startable(unheld(draft)).length > 0 || waitingToLand(draft).length > 0)) return;
  finish(work);
}

export function start(work: Work, task: number): void {
  const draft = work.draft;
  const number = attemptsOf(draft.plan.tasks[task]!) + 1;
  // Ready, or startable only on its blockers' candidates.
  const blockersDone = draft.plan.tasks[task]!.blockedBy.every((b) => statusOf(draft.plan.tasks[b]!) === 'completed');
  const speculation = blockersDone ? null : speculativeStack(draft, task);
  // Widened to declare what its last attempt set aside: that work is re-checked before a worker is paid.
  const planned = draft.plan.tasks[task]!;
  const recheck = speculation === null && planned.recheck === true && recheckable(planned) ? planned.setAside!.commit! : null;
  markStarted(draft.plan, task);
  work.attempts.set(task, { task, number, stage: 'running', ...(speculation !== null ? { stack: speculation.stack } : {}) });
  // A Task subagent of a session keeps no log foreman can point to.
  const logPath = draft.config.driver === 'session' ? '' : workerLogPath(draft.config.logDir, task);
  const started = draft.plan.tasks[task]!;
  // Saved first: a crash after the worker started leaves the task in progress, and resume restores its files.
  work.effects.push({ type: 'save' });
  emit(work, {
    type: 'task-started',
    task,
    subject: started.subject,
    attempt: number,
    model: modelOf(started),
    logPath,
    ...(speculation !== null ? { stack: speculation.stack } : {}),
  });
  work.effects.push({
    type: 'start-worker',
    task,
    attempt: number,
    logPath,
    ...(speculation !== null ? { stack: speculation.works } : {}),
    ...(recheck !== null ? { recheck } : {}),
  });
}
