// The one driver (core/engine/driver.ts): the loop every run drives the step function with, run at
// once (the simulation) or awaited (headless, a session's step), and the carrier of set-up.

import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import { type Carried, drive, driveNow, type EffectCarrier, emitsInto, EventQueue } from '../../src/core/engine/driver.ts';
import { recordedEvent, verifiedEvent, workerFinishedEvent } from '../../src/core/engine/effect-results.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import type { RunEventBody } from '../../src/core/report/events.ts';
import { ok } from '../../src/core/result.ts';
import { statusOf } from '../../src/core/plan/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { noFindings } from '../../src/core/attempt/transition.ts';
import { passed, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, blockedBy: number[] = []) => fakeTask(marker, { create: [`${marker}.txt`], blockedBy });

/** Two independent tasks, both may run at once. */
const twoTasks = (): EngineState => initialState(makePlan([task('A'), task('B')]), { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' }, 0);

/**
 * A carrier whose workers complete, whose work passes and records at once, each outcome one ms
 * after the event it answers; it logs each effect with the event that asked for it. `later`: each
 * member answers with a promise (as a carrier that awaits its I/O does).
 */
function scripted(later: boolean): { carrier: EffectCarrier; log: string[] } {
  const log: string[] = [];
  const answer =
    (outcome: (effect: never, state: EngineState, answering: EngineEvent) => readonly EngineEvent[]) =>
    (effect: EngineEffect, state: EngineState, answering: EngineEvent): Carried => {
      log.push(`${answering.type}→${effect.type === 'emit' ? `emit:${effect.event.type}` : effect.type}`);
      const events = outcome(effect as never, state, answering);
      return later ? Promise.resolve(events) : events;
    };
  const none = () => [];
  const carrier: EffectCarrier = {
    save: answer(none),
    emit: answer(none),
    startWorker: answer((effect: { task: number }, _state, answering) => [
      workerFinishedEvent(effect.task, reported(`COMPLETED: ${effect.task}`), answering.now + 1),
    ]),
    stopWorker: answer(none),
    cancelWorker: answer(none),
    verify: answer((effect: { task: number }, state, answering) => [verifiedEvent(effect.task, passed(state.plan.tasks[effect.task]!), answering.now + 1)]),
    releaseWorkspace: answer(none),
    record: answer((effect: { tasks: number[]; round: number }, _state, answering) => [
      recordedEvent(effect.tasks, ok(`round-${effect.round}`), answering.now + 1),
    ]),
    gate: answer(none),
    wake: answer(none),
    abortWorkers: answer(none),
    finish: answer(none),
  };
  return { carrier, log };
}

describe('the one driver', () => {
  it('runs the same at once and awaited: the same effects, in the same order, to the same end', async () => {
    const now = scripted(false);
    const atOnce = driveNow(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), now.carrier);
    const awaited = scripted(true);
    const driven = await drive(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), awaited.carrier);
    expect(atOnce.finish?.stop.reason).toBe('all-done');
    expect(driven.finish).toEqual(atOnce.finish);
    expect(driven.state.plan).toEqual(atOnce.state.plan);
    expect(awaited.log).toEqual(now.log);
    expect(now.log.at(-1)).toBe('recorded→finish');
  });

  it('carries out the effects of one step before the next event, and posts what they lead to after, in order', () => {
    const { carrier, log } = scripted(false);
    driveNow(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), carrier);
    const answered = log.map((line) => line.split('→')[0]);
    // Both workers start on the tick; A's finish is handled first, as it was posted first.
    expect(log.filter((line) => line.startsWith('tick→'))).toEqual([
      'tick→save',
      'tick→emit:task-started',
      'tick→start-worker',
      'tick→emit:task-started',
      'tick→start-worker',
    ]);
    expect(answered.indexOf('worker-finished')).toBe(log.filter((line) => line.startsWith('tick→')).length);
    expect(log).toContain('worker-finished→verify');
  });

  it("writes the plan once for a step's saves: they write the same plan", () => {
    const asked = step(twoTasks(), { type: 'tick', now: 0 }).effects.filter((effect) => effect.type === 'save');
    expect(asked).toHaveLength(2);
    const { carrier, log } = scripted(false);
    driveNow(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), carrier);
    expect(log.filter((line) => line === 'tick→save')).toHaveLength(1);
  });

  it('ends when its inbox has nothing left, the run not finished (a session step hands the tasks to the lead)', () => {
    const { carrier } = scripted(false);
    const left = driveNow(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), { ...carrier, startWorker: () => [] });
    expect(left.finish).toBeNull();
    expect(left.state.plan.tasks.map(statusOf)).toEqual(['in_progress', 'in_progress']);
  });

  it('run at once, refuses a carrier that must be awaited (a bug)', () => {
    const { carrier } = scripted(true);
    expect(() => driveNow(twoTasks(), new EventQueue([{ type: 'tick', now: 0 }]), carrier)).toThrow(/driveNow/);
  });

  it('set-up: what it skips is kept for the driver to say; an effect of anything else is a bug', () => {
    const chain = initialState(makePlan([task('A'), task('B', [0])]), { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' }, 0);
    const emitted: RunEventBody[] = [];
    const setUp = driveNow(
      chain,
      new EventQueue([{ type: 'set-up', findings: { ...noFindings(), blocked: [{ task: 0, result: 'an assumption failed' }] }, now: 0 }]),
      emitsInto(emitted),
    );
    expect(setUp.state.plan.tasks.map(statusOf)).toEqual(['blocked', 'skipped']);
    expect(emitted).toEqual([expect.objectContaining({ type: 'task-skipped', task: 1 })]);
    expect(() => driveNow(chain, new EventQueue([{ type: 'tick', now: 0 }]), emitsInto([]))).toThrow(/starts nothing asked for save/);
  });
});
