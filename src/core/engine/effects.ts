// What the step function asks its driver to carry out (`EngineEffect`): the one loop
// (core/engine/driver.ts) hands each to a carrier's member for it — the headless engine's
// (run/headless/engine.ts), an in-session step's (run/session/driver.ts), the simulation's
// (core/engine/simulation.ts); and the requests the lane's effects become for the adapters that do the
// work (`RecordRequest`, `GateRequest`), with a gate run's answer (`GateRun`).

import type { RunEventBody } from '../report/index.ts';
import type { Place } from '../hosts/index.ts';
import type { EarlierWork, UsageFigure } from '../plan/index.ts';
import type { CapturedWork } from '../attempt/index.ts';
import type { EngineStop } from './state.ts';

export type EngineEffect =
  /** Write `state.plan` to disk before carrying out the effects after this one. */
  | { type: 'save' }
  | { type: 'emit'; event: RunEventBody }
  /**
   * Make a worktree ready at the integration tip (speculative: with `stack`, the candidates' work
   * stacked on it in order), then run the worker there.
   */
  | {
      type: 'start-worker';
      task: number;
      attempt: number;
      logPath: string;
      stack?: Array<{ task: number; work: CapturedWork }>;
      /** A paused attempt goes on: its worker continues this conversation (`--resume`) in the worktree it kept; `reason`: what stopped it. */
      resume?: { sessionId: string; reason: string };
      /** No worker: the work its last attempt set aside (this commit holds it) is verified as the attempt's work (core/attempt/widen.ts). */
      recheck?: string;
      /** The attempt starts from earlier work, not the integration tip (`AttemptStart`). */
      from?: AttemptStart;
      /** With hosts: where the attempt works (a resumed one, where it kept its worktree). */
      place?: Place;
    }
  /** Stop this task's worker if it has still done nothing (no response served): a limit refused it. Its event follows as usual. */
  | { type: 'stop-worker'; task: number }
  /** Stop this task's worker or checks at once (its speculation was cancelled); its event follows as usual. */
  | { type: 'cancel-worker'; task: number }
  /** Capture the task's work in its worktree, then spot-check it and run its acceptance checks there. */
  | { type: 'verify'; task: number }
  /** The attempt is done with its worktree: it may serve the next attempt. */
  | { type: 'release-workspace'; task: number }
  /**
   * In the lane: integrate verified work onto the integration ref (one commit; the results are in
   * the plan already) and park work that waits for approval on a ref of its own.
   */
  | {
      type: 'record';
      tasks: number[];
      round: number;
      integrate: Array<{ task: number; work: CapturedWork }>;
      park: Array<{ task: number; work: CapturedWork }>;
      /**
       * Candidates joining the merge queue: kept on refs of their own until they integrate, so a
       * crash loses none; with the stack each was built on (speculative), so a resumed run gates it on the same.
       */
      hold: Array<{ task: number; work: CapturedWork; stack?: number[] }>;
      /** Candidates leaving the merge queue without integrating (culprits): their refs go. */
      drop: number[];
    }
  /** In the lane: run the gate on these candidates stacked, in order, on the integration tip. */
  | { type: 'gate'; tasks: number[]; works: Array<{ task: number; work: CapturedWork }> }
  /** Send a `tick` at this time (a back-off ends). */
  | { type: 'wake'; at: number }
  /** Stop every running worker and check. */
  | { type: 'abort-workers' }
  | { type: 'finish'; stop: EngineStop; usage: UsageFigure };

/**
 * Where an attempt starts when not at the integration tip alone: its workspace holds earlier work,
 * and its own work is counted from where that earlier work starts, so capture, the scope check and
 * integration see the whole change. `commit` and `base`: a commit foreman kept and where it
 * started (a review round's parked work, core/plan/review.ts); `work`: a candidate the gate blamed, put
 * on the integration tip as it is now (what the gate failed it on), counted from the tip.
 */
export type AttemptStart = EarlierWork | { work: CapturedWork };

/** Why recording failed: the work conflicts with the integration tip, or git failed. */
export type RecordFailure = { kind: 'conflict' | 'git'; message: string };

/** A `record` effect, as the adapter that records in the lane is asked it. */
export type RecordRequest = Omit<Extract<EngineEffect, { type: 'record' }>, 'type'>;
/** A `gate` effect, as the adapter that runs the gate is asked it. */
export type GateRequest = Omit<Extract<EngineEffect, { type: 'gate' }>, 'type'>;
/** What a gate run answers: `passed` null when it was stopped (Ctrl-C) before a verdict. */
export interface GateRun {
  passed: boolean | null;
  output: string;
  durationMs: number;
}
