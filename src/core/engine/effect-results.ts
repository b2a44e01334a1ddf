// What an effect's outcome tells the step function: one builder per result event, so that every
// driver that carries out effects — the headless engine (run/headless/engine.ts), the in-session steps
// (run/session/driver.ts) and the simulation (core/engine/simulation.ts) — makes each event one way.
// Pure: the driver says when (`now`).

import type { Result } from '../result.ts';
import type { Verification, WorkerRun } from '../attempt/index.ts';
import { describeGitFailure, type GitFailure } from '../integration/index.ts';
import type { Refusal } from '../limits/index.ts';
import type { GateRun, RecordFailure } from './effects.ts';
import type { EngineEvent } from './events.ts';

type EventOf<Type extends EngineEvent['type']> = Extract<EngineEvent, { type: Type }>;

/** `start-worker`: the worker's run ended (a re-check's "run", `recheckRun`: no worker ran). */
export const workerFinishedEvent = (task: number, run: WorkerRun, now: number): EventOf<'worker-finished'> => ({ type: 'worker-finished', task, run, now });

/** `start-worker`: the attempt's worktree could not be made ready, so no worker ran. */
export const workspaceFailedEvent = (task: number, reason: string, now: number): EventOf<'workspace-failed'> => ({
  type: 'workspace-failed',
  task,
  reason,
  now,
});

/** While `start-worker`'s worker runs: the API refused it (`progressed`: it had been served before). */
export const workerRefusedEvent = (task: number, refusal: Refusal, progressed: boolean, now: number): EventOf<'worker-refused'> => ({
  type: 'worker-refused',
  task,
  refusal,
  progressed,
  now,
});

/**
 * With hosts: foreman's remote side on `host`, or the channel to it, failed (`reason` in words:
 * `ssh exited 255 with no report`, `silent for 30 s`). Posted before the events its attempts end with.
 */
export const hostFaultEvent = (host: string, reason: string, now: number): EventOf<'host-fault'> => ({ type: 'host-fault', host, reason, now });

/** While `start-worker`'s worker runs: the API served it a response. */
export const workerServedEvent = (task: number, now: number): EventOf<'worker-served'> => ({ type: 'worker-served', task, now });

/** `verify`: the attempt's work captured and checked in its worktree. */
export const verifiedEvent = (task: number, verification: Verification, now: number): EventOf<'verified'> => ({ type: 'verified', task, verification, now });

/** A failed record as the step function tells it: work the tip conflicts with (step `integrate`), or git failing. */
export const recordFailureOf = (failure: GitFailure): RecordFailure => ({
  kind: failure.step === 'integrate' ? 'conflict' : 'git',
  message: describeGitFailure(failure),
});

/** `record`: the lane recorded `tasks` (the integration commit, null when nothing changed), or git failed. */
export const recordedEvent = (tasks: readonly number[], recorded: Result<string | null, GitFailure>, now: number): EventOf<'recorded'> => ({
  type: 'recorded',
  tasks,
  commit: recorded.ok ? recorded.value : null,
  failure: recorded.ok ? null : recordFailureOf(recorded.error),
  now,
});

/** `gate`: the gate's verdict on `tasks` stacked on the tip (none: the starting commit); `passed` null: stopped first. */
export const gatedEvent = (tasks: readonly number[], run: GateRun, now: number): EventOf<'gated'> => ({
  type: 'gated',
  tasks,
  passed: run.passed,
  output: run.output,
  durationMs: run.durationMs,
  now,
});
