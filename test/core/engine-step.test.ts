// The engine's pure state machine, one event at a time: the stages of an attempt, the effects
// each step asks for, a state never changed by the step that reads it, and how freed slots are
// filled while verified work waits to be recorded.

import { describe, expect, it } from 'vitest';
import { type EngineEffect, type EngineEvent, type EngineState, initialState, startable, step, waitingPays } from '../../src/core/engine-step.ts';
import { statusOf } from '../../src/core/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/simulation.ts';
import { PASSED, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });

/** Steps through `events`, returning every state and the effects of the last step. */
function run(state: EngineState, ...events: EngineEvent[]): { state: EngineState; effects: EngineEffect[] } {
  let current = { state, effects: [] as EngineEffect[] };
  for (const event of events) current = step(current.state, event);
  return current;
}

const kinds = (effects: EngineEffect[]) => effects.map((e) => (e.type === 'emit' ? `emit:${e.event.type}` : e.type));

describe('step', () => {
  it('moves an attempt through its stages, asking for one effect at a time', () => {
    const start = initialState(makePlan([task('A')]), { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' }, 0);
    const started = run(start, { type: 'tick', now: 0 });
    expect(kinds(started.effects)).toEqual(['save', 'emit:task-started', 'start-worker']);
    expect(started.state.attempts.get(0)).toMatchObject({ stage: 'running', number: 1 });

    const finished = run(started.state, { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 });
    expect(kinds(finished.effects)).toEqual(['verify']);
    expect(finished.state.attempts.get(0)!.stage).toBe('verifying');

    const verified = run(finished.state, { type: 'verified', task: 0, verification: PASSED, now: 6 });
    expect(kinds(verified.effects)).toEqual(['release-workspace', 'emit:task-finished', 'record']);
    expect(verified.state.attempts.get(0)!.stage).toBe('recording');
    // Still in progress until the record lands: a crash now redoes it, never loses it.
    expect(statusOf(verified.state.plan.tasks[0]!)).toBe('in_progress');

    const recorded = run(verified.state, { type: 'recorded', tasks: [0], commit: 'abc', failure: null, now: 7 });
    expect(kinds(recorded.effects)).toEqual(['save', 'emit:round-committed', 'finish']);
    expect(recorded.state.plan.tasks[0]).toMatchObject({ status: 'completed', commit: 'abc', result: 'a', attempts: 1 });
    expect(recorded.state.attempts.size).toBe(0);
    expect(recorded.state.stop?.reason).toBe('all-done');
  });

  it('never changes the state it is given', () => {
    const start = initialState(makePlan([task('A'), task('B', { blockedBy: [0] })]), { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' }, 0);
    const snapshot = structuredClone(start);
    const started = step(start, { type: 'tick', now: 0 });
    expect(start).toEqual(snapshot);
    const before = structuredClone(started.state);
    step(started.state, { type: 'worker-finished', task: 0, run: reported('FAILED: no'), now: 1 });
    expect(started.state).toEqual(before);
  });

  it('gives a freed slot to a ready task unless a task about to become ready outranks it', () => {
    // A → B → D is the long path; C is ready from the start but short.
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C'), task('D', { blockedBy: [1] })]);
    const config = { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' as const };
    const afterA = run(
      initialState(plan, config, 0),
      { type: 'tick', now: 0 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 },
      { type: 'verified', task: 0, verification: PASSED, now: 6 },
    );
    // A's record is in the lane: B outranks C, so the slot waits for it.
    expect(afterA.state.attempts.get(0)!.stage).toBe('recording');
    expect(afterA.state.attempts.has(2)).toBe(false);
    expect(startable(afterA.state)).toEqual([]);
    const recorded = run(afterA.state, { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 7 });
    expect(recorded.state.attempts.get(1)?.stage).toBe('running');
    expect(recorded.state.attempts.has(2)).toBe(false);

    // With a ready task as urgent as the one about to be ready, the slot goes to the ready one.
    const even = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C'), task('E', { blockedBy: [2] })]);
    const afterEvenA = run(
      initialState(even, config, 0),
      { type: 'tick', now: 0 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 },
      { type: 'verified', task: 0, verification: PASSED, now: 6 },
    );
    expect(afterEvenA.state.attempts.get(2)?.stage).toBe('running');
    expect(kinds(afterEvenA.effects)).toContain('start-worker');
  });

  it('lets a slot wait for a record only while records are quick next to the work', () => {
    expect(waitingPays({ workers: 0, workerMs: 0, records: 0, recordMs: 0 })).toBe(true);
    // Workers of a minute, commits of 200 ms: waiting pays.
    expect(waitingPays({ workers: 4, workerMs: 240_000, records: 3, recordMs: 600 })).toBe(true);
    // Workers as quick as the commits (the orchestrator bench's 200 ms fakes): it does not.
    expect(waitingPays({ workers: 4, workerMs: 800, records: 3, recordMs: 600 })).toBe(false);
    // Measured in the state itself: the time from handing a record to the lane to its landing.
    const config = { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' as const };
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C'), task('D', { blockedBy: [1] })]);
    const done = run(
      initialState(plan, config, 0),
      { type: 'tick', now: 0 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 },
      { type: 'verified', task: 0, verification: PASSED, now: 6 },
      { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 206 },
    );
    expect(done.state.timing).toEqual({ workers: 1, workerMs: 5, records: 1, recordMs: 200 });
  });
});
