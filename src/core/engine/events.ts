// What the step function hears (`EngineEvent`): the outcomes of the effects it asked for (a worker
// finished, its work verified, the lane recorded or gated), and what comes from outside: a tick,
// Ctrl-C, a drain, and in a session the lead's steps.

import type { SetupFindings, Verification, WorkerRun } from '../attempt/index.ts';
import type { Refusal } from '../limits/index.ts';
import type { RecordFailure } from './effects.ts';

export type EngineEvent =
  /** The run starts, or a back-off may have ended. */
  | { type: 'tick'; now: number }
  | { type: 'worker-finished'; task: number; run: WorkerRun; now: number }
  /**
   * While its worker runs, the API refused it (a 429 or 529: the CLI's `api_retry`); `progressed`:
   * this worker process had been served a response before (it has done something).
   */
  | { type: 'worker-refused'; task: number; refusal: Refusal; progressed: boolean; now: number }
  /** While its worker runs, the API served it a response. */
  | { type: 'worker-served'; task: number; now: number }
  | { type: 'verified'; task: number; verification: Verification; now: number }
  /** The attempt's worktree could not be made ready (its setup command failed): no attempt was made. */
  | { type: 'workspace-failed'; task: number; reason: string; now: number }
  /**
   * The lane recorded these tasks; `commit` is the integration commit (null when nothing changed).
   * A failure is a `conflict` (the integration tip changed the same paths since the attempts
   * started: their work can never integrate) or any other git failure.
   */
  | { type: 'recorded'; tasks: readonly number[]; commit: string | null; failure: RecordFailure | null; now: number }
  /**
   * The gate ran on these candidates stacked on the tip (none: on the tip itself, the baseline);
   * `passed` null: it was stopped (Ctrl-C) before a verdict.
   */
  | { type: 'gated'; tasks: readonly number[]; passed: boolean | null; output: string; durationMs: number; now: number }
  /** Ctrl-C: stop the workers, record what is verified, stop. */
  | { type: 'interrupt'; now: number }
  /**
   * In a session: the lead's session ended with this run under way (a new `setup` begins another;
   * `lastStepAt`, when its last step was, if known). The run ends now; what it had under way is
   * left as it is, for the new run's setup to find.
   */
  | { type: 'session-ended'; lastStepAt: number | null; now: number }
  /** In a session, `next`: start what may start now (at most `concurrency` running, when given). */
  | { type: 'hand-out'; concurrency?: number; now: number }
  /** In a session, `commit`: integrate what is verified (with a gate: hold it as candidates). */
  | { type: 'integrate'; now: number }
  /** In a session: the person's branch holds every integrated task's work but these tasks'. */
  | { type: 'landed'; unlanded: readonly number[]; now: number }
  /** Drain (`plan drain`, SIGTERM): start nothing new; what runs finishes, is verified, gated and integrated; then stop. */
  | { type: 'drain'; now: number }
  /**
   * Before anything starts: what setting up the run found (work integrated that plan.json had not
   * recorded, interrupted attempts, approved work, missing files, failed assumptions). Applied,
   * then what can no longer run is skipped; with a gate and anything to test, its check of the
   * starting commit is due. Nothing starts on this event.
   */
  | { type: 'set-up'; findings: SetupFindings; now: number }
  /**
   * With hosts: foreman's remote side on `host`, or the channel to it, failed (ssh exiting 255 with
   * no report, silence past its limit, the host's disk full, git failing there). The host is down
   * until its back-off ends; its attempts are lost, each ending with the event its worker or checks
   * end with, no attempt spent. Posted before any event those attempts end with.
   */
  | { type: 'host-fault'; host: string; reason: string; now: number };
