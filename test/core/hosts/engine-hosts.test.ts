// A host fault through the step function, one event at a time: the host's running and verifying
// attempts are stopped and end lost when their event comes (no attempt spent), a paused one ends at
// once, nothing new goes to the host until its back-off ends, and a worker finishing there marks it
// up again. Each start names its host and slot in its event and its effect.

import { describe, expect, it } from 'vitest';
import { initialState } from '../../../src/core/engine/admission.ts';
import { hostFaultEvent } from '../../../src/core/engine/effect-results.ts';
import type { EngineEffect } from '../../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../../src/core/engine/events.ts';
import type { EngineState } from '../../../src/core/engine/state.ts';
import { step } from '../../../src/core/engine/step.ts';
import { attemptsOf, statusOf } from '../../../src/core/plan.ts';
import { SIMULATION_DEFAULTS } from '../../../src/core/simulation.ts';
import { failedRun, passed, reported } from '../../support/engine-rig.ts';
import { fakeTask, makePlan } from '../../support/plans.ts';

const task = (marker: string) => fakeTask(marker, { create: [`${marker}.txt`] });

function run(state: EngineState, ...events: EngineEvent[]): { state: EngineState; effects: EngineEffect[] } {
  let current = { state, effects: [] as EngineEffect[] };
  for (const event of events) current = step(current.state, event);
  return current;
}

const emitted = (effects: EngineEffect[]) => effects.flatMap((e) => (e.type === 'emit' ? [e.event] : []));

/** Three tasks over two hosts of one slot each (back-off 1 s). */
const start = () =>
  initialState(
    makePlan([task('A'), task('B'), task('C')]),
    {
      ...SIMULATION_DEFAULTS,
      concurrency: 2,
      schedule: 'continuous',
      hosts: [
        { name: 'a', slots: 1 },
        { name: 'b', slots: 1 },
      ],
      hostBackoffMs: 1000,
    },
    0,
  );

describe('a host fault, step by step', () => {
  it('places each start on a free slot, saying where in its event and its effect', () => {
    const started = run(start(), { type: 'tick', now: 0 });
    const starts = started.effects.flatMap((e) => (e.type === 'start-worker' ? [[e.task, e.place]] : []));
    expect(starts).toEqual([
      [0, { host: 'a', slot: 1 }],
      [1, { host: 'b', slot: 1 }],
    ]);
    expect(emitted(started.effects).flatMap((e) => (e.type === 'task-started' ? [[e.task, e.host, e.slot]] : []))).toEqual([
      [0, 'a', 1],
      [1, 'b', 1],
    ]);
    // Two slots, two attempts: the third task waits for one.
    expect(started.state.attempts.has(2)).toBe(false);
  });

  it("stops the host's attempt, ends it lost with no attempt spent, and gives the host nothing until its back-off ends", () => {
    const started = run(start(), { type: 'tick', now: 0 });
    const fault = run(started.state, hostFaultEvent('a', 'ssh exited 255 with no report', 10));
    expect(fault.effects).toContainEqual({ type: 'cancel-worker', task: 0 });
    expect(emitted(fault.effects).find((e) => e.type === 'host-down')).toMatchObject({
      host: 'a',
      reason: 'ssh exited 255 with no report',
      until: new Date(1010).toISOString(),
      faults: 1,
      lost: [0],
    });
    expect(fault.state.hosts![0]!.down).toEqual({ reason: 'ssh exited 255 with no report', since: 10, until: 1010, tried: false });
    // The same fault told again (another slot's channel) says nothing more.
    expect(emitted(run(fault.state, hostFaultEvent('a', 'silent for 30 s', 11)).effects)).toEqual([]);

    // Its worker stops: the attempt ends lost, its task pending with no attempt counted; nothing starts on a.
    const ended = run(fault.state, { type: 'worker-finished', task: 0, run: failedRun({ reason: 'interrupted' }), now: 12 });
    expect(ended.state.attempts.has(0)).toBe(false);
    expect(statusOf(ended.state.plan.tasks[0]!)).toBe('pending');
    expect(attemptsOf(ended.state.plan.tasks[0]!)).toBe(0);
    expect(emitted(ended.effects).find((e) => e.type === 'task-finished')).toMatchObject({
      task: 0,
      outcome: 'interrupted',
      reason: 'lost: its host a went down (ssh exited 255 with no report)',
    });
    expect(ended.effects.some((e) => e.type === 'start-worker')).toBe(false);
    // The run asks to wake when a is tried again.
    expect(ended.effects).toContainEqual({ type: 'wake', at: 1010 });

    // b's worker finishes: b's slot goes to the task a lost (the longest path first), not to a.
    const onB = run(
      ended.state,
      { type: 'worker-finished', task: 1, run: reported('COMPLETED: b'), now: 20 },
      { type: 'verified', task: 1, verification: passed(task('B')), now: 21 },
    );
    const again = onB.state.attempts.get(0) ?? onB.state.attempts.get(2);
    expect(again?.place).toEqual({ host: 'b', slot: 1 });

    // At 1010, a is tried again; a worker finishing there marks it up.
    const retried = run(onB.state, { type: 'tick', now: 1010 });
    const onA = [...retried.state.attempts.values()].find((attempt) => attempt.place?.host === 'a');
    expect(onA?.stage).toBe('running');
    const up = run(retried.state, { type: 'worker-finished', task: onA!.task, run: reported('COMPLETED: x'), now: 1100 });
    expect(emitted(up.effects).find((e) => e.type === 'host-up')).toMatchObject({ host: 'a' });
    expect(up.state.hosts![0]).toMatchObject({ down: null, faults: 0 });
  });

  it('ends a lost attempt whose checks were running when its verification comes back', () => {
    const started = run(start(), { type: 'tick', now: 0 }, { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 5 });
    expect(started.state.attempts.get(0)!.stage).toBe('verifying');
    const fault = run(started.state, hostFaultEvent('a', 'the disk is full', 6));
    expect(fault.effects).toContainEqual({ type: 'cancel-worker', task: 0 });
    const ended = run(fault.state, { type: 'verified', task: 0, verification: passed(task('A')), now: 7 });
    expect(ended.state.attempts.has(0)).toBe(false);
    expect(ended.effects).toContainEqual({ type: 'release-workspace', task: 0 });
    expect(statusOf(ended.state.plan.tasks[0]!)).toBe('pending');
    expect(attemptsOf(ended.state.plan.tasks[0]!)).toBe(0);
  });

  it('ends at once a paused attempt whose host goes down: the worktree it kept went with the host', () => {
    const limited: EngineEvent = {
      type: 'worker-finished',
      task: 0,
      run: { ...reported(''), outcome: { kind: 'failed', failure: { reason: 'rate-limited', message: 'API Error: 429' } }, sessionId: 's-0', progressed: true },
      now: 6,
    };
    const paused = run(start(), { type: 'tick', now: 0 }, { type: 'worker-served', task: 0, now: 5 }, limited);
    expect(paused.state.attempts.get(0)).toMatchObject({ stage: 'paused', place: { host: 'a', slot: 1 } });
    const fault = run(paused.state, hostFaultEvent('a', 'ssh exited 255 with no report', 7));
    expect(fault.state.attempts.has(0)).toBe(false);
    expect(fault.effects).toContainEqual({ type: 'release-workspace', task: 0 });
    expect(emitted(fault.effects).find((e) => e.type === 'task-finished')).toMatchObject({ task: 0, outcome: 'interrupted' });
    expect([statusOf(fault.state.plan.tasks[0]!), attemptsOf(fault.state.plan.tasks[0]!)]).toEqual(['pending', 0]);
  });
});
