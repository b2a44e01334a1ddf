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
import { attemptsOf, statusOf } from '../../../src/core/plan/plan.ts';
import { SIMULATION_DEFAULTS } from '../../../src/core/engine/simulation.ts';
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

describe('hosts of two accounts, step by step', () => {
  /** Four tasks: host a (1 slot) on this machine's account, host b (2 slots) on another; `limitWaitMs` as given. */
  const twoAccounts = (limitWaitMs: number) =>
    initialState(
      makePlan([task('A'), task('B'), task('C'), task('D')]),
      {
        ...SIMULATION_DEFAULTS,
        limitWaitMs,
        concurrency: 3,
        schedule: 'continuous',
        hosts: [
          { name: 'a', slots: 1 },
          { name: 'b', slots: 2, account: 'org-2/other@example.com' },
        ],
        hostBackoffMs: 1000,
      },
      0,
    );
  const HOUR = 3_600_000;
  /** Task 0's worker on b, served, then ended by b's account's usage limit (resetting in an hour). */
  const usageLimited = (now: number): EngineEvent => ({
    type: 'worker-finished',
    task: 0,
    run: {
      ...reported(''),
      outcome: { kind: 'failed', failure: { reason: 'rate-limited', message: 'Claude usage limit reached', resetAt: now + HOUR } },
      sessionId: 's-0',
      progressed: true,
    },
    now,
  });
  const places = (effects: EngineEffect[]) => effects.flatMap((e) => (e.type === 'start-worker' ? [[e.task, e.place?.host]] : []));

  it("holds only b's slots on b's account's usage limit: a keeps working, and the paused attempt resumes on b when it resets", () => {
    const started = run(twoAccounts(5 * HOUR), { type: 'tick', now: 0 });
    expect(places(started.effects)).toEqual([
      [0, 'b'],
      [1, 'a'],
      [2, 'b'],
    ]);
    const limited = run(started.state, { type: 'worker-served', task: 0, now: 5 }, usageLimited(10));
    expect(limited.state.attempts.get(0)).toMatchObject({ stage: 'paused', place: { host: 'b', slot: 1 } });
    const hold = emitted(limited.effects).find((e) => e.type === 'limit');
    expect(hold).toMatchObject({ change: 'hold', limit: 'usage-limit', hosts: ['b'], concurrency: 2, task: 0 });
    expect(hold?.type === 'limit' && hold.message).toMatch(/^the account of b \(not this machine's\): waiting for the usage limit to reset at /);
    // This machine's account heard nothing.
    expect(limited.state.limiter).toMatchObject({ refusals: 0, holdUntil: 0 });
    expect(limited.state.limiters?.get('org-2/other@example.com')).toMatchObject({ refusals: 1, holdUntil: 10 + HOUR, kind: 'usage-limit' });

    // b's other slot frees up: nothing starts there while b's account is held.
    const onB = run(
      limited.state,
      { type: 'worker-finished', task: 2, run: reported('COMPLETED: c'), now: 20 },
      { type: 'verified', task: 2, verification: passed(task('C')), now: 21 },
    );
    expect(places(onB.effects)).toEqual([]);
    // a's slot frees up: the last task goes there, b's free slot notwithstanding.
    const onA = run(
      onB.state,
      { type: 'worker-finished', task: 1, run: reported('COMPLETED: b'), now: 30 },
      { type: 'verified', task: 1, verification: passed(task('B')), now: 31 },
    );
    expect(places(onA.effects)).toEqual([[3, 'a']]);
    // The run waits for b's reset, not past it: then the paused attempt resumes on b.
    expect(onA.effects).toContainEqual({ type: 'wake', at: 10 + HOUR });
    const reset = run(onA.state, { type: 'tick', now: 10 + HOUR });
    expect(emitted(reset.effects).find((e) => e.type === 'task-resumed')).toMatchObject({ task: 0, host: 'b', slot: 1 });
  });

  it("goes on on a when b's account would be waited for past --limit-wait: b's paused attempt ends, its task starts on a, no attempt spent", () => {
    const started = run(twoAccounts(60_000), { type: 'tick', now: 0 });
    const limited = run(started.state, { type: 'worker-served', task: 0, now: 5 }, usageLimited(10));
    // Not paused: b's account is held longer than the run waits, and a's is not.
    expect(limited.state.stop).toBeNull();
    expect(limited.state.attempts.has(0)).toBe(false);
    expect(emitted(limited.effects).find((e) => e.type === 'task-finished')).toMatchObject({ task: 0, outcome: 'requeued' });
    expect([statusOf(limited.state.plan.tasks[0]!), attemptsOf(limited.state.plan.tasks[0]!)]).toEqual(['pending', 0]);
    const onA = run(
      limited.state,
      { type: 'worker-finished', task: 1, run: reported('COMPLETED: b'), now: 30 },
      { type: 'verified', task: 1, verification: passed(task('B')), now: 31 },
    );
    expect(places(onA.effects)).toEqual([[0, 'a']]);

    // a's account held past --limit-wait too: now no account is worth waiting for, and the run stops, resumable.
    const both = run(onA.state, {
      type: 'worker-finished',
      task: 0,
      run: { ...failedRun({ reason: 'rate-limited', message: 'Claude usage limit reached', resetAt: 40 + HOUR }) },
      now: 40,
    });
    expect(both.state.stop).toMatchObject({ reason: 'limited' });
  });

  it('says nothing of accounts with hosts of one account only', () => {
    const one = initialState(
      makePlan([task('A')]),
      { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous', hosts: [{ name: 'b', slots: 1, account: 'org-2/other@example.com' }] },
      0,
    );
    expect(one.limiters).toBeUndefined();
    const refused = run(
      one,
      { type: 'tick', now: 0 },
      { type: 'worker-refused', task: 0, refusal: { kind: 'rate-limit', delayMs: 500 }, progressed: false, now: 1 },
    );
    const limit = emitted(refused.effects).find((e) => e.type === 'limit');
    expect(limit).toBeDefined();
    expect(limit).not.toHaveProperty('hosts');
  });
});
