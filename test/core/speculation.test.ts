// Speculative execution in the step function, one event at a time: what a dependant is built on,
// and what becomes of work built on a candidate the gate blames, in each stage it can be in.

import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import type { EngineConfig, EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import { attemptsOf, type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { passed, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });

const config = (over: Partial<EngineConfig> = {}): EngineConfig => ({
  ...SIMULATION_DEFAULTS,
  concurrency: 3,
  schedule: 'continuous',
  gate: { batchSize: 1 },
  speculate: 1,
  ...over,
});

let clock = 0;
const finished = (task: number, text: string, costUsd = 0): EngineEvent => ({ type: 'worker-finished', task, run: reported(text, costUsd), now: ++clock });
const verified = (plan: Plan, task: number): EngineEvent => ({ type: 'verified', task, verification: passed(plan.tasks[task]!), now: ++clock });
const recorded = (...tasks: number[]): EngineEvent => ({ type: 'recorded', tasks, commit: `c${clock}`, failure: null, now: ++clock });
/** A worker that was told to stop returns, having cost `costUsd`. */
const stopped = (task: number, costUsd = 0): EngineEvent => ({
  type: 'worker-finished',
  task,
  run: { ...reported('', costUsd), outcome: { kind: 'failed', failure: { reason: 'interrupted' } } },
  now: ++clock,
});
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

const cancellations = (effects: EngineEffect[]) =>
  effects.flatMap((e) => (e.type === 'emit' && e.event.type === 'speculation-cancelled' ? [[e.event.task, e.event.stage]] : []));
const outcomes = (effects: EngineEffect[]) =>
  effects.flatMap((e) => (e.type === 'emit' && e.event.type === 'task-finished' ? [[e.event.task, e.event.outcome]] : []));
const starts = (effects: EngineEffect[]) => effects.flatMap((e) => (e.type === 'start-worker' ? [[e.task, (e.stack ?? []).map((item) => item.task)]] : []));

/** X and Y verified together: both queued, X ahead; the gate takes X alone (batch 1). */
function queuedPair(plan = makePlan([task('X'), task('Y'), task('C', { blockedBy: [1] })]), over: Partial<EngineConfig> = {}) {
  return run(
    initialState(plan, config(over), 0),
    { type: 'tick', now: 0 },
    finished(0, 'COMPLETED: x'),
    finished(1, 'COMPLETED: y'),
    verified(plan, 0),
    verified(plan, 1),
    recorded(0),
    recorded(1),
  );
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
    const queued = run(initialState(plan, config(), 0), { type: 'tick', now: 0 }, finished(0, 'COMPLETED: a'), verified(plan, 0), recorded(0));
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
    const fixed = run(blamed.state, stopped(2), finished(0, 'COMPLETED: a again'), verified(plan, 0), recorded(0), gated([0], true), recorded(0));
    expect(starts(fixed.effects)).toContainEqual([1, []]);
    expect(fixed.state.attempts.get(1)?.stack).toBeUndefined();
  });
});

