// The engine's pure state machine, one event at a time: the stages of an attempt, the effects
// each step asks for, a state never changed by the step that reads it, and how freed slots are
// filled while verified work waits to be recorded.

import { describe, expect, it } from 'vitest';
import { admitHeld, describeDrop, initialState } from '../../src/core/engine/admission.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import { startable, waitingPays } from '../../src/core/engine/queries.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import { statusOf } from '../../src/core/plan/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { passed, reported } from '../support/engine-rig.ts';
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

    const verified = run(finished.state, { type: 'verified', task: 0, verification: passed(task('A')), now: 6 });
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
      { type: 'verified', task: 0, verification: passed(task('A')), now: 6 },
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
      { type: 'verified', task: 0, verification: passed(task('A')), now: 6 },
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
      { type: 'verified', task: 0, verification: passed(task('A')), now: 6 },
      { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 206 },
    );
    expect(done.state.timing).toEqual({ workers: 1, workerMs: 5, records: 1, recordMs: 200 });
  });
});

describe('drain', () => {
  const config = { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' as const };
  const plan = () => makePlan([task('A'), task('B'), task('C'), task('D', { blockedBy: [0] })]);

  it('starts nothing new; what runs finishes, is verified and integrated, then the run stops as drained', () => {
    const started = run(initialState(plan(), config, 0), { type: 'tick', now: 0 });
    expect([...started.state.attempts.keys()].sort()).toEqual([0, 1]);
    const drained = run(started.state, { type: 'drain', now: 1 });
    expect(kinds(drained.effects)).toEqual(['emit:draining']);
    expect(drained.effects[0]).toMatchObject({ event: { type: 'draining', running: [0, 1] } });
    // The workers are not told to stop.
    expect(drained.state.aborted).toBe(false);
    const a = run(
      drained.state,
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 },
      { type: 'verified', task: 0, verification: passed(task('A')), now: 6 },
    );
    expect(a.state.attempts.get(0)?.stage).toBe('recording');
    const recorded = run(a.state, { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 7 });
    // D is ready now, and C has been all along: neither starts.
    expect(recorded.effects.some((e) => e.type === 'start-worker')).toBe(false);
    const b = run(
      recorded.state,
      { type: 'worker-finished', task: 1, run: reported('COMPLETED: b'), now: 8 },
      { type: 'verified', task: 1, verification: passed(task('B')), now: 9 },
    );
    const end = run(b.state, { type: 'recorded', tasks: [1], commit: 'c2', failure: null, now: 10 });
    expect(kinds(end.effects)).toContain('finish');
    expect(end.state.stop).toMatchObject({ reason: 'drained', message: 'drained: tasks 0, 1 finished, and nothing new started' });
    expect(end.state.plan.tasks.map(statusOf)).toEqual(['completed', 'completed', 'pending', 'pending']);
  });

  it('is asked once; an interrupt after it stops the workers at once', () => {
    const started = run(initialState(plan(), config, 0), { type: 'tick', now: 0 }, { type: 'drain', now: 1 });
    expect(kinds(step(started.state, { type: 'drain', now: 2 }).effects)).toEqual([]);
    const interrupted = run(started.state, { type: 'interrupt', now: 3 });
    expect(kinds(interrupted.effects)).toEqual(['abort-workers']);
    expect(interrupted.state.stop?.reason).toBe('interrupted');
  });

  it('a drain that ends with every task completed finishes the plan (all-done)', () => {
    const one = makePlan([task('A')]);
    const state = run(
      initialState(one, config, 0),
      { type: 'tick', now: 0 },
      { type: 'drain', now: 1 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 2 },
      { type: 'verified', task: 0, verification: passed(task('A')), now: 3 },
    );
    const end = run(state.state, { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 4 });
    expect(end.state.stop?.reason).toBe('all-done');
  });

  it('with a gate, queued candidates are still gated and integrated before the run stops', () => {
    const gated = { ...config, gate: { batchSize: 4 } };
    const s = run(
      initialState(makePlan([task('A'), task('B')]), { ...gated, concurrency: 1 }, 0),
      { type: 'tick', now: 0 },
      { type: 'drain', now: 1 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 2 },
      { type: 'verified', task: 0, verification: passed(task('A')), now: 3 },
      { type: 'recorded', tasks: [0], commit: null, failure: null, now: 4 },
    );
    expect(s.effects.find((e) => e.type === 'gate')).toMatchObject({ tasks: [0] });
    const gatedDone = run(
      s.state,
      { type: 'gated', tasks: [0], passed: true, output: '', durationMs: 1, now: 5 },
      { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 6 },
    );
    expect(gatedDone.state.plan.tasks.map(statusOf)).toEqual(['completed', 'pending']);
    expect(gatedDone.state.stop?.reason).toBe('drained');
    expect(gatedDone.state.finished).toBe(true);
  });
});

