// A person's review sent back to the worker (core/plan/review.ts, `plan revise`): a round opens on a task
// awaiting approval, its attempts start from the parked work with the reviewer's words and spend
// none of the task's, and it ends parked again or, its attempts used up, with the earlier work
// awaiting approval again. And a candidate the gate blamed retries from its own work.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import type { EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import type { Decision } from '../../src/core/attempt/finalize.ts';
import { reviseTasks } from '../../src/core/attempt/interventions.ts';
import { attemptsOf, type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { WORK_SO_FAR_MAX, workerPrompt } from '../../src/core/attempt/prompt.ts';
import { describeReviews, openReview } from '../../src/core/plan/review.ts';
import { SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { applyDecision } from '../../src/core/attempt/transition.ts';
import { passed, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const PARKED = { commit: 'c'.repeat(40), base: 'b'.repeat(40) };
const FEEDBACK = 'also handle the empty string';
const AT = '2026-11-29T11:00:00.000Z';

/** Task 0 awaits approval after one attempt; task 1 depends on it. */
function awaiting(): Plan {
  const plan = makePlan([fakeTask('A', { create: ['a.txt'], gate: 'human-approval' }), fakeTask('B', { create: ['b.txt'], blockedBy: [0] })]);
  plan.tasks[0] = { ...plan.tasks[0]!, status: 'awaiting_approval', attempts: 1, result: 'wrote a' };
  return plan;
}

const revise = (plan: Plan, feedback = FEEDBACK, maxRounds = 3) => reviseTasks(plan, [0], { feedback, at: AT, parked: new Map([[0, PARKED]]), maxRounds });

function revised(): Plan {
  const result = revise(awaiting());
  if (!result.ok) throw new Error(result.error.join('; '));
  return result.value.plan;
}

describe('reviseTasks', () => {
  it('opens a round: pending, attempts counted from 0 in the round, the parked work and the words recorded; the input untouched', () => {
    const before = awaiting();
    const snapshot = structuredClone(before);
    const result = revise(before, `  ${FEEDBACK}\n`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(before).toEqual(snapshot);
    const task = result.value.plan.tasks[0]!;
    expect(task).toMatchObject({ status: 'pending', attempts: 0, result: 'wrote a' });
    expect(task.reviews).toEqual([{ at: AT, feedback: FEEDBACK, ...PARKED, result: 'wrote a', outcome: 'open', attemptsBefore: 1 }]);
    expect(result.value.changes).toEqual([
      expect.objectContaining({ task: 0, from: 'awaiting_approval', to: 'pending', note: expect.stringContaining('review round 1') }),
    ]);
    // Its dependant keeps waiting.
    expect(statusOf(result.value.plan.tasks[1]!)).toBe('pending');
  });

  it('refuses, one line each, a task not awaiting approval, one with nothing parked, and one past its rounds', () => {
    const plan = awaiting();
    expect(reviseTasks(plan, [1], { feedback: FEEDBACK, at: AT, parked: new Map(), maxRounds: 3 })).toEqual({
      ok: false,
      error: [expect.stringMatching(/^cannot revise task 1 \(task B\): it is pending; .*: it has no work to review yet/)],
    });
    expect(reviseTasks(plan, [0], { feedback: FEEDBACK, at: AT, parked: new Map([[0, null]]), maxRounds: 3 })).toEqual({
      ok: false,
      error: [expect.stringContaining('none of its work is parked')],
    });
    const full = {
      ...plan,
      tasks: [{ ...plan.tasks[0]!, reviews: [{ at: AT, feedback: 'x', ...PARKED, outcome: 'parked' as const, attemptsBefore: 1 }] }, plan.tasks[1]!],
    };
    expect(revise(full, FEEDBACK, 1)).toEqual({ ok: false, error: [expect.stringContaining('it had 1 review round, the most a task may have')] });
    expect(revise(full, FEEDBACK, 2).ok).toBe(true);
    expect(revise(plan, ' \n')).toEqual({ ok: false, error: [expect.stringContaining("revise needs the reviewer's words")] });
  });
});

describe('reviseTasks on several tasks', () => {
  it('all or nothing, for any list of numbers: refused exactly when one cannot be revised, naming each such task once; else as one at a time', () => {
    const statuses = ['awaiting_approval', 'pending', 'failed', 'completed'] as const;
    const taskSpec = fc.record({ status: fc.constantFrom(...statuses), rounds: fc.nat(2), parked: fc.boolean() });
    fc.assert(
      fc.property(
        fc.array(taskSpec, { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: -1, max: 5 }), { minLength: 1, maxLength: 5 }),
        (specs, indices) => {
          const done = { at: AT, feedback: 'x', ...PARKED, outcome: 'parked' as const, attemptsBefore: 1 };
          const plan = makePlan(
            specs.map((spec, i) => ({
              ...fakeTask(`T${i}`, { create: [`t${i}.txt`], gate: 'human-approval' }),
              status: spec.status,
              attempts: 1,
              ...(spec.rounds > 0 ? { reviews: Array.from({ length: spec.rounds }, () => done) } : {}),
            })),
          );
          const parked = new Map(specs.map((spec, i) => [i, spec.parked ? PARKED : null] as const));
          const revision = { feedback: FEEDBACK, at: AT, parked, maxRounds: 2 };
          const revisable = (i: number) => i >= 0 && i < specs.length && specs[i]!.status === 'awaiting_approval' && specs[i]!.rounds < 2 && specs[i]!.parked;
          const result = reviseTasks(plan, indices, revision);
          const refused = new Set(indices.filter((i) => !revisable(i)));
          // One line per task refused, or the plan each revised in turn makes.
          const oneAtATime = (current: Plan, i: number): Plan => {
            const one = reviseTasks(current, [i], revision);
            if (!one.ok) throw new Error(one.error.join('; '));
            return one.value.plan;
          };
          if (refused.size > 0) expect(result.ok ? [] : result.error).toHaveLength(refused.size);
          else expect(result.ok ? result.value.plan : null).toEqual([...new Set(indices)].reduce(oneAtATime, plan));
          if (!result.ok) return;
          for (const i of new Set(indices)) expect(openReview(result.value.plan.tasks[i]!)).toMatchObject({ feedback: FEEDBACK, attemptsBefore: 1 });
        },
      ),
    );
  });
});

describe('a round ends', () => {
  it('parked: the revision awaits approval, the task keeps the attempts it had, the round its own', () => {
    const plan = revised();
    applyDecision(plan, 0, { kind: 'retry', failure: 'a check failed' });
    expect(plan.tasks[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expect(openReview(plan.tasks[0]!)).not.toBeNull();
    applyDecision(plan, 0, { kind: 'awaiting_approval', result: 'wrote a, empty string too' });
    expect(plan.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, result: 'wrote a, empty string too' });
    expect(plan.tasks[0]!.reviews).toEqual([expect.objectContaining({ outcome: 'parked', attempts: 2 })]);
    expect(describeReviews(plan.tasks[0]!)).toEqual([
      `review round 1 (${AT}): revised, 2 attempts; the revision awaits approval — asked: ${JSON.stringify(FEEDBACK)}`,
    ]);
  });

  it('failed: the earlier work awaits approval again with its result and the failure; nothing is skipped', () => {
    const plan = revised();
    const applied = applyDecision(plan, 0, { kind: 'failed', failure: 'the test still fails' });
    expect(applied.cascade).toBeUndefined();
    expect(plan.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, result: 'wrote a' });
    expect(plan.tasks[0]!.reviews).toEqual([expect.objectContaining({ outcome: 'failed', attempts: 1, failure: 'the test still fails' })]);
    expect(plan.tasks.map(statusOf)).toEqual(['awaiting_approval', 'pending']);
    const blocked = revised();
    applyDecision(blocked, 0, { kind: 'blocked', reason: 'needs c.txt' });
    expect(blocked.tasks[0]!.reviews![0]).toMatchObject({ outcome: 'failed', failure: 'BLOCKED: needs c.txt' });
  });

  it('whatever its attempts decide, the task ends the round with the attempts it had before it', () => {
    const ending = fc.constantFrom<Decision>(
      { kind: 'awaiting_approval', result: 'revised' },
      { kind: 'failed', failure: 'no' },
      { kind: 'blocked', reason: 'stuck' },
    );
    const between = fc.constantFrom<Decision>({ kind: 'retry', failure: 'again' }, { kind: 'interrupted' }, { kind: 'requeued', reason: 'limit' });
    fc.assert(
      fc.property(fc.array(between, { maxLength: 6 }), ending, fc.nat(5), (middle, last, before) => {
        const plan = revised();
        plan.tasks[0]!.reviews![0]!.attemptsBefore = before;
        for (const decision of middle) applyDecision(plan, 0, decision);
        expect(openReview(plan.tasks[0]!)).not.toBeNull();
        applyDecision(plan, 0, last);
        const task = plan.tasks[0]!;
        expect(statusOf(task)).toBe('awaiting_approval');
        expect(attemptsOf(task)).toBe(before);
        expect(task.reviews![0]!.attempts).toBe(middle.filter((d) => d.kind === 'retry').length + 1);
        expect(statusOf(plan.tasks[1]!)).toBe('pending');
      }),
    );
  });
});

describe("a revision's prompt", () => {
  it("carries the reviewer's words verbatim in a section of their own, and the work so far", () => {
    const plan = revised();
    plan.tasks[0]!.reviews![0]!.feedback = 'also handle the empty string\nand rename `f` to `parse`';
    const prompt = workerPrompt(plan, 0, { maxAttempts: 3, workSoFar: 'diff --git a/a.txt b/a.txt\n+a\n' });
    expect(prompt).toContain(
      '## Changes requested in review\n\nA person reviewed the work done on this task so far and asks for these changes, in their words:\n\n> also handle the empty string\n> and rename `f` to `parse`\n',
    );
    expect(prompt).toContain('## The work so far\n\nYour workspace already holds the work under review: edit those files rather than starting over.');
    expect(prompt).toContain('```diff\ndiff --git a/a.txt b/a.txt\n+a\n```');
    // The round's first attempt: no retry section.
    expect(prompt).not.toContain('## Retry');
  });

  it('a retry within the round says so, and starts again from the work so far; a long diff is clipped', () => {
    const plan = revised();
    applyDecision(plan, 0, { kind: 'retry', failure: 'a check failed' });
    const prompt = workerPrompt(plan, 0, { maxAttempts: 3, workSoFar: `${'+x\n'.repeat(20_000)}` });
    expect(prompt).toContain('This is attempt 2 of 3. The previous attempt did not pass:\n\na check failed');
    expect(prompt).toContain('The files of the previous attempt were restored to the work so far (below), so start again from there.');
    expect(prompt).toContain('## Changes requested in review');
    expect(prompt.length).toBeLessThan(WORK_SO_FAR_MAX + 5_000);
  });

  it('a task in no review has neither section', () => {
    const prompt = workerPrompt(awaiting(), 1, { maxAttempts: 3 });
    expect(prompt).not.toContain('## Changes requested in review');
    expect(prompt).not.toContain('## The work so far');
  });
});

function run(state: EngineState, ...events: EngineEvent[]): { state: EngineState; effects: EngineEffect[] } {
  let current = { state, effects: [] as EngineEffect[] };
  for (const event of events) current = step(current.state, event);
  return current;
}
const startOf = (effects: EngineEffect[]) => effects.find((e): e is Extract<EngineEffect, { type: 'start-worker' }> => e.type === 'start-worker');
const emitted = (effects: EngineEffect[], type: string) => effects.flatMap((e) => (e.type === 'emit' && e.event.type === type ? [e.event] : []));

describe('the step function', () => {
  const config = { ...SIMULATION_DEFAULTS, concurrency: 2, schedule: 'continuous' as const };

  it("starts a round's attempts from the parked work, parks the revision, and says the round ended; the dependant keeps waiting", () => {
    const started = run(initialState(revised(), config, 0), { type: 'tick', now: 0 });
    expect(startOf(started.effects)).toMatchObject({ task: 0, attempt: 1, from: PARKED });
    expect(emitted(started.effects, 'task-started')).toEqual([expect.objectContaining({ task: 0, review: { round: 1, feedback: FEEDBACK } })]);
    expect(started.state.attempts.has(1)).toBe(false);

    const failedOnce = run(started.state, { type: 'worker-finished', task: 0, run: reported('FAILED: not yet'), now: 1 });
    // Retried within the round, from the parked work again.
    expect(startOf(failedOnce.effects)).toMatchObject({ task: 0, attempt: 2, from: PARKED });

    const parked = run(
      failedOnce.state,
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: empty string too'), now: 2 },
      { type: 'verified', task: 0, verification: passed(fakeTask('A', { create: ['a.txt'] })), now: 3 },
    );
    expect(parked.effects.find((e) => e.type === 'record')).toMatchObject({ park: [{ task: 0 }], integrate: [] });
    const recorded = run(parked.state, { type: 'recorded', tasks: [0], commit: null, failure: null, now: 4 });
    expect(recorded.state.plan.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, result: 'empty string too' });
    expect(emitted(recorded.effects, 'review-ended')).toEqual([{ type: 'review-ended', task: 0, subject: 'task A', round: 1, outcome: 'parked', attempts: 2 }]);
    expect(recorded.state.stop?.reason).toBe('awaiting_approval');
  });

  it('a round that uses up its attempts puts the earlier work back to awaiting approval, with the failure', () => {
    const one = { ...config, maxAttempts: 1 };
    const ended = run(initialState(revised(), one, 0), { type: 'tick', now: 0 }, { type: 'worker-finished', task: 0, run: reported('FAILED: cannot'), now: 1 });
    expect(ended.state.plan.tasks[0]).toMatchObject({ status: 'awaiting_approval', attempts: 1, result: 'wrote a' });
    expect(emitted(ended.effects, 'review-ended')).toEqual([
      expect.objectContaining({ outcome: 'failed', attempts: 1, failure: 'the worker reported FAILED: cannot' }),
    ]);
    expect(emitted(ended.effects, 'task-skipped')).toEqual([]);
  });

  it('a candidate the gate blamed retries from its own work, once; the retry after that starts from the tip', () => {
    const gated = { ...config, concurrency: 1, gate: { batchSize: 1 }, speculate: 0 };
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const verification = passed(plan.tasks[0]!);
    const work = verification.ok ? verification.value.work : null;
    const held = run(
      initialState(plan, gated, 0),
      { type: 'tick', now: 0 },
      { type: 'gated', tasks: [], passed: true, output: '', durationMs: 1, now: 1 },
      { type: 'worker-finished', task: 0, run: reported('COMPLETED: a'), now: 2 },
      { type: 'verified', task: 0, verification, now: 3 },
      { type: 'recorded', tasks: [0], commit: null, failure: null, now: 4 },
    );
    // Red alone twice: the culprit.
    const blamed = run(
      held.state,
      { type: 'gated', tasks: [0], passed: false, output: 'FAIL a.test', durationMs: 1, now: 5 },
      { type: 'gated', tasks: [0], passed: false, output: 'FAIL a.test', durationMs: 1, now: 6 },
    );
    // Retried at once (an attempt spent), from its own work.
    expect(blamed.state.plan.tasks[0]).toMatchObject({ status: 'in_progress', attempts: 1, result: expect.stringContaining('FAIL a.test') });
    expect(startOf(blamed.effects)).toMatchObject({ task: 0, attempt: 2, from: { work } });
    expect(emitted(blamed.effects, 'task-started')).toEqual([expect.objectContaining({ attempt: 2, fromCandidate: true })]);
    expect(blamed.state.retryFrom?.has(0)).toBe(false);
    // That retry fails too: the next starts from the tip.
    const again = run(
      blamed.state,
      { type: 'recorded', tasks: [], commit: null, failure: null, now: 7 },
      { type: 'worker-finished', task: 0, run: reported('FAILED: no'), now: 8 },
    );
    const third = startOf(again.effects);
    expect(third).toMatchObject({ task: 0, attempt: 3 });
    expect(third?.from).toBeUndefined();
  });
});