describe('work built on a blamed candidate is cancelled in whatever stage it is', () => {
  /** X is a candidate under test; C, its dependant, runs on it. X breaks the build. */
  const plan = makePlan([task('X'), task('C', { blockedBy: [0] })]);
  const onCandidate = (over: Partial<EngineConfig> = {}) => {
    const s = run(initialState(plan, config(over), 0), { type: 'tick', now: 0 }, finished(0, 'COMPLETED: x'), verified(plan, 0), recorded(0));
    expect(starts(s.effects)).toContainEqual([1, [0]]);
    return s.state;
  };

  it('verifying: its checks are stopped, and it ends when they have, as no attempt', () => {
    const verifying = run(onCandidate(), finished(1, 'COMPLETED: c'));
    expect(verifying.state.attempts.get(1)?.stage).toBe('verifying');
    const blamed = run(verifying.state, gated([0], false), gated([0], false));
    expect(cancellations(blamed.effects)).toEqual([[1, 'verifying']]);
    expect(blamed.effects).toContainEqual({ type: 'cancel-worker', task: 1 });
    // Its verdict, whatever it is, is void: the attempt ends cancelled and its worktree goes.
    const ended = run(blamed.state, verified(plan, 1));
    expect(outcomes(ended.effects)).toEqual([[1, 'cancelled']]);
    expect(ended.effects).toContainEqual({ type: 'release-workspace', task: 1 });
    expect(ended.state.attempts.has(1)).toBe(false);
    expect([statusOf(ended.state.plan.tasks[1]!), attemptsOf(ended.state.plan.tasks[1]!)]).toEqual(['pending', 0]);
  });

  it('paused (a limit ended its worker after it had done something): it ends at once, and the worktree it kept goes', () => {
    // The API served C's worker, then a limit ended it: C waits, keeping its worktree and conversation.
    const served: EngineEvent = { type: 'worker-served', task: 1, now: ++clock };
    const limited: EngineEvent = {
      type: 'worker-finished',
      task: 1,
      run: { ...reported(''), outcome: { kind: 'failed', failure: { reason: 'rate-limited', message: 'API Error: 429' } }, sessionId: 's-1', progressed: true },
      now: ++clock,
    };
    const paused = run(onCandidate(), served, limited);
    expect(paused.state.attempts.get(1)?.stage).toBe('paused');
    expect(paused.effects).not.toContainEqual({ type: 'release-workspace', task: 1 });
    const blamed = run(paused.state, gated([0], false), gated([0], false));
    expect(cancellations(blamed.effects)).toEqual([[1, 'paused']]);
    expect(outcomes(blamed.effects)).toContainEqual([1, 'cancelled']);
    // Nothing else would ever give its worktree back to the pool.
    expect(blamed.effects).toContainEqual({ type: 'release-workspace', task: 1 });
    expect(blamed.state.attempts.has(1)).toBe(false);
    expect([statusOf(blamed.state.plan.tasks[1]!), attemptsOf(blamed.state.plan.tasks[1]!)]).toEqual(['pending', 0]);
  });

  it('queued: it leaves the merge queue at once and its candidate ref goes with the culprit’s', () => {
    // The gate's first red run on X is not a verdict yet: the lane is free, and C joins the queue behind X.
    const queued = run(onCandidate(), finished(1, 'COMPLETED: c'), verified(plan, 1), gated([0], false), recorded(1));
    expect(queued.state.attempts.get(1)?.stage).toBe('queued');
    expect(queued.state.gate.waiting).toEqual([1]);
    // X fails alone again: the culprit. C is cancelled in the queue (the stage it is in even when
    // it was in the red run with X: a run's candidates go back to the queue before one is blamed).
    const blamed = run(queued.state, gated([0], false));
    expect(cancellations(blamed.effects)).toEqual([[1, 'queued']]);
    expect(outcomes(blamed.effects)).toEqual([
      [1, 'cancelled'],
      [0, 'retry'],
    ]);
    expect(blamed.effects.find((e) => e.type === 'record')).toMatchObject({ integrate: [], drop: [0, 1] });
    expect(blamed.state.gate.waiting).toEqual([]);
    expect([statusOf(blamed.state.plan.tasks[1]!), attemptsOf(blamed.state.plan.tasks[1]!)]).toEqual(['pending', 0]);
  });

  it('its spend counts toward --max-cost-usd: a cancelled worker that reaches the budget stops the run', () => {
    const blamed = run(onCandidate({ maxCostUsd: 1 }), gated([0], false), gated([0], false));
    expect(cancellations(blamed.effects)).toEqual([[1, 'running']]);
    // X's retry started at once; C's stopped worker had cost 1.50.
    const spent = run(blamed.state, stopped(1, 1.5));
    expect(outcomes(spent.effects)).toEqual([[1, 'cancelled']]);
    expect(spent.effects).toContainEqual({ type: 'emit', event: { type: 'budget-reached', costUsd: 1.5, limitUsd: 1 } });
    expect(spent.state.stop?.reason).toBe('budget');
    // Nothing new starts: X's retry finishes and integrates, C does not run again.
    const end = run(spent.state, finished(0, 'COMPLETED: x again'), verified(plan, 0), recorded(0), gated([0], true), recorded(0));
    expect(starts(end.effects)).toEqual([]);
    expect(end.effects.at(-1)).toMatchObject({ type: 'finish', stop: { reason: 'budget' }, usage: { costUsd: 1.5 } });
    expect(end.state.plan.tasks.map(statusOf)).toEqual(['completed', 'pending']);
  });
});
