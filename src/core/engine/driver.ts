// The one driver of the step function: the loop that takes an event, calls `step`, and carries
// out the effects it answers with, through an `EffectCarrier` (one member per effect, none
// optional). The headless run (run/headless/engine.ts), each in-session step (run/session/driver.ts) and
// the simulation (core/engine/simulation.ts) each give their carrier and their inbox; how an effect is
// awaited is theirs: a member returns the events its effect leads to at once (a session's step
// carries its effects in order; the simulation's events carry their simulated time), or posts
// them to its inbox later (headless: workers and checks run in parallel, the lane's jobs one at a
// time). The loop's waits are yields, so the same loop runs synchronously (`driveNow`, the
// simulation) or awaiting (`drive`).

import type { RunEventBody } from '../report/index.ts';
import { assertNever } from '../result.ts';
import type { EngineEffect } from './effects.ts';
import type { EngineEvent } from './events.ts';
import type { EngineState } from './state.ts';
import { step } from './step.ts';

export type EffectOf<Type extends EngineEffect['type']> = Extract<EngineEffect, { type: Type }>;

/** The events carrying out an effect leads to at once, for the inbox (none: its member posts them itself, later). */
export type Carried = readonly EngineEvent[] | Promise<readonly EngineEvent[]>;

/** A carrier's member for the effect of type `Type`: it gets the state after the step, and the event the step answered. */
type Member<Type extends EngineEffect['type']> = (effect: EffectOf<Type>, state: EngineState, answering: EngineEvent) => Carried;

/** What carries out the step function's effects: one member per effect. */
export interface EffectCarrier {
  save: Member<'save'>;
  emit: Member<'emit'>;
  startWorker: Member<'start-worker'>;
  stopWorker: Member<'stop-worker'>;
  cancelWorker: Member<'cancel-worker'>;
  verify: Member<'verify'>;
  releaseWorkspace: Member<'release-workspace'>;
  record: Member<'record'>;
  gate: Member<'gate'>;
  wake: Member<'wake'>;
  abortWorkers: Member<'abort-workers'>;
  /** The run is over: the loop ends once this is carried out. */
  finish: Member<'finish'>;
}

/** Where the loop's events come from, in the order the driver decides. */
export interface Inbox {
  post(event: EngineEvent): void;
  /** The next event for the step function (`state`: where it stands); null: none is left, the loop ends. */
  next(state: EngineState): EngineEvent | null | Promise<EngineEvent | null>;
}

/** Where the loop ended: the state, and the `finish` effect when the run finished in it. */
export interface Driven {
  state: EngineState;
  finish: EffectOf<'finish'> | null;
}

function carry(carrier: EffectCarrier, effect: EngineEffect, state: EngineState, answering: EngineEvent): Carried {
  switch (effect.type) {
    case 'save':
      return carrier.save(effect, state, answering);
    case 'emit':
      return carrier.emit(effect, state, answering);
    case 'start-worker':
      return carrier.startWorker(effect, state, answering);
    case 'stop-worker':
      return carrier.stopWorker(effect, state, answering);
    case 'cancel-worker':
      return carrier.cancelWorker(effect, state, answering);
    case 'verify':
      return carrier.verify(effect, state, answering);
    case 'release-workspace':
      return carrier.releaseWorkspace(effect, state, answering);
    case 'record':
      return carrier.record(effect, state, answering);
    case 'gate':
      return carrier.gate(effect, state, answering);
    case 'wake':
      return carrier.wake(effect, state, answering);
    case 'abort-workers':
      return carrier.abortWorkers(effect, state, answering);
    case 'finish':
      return carrier.finish(effect, state, answering);
    default:
      return assertNever(effect, 'engine effect');
  }
}

/** Events in the order they are posted, each taken at once; once it is empty the loop ends (a session's step, a run's set-up). */
export class EventQueue implements Inbox {
  private readonly queue: EngineEvent[];

  constructor(events: readonly EngineEvent[]) {
    this.queue = [...events];
  }

  post(event: EngineEvent): void {
    this.queue.push(event);
  }

  next(): EngineEvent | null {
    return this.queue.shift() ?? null;
  }
}

/**
 * The carrier of events that start nothing (a run's `set-up`, whose step says only what it
 * skipped): what they emit is kept in `emitted`, in order, for the driver to say when it
 * chooses; any other effect is a bug.
 */
export function emitsInto(emitted: RunEventBody[]): EffectCarrier {
  const none: readonly EngineEvent[] = [];
  const bug = (effect: EngineEffect): never => {
    throw new Error(`an event that starts nothing asked for ${effect.type}`);
  };
  return {
    save: bug,
    emit: (effect) => {
      emitted.push(effect.event);
      return none;
    },
    startWorker: bug,
    stopWorker: bug,
    cancelWorker: bug,
    verify: bug,
    releaseWorkspace: bug,
    record: bug,
    gate: bug,
    wake: bug,
    abortWorkers: bug,
    finish: bug,
  };
}

/** What the loop waits for at a yield: the inbox's next event, or an effect's events. */
type Wait = EngineEvent | null | Promise<EngineEvent | null> | Carried;

/** The loop, written once; each yield is a wait, which the runner answers with what it waited for. */
function* loop(start: EngineState, inbox: Inbox, carrier: EffectCarrier): Generator<Wait, Driven, unknown> {
  let state = start;
  for (;;) {
    const event = (yield inbox.next(state)) as EngineEvent | null;
    if (event === null) return { state, finish: null };
    const next = step(state, event);
    state = next.state;
    let saved = false;
    for (const effect of next.effects) {
      // Saves in one step write the same plan: once is enough.
      if (effect.type === 'save' && saved) continue;
      if (effect.type === 'save') saved = true;
      const events = (yield carry(carrier, effect, state, event)) as readonly EngineEvent[];
      if (effect.type === 'finish') return { state, finish: effect };
      for (const led of events) inbox.post(led);
    }
  }
}

/** Run the loop from `start`, awaiting the inbox and each effect, until the run finishes or the inbox is empty. */
export async function drive(start: EngineState, inbox: Inbox, carrier: EffectCarrier): Promise<Driven> {
  const running = loop(start, inbox, carrier);
  let at = running.next();
  while (at.done !== true) at = running.next(await at.value);
  return at.value;
}

/** Run the loop from `start` at once: every event and effect is there without waiting (the simulation). */
export function driveNow(start: EngineState, inbox: Inbox, carrier: EffectCarrier): Driven {
  const running = loop(start, inbox, carrier);
  let at = running.next();
  while (at.done !== true) {
    // A bug: a carrier that must be awaited is driven with `drive`.
    if (at.value instanceof Promise) throw new Error('driveNow: an inbox or a carrier answered with a promise');
    at = running.next(at.value);
  }
  return at.value;
}
