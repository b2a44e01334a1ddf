// What the in-session steps report, worded from the step function's state and the events a step
// emitted: the merge queue's part, why `next` handed nothing out, the ready tasks held back by an
// overlap, the retries, the breaker and the round's one-line summary.

import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import type { Attempt } from '../../src/core/engine/attempt.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import type { RunEventBody } from '../../src/core/report/events.ts';
import type { Task } from '../../src/core/plan/plan.ts';
import {
  breakerReport,
  gateReport,
  integratedBy,
  nextStall,
  overlapping,
  retriesOf,
  roundSummary,
  setAsideBy,
  skippedBy,
} from '../../src/core/engine/session-report.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const GATE = { command: 'npm test', batchSize: 4 };

/** A session's state of `tasks` (each with its status), with or without a gate. */
function stateOf(tasks: Array<[Task['status'], { blockedBy?: number[]; modify?: string[] }?]>, gate = false): EngineState {
  const plan = makePlan(
    tasks.map(([status, spec = {}], i) => ({ ...fakeTask(String(i), { create: [`${i}.txt`], ...spec }), ...(status !== undefined ? { status } : {}) })),
  );
  return initialState(plan, { ...SIMULATION_DEFAULTS, concurrency: 4, schedule: 'rounds', driver: 'session', gate: gate ? GATE : null }, 0);
}

/** A candidate of the merge queue in `stage`. */
const candidate = (task: number, stage: 'queued' | 'gating'): [number, Attempt] => [
  task,
  {
    task,
    number: 1,
    stage,
    decision: { kind: 'completed', result: 'done' },
    work: { base: 'b'.repeat(40), entries: [] },
    verifiedBy: { kind: 'earlier-run', held: true },
  },
];

const finishedTask = (task: number, outcome: 'retry' | 'failed' | 'completed', reason?: string): RunEventBody => ({
  type: 'task-finished',
  task,
  subject: `task ${task}`,
  attempt: 1,
  outcome,
  ...(reason !== undefined ? { reason } : {}),
  durationMs: 0,
  usage: 'unknown',
  logPath: '',
  permissionDenials: 'unknown',
});

describe('gateReport', () => {
  it('is off without a gate, whatever the state says', () => {
    const state = { ...stateOf([['pending']]), baseline: 'testing' as const };
    expect(gateReport({ config: null, current: null }, state, [], { notices: ['no gate'] })).toEqual({
      state: 'off',
      command: null,
      baseline: 'none',
      testing: [],
      waiting: [],
      runs: [],
      blamed: [],
      flakes: [],
      notices: ['no gate'],
    });
  });

  it('names the run under way, the candidates waiting after it, the runs this step saw, the culprit blamed and the flake', () => {
    const base = stateOf([['in_progress'], ['in_progress'], ['in_progress'], ['in_progress']], true);
    const state: EngineState = { ...base, baseline: 'passed', attempts: new Map([candidate(1, 'gating'), candidate(2, 'queued'), candidate(3, 'queued')]) };
    const events: RunEventBody[] = [
      { type: 'gate-finished', tasks: [0, 2], passed: false, durationMs: 9, integrated: [], culprit: 0, flake: false, output: 'FAIL a' },
      finishedTask(0, 'retry', `first line\n${'x'.repeat(2000)}`),
      { type: 'gate-finished', tasks: [2], passed: true, durationMs: 4, integrated: [2], culprit: null, flake: true, output: '' },
    ];
    const report = gateReport({ config: GATE, current: { tasks: [1, 3] } }, state, events);
    expect(report).toMatchObject({
      state: 'running',
      command: 'npm test',
      baseline: 'passed',
      testing: [1, 3],
      // Candidate 3 is under test: only 2 waits.
      waiting: [2],
      runs: [
        { tasks: [0, 2], passed: false, durationMs: 9, integrated: [], culprit: 0, flake: false },
        { tasks: [2], passed: true, durationMs: 4, integrated: [2], culprit: null, flake: true },
      ],
      flakes: [2],
      notices: [],
    });
    // The runs go without their output; the culprit's reason is clipped, its first line kept.
    expect(report.runs[0]).not.toHaveProperty('output');
    expect(report.blamed).toHaveLength(1);
    expect(report.blamed[0]).toMatchObject({ index: 0, subject: 'task 0', outcome: 'retry' });
    expect(report.blamed[0]!.reason.length).toBeLessThanOrEqual(600);
    expect(report.blamed[0]!.reason.startsWith('first line')).toBe(true);
  });

  it('reports the baseline as running until it has passed or failed, and idle with nothing under test', () => {
    const gate = { config: GATE, current: null };
    for (const [baseline, reported] of [
      ['none', 'none'],
      ['due', 'running'],
      ['testing', 'running'],
      ['passed', 'passed'],
      ['failed', 'failed'],
    ] as const) {
      const report = gateReport(gate, { ...stateOf([['pending']], true), baseline }, []);
      expect([report.state, report.baseline]).toEqual(['idle', reported]);
    }
  });

  it('blames no one when the culprit ended otherwise in this step', () => {
    const state = stateOf([['pending']], true);
    const events: RunEventBody[] = [
      { type: 'gate-finished', tasks: [0], passed: false, durationMs: 1, integrated: [], culprit: 0, flake: false, output: '' },
      finishedTask(0, 'completed'),
    ];
    expect(gateReport({ config: GATE, current: null }, state, events).blamed).toEqual([]);
  });
});

