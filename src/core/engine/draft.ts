// The state one step is building (`StepDraft`: the draft state, its attempts and the effects so far),
// and the small helpers every transition uses on it: emit an event, stop the run, find an attempt
// in the stage it must be in, and what an attempt's workers did and cost in this run.

import type { RunEventBody } from '../report/index.ts';
import { assertNever } from '../result.ts';
import type { WorkerRun } from '../attempt/index.ts';
import { emptyUsage, UNKNOWN, type UsageFigure } from '../plan/index.ts';
import type { Attempt, AttemptStage } from './attempt.ts';
import type { EngineEffect } from './effects.ts';
import type { EngineEvent } from './events.ts';
import type { EngineState, EngineStop } from './state.ts';

/** A state being built by one step: the same fields, mutable, plus the effects so far. */
type Draft = { -readonly [K in keyof EngineState]: EngineState[K] };

export interface StepDraft {
  draft: Draft;
  attempts: Map<number, Attempt>;
  effects: EngineEffect[];
  /** The event this step handles: in a session, only `hand-out` starts work and only `integrate` records it. */
  event: EngineEvent;
}

export const emit = (building: StepDraft, event: RunEventBody) => building.effects.push({ type: 'emit', event });

export function stopWith(building: StepDraft, stop: EngineStop): void {
  if (building.draft.stop === null) building.draft.stop = stop;
}

/** Whether `attempt` is in `stage` (and so has that stage's shape). */
export const isIn = <Stage extends AttemptStage>(attempt: Attempt | undefined, stage: Stage): attempt is Extract<Attempt, { stage: Stage }> =>
  attempt?.stage === stage;

export function attemptIn<Stage extends AttemptStage>(building: StepDraft, task: number, stage: Stage): Extract<Attempt, { stage: Stage }> {
  const attempt = building.attempts.get(task);
  if (!isIn(attempt, stage)) throw new Error(`engine: task ${task} has no attempt ${stage} (it is ${attempt?.stage ?? 'not running'})`);
  return attempt;
}

/**
 * What the attempt's workers did in this run so far: nothing yet for an attempt whose first worker
 * runs, nothing for work an earlier run verified (its worker's cost was counted then).
 */
export function runOf(attempt: Attempt): WorkerRun | null {
  switch (attempt.stage) {
    case 'running':
      return attempt.run ?? null;
    case 'paused':
    case 'verifying':
      return attempt.run;
    case 'verified':
    case 'recording':
    case 'queued':
    case 'gating':
      return attempt.verifiedBy.kind === 'this-run' ? attempt.verifiedBy.run : null;
    default:
      return assertNever(attempt, 'attempt');
  }
}

/** What a run cost (none: nothing in this run). */
export const spentBy = (run: WorkerRun | null): UsageFigure => (run !== null ? runFigure(run) : emptyUsage());

/** What an attempt keeps from stage to stage: its task, its number, the stack it was built on and its place. */
export const kept = (attempt: Attempt): Pick<Attempt, 'task' | 'number' | 'stack' | 'place'> => ({
  task: attempt.task,
  number: attempt.number,
  ...(attempt.stack !== undefined ? { stack: attempt.stack } : {}),
  ...(attempt.place !== undefined ? { place: attempt.place } : {}),
});

/** A run's usage so far with one worker's added: unknown once a worker nothing measured (a Task subagent) is in it. */
export const runFigure = (run: Pick<WorkerRun, 'usage' | 'unmeasured'>): UsageFigure => (run.unmeasured ? UNKNOWN : run.usage);
