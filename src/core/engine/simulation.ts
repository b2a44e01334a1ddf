// The engine's state machine run in simulated time: workers take the time a caller says and
// report what it says, verification passes, the lane records at once, and the gate (when the
// config has one) takes the time and gives the verdict a caller says. The scheduling bench and
// the property tests drive the engine's own `step` through here, so what they measure and check
// is what the headless engine does, not a copy of its loop.

import { initialState } from './admission.ts';
import { gatedEvent, hostFaultEvent, recordedEvent, verifiedEvent, workerFinishedEvent, workerRefusedEvent, workerServedEvent } from './effect-results.ts';
import { driveNow, type EffectCarrier, type Inbox } from './driver.ts';
import type { EngineEvent } from './events.ts';
import type { EngineConfig, EngineState } from './state.ts';
import type { RunEventBody, TaskOutcome } from '../report/index.ts';
import { ok } from '../result.ts';
import type { CapturedWork, CheckedWork, WorkerFailure, WorkerRun } from '../attempt/index.ts';
import type { Place } from '../hosts/index.ts';
import type { Refusal } from '../limits/index.ts';
import { emptyUsage, isDirPath, type Plan, type Task, taskAt } from '../plan/index.ts';

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
  const simulation = newSimulation();
  const { queue } = simulation;
  queue.post({ type: 'tick', now: 0 });
  if (drainAt !== undefined) queue.post({ type: 'drain', now: drainAt });
  for (const fault of hostFaults) queue.post(hostFaultEvent(fault.host, fault.reason, fault.at));
  const carrier = simulatedCarrier(simulation, plan, attemptOf, gateOf);
  const { state } = driveNow(initialState(plan, config, 0), simulatedInbox(queue, observe), carrier);
  observe?.(state);
  const { intervals, events, gateRuns, stops } = simulation;
  return { state, intervals, makespan: queue.last ?? 0, events, gateRuns, stops };
}

type WorkerFinishedEvent = Extract<EngineEvent, { type: 'worker-finished' }>;

/** The events still to come, each at its simulated time. */
class SimulatedQueue {
  private readonly pending: Array<{ at: number; order: number; event: EngineEvent }> = [];
  /** How many events were posted: of those at one time, the first posted comes first. */
  private posted = 0;
  /** The time of the last event taken: where simulated time stands (null before the first). */
  last: number | null = null;

  post(event: EngineEvent): void {
    this.pending.push({ at: event.now, order: this.posted++, event });
  }

  hasTickAt(at: number): boolean {
    return this.pending.some((queued) => queued.at === at && queued.event.type === 'tick');
  }

  /** Whether the next event moves time on: none is left at the time of the last one. */
  movesOn(): boolean {
    const last = this.last;
    return last !== null && !this.pending.some((queued) => queued.at <= last);
  }

  /** The earliest event (of those at one time, the first posted), taken out; time moves to it. */
  takeNext(): EngineEvent {
    if (this.pending.length === 0) throw new Error('simulation: the engine is waiting, but nothing is left to happen');
    let next = 0;
    for (let k = 1; k < this.pending.length; k++) {
      const a = this.pending[k]!;
      const b = this.pending[next]!;
      if (a.at < b.at || (a.at === b.at && a.order < b.order)) next = k;
    }
    const { at, event } = this.pending.splice(next, 1)[0]!;
    this.last = at;
    return event;
  }

  /** The worker of `task` still to finish, taken out of the queue: it is ending now. */
  takeFinish(task: number): WorkerFinishedEvent | null {
    const index = this.pending.findIndex((queued) => queued.event.type === 'worker-finished' && queued.event.task === task);
    return index >= 0 ? (this.pending.splice(index, 1)[0]!.event as WorkerFinishedEvent) : null;
  }
}

/** What a simulated run keeps as it goes: its queue, and what the trace reports. */
interface Simulation {
  queue: SimulatedQueue;
  intervals: SimulatedInterval[];
  /** The interval of each worker still running, by task. */
  open: Map<number, SimulatedInterval>;
  events: RunEventBody[];
  gateRuns: SimulationTrace['gateRuns'];
  /** The tasks recorded so far, in order: what the gate stacks a segment on. */
  integrated: number[];
  stops: SimulationTrace['stops'];
  /** Each running worker's refusal, if it has one. */
  refusals: Map<number, NonNullable<SimulatedAttempt['refused']>>;
}

const newSimulation = (): Simulation => ({
  queue: new SimulatedQueue(),
  intervals: [],
  open: new Map(),
  events: [],
  gateRuns: [],
  integrated: [],
  stops: [],
  refusals: new Map(),
});

/** The queue in simulated time as the engine's inbox; `observe` sees the state each time time moves on. */
function simulatedInbox(queue: SimulatedQueue, observe: ((state: EngineState) => void) | undefined): Inbox {
  return {
    post: (event) => queue.post(event),
    next: (current) => {
      if (observe && queue.movesOn()) observe(current);
      return queue.takeNext();
    },
  };
}