describe('admitHeld (candidates an earlier run held, after a crash)', () => {
  const work = { base: 'a'.repeat(40), entries: [] };
  const held = (task: number, stack: number[] = []) => ({ task, work, result: `did ${task}`, stack });
  const tasks = (marker: string, blockedBy: number[] = []) => fakeTask(marker, { create: [marker.toLowerCase()], blockedBy });

  it('puts the candidates a held candidate was built on first, in their order: the queue ahead of it is its stack again', () => {
    // B was built on C's candidate (all the queue held then); A joined the queue after.
    const plan = makePlan([tasks('A'), tasks('B', [2]), tasks('C')]);
    const admitted = admitHeld(plan, [held(1, [2]), held(2), held(0)], () => false);
    expect(admitted.kept.map((h) => [h.task, h.stack])).toEqual([
      [2, []],
      [0, []],
      [1, [2]],
    ]);
    expect(admitted.dropped).toEqual([]);
  });

  it('what of a stack has integrated is no longer ahead of it; the rest still is, in order', () => {
    // X was built on A, Y and B (queued in that order); A integrated before the crash, Z came later.
    const plan = makePlan([tasks('Z'), tasks('A'), tasks('Y'), tasks('B'), tasks('X', [3])]);
    const admitted = admitHeld(plan, [held(0), held(2), held(3), held(4, [1, 2, 3])], (task) => task === 1);
    expect(admitted.kept.map((h) => [h.task, h.stack])).toEqual([
      [2, []],
      [3, []],
      [0, []],
      [4, [2, 3]],
    ]);
  });

  it('drops one built on a candidate that is gone (blamed before the crash was recorded), and what was built on it: it never integrates before its stack', () => {
    const plan = makePlan([tasks('A'), tasks('B', [0]), tasks('C', [1])]);
    // A was blamed and went back to pending; B and C, built on it, were still held when the run died.
    expect(admitHeld(plan, [held(1, [0]), held(2, [0, 1])], () => false)).toEqual({
      kept: [],
      dropped: [
        { task: 1, why: { kind: 'stack-gone', tasks: [0] } },
        { task: 2, why: { kind: 'stack-gone', tasks: [0, 1] } },
      ],
    });
    // A completed meanwhile: B and C stand, B first.
    expect(admitHeld(plan, [held(2, [0, 1]), held(1, [0])], (task) => task === 0).kept.map((h) => [h.task, h.stack])).toEqual([
      [1, []],
      [2, [1]],
    ]);
  });

  it('drops one whose stack the queue cannot give it again: a blocker outside its stack, or a stack that is not the front of the others', () => {
    // B names no candidate beneath it, yet its blocker A is only held: it cannot have been built on the tip.
    const plan = makePlan([tasks('A'), tasks('B', [0])]);
    expect(admitHeld(plan, [held(0), held(1)], () => false)).toEqual({
      kept: [held(0)],
      dropped: [{ task: 1, why: { kind: 'blocker-not-beneath', blockers: [0] } }],
    });
    // X stood on A alone and Y on B alone: both cannot be the front of one queue.
    const two = makePlan([tasks('A'), tasks('B'), tasks('X', [0]), tasks('Y', [1])]);
    const admitted = admitHeld(two, [held(0), held(1), held(2, [0]), held(3, [1])], () => false);
    expect(admitted.kept.map((h) => h.task)).toEqual([0, 1, 2]);
    expect(admitted.dropped).toEqual([{ task: 3, why: { kind: 'stack-not-front', stack: [1] } }]);
  });

  it('says why it dropped each, for the person (describeDrop)', () => {
    const why = (plan: ReturnType<typeof makePlan>, candidates: ReturnType<typeof held>[], completed: (task: number) => boolean = () => false) => {
      const admitted = admitHeld(plan, candidates, completed);
      return admitted.dropped.map(({ task, why: reason }) => [task, describeDrop(reason)]);
    };
    // B was built on A's candidate; the plan was edited since: B waits for C too.
    expect(why(makePlan([tasks('A'), tasks('B', [0, 2]), tasks('C')]), [held(0), held(1, [0])])).toEqual([
      [1, 'was built without task 2, which it waits for now'],
    ]);
    // A's candidate is gone; B was built on it, C on both.
    expect(why(makePlan([tasks('A'), tasks('B', [0]), tasks('C', [1])]), [held(1, [0]), held(2, [0, 1])])).toEqual([
      [1, 'was built on the work of task 0, no longer in the merge queue'],
      [2, 'was built on the work of tasks 0 and 1, no longer in the merge queue'],
    ]);
    // X stood on A alone and Y on B alone: Y's stack is not the front of X's.
    expect(why(makePlan([tasks('A'), tasks('B'), tasks('X', [0]), tasks('Y', [1])]), [held(0), held(1), held(2, [0]), held(3, [1])])).toEqual([
      [3, 'was built on a stack (task 1) the merge queue cannot give it again'],
    ]);
  });

  it('a resumed run gates a held candidate after its stack, and cancels it when a candidate of its stack is blamed', () => {
    // As a resumed run finds them: in progress, their work held.
    const plan = makePlan([tasks('A'), tasks('Z'), tasks('X', [0])].map((t) => ({ ...t, status: 'in_progress' as const })));
    const config = { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' as const, gate: { batchSize: 1 }, speculate: 1 };
    const admitted = admitHeld(plan, [held(1), held(2, [0]), held(0)], () => false);
    const start = initialState(plan, config, 0, admitted.kept);
    expect(start.attempts.get(2)).toMatchObject({ stage: 'queued', verifiedBy: { kind: 'earlier-run', held: true }, stack: [0] });
    expect(start.attempts.get(1)?.stack).toBeUndefined();
    const gate = run(start, { type: 'tick', now: 0 });
    expect(gate.effects.find((e) => e.type === 'gate')).toMatchObject({ tasks: [0] });
    const blamed = run(
      gate.state,
      { type: 'gated', tasks: [0], passed: false, output: 'FAIL', durationMs: 1, now: 1 },
      { type: 'gated', tasks: [0], passed: false, output: 'FAIL', durationMs: 1, now: 2 },
    );
    expect(blamed.effects.flatMap((e) => (e.type === 'emit' && e.event.type === 'speculation-cancelled' ? [[e.event.task, e.event.stage]] : []))).toEqual([
      [2, 'queued'],
    ]);
    expect(blamed.effects.find((e) => e.type === 'record')).toMatchObject({ drop: [0, 2] });
    expect(blamed.state.plan.tasks.map(statusOf)).toEqual(['in_progress', 'in_progress', 'pending']);
    // Z, built on the tip, is tested next on its own.
    expect(blamed.effects.filter((e) => e.type === 'gate').at(-1)).toMatchObject({ tasks: [1] });
  });
});

describe('approved work (setup held it on a candidate ref)', () => {
  // As setup leaves it: the approved task in progress again (`approved` finding), its work held, its attempt counted when it awaited approval.
  const approvedPlan = () => {
    const plan = makePlan([task('A', { gate: 'human-approval' }), task('B', { blockedBy: [0] })]);
    plan.tasks[0] = { ...plan.tasks[0]!, status: 'in_progress', attempts: 1, result: 'A done', approvedAt: '2026-01-01T00:00:00.000Z' };
    return plan;
  };
  const approved = {
    task: 0,
    work: { base: 'base', entries: [{ path: 'A.txt', mode: '100644', object: 'a'.repeat(40) }] },
    result: 'A done',
    stack: [],
    approved: true as const,
  };

  it('integrates at the first record, its candidate ref dropped, its attempt not counted again; its dependant starts after', () => {
    const start = initialState(approvedPlan(), { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' }, 0, [approved]);
    expect(start.attempts.get(0)).toMatchObject({ stage: 'verified', number: 1, verifiedBy: { kind: 'earlier-run', held: true, approved: true } });
    const first = run(start, { type: 'tick', now: 0 });
    // The record before anything starts: B waits for the work it depends on.
    expect(kinds(first.effects)).toEqual(['record']);
    expect(first.effects[0]).toMatchObject({ type: 'record', tasks: [0], round: 1, integrate: [{ task: 0 }], drop: [0] });
    const recorded = run(first.state, { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 1 });
    expect(recorded.state.plan.tasks[0]).toMatchObject({ status: 'completed', commit: 'c1', result: 'A done', attempts: 1 });
    expect(recorded.state.plan.progress?.completedTasks).toEqual([0]);
    expect(kinds(recorded.effects)).toEqual(['save', 'emit:round-committed', 'save', 'emit:task-started', 'start-worker']);
    expect(recorded.effects.find((e) => e.type === 'start-worker')).toMatchObject({ task: 1 });
  });

  it('with a gate: tested first, then integrated with its attempt counted once', () => {
    const config = { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' as const, gate: { batchSize: 1 }, speculate: 0 };
    const start = initialState(approvedPlan(), config, 0, [approved]);
    expect(start.attempts.get(0)).toMatchObject({ stage: 'queued' });
    const gate = run(start, { type: 'tick', now: 0 });
    expect(gate.effects.find((e) => e.type === 'gate')).toMatchObject({ tasks: [0] });
    const passedGate = run(gate.state, { type: 'gated', tasks: [0], passed: true, output: '', durationMs: 1, now: 1 });
    expect(passedGate.effects.find((e) => e.type === 'record')).toMatchObject({ integrate: [{ task: 0 }], drop: [0] });
    const recorded = run(passedGate.state, { type: 'recorded', tasks: [0], commit: 'c1', failure: null, now: 2 });
    expect(recorded.state.plan.tasks[0]).toMatchObject({ status: 'completed', commit: 'c1', attempts: 1 });
  });
});
