// The engine's state machine, pure: `step(state, event)` gives the next state and the effects the
// engine must carry out. Every attempt is a record moving through named stages:
//
//   running (the worker, in a worktree of its own) → verifying (its work captured, spot-check,
//   acceptance checks; then its worktree is released) → verified (waiting to be recorded) →
//   recording (in the lane: integrated onto the plan's integration ref, or parked for approval)
//   → gone (the plan says completed or awaiting approval)
//   With a gate (the plan's test command): verified → recording (held as a candidate) → queued
//   (in the merge queue, `core/engine/gate.ts`) → gating (its stack under test, in the lane) → queued
//   again (a red stack is split) | recording (integrated) | gone (the culprit: retried or failed)
//   running | verifying → gone (pending, failed, …): nothing to undo, the person's tree was never
//   touched and the worktree is reset before its next use.
//   With a gate, before any of this: the gate on the starting commit (the baseline). Nothing starts
//   before it passed; when it fails the run is refused.
//
// The headless engine (src/run/headless/engine.ts) executes the effects with real workers, checks and git;
// the in-session steps (src/run/session/session.ts: `plan setup | next | finalize | commit`, their I/O in
// src/run/session/io.ts) execute them across a Claude Code session, whose Task subagents are the
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
//
// This file is the dispatcher: each event goes to the transition of its concern, in a file of its
// own beside this one (conclude, limits, record, merge-queue, stop…), then `schedule` (start.ts)
// decides what comes next.

import { skippedEvents } from '../report/index.ts';
import { assertNever } from '../result.ts';
import { settleRound } from '../limits/index.ts';
import type { Plan } from '../plan/index.ts';
import { applySetupFindings } from '../attempt/index.ts';
import { verified, workerFinished, workspaceFailed } from './conclude.ts';
import { emit, type StepDraft } from './draft.ts';
import type { EngineEffect } from './effects.ts';
import type { EngineEvent } from './events.ts';
import { hostFaulted } from './hosts.ts';
import { announce, workerRefused, workerServed } from './limits.ts';
import { baselineDue, gated } from './merge-queue.ts';
import { recorded } from './record.ts';
import { schedule } from './start.ts';
import type { EngineState } from './state.ts';
import { drain, interrupt, sessionEnded } from './stop.ts';

export interface Step {
  state: EngineState;
  effects: EngineEffect[];
}

export function step(state: EngineState, event: EngineEvent): Step {
  if (state.finished) return { state, effects: [] };
  const attempts = new Map(state.attempts);
  const plan: Plan = { ...state.plan, tasks: state.plan.tasks.slice() };
  const building: StepDraft = {
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
      const before = building.draft.limiter;
      building.draft.limiter = settleRound(before, event.concurrency ?? building.draft.config.concurrency);
      if (building.draft.limiter.working !== before.working)
        announce(building, before, building.draft.limiter.working < before.working ? 'lowered' : 'raised', null);
      break;
    }
    case 'worker-refused':
      workerRefused(building, event.task, event.refusal, event.progressed);
      break;
    case 'worker-served':
      workerServed(building, event.task);
      break;
    case 'landed':
      building.draft.unlanded = new Set(event.unlanded);
      break;
    case 'interrupt':
      interrupt(building);
      break;
    case 'session-ended':
      sessionEnded(building, event.lastStepAt);
      return { state: building.draft, effects: building.effects };
    case 'drain':
      drain(building);
      break;
    case 'set-up':
      // Setup's own skips trip no breaker: no attempt of this run failed yet.
      for (const skipped of skippedEvents(plan.tasks, applySetupFindings(plan, event.findings).skips)) emit(building, skipped);
      building.draft.baseline = baselineDue(building) ? 'due' : 'none';
      return { state: building.draft, effects: building.effects };
    case 'worker-finished':
      workerFinished(building, event.task, event.run);
      break;
    case 'verified':
      verified(building, event.task, event.verification);
      break;
    case 'workspace-failed':
      workspaceFailed(building, event.task, event.reason);
      break;
    case 'recorded':
      recorded(building, event.tasks, event.commit, event.failure);
      break;
    case 'gated':
      gated(building, event.tasks, event.passed, event.output, event.durationMs);
      break;
    case 'host-fault':
      hostFaulted(building, event.host, event.reason);
      break;
    default:
      assertNever(event, 'engine event');
  }
  schedule(building);
  return { state: building.draft, effects: building.effects };
}
