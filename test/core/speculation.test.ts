// Speculative execution in the step function, one event at a time: what a dependant is built on,
// and what becomes of work built on a candidate the gate blames, in each stage it can be in.

import { describe, expect, it } from 'vitest';
import { type EngineConfig, type EngineEffect, type EngineEvent, type EngineState, initialState, step } from '../../src/core/engine-step.ts';
import { statusOf } from '../../src/core/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/simulation.ts';
import { PASSED, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });

const config = (over: Partial<EngineConfig> = {}): EngineConfig => ({ ...SIMULATION_DEFAULTS, concurrency: 3, schedule: 'continuous', gate: { batchSize: 1 }, speculate: 1, ...over });

let clock = 0;
const finished = (task: number, text: string, costUsd = 0): EngineEvent => ({ type: 'worker-finished', task, run: reported(text, costUsd), now: ++clock });
const verified = (task: number): EngineEvent => ({ type: 'verified', task, verification: PASSED, now: ++clock });
const recorded = (...tasks: number[]): EngineEvent => ({ type: 'recorded', tasks, commit: `c${clock}`, failure: null, now: ++clock });
/** A worker that was told to stop returns. */
const stopped = (task: number): EngineEvent => ({ type: 'worker-finished', task, run: { ...reported(''), outcome: { kind: 'failed', failure: { reason: 'interrupted' } } }, now: ++clock });
const gated = (tasks: number[], passed: boolean): EngineEvent => ({ type: 'gated', tasks, passed, output: passed ? '' : 'FAIL', durationMs: 1, now: ++clock });

/** Steps through `events`: the last state and the effects of every step, in order. */
function run(state: EngineState, ...events: EngineEvent[]): { state: EngineState; effects: EngineEffect[] } {
  let current = state;
  const effects: EngineEffect[] = [];
  for (const event of events) {
    const next = step(current, event);
    current = next.state;
    effects.push(...next.effects);
  }
  return { state: current, effects };
}

const starts = (effects: EngineEffect[]) => effects.flatMap((e) => (e.type === 'start-worker' ? [[e.task, (e.stack ?? []).map((item) => item.task)]] : []));

/** X and Y verified together: both queued, X ahead; the gate takes X alone (batch 1). */
function queuedPair(plan = makePlan([task('X'), task('Y'), task('C', { blockedBy: [1] })]), over: Partial<EngineConfig> = {}) {
  return run(initialState(plan, config(over), 0), { type: 'tick', now: 0 }, finished(0, 'COMPLETED: x'), finished(1, 'COMPLETED: y'), verified(0), verified(1), recorded(0), recorded(1));
}

describe('speculation, step by step', () => {
  it('a dependant is built on every candidate queued ahead of its blocker, in queue order', () => {
    const s = queuedPair();
    expect(s.state.gate.segments).toEqual([[0]]);
    expect(starts(s.effects)).toContainEqual([2, [0, 1]]);
  });

  it('no speculative start while candidates the gate passed are being integrated: the tip does not hold them yet', () => {
    const s = queuedPair();
    // C's first attempt fails just after the gate passed X, while X is being integrated.
    const passed = run(s.state, gated([0], true));
    expect(passed.state.attempts.get(0)?.stage).toBe('recording');
    const failed = run(passed.state, finished(2, 'FAILED: not yet'));
    expect(failed.state.plan.tasks[2]!.attempts).toBe(1);
    expect(starts(failed.effects)).toEqual([]);
    // Once X is on the tip, C starts again on Y alone: what its candidate will be gated on.
    const integrated = run(failed.state, recorded(0));
    expect(starts(integrated.effects)).toEqual([[2, [1]]]);
  });
});

describe('a task that needs approval', () => {
  it('is not built on candidates: it waits for its blockers to integrate, so no parked work stands on a candidate the gate may blame', () => {
    const plan = makePlan([task('A'), task('G', { blockedBy: [0], gate: 'human-approval' }), task('B', { blockedBy: [0] })]);
    const queued = run(initialState(plan, config(), 0), { type: 'tick', now: 0 }, finished(0, 'COMPLETED: a'), verified(0), recorded(0));
    // A is a candidate under test: B starts on it, G does not.
    expect(starts(queued.effects)).toEqual([
      [0, []],
      [2, [0]],
    ]);
    expect(statusOf(queued.state.plan.tasks[1]!)).toBe('pending');
    // A is blamed: B's speculation is cancelled; G has nothing to lose.
    const blamed = run(queued.state, gated([0], false), gated([0], false));
    expect(blamed.effects.flatMap((e) => (e.type === 'emit' && e.event.type === 'speculation-cancelled' ? [e.event.task] : []))).toEqual([2]);
    // A's retry integrates; G starts on the tip, with A's work in it.
    const fixed = run(blamed.state, stopped(2), finished(0, 'COMPLETED: a again'), verified(0), recorded(0), gated([0], true), recorded(0));
    expect(starts(fixed.effects)).toContainEqual([1, []]);
    expect(fixed.state.attempts.get(1)?.stack).toBeUndefined();
  });
});
