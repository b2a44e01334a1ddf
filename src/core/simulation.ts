// The engine's state machine run in simulated time: workers take the time a caller says and
// report what it says, verification passes, the lane records at once, and the gate (when the
// config has one) takes the time and gives the verdict a caller says. The scheduling bench and
// the property tests drive the engine's own `step` through here, so what they measure and check
// is what the headless engine does, not a copy of its loop.

import { initialState } from './engine/admission.ts';
import {
  gatedEvent,
  hostFaultEvent,
  recordedEvent,
  verifiedEvent,
  workerFinishedEvent,
  workerRefusedEvent,
  workerServedEvent,
} from './engine/effect-results.ts';
import { type EffectCarrier, type Inbox, driveNow } from './engine/driver.ts';
import type { EngineEvent } from './engine/events.ts';
import type { EngineConfig, EngineState } from './engine/state.ts';
import type { RunEventBody, TaskOutcome } from './events.ts';
import { type WorkerFailure, type WorkerRun, ok } from './failure.ts';
import type { Place } from './hosts/placement.ts';
import type { Refusal } from './limiter.ts';
import type { CheckedWork } from './finalize.ts';
import { isDirPath } from './paths.ts';
import { type Plan, type Task, emptyUsage } from './plan.ts';
import type { CapturedWork } from './work.ts';

/** How a worker the API refused ends (its CLI's delay, `withDelay`, when it named one). */
function limitFailure(refused: SimulatedAttempt['refused'], withDelay: boolean): WorkerFailure {
  if (refused?.unreachable === true) return { reason: 'api-unreachable', message: 'API Error: Connection refused (ECONNREFUSED)' };
  return {
    reason: 'rate-limited',
    message: 'API Error: Request rejected (429)',
    ...(withDelay && refused !== undefined ? { retryAfterMs: refused.delayMs } : {}),
  };
}

/** What one attempt of one task does in the simulation. */
export interface SimulatedAttempt {
  durationMs: number;
  /** The status line the worker ends with; COMPLETED work passes verification. */
  report: 'COMPLETED' | 'FAILED' | 'BLOCKED';
  /**
   * The API refuses its worker `atMs` into its run (a 429 its CLI retries after `delayMs`):
   * `served`, it had been served a response before (at half that time); `endsIt`, its retries
   * never get through and the refusal ends it when it would have finished. A worker the run stops
   * ends at once (when it had been served nothing, as the worker adapter does). A resumed worker
   * is refused no more. `unreachable`: not a 429 but a request the API never answered (the API out
   * of reach), which names no delay.
   */
  refused?: { atMs: number; served: boolean; delayMs: number; endsIt: boolean; unreachable?: boolean };
}

export interface SimulatedInterval {
  task: number;
  attempt: number;
  start: number;
  end: number;
  outcome: TaskOutcome | null;
  /** With hosts: where it ran. */
  place?: Place;
}

/** One run of the gate in the simulation: how long it takes and whether the stack passes. */
export interface SimulatedGate {
  durationMs: number;
  passed: boolean;
}

export interface SimulationTrace {
  /** The state the run ended in. */
  state: EngineState;
  /** Every worker run, in start order. */
  intervals: SimulatedInterval[];
  /** When the run finished (ms from its start). */
  makespan: number;
  /** Everything the run emitted. */
  events: RunEventBody[];
  /** Gate runs: the candidates tested, when, and the verdict. */
  gateRuns: Array<{ tasks: number[]; start: number; end: number; passed: boolean }>;
  /** Workers the run asked to stop after a refusal: whether the API had served them before. */
  stops: Array<{ task: number; served: boolean }>;
}

/** The commit simulated attempts start from. */
export const SIMULATED_BASE = '5'.repeat(40);

/**
 * The work a worker leaves when it does its task: every declared file to create or modify written
 * (a file in each declared folder), as the worktree's capture would give it, on `base`.
 */
export function workDoing(task: Task, base: string = SIMULATED_BASE): CapturedWork {
  const paths = [...task.metadata.files.create, ...task.metadata.files.modify].map((path) => (isDirPath(path) ? `${path}work.txt` : path));
  return {
    base,
    entries: [...new Set(paths)].sort().map((path, k) => ({ path, mode: '100644', object: (k + 1).toString(16).padStart(40, '0') })),
  };
}

