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
export { workerLogPath } from './engine/start.ts';
export type { Baseline, EngineConfig, EngineDriver, EngineState, EngineStop, Timing } from './engine/state.ts';
export { type Step, step } from './engine/step.ts';
export { outcomeOf, reasonOf } from './engine/task-finished.ts';
