// The events an effect's outcome becomes (core/engine/effect-results.ts), built one way for the
// headless engine, the in-session steps and the simulation: what each holds, that the step
// function takes them as the outcome of the effect it asked for, and that a failed record is told
// apart as a conflict (the work can never integrate: it runs again) or git failing (the run stops).

import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import {
  gatedEvent,
  recordedEvent,
  recordFailureOf,
  verifiedEvent,
  workerFinishedEvent,
  workerRefusedEvent,
  workerServedEvent,
  workspaceFailedEvent,
} from '../../src/core/engine/effect-results.ts';
import type { EffectOf } from '../../src/core/engine/driver.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import { err, ok } from '../../src/core/result.ts';
import { describeGitFailure, type GitFailure } from '../../src/core/integration/git-text.ts';
import { statusOf } from '../../src/core/plan/plan.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { StepRun, unmetEffects } from '../../src/run/session/driver.ts';
import { gitFailure, passed, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
// In the order a run meets them.

const task = (marker: string) => fakeTask(marker, { create: [`${marker}.txt`] });

function run(state: EngineState, ...events: EngineEvent[]): { state: EngineState; effects: EngineEffect[] } {
  let current = { state, effects: [] as EngineEffect[] };
  for (const event of events) current = step(current.state, event);
  return current;
}

const kinds = (effects: EngineEffect[]) => effects.map((e) => (e.type === 'emit' ? `emit:${e.event.type}` : e.type));

/** Two independent tasks, both verified and handed to the lane in one record. */
function recording(): EngineState {
  const plan = makePlan([task('A'), task('B')]);
  const start = initialState(plan, { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'rounds' }, 0);
  const state = run(
    start,
    { type: 'tick', now: 0 },
    workerFinishedEvent(0, reported('COMPLETED: a'), 1),
    verifiedEvent(0, passed(plan.tasks[0]!), 2),
    workerFinishedEvent(1, reported('COMPLETED: b'), 3),
    verifiedEvent(1, passed(plan.tasks[1]!), 4),
  );
  expect(kinds(state.effects)).toContain('record');
  return state.state;
}

describe('the events an effect becomes', () => {
  it('a record: its commit, none when nothing changed, or why it failed, told apart by the git step', () => {
    expect(recordedEvent([0, 1], ok('abc'), 7)).toEqual({ type: 'recorded', tasks: [0, 1], commit: 'abc', failure: null, now: 7 });
    expect(recordedEvent([0], ok(null), 7)).toEqual({ type: 'recorded', tasks: [0], commit: null, failure: null, now: 7 });
    const conflict: GitFailure = { step: 'integrate', exitCode: 1, stderr: 'a.txt changed on the tip' };
    const locked: GitFailure = { step: 'update-ref', exitCode: 1, stderr: 'fatal: cannot lock ref' };
    expect(recordedEvent([0], err(conflict), 7)).toEqual({
      type: 'recorded',
      tasks: [0],
      commit: null,
      failure: { kind: 'conflict', message: describeGitFailure(conflict) },
      now: 7,
    });
    expect(recordedEvent([0], err(locked), 7).failure).toEqual({ kind: 'git', message: 'git update-ref failed (exit 1): fatal: cannot lock ref' });
    expect(recordFailureOf(locked)).toEqual(recordedEvent([0], err(locked), 7).failure);
  });

  it('a gate run: its verdict as it came, a run stopped before one included, on the starting commit or on candidates', () => {
    expect(gatedEvent([2, 3], { passed: false, output: 'FAIL x', durationMs: 40 }, 9)).toEqual({
      type: 'gated',
      tasks: [2, 3],
      passed: false,
      output: 'FAIL x',
      durationMs: 40,
      now: 9,
    });
    expect(gatedEvent([], { passed: null, output: '', durationMs: 5 }, 9)).toMatchObject({ tasks: [], passed: null });
  });

  it('a worker, its verification and the lane: the step function takes each as the outcome of the effect it asked for', () => {
    const plan = makePlan([task('A')]);
    const start = initialState(plan, { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' }, 0);
    const started = run(start, { type: 'tick', now: 0 });
    expect(kinds(started.effects)).toEqual(['save', 'emit:task-started', 'start-worker']);
    // Served, then refused after it had done something: it is never stopped for it.
    const refused = run(started.state, workerServedEvent(0, 1), workerRefusedEvent(0, { kind: 'rate-limit', delayMs: 1000 }, true, 2));
    expect(kinds(refused.effects)).not.toContain('stop-worker');
    expect(refused.state.attempts.get(0)).toMatchObject({ stage: 'running', progressed: true, refused: true });
    const finished = run(refused.state, workerFinishedEvent(0, reported('COMPLETED: a'), 5));
    expect(kinds(finished.effects)).toEqual(['verify']);
    const verified = run(finished.state, verifiedEvent(0, passed(plan.tasks[0]!), 6));
    expect(kinds(verified.effects)).toEqual(['release-workspace', 'emit:task-finished', 'record']);
    const recorded = run(verified.state, recordedEvent([0], ok('abc'), 7));
    expect(recorded.state.plan.tasks[0]).toMatchObject({ status: 'completed', commit: 'abc' });
    expect(recorded.state.stop?.reason).toBe('all-done');
  });

  it('a worktree that could not be made ready: the task is pending again with no attempt counted, and the run stops', () => {
    const start = initialState(makePlan([task('A')]), { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous' }, 0);
    const failed = run(start, { type: 'tick', now: 0 }, workspaceFailedEvent(0, 'the setup command failed', 1));
    expect(statusOf(failed.state.plan.tasks[0]!)).toBe('pending');
    expect(failed.state.plan.tasks[0]!.attempts ?? 0).toBe(0);
    expect(failed.state.stop?.reason).toBe('setup-failed');
  });

  it('a conflicting record: the tasks run again from the tip as it is, no attempt counted, and the run goes on', () => {
    const conflicted = step(recording(), recordedEvent([0, 1], gitFailure('integrate', 'a.txt changed on the tip'), 5));
    const notices = conflicted.effects.flatMap((e) => (e.type === 'emit' && e.event.type === 'notice' ? [e.event.message] : []));
    expect(notices).toEqual([expect.stringMatching(/^could not integrate the verified work of tasks 0, 1: .*; they run again from the work integrated since/)]);
    expect(conflicted.state.stop).toBeNull();
    // Both start again at once, neither with an attempt spent.
    expect(kinds(conflicted.effects).filter((kind) => kind === 'start-worker')).toHaveLength(2);
    expect(conflicted.state.plan.tasks.map((t) => t.attempts ?? 0)).toEqual([0, 0]);
  });

  it('git failing while recording: the tasks are pending again saying why, and the run stops', () => {
    const failed = step(recording(), recordedEvent([0, 1], gitFailure('update-ref', 'fatal: cannot lock ref'), 5));
    expect(failed.state.stop?.reason).toBe('git-failed');
    expect(failed.state.plan.tasks.map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
    expect(kinds(failed.effects)).not.toContain('start-worker');
  });

  it("the session's carrier posts the same events, stamped with its clock", async () => {
    const state = recording();
    const failure = gitFailure('update-ref', 'fatal: cannot lock ref');
    const carrier = new StepRun(
      async () => {},
      { ...unmetEffects, record: async () => failure, verify: async () => passed(task('A')) },
      () => 42,
    );
    const record: EffectOf<'record'> = { type: 'record', tasks: [0, 1], round: 1, integrate: [], park: [], hold: [], drop: [] };
    // The event whose step asked for the effect (the notices' kind comes from it; these effects say none).
    const answering: EngineEvent = { type: 'integrate', now: 42 };
    expect(await carrier.record(record, state, answering)).toEqual([recordedEvent([0, 1], failure, 42)]);
    expect(await carrier.verify({ type: 'verify', task: 0 }, state, answering)).toEqual([verifiedEvent(0, passed(task('A')), 42)]);
  });
});