/** What verification finds of work that does its task (`workDoing`): nothing missing, nothing outside its files, every check passing. */
export const passingCheck = (task: Task, base?: string): CheckedWork => ({
  missingCreated: [],
  unchangedModified: [],
  outsideChanges: [],
  acceptance: [],
  work: workDoing(task, base),
});

export const SIMULATION_DEFAULTS: Omit<EngineConfig, 'concurrency' | 'schedule'> = {
  maxAttempts: 3,
  backoffMs: 1000,
  limitWaitMs: 18_000_000,
  logDir: '.design',
  gate: null,
  speculate: 0,
  driver: 'headless',
};

/**
 * Run `plan` to its end. `attemptOf(task, attempt, place)` says what each attempt does (with
 * hosts, `place` is where it runs); `observe` is
 * called with the state whenever simulated time is about to move on (every event at the current
 * time has been handled), and once at the end.
 */
export function simulateRun(
  plan: Plan,
  config: EngineConfig,
  attemptOf: (task: number, attempt: number, place?: Place) => SimulatedAttempt,
  observe?: (state: EngineState) => void,
  /** What the gate does on `segment` stacked on the tasks integrated so far (required when `config.gate` is set). */
  gateOf?: (segment: readonly number[], integrated: readonly number[]) => SimulatedGate,
  /** Ask the run to drain at this time (as `plan drain` would). */
  drainAt?: number,
  /** With hosts (`config.hosts`): host faults, each at its time (as the channel to a host would tell them). */
  hostFaults: ReadonlyArray<{ at: number; host: string; reason: string }> = [],
): SimulationTrace {
  let state = initialState(plan, config, 0);
  const queue: Array<{ at: number; order: number; event: EngineEvent }> = [];
  let order = 0;
  const post = (event: EngineEvent) => queue.push({ at: event.now, order: order++, event });
  const intervals: SimulatedInterval[] = [];
  const open = new Map<number, SimulatedInterval>();
  const events: RunEventBody[] = [];
  const gateRuns: SimulationTrace['gateRuns'] = [];
  const integrated: number[] = [];
  const stops: SimulationTrace['stops'] = [];
  /** Each running worker's refusal, if it has one. */
  const refusals = new Map<number, NonNullable<SimulatedAttempt['refused']>>();

  const run = (task: number, attempt: number, now: number, resumed: boolean, place: Place | undefined): EngineEvent[] => {
    const behaviour = attemptOf(task, attempt, place);
    const interval: SimulatedInterval = {
      task,
      attempt,
      start: now,
      end: now + behaviour.durationMs,
      outcome: null,
      ...(place !== undefined ? { place } : {}),
    };
    intervals.push(interval);
    open.set(task, interval);
    const refused = resumed ? undefined : behaviour.refused;
    const limited = refused?.endsIt;
    const worker: WorkerRun = {
      usage: emptyUsage(),
      durationMs: behaviour.durationMs,
      permissionDenials: [],
      logPath: '',
      ...(refused?.served ? { progressed: true as const, sessionId: `session-${task}` } : {}),
      outcome: limited
        ? { kind: 'failed', failure: limitFailure(refused, true) }
        : { kind: 'reported', resultText: `${behaviour.report}: attempt ${attempt}`, statusLine: { status: behaviour.report, text: `attempt ${attempt}` } },
    };
    const led: EngineEvent[] = [];
    if (refused !== undefined) {
      refusals.set(task, refused);
      if (refused.served) led.push(workerServedEvent(task, now + Math.floor(refused.atMs / 2)));
      const refusal: Refusal = refused.unreachable === true ? { kind: 'api-unreachable' } : { kind: 'rate-limit', delayMs: refused.delayMs };
      led.push(workerRefusedEvent(task, refusal, refused.served, now + refused.atMs));
    } else refusals.delete(task);
    led.push(workerFinishedEvent(task, worker, interval.end));
    return led;
  };

  /** The worker of `task` still to finish, taken out of the queue: it is ending now. */
  const takeFinish = (task: number): Extract<EngineEvent, { type: 'worker-finished' }> | null => {
    const pending = queue.findIndex((q) => q.event.type === 'worker-finished' && q.event.task === task);
    return pending >= 0 ? (queue.splice(pending, 1)[0]!.event as Extract<EngineEvent, { type: 'worker-finished' }>) : null;
  };

  // Every effect is carried out at the time of the event it answers; what it leads to is queued at its own time.
  const none: EngineEvent[] = [];
  const carrier: EffectCarrier = {
    startWorker: (effect, _state, answering) => run(effect.task, effect.attempt, answering.now, effect.resume !== undefined, effect.place),
    verify: (effect, _state, answering) => [verifiedEvent(effect.task, ok(passingCheck(plan.tasks[effect.task]!)), answering.now)],
    record: (effect, _state, answering) => {
      integrated.push(...effect.integrate.map((item) => item.task));
      return [recordedEvent(effect.tasks, ok(`round-${effect.round}`), answering.now)];
    },
    gate: (effect, _state, answering) => {
      if (!gateOf) throw new Error('simulation: the config has a gate but no gateOf was given');
      const now = answering.now;
      const verdict = gateOf(effect.tasks, integrated);
      gateRuns.push({ tasks: effect.tasks, start: now, end: now + verdict.durationMs, passed: verdict.passed });
      return [
        gatedEvent(
          effect.tasks,
          { passed: verdict.passed, output: verdict.passed ? '' : 'simulated failure', durationMs: verdict.durationMs },
          now + verdict.durationMs,
        ),
      ];
    },
    // One tick per moment is enough: the engine asks again while the back-off lasts.
    wake: (effect) => (queue.some((q) => q.event.type === 'tick' && q.at === effect.at) ? none : [{ type: 'tick', now: effect.at }]),
    emit: (effect) => {
      events.push(effect.event);
      if (effect.event.type === 'task-finished') {
        const interval = open.get(effect.event.task);
        if (interval) interval.outcome = effect.event.outcome;
        open.delete(effect.event.task);
      }
      return none;
    },
    cancelWorker: (effect, _state, answering) => {
      // The worker stops now: its finish comes at once, as an interrupted run.
      const now = answering.now;
      const event = takeFinish(effect.task);
      if (event === null) return none;
      const interval = open.get(effect.task);
      const ran = interval ? now - interval.start : 0;
      if (interval) interval.end = now;
      return [workerFinishedEvent(effect.task, { ...event.run, durationMs: ran, outcome: { kind: 'failed', failure: { reason: 'interrupted' } } }, now)];
    },
    stopWorker: (effect, _state, answering) => {
      // Ended at once if it had been served nothing: its refusal is its outcome.
      const now = answering.now;
      const refused = refusals.get(effect.task);
      stops.push({ task: effect.task, served: refused?.served === true });
      if (refused?.served === true) return none;
      const event = takeFinish(effect.task);
      if (event === null) return none;
      const interval = open.get(effect.task);
      if (interval) interval.end = now;
      return [
        workerFinishedEvent(
          effect.task,
          {
            ...event.run,
            durationMs: interval ? now - interval.start : 0,
            outcome: { kind: 'failed', failure: limitFailure(refused, false) },
          },
          now,
        ),
      ];
    },
    save: () => none,
    abortWorkers: () => none,
    releaseWorkspace: () => none,
    finish: () => none,
  };

  /** The queue in simulated time: the earliest event next (of those at one time, the first posted); `observe` sees the state each time time moves on. */
  let last: number | null = null;
  const inbox: Inbox = {
    post,
    next: (current) => {
      if (observe && last !== null && !queue.some((q) => q.at <= last!)) observe(current);
      if (queue.length === 0) throw new Error('simulation: the engine is waiting, but nothing is left to happen');
      let next = 0;
      for (let k = 1; k < queue.length; k++) {
        const a = queue[k]!;
        const b = queue[next]!;
        if (a.at < b.at || (a.at === b.at && a.order < b.order)) next = k;
      }
      const { at, event } = queue.splice(next, 1)[0]!;
      last = at;
      return event;
    },
  };

  post({ type: 'tick', now: 0 });
  if (drainAt !== undefined) post({ type: 'drain', now: drainAt });
  for (const fault of hostFaults) post(hostFaultEvent(fault.host, fault.reason, fault.at));
  const driven = driveNow(state, inbox, carrier);
  state = driven.state;
  observe?.(state);
  return { state, intervals, makespan: last ?? 0, events, gateRuns, stops };
}
