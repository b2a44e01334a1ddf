// The engine as one pure step function: its state, events, effects and the decisions of each stage, the merge queue and gate, the run's life, and the simulation.
// What the rest of foreman uses from this folder; its other files are its own.

export { admitHeld, describeDrop, type DropReason, type DroppedCandidate, type HeldCandidate, initialState } from './admission.ts';
export { type Attempt, tasksIn, type VerifiedBy } from './attempt.ts';
export { drive, driveNow, type EffectCarrier, type EffectOf, emitsInto, EventQueue, type Inbox } from './driver.ts';
export {
  gatedEvent,
  hostFaultEvent,
  recordedEvent,
  verifiedEvent,
  workerFinishedEvent,
  workerRefusedEvent,
  workerServedEvent,
  workspaceFailedEvent,
} from './effect-results.ts';
export type { AttemptStart, EngineEffect, GateRequest, GateRun, RecordRequest } from './effects.ts';
export type { EngineEvent } from './events.ts';
export { EXIT, type ExitCode } from './exit-codes.ts';
export { emptyGateQueue, type GateQueue } from './gate.ts';
export { startable } from './queries.ts';
export {
  baselineRefusal,
  landingNotice,
  type LandingState,
  nextSteps,
  noGateNotice,
  runFinishedEvent,
  type RunNotice,
  runStartedEvent,
} from './run-lifecycle.ts';
export {
  breakerReport,
  clipForLead,
  type CommitOutcome,
  gateReport,
  type GateReport,
  type GateRunReport,
  integratedBy,
  isComplete,
  nextStall,
  type NextStall,
  type Notice,
  noticeOf,
  overlapping,
  retriesOf,
  type RetryRef,
  roundSummary,
  setAsideBy,
  setAsideNotices,
  skippedBy,
  type SkipRef,
  type TaskRef,
  warning,
} from './session-report.ts';
export { workerLogPath } from './start.ts';
export type { Baseline, EngineConfig, EngineState, EngineStop, Timing } from './state.ts';
