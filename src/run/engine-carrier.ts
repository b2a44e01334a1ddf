// How the headless engine (run/engine.ts) carries out the step function's effects: with what is
// passed in (`EngineAdapters`: the run's adapters, or a test's fakes).

import type { GitFailure } from '../core/git-text.ts';
import { Lane } from '../core/lane.ts';
import type { Clock } from './adapters.ts';
import type { GateRequest, GateRun, RecordRequest } from '../core/engine/effects.ts';
import type { RunEventBody } from '../core/events.ts';
import type { Result } from '../core/failure.ts';
import type { Plan } from '../core/plan.ts';
import type { Integration } from './integration.ts';
import type { Workspaces } from './workspace/index.ts';

/** The plan's integration as the engine uses it: in the lane, one at a time, but `startOf`. */
export interface EngineIntegration {
  /** Where an attempt starts (run/integration.ts `startOf`). */
  startOf: Integration['startOf'];
  /**
   * Record what the step function decided: work awaiting approval parked and candidates of the
   * merge queue held on refs of their own, verified work integrated onto the integration ref (one
   * commit), the refs of candidates leaving the queue dropped. The integration commit, or null
   * when it integrated nothing (no work to integrate, or work that changes nothing).
   */
  record(plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>>;
  /** Run the gate on these candidates stacked on the integration tip (none: on the tip itself, the baseline); `passed` null when stopped first. */
  gate(plan: Plan, request: GateRequest, signal: AbortSignal): Promise<GateRun>;
}

/**
 * What the engine carries its effects out with, passed in: the headless run binds them to its
 * adapters (run/adapters.ts), the plan's integration and its workspaces; a test gives fakes.
 */
export interface EngineAdapters {
  /** Where each attempt works. */
  workspaces: Workspaces;
  integration: EngineIntegration;
  save(plan: Plan): Promise<void>;
  emit(event: RunEventBody): void;
  /** Back-offs' wake-ups, and the time each event carries. */
  clock: Pick<Clock, 'now' | 'wakeAt'>;
}

/**
 * Plan writes behind the step loop, as a database commits a group: the loop asks for a write
 * after a step and goes on with the next event; asks made while a write runs are served together
 * by one more write, of the newest plan (a state's plan is a snapshot no later step changes).
 * Each ask resolves once a plan at least as new as its own is on disk. A write takes several ms
 * (two fsyncs): awaited inline, it held every other event back for as long.
 */
export function planWrites(save: (plan: Plan) => Promise<void>): (plan: Plan) => Promise<void> {
  const writes = new Lane();
  let next: { plan: Plan; written: Promise<void> } | null = null;
  return (plan) => {
    if (next !== null) {
      next.plan = plan;
      return next.written;
    }
    const ask = { plan, written: Promise.resolve() };
    ask.written = writes.run(() => {
      // From here a newer plan waits for the write after this one.
      next = null;
      return save(ask.plan);
    });
    next = ask;
    return ask.written;
  };
}
