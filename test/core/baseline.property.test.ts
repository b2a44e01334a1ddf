// What the in-session path needed of the step function, now its own for both drivers: the gate's
// check of the starting commit (the baseline) and a session that ended with its run under way. On
// random plans and either driver: nothing starts before the baseline passed, whatever is asked;
// its verdict alone decides (passed: the run goes on to its end; failed: the run is refused, in
// the step function's words, with no task changed; stopped: interrupted); and a session that
// ended ends its run at once, in its words, changing no task.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import type { EngineConfig, EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import { ok } from '../../src/core/result.ts';
import type { WorkerRun } from '../../src/core/attempt/worker-run.ts';
import { type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { emptyUsage } from '../../src/core/plan/usage.ts';
import { passingCheck, SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { noFindings } from '../../src/core/attempt/transition.ts';
import { planArb } from '../support/arbitraries.ts';

const COMMAND = 'npm test';

const completed = (task: number): WorkerRun => ({
  usage: emptyUsage(),
  durationMs: 1,
  permissionDenials: [],
  logPath: '',
  outcome: { kind: 'reported', resultText: `COMPLETED: task ${task}`, statusLine: { status: 'COMPLETED', text: `task ${task}` } },
});

/** A driver that carries out every effect at once: workers report COMPLETED, checks pass, records commit, gate runs wait to be answered. */
class Driver {
  state: EngineState;
  now = 0;
  readonly running = new Set<number>();
  readonly gates: number[][] = [];
  readonly effects: EngineEffect[] = [];
  starts = 0;

  constructor(plan: Plan, config: EngineConfig) {
    this.state = step(initialState(plan, config, 0), { type: 'set-up', findings: noFindings(), now: 0 }).state;
  }

  /** Post `event`; returns the effects of its step and of what they led to. */
  post(event: EngineEvent): EngineEffect[] {
    const { state, effects } = step(this.state, event);
    this.state = state;
    const all = [...effects];
    for (const effect of effects) {
      if (effect.type === 'start-worker') {
        this.running.add(effect.task);
        this.starts++;
      }
      if (effect.type === 'gate') this.gates.push(effect.tasks);
      if (effect.type === 'verify')
        all.push(...this.post({ type: 'verified', task: effect.task, verification: ok(passingCheck(this.state.plan.tasks[effect.task]!)), now: this.now }));
      if (effect.type === 'record')
        all.push(...this.post({ type: 'recorded', tasks: effect.tasks, commit: `commit-${effect.round}`, failure: null, now: this.now }));
    }
    this.effects.push(...effects);
    return all;
  }

  /** What the driver asks between results: headless, a tick; a session's lead, what lands, hand-out and commit. */
  ask(): EngineEffect[] {
    this.now++;
    if (this.state.config.driver === 'headless') return this.post({ type: 'tick', now: this.now });
    return [
      ...this.post({ type: 'landed', unlanded: [], now: this.now }),
      ...this.post({ type: 'hand-out', now: this.now }),
      ...this.post({ type: 'integrate', now: this.now }),
    ];
  }

  /** Every worker reports and every gate run passes, until the run ends. */
  runToEnd(): void {
    for (let round = 0; round < 200 && !this.state.finished; round++) {
      this.ask();
      for (const task of [...this.running]) {
        this.running.delete(task);
        this.post({ type: 'worker-finished', task, run: completed(task), now: this.now });
      }
      for (let tasks = this.gates.shift(); tasks !== undefined; tasks = this.gates.shift())
        this.post({ type: 'gated', tasks, passed: true, output: '', durationMs: 1, now: this.now });
    }
  }
}

const configArb = fc.record({
  driver: fc.constantFrom('headless' as const, 'session' as const),
  concurrency: fc.integer({ min: 1, max: 3 }),
  batchSize: fc.integer({ min: 1, max: 3 }),
});

/** Setup finds an attempt in progress interrupted: it is pending again when the run starts. */
const noneInProgress = (plan: Plan): Plan => ({ ...plan, tasks: plan.tasks.map((t) => (statusOf(t) === 'in_progress' ? { ...t, status: 'pending' } : t)) });
const statuses = (state: EngineState) => state.plan.tasks.map((t) => statusOf(t));
const finishOf = (effects: readonly EngineEffect[]) => effects.find((e): e is Extract<EngineEffect, { type: 'finish' }> => e.type === 'finish');

describe('the gate on the starting commit, in the step function', () => {
  it('is due with something to test; nothing starts before its verdict; the verdict alone decides', () => {
    fc.assert(
      fc.property(
        planArb({ maxTasks: 6, statuses: 'consistent' }).map(noneInProgress),
        configArb,
        fc.constantFrom(true, false, null),
        fc.integer({ min: 1, max: 4 }),
        (plan, c, passed, asks) => {
          const config: EngineConfig = {
            ...SIMULATION_DEFAULTS,
            concurrency: c.concurrency,
            schedule: 'continuous',
            driver: c.driver,
            gate: { batchSize: c.batchSize, command: COMMAND },
          };
          const driver = new Driver(plan, config);
          // Pending once set up (setup's own skips applied): something to test.
          const pending = driver.state.plan.tasks.some((t) => statusOf(t) === 'pending');
          expect(driver.state.baseline).toBe(pending ? 'due' : 'none');
          if (!pending) return;
          // Asked again and again before the verdict: one gate run, on the starting commit, and nothing starts.
          for (let k = 0; k < asks; k++) driver.ask();
          expect(driver.starts).toBe(0);
          expect(driver.gates).toEqual([[]]);
          expect(driver.state.baseline).toBe('testing');
          expect(driver.state.finished).toBe(false);
          const before = statuses(driver.state);
          driver.gates.shift();
          const verdict = driver.post({ type: 'gated', tasks: [], passed, output: passed === false ? 'FAIL: x' : '', durationMs: 7, now: ++driver.now });
          const finish = finishOf(verdict);
          if (passed === null) {
            expect(finish?.stop.reason).toBe('interrupted');
            expect(driver.state.baseline).toBe('due');
            expect(statuses(driver.state)).toEqual(before);
            return;
          }
          const recorded = verdict.flatMap((e) => (e.type === 'emit' && e.event.type === 'gate-finished' ? [e.event] : []));
          expect(recorded).toEqual([expect.objectContaining({ tasks: [], passed, durationMs: 7, culprit: null, integrated: [] })]);
          if (passed === false) {
            // Refused, in the step function's words, before anything started; no task changed.
            expect(finish?.stop).toEqual({
              reason: 'failures',
              message: expect.stringContaining(`the gate \`${COMMAND}\` already fails on the starting commit`),
              baselineFailure: { output: 'FAIL: x' },
            });
            expect(driver.state.baseline).toBe('failed');
            expect(statuses(driver.state)).toEqual(before);
            expect(driver.ask()).toEqual([]);
            expect(driver.starts).toBe(0);
            return;
          }
          // Passed: the run goes on (it may end at once, when nothing pending can start).
          expect(finish?.stop.baselineFailure).toBeUndefined();
          expect(driver.state.baseline).toBe('passed');
          driver.runToEnd();
          expect(driver.state.finished).toBe(true);
          expect(driver.state.stop?.baselineFailure).toBeUndefined();
          // A green baseline changes nothing of the outcome: the same plan without a gate ends the same.
          const ungated = new Driver(plan, { ...config, gate: null });
          ungated.runToEnd();
          expect(statuses(driver.state)).toEqual(statuses(ungated.state));
          expect(driver.state.stop?.reason).toBe(ungated.state.stop?.reason);
          // The starting commit was tested once, before any candidate.
          expect(driver.effects.filter((e) => e.type === 'gate' && e.tasks.length === 0)).toHaveLength(1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a drain does not outlast a red baseline: the run is refused', () => {
    const plan: Plan = {
      schemaVersion: 3,
      goal: 'g',
      tasks: [{ subject: 'a', prompt: 'p', blockedBy: [], metadata: { files: { create: ['a.ts'], modify: [] } }, status: 'pending' }],
    };
    const driver = new Driver(plan, { ...SIMULATION_DEFAULTS, concurrency: 1, schedule: 'continuous', gate: { batchSize: 1 } });
    driver.ask();
    driver.post({ type: 'drain', now: 2 });
    const finish = finishOf(driver.post({ type: 'gated', tasks: [], passed: false, output: 'red', durationMs: 1, now: 3 }));
    expect(finish?.stop).toMatchObject({
      reason: 'failures',
      message: expect.stringMatching(/^the gate already fails on the starting commit/),
      baselineFailure: { output: 'red' },
    });
  });
});

describe('a session that ended with its run under way', () => {
  it('ends the run at once, in the step function’s words, changing no task and no attempt (the cost of subagents still out unknown)', () => {
    fc.assert(
      fc.property(
        planArb({ maxTasks: 6, statuses: 'pending' }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 6 }),
        fc.option(fc.integer({ min: 1, max: 2e12 }), { nil: null }),
        (plan, concurrency, rounds, lastStepAt) => {
          const driver = new Driver(plan, { ...SIMULATION_DEFAULTS, concurrency, schedule: 'continuous', driver: 'session', gate: null });
          // The lead got this far: some rounds handed out, reported on (one subagent left running) and committed.
          for (let round = 0; round < rounds && !driver.state.finished; round++) {
            driver.ask();
            for (const task of [...driver.running].slice(1)) {
              driver.running.delete(task);
              driver.post({ type: 'worker-finished', task, run: completed(task), now: driver.now });
            }
          }
          const before = driver.state;
          const { state, effects } = step(before, { type: 'session-ended', lastStepAt, now: driver.now + 1 });
          if (before.finished) {
            expect(effects).toEqual([]);
            return;
          }
          // What the subagents still out cost is not known.
          const usage = [...before.attempts.values()].some((a) => a.stage === 'running' || a.stage === 'verifying') ? 'unknown' : before.usage;
          expect(effects).toEqual([
            {
              type: 'finish',
              stop: {
                reason: 'interrupted',
                message: expect.stringContaining(lastStepAt === null ? 'its last step was at an unknown time' : new Date(lastStepAt).toISOString()),
              },
              usage,
            },
          ]);
          expect(state.finished).toBe(true);
          expect(statuses(state)).toEqual(statuses(before));
          expect([...state.attempts.values()]).toEqual([...before.attempts.values()]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