describe('nextStall', () => {
  const step = { handedOut: 0, running: [] as number[], now: 0 };

  it('is none when the step handed something out', () => {
    expect(nextStall(stateOf([['pending']]), { ...step, handedOut: 1 })).toEqual({ stall: 'none', stuck: [] });
  });

  it('waits for the gate on the starting commit before anything else', () => {
    expect(nextStall({ ...stateOf([['pending']], true), baseline: 'testing' }, { ...step, running: [0] })).toEqual({ stall: 'gate', stuck: [] });
  });

  it('waits for tasks running', () => {
    expect(nextStall(stateOf([['in_progress'], ['pending', { blockedBy: [0] }]]), { ...step, running: [0] })).toEqual({ stall: 'running', stuck: [] });
  });

  it('waits for a usage limit to reset while a task is ready', () => {
    const state = stateOf([['pending']]);
    const held = { ...state, limiter: { ...state.limiter, holdUntil: 100 } };
    expect(nextStall(held, { ...step, now: 50 })).toEqual({ stall: 'limit', stuck: [] });
    expect(nextStall(held, { ...step, now: 100 })).toEqual({ stall: 'none', stuck: [] });
  });

  it('names the pending tasks that can never start', () => {
    expect(nextStall(stateOf([['failed'], ['pending', { blockedBy: [0] }]]), step)).toEqual({ stall: 'deadlock', stuck: [1] });
  });

  it('names the tasks awaiting approval that everything left waits on', () => {
    expect(nextStall(stateOf([['awaiting_approval'], ['pending', { blockedBy: [0] }]]), step)).toEqual({ stall: 'awaiting_approval', stuck: [0] });
  });

  it('names the work awaiting approval that a ready task overlaps', () => {
    const state = stateOf([
      ['awaiting_approval', { modify: ['shared.txt'] }],
      ['pending', { modify: ['shared.txt'] }],
    ]);
    expect(nextStall(state, step)).toEqual({ stall: 'awaiting_approval', stuck: [0] });
  });

  it('names the ready tasks whose blockers have not landed', () => {
    const state = { ...stateOf([['completed'], ['pending', { blockedBy: [0] }]]), unlanded: new Set([0]) };
    expect(nextStall(state, step)).toEqual({ stall: 'landing', stuck: [1] });
  });

  it('names the tasks awaiting approval when nothing else is left: the run is not done until a person decides', () => {
    expect(nextStall(stateOf([['completed'], ['awaiting_approval'], ['failed']]), step)).toEqual({ stall: 'awaiting_approval', stuck: [1] });
  });

  it('is done when nothing is ready and nothing waits', () => {
    expect(nextStall(stateOf([['completed'], ['completed']]), step)).toEqual({ stall: 'done', stuck: [] });
  });
});

describe('overlapping', () => {
  it('lists the ready tasks held back by work under way, with what they overlap, at most as many as asked', () => {
    const base = stateOf([['in_progress', { modify: ['x'] }], ['pending', { modify: ['x'] }], ['pending', { modify: ['x'] }], ['pending']]);
    const state: EngineState = { ...base, attempts: new Map([[0, { task: 0, number: 1, stage: 'running' }]]) };
    expect(overlapping(state, 20)).toEqual([
      { index: 1, subject: 'task 1', overlapsWith: [0] },
      { index: 2, subject: 'task 2', overlapsWith: [0] },
    ]);
    expect(overlapping(state, 1)).toHaveLength(1);
  });
});