/** Every effect is carried out at the time of the event it answers; what it leads to is queued at its own time. */
function simulatedCarrier(
  simulation: Simulation,
  plan: Plan,
  attemptOf: (task: number, attempt: number, place?: Place) => SimulatedAttempt,
  gateOf: ((segment: readonly number[], integrated: readonly number[]) => SimulatedGate) | undefined,
): EffectCarrier {
  const none: EngineEvent[] = [];
  return {
    startWorker: (effect, _state, answering) =>
      startSimulatedWorker(simulation, attemptOf(effect.task, effect.attempt, effect.place), effect, answering.now, effect.resume !== undefined),
    verify: (effect, _state, answering) => [verifiedEvent(effect.task, ok(passingCheck(taskAt(plan.tasks, effect.task))), answering.now)],
    record: (effect, _state, answering) => {
      simulation.integrated.push(...effect.integrate.map((item) => item.task));
      return [recordedEvent(effect.tasks, ok(`round-${effect.round}`), answering.now)];
    },
    gate: (effect, _state, answering) => {
      if (!gateOf) throw new Error('simulation: the config has a gate but no gateOf was given');
      return [runGate(simulation, gateOf(effect.tasks, simulation.integrated), effect.tasks, answering.now)];
    },
    // One tick per moment is enough: the engine asks again while the back-off lasts.
    wake: (effect) => (simulation.queue.hasTickAt(effect.at) ? none : [{ type: 'tick', now: effect.at }]),
    emit: (effect) => {
      recordEmitted(simulation, effect.event);
      return none;
    },
    // The worker stops now: its finish comes at once, as an interrupted run.
    cancelWorker: (effect, _state, answering) => endWorkerNow(simulation, effect.task, answering.now, { reason: 'interrupted' }),
    stopWorker: (effect, _state, answering) => stopRefusedWorker(simulation, effect.task, answering.now),
    save: () => none,
    abortWorkers: () => none,
    releaseWorkspace: () => none,
    finish: () => none,
  };
}

/**
 * A worker starts at `now` and does what `behaviour` says: it is served and refused when its
 * refusal says (a resumed worker is refused no more), and finishes when its duration is up.
 */
function startSimulatedWorker(
  simulation: Simulation,
  behaviour: SimulatedAttempt,
  start: { task: number; attempt: number; place?: Place },
  now: number,
  resumed: boolean,
): EngineEvent[] {
  const { task, attempt, place } = start;
  const interval: SimulatedInterval = {
    task,
    attempt,
    start: now,
    end: now + behaviour.durationMs,
    outcome: null,
    ...(place !== undefined ? { place } : {}),
  };
  simulation.intervals.push(interval);
  simulation.open.set(task, interval);
  const refused = resumed ? undefined : behaviour.refused;
  const led: EngineEvent[] = [];
  if (refused !== undefined) {
    simulation.refusals.set(task, refused);
    if (refused.served) led.push(workerServedEvent(task, now + Math.floor(refused.atMs / 2)));
    const refusal: Refusal = refused.unreachable === true ? { kind: 'api-unreachable' } : { kind: 'rate-limit', delayMs: refused.delayMs };
    led.push(workerRefusedEvent(task, refusal, refused.served, now + refused.atMs));
  } else simulation.refusals.delete(task);
  led.push(workerFinishedEvent(task, simulatedWorkerRun(behaviour, task, attempt, refused), interval.end));
  return led;
}

/** The worker's run as the adapter would report it: its report, or the refusal that ended it. */
function simulatedWorkerRun(behaviour: SimulatedAttempt, task: number, attempt: number, refused: SimulatedAttempt['refused']): WorkerRun {
  return {
    usage: emptyUsage(),
    durationMs: behaviour.durationMs,
    permissionDenials: [],
    logPath: '',
    ...(refused?.served ? { progressed: true as const, sessionId: `session-${task}` } : {}),
    outcome: refused?.endsIt
      ? { kind: 'failed', failure: limitFailure(refused, true) }
      : { kind: 'reported', resultText: `${behaviour.report}: attempt ${attempt}`, statusLine: { status: behaviour.report, text: `attempt ${attempt}` } },
  };
}

/** The gate runs on `segment` from `now` for as long as `verdict` says, and gives its verdict then. */
function runGate(simulation: Simulation, verdict: SimulatedGate, segment: number[], now: number): EngineEvent {
  simulation.gateRuns.push({ tasks: segment, start: now, end: now + verdict.durationMs, passed: verdict.passed });
  return gatedEvent(
    segment,
    { passed: verdict.passed, output: verdict.passed ? '' : 'simulated failure', durationMs: verdict.durationMs },
    now + verdict.durationMs,
  );
}

/** An event the run emitted, kept; a finished task's outcome goes on its interval. */
function recordEmitted(simulation: Simulation, event: RunEventBody): void {
  simulation.events.push(event);
  if (event.type === 'task-finished') {
    const interval = simulation.open.get(event.task);
    if (interval) interval.outcome = event.outcome;
    simulation.open.delete(event.task);
  }
}

/** A worker the run stopped after a refusal: ended at once if it had been served nothing (its refusal is its outcome). */
function stopRefusedWorker(simulation: Simulation, task: number, now: number): EngineEvent[] {
  const refused = simulation.refusals.get(task);
  simulation.stops.push({ task, served: refused?.served === true });
  if (refused?.served === true) return [];
  return endWorkerNow(simulation, task, now, limitFailure(refused, false));
}

/** The worker of `task`, if still running, ends at `now` with `failure`: its finish comes at once instead of when it was due. */
function endWorkerNow(simulation: Simulation, task: number, now: number, failure: WorkerFailure): EngineEvent[] {
  const event = simulation.queue.takeFinish(task);
  if (event === null) return [];
  const interval = simulation.open.get(task);
  const ran = interval ? now - interval.start : 0;
  if (interval) interval.end = now;
  return [workerFinishedEvent(task, { ...event.run, durationMs: ran, outcome: { kind: 'failed', failure } }, now)];
}