describe("finalize's report", () => {
  it('retries name the next attempt and a clipped reason', () => {
    const results = [
      { index: 0, subject: 'a', outcome: 'retry', attempt: 1, reason: 'r'.repeat(1000) },
      { index: 1, subject: 'b', outcome: 'completed', attempt: 1 },
      { index: 2, subject: 'c', outcome: 'retry', attempt: 2 },
    ];
    const retries = retriesOf(results);
    expect(retries.map((r) => [r.index, r.attempt])).toEqual([
      [0, 2],
      [2, 3],
    ]);
    expect(retries[0]!.reason.length).toBe(300);
    expect(retries[1]!.reason).toBe('');
  });

  it('the breaker as it tripped in the step, else where it stands', () => {
    const skipped: RunEventBody = { type: 'task-skipped', task: 3, subject: 'd', rootCause: 1, reason: 'blocker failed' };
    expect(breakerReport([skipped, { type: 'breaker', pendingCount: 4, wouldBeSkipped: 2 }], 6, 1)).toEqual({
      trip: true,
      totalTasks: 6,
      pendingCount: 4,
      wouldBeSkipped: 2,
    });
    expect(breakerReport([skipped], 6, 3)).toEqual({ trip: false, totalTasks: 6, pendingCount: 3, wouldBeSkipped: 1 });
  });

  it('the summary counts what the round settled, and verified work as completed overall', () => {
    const counts = { pending: 2, in_progress: 1, completed: 3, failed: 0, blocked: 0, awaiting_approval: 1, skipped: 1 };
    const figures = {
      round: 4,
      settled: [{ outcome: 'completed' }, { outcome: 'awaiting_approval' }, { outcome: 'retry' }],
      retries: 1,
      skipped: 1,
      setAside: [] as number[],
      tripped: true,
      counts,
      verifiedWaiting: 1,
      totalTasks: 8,
    };
    expect(roundSummary(figures)).toBe('Round 4: 2/3 tasks completed (4/8 overall); 1 to retry, 1 skipped, circuit breaker tripped');
    expect(roundSummary({ ...figures, retries: 0, skipped: 0, tripped: false, verifiedWaiting: 0 })).toBe('Round 4: 2/3 tasks completed (3/8 overall)');
    expect(roundSummary({ ...figures, retries: 0, skipped: 0, tripped: false, setAside: [5] })).toBe(
      'Round 4: 2/3 tasks completed (4/8 overall); task 5 changed files outside its declared files, set aside (its warnings name them and how to read them back)',
    );
    expect(roundSummary({ ...figures, retries: 0, skipped: 0, tripped: false, setAside: [2, 5] })).toContain(
      'tasks 2 and 5 changed files outside their declared files, set aside (their warnings',
    );
  });

  it('names the tasks whose attempt set files aside', () => {
    const finished = (task: number, setAside?: { paths: string[]; commit?: string }): RunEventBody => ({
      type: 'task-finished',
      task,
      subject: `t${task}`,
      attempt: 1,
      outcome: 'completed',
      durationMs: 0,
      usage: 'unknown',
      logPath: '',
      permissionDenials: 'unknown',
      ...(setAside !== undefined ? { setAside } : {}),
    });
    expect(setAsideBy([finished(0), finished(1, { paths: ['a'], commit: 'c'.repeat(40) }), finished(2, { paths: ['b'] })])).toEqual([1, 2]);
  });
});

describe('what a step integrated and skipped', () => {
  it('the tasks of every round committed, in order, and the last commit made', () => {
    const events: RunEventBody[] = [
      { type: 'round-committed', round: 1, tasks: [3, 1], commit: 'c1' },
      { type: 'round-committed', round: 2, tasks: [2], commit: null },
    ];
    expect(integratedBy(events)).toEqual({ commit: 'c1', tasks: [1, 2, 3] });
    expect(integratedBy([])).toEqual({ commit: null, tasks: [] });
  });

  it('the tasks skipped, with the task whose failure skipped each', () => {
    expect(skippedBy([{ type: 'task-skipped', task: 2, subject: 'c', rootCause: 0, reason: 'x' }, finishedTask(0, 'failed')])).toEqual([
      { index: 2, subject: 'c', rootCause: 0 },
    ]);
  });
});
