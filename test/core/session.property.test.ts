// The step function driven as a session drives it (`driver: 'session'`): a lead that calls `next`
// (hand-out), lets subagents finish, calls `commit` (integrate), lands the branch and runs the gate
// when it likes, in any order. On random plans and random leads: work starts only when the lead
// asks and only on blockers whose work is on the person's branch (a subagent starts from HEAD);
// verified work is recorded only when the lead commits (a gate verdict integrates only what it
// tested); and a lead that keeps asking always reaches the end.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initialState } from '../../src/core/engine/admission.ts';
import type { EngineEffect } from '../../src/core/engine/effects.ts';
import type { EngineEvent } from '../../src/core/engine/events.ts';
import { gateOpen } from '../../src/core/engine/queries.ts';
import type { EngineConfig, EngineState } from '../../src/core/engine/state.ts';
import { step } from '../../src/core/engine/step.ts';
import { noFindings } from '../../src/core/attempt/transition.ts';
import { ok } from '../../src/core/result.ts';
import type { WorkerRun } from '../../src/core/attempt/worker-run.ts';
import { statusOf } from '../../src/core/plan/plan.ts';
import { emptyUsage } from '../../src/core/plan/usage.ts';
import { passingCheck, SIMULATION_DEFAULTS } from '../../src/core/engine/simulation.ts';
import { planArb } from '../support/arbitraries.ts';

type LeadAction = 'next' | 'finish-one' | 'finish-all' | 'commit' | 'land' | 'gate';
const ACTIONS: readonly LeadAction[] = ['next', 'finish-one', 'finish-all', 'commit', 'land', 'gate'];
/** A lead that follows the skill: ask for work, let it all finish, commit, land, let the gate run. */
const FAIR_ROUND: readonly LeadAction[] = ['gate', 'next', 'finish-all', 'commit', 'gate', 'commit', 'land'];

const workerRun = (report: 'COMPLETED' | 'FAILED', attempt: number): WorkerRun => ({
  usage: emptyUsage(),
  durationMs: 1,
  permissionDenials: [],
  logPath: '',
  unmeasured: true,
  outcome: { kind: 'reported', resultText: `${report}: attempt ${attempt}`, statusLine: { status: report, text: `attempt ${attempt}` } },
});

interface Lead {
  state: EngineState;
  now: number;
  /** Subagents the lead launched and that have not reported yet. */
  running: Map<number, number>;
  /** Tasks integrated whose work is not on the person's branch yet. */
  unlanded: Set<number>;
  /** Gate runs the gate process has been asked for and not answered. */
  gates: Array<Extract<EngineEffect, { type: 'gate' }>>;
  finished: boolean;
  violations: string[];
}

/** A lead after `setup`: with a gate and something to test, the starting commit's gate run is due. */
function leadFor(config: EngineConfig, plan: Parameters<typeof initialState>[0]): Lead {
  const { state } = step(initialState(plan, config, 0), { type: 'set-up', findings: noFindings(), now: 0 });
  return { state, now: 0, running: new Map(), unlanded: new Set(), gates: [], finished: false, violations: [] };
}

/** Post one event and carry out its effects as the in-session steps do, checking each against the rules. */
function post(
  lead: Lead,
  event: EngineEvent,
  behaviour: (task: number, attempt: number) => 'COMPLETED' | 'FAILED',
  gatePasses: (tasks: readonly number[]) => boolean,
): void {
  if (lead.finished) return;
  const before = lead.state;
  const { state, effects } = step(before, event);
  lead.state = state;
  const followUps: EngineEvent[] = [];
  for (const effect of effects) {
    switch (effect.type) {
      case 'start-worker': {
        if (event.type !== 'hand-out') lead.violations.push(`task ${effect.task} started on ${event.type}`);
        if (!gateOpen(before)) lead.violations.push(`task ${effect.task} started before the gate passed the starting commit (${before.baseline})`);
        const task = before.plan.tasks[effect.task]!;
        for (const blocker of task.blockedBy) {
          if (statusOf(before.plan.tasks[blocker]!) !== 'completed') lead.violations.push(`task ${effect.task} started before blocker ${blocker} completed`);
          if (before.unlanded.has(blocker)) lead.violations.push(`task ${effect.task} started while blocker ${blocker} had not landed`);
        }
        lead.running.set(effect.task, effect.attempt);
        const limit = event.type === 'hand-out' ? (event.concurrency ?? before.config.concurrency) : before.config.concurrency;
        if (lead.running.size > limit) lead.violations.push(`task ${effect.task} started with ${lead.running.size} subagents running, more than ${limit}`);
        break;
      }
      case 'verify':
        followUps.push({ type: 'verified', task: effect.task, verification: ok(passingCheck(before.plan.tasks[effect.task]!)), now: lead.now });
        break;
      case 'record':
        // Verified work enters the lane when the lead commits; a gate verdict integrates (or drops) only what it tested.
        if (event.type === 'gated') {
          if (effect.tasks.some((t) => !event.tasks.includes(t)))
            lead.violations.push(`gate verdict on ${event.tasks.join(', ')} recorded tasks ${effect.tasks.join(', ')}`);
        } else if (event.type !== 'integrate') lead.violations.push(`recorded tasks ${effect.tasks.join(', ')} on ${event.type}`);
        for (const item of effect.integrate) lead.unlanded.add(item.task);
        followUps.push({ type: 'recorded', tasks: effect.tasks, commit: `commit-${effect.round}`, failure: null, now: lead.now });
        break;
      case 'gate':
        lead.gates.push(effect);
        break;
      case 'finish':
        lead.finished = true;
        break;
      case 'emit':
      case 'save':
      case 'wake':
      case 'abort-workers':
      case 'release-workspace':
        break;
    }
  }
  for (const followUp of followUps) post(lead, followUp, behaviour, gatePasses);
}

function act(
  lead: Lead,
  action: LeadAction,
  pick: number,
  behaviour: (task: number, attempt: number) => 'COMPLETED' | 'FAILED',
  gatePasses: (tasks: readonly number[]) => boolean,
  handOut?: number,
): void {
  // Time moves on between the lead's calls, past any back-off.
  lead.now += 5_000;
  const now = lead.now;
  switch (action) {
    case 'next':
      post(lead, { type: 'hand-out', ...(handOut !== undefined ? { concurrency: handOut } : {}), now }, behaviour, gatePasses);
      return;
    case 'finish-one':
    case 'finish-all': {
      const tasks = [...lead.running.keys()];
      const finishing = action === 'finish-all' ? tasks : tasks.length > 0 ? [tasks[pick % tasks.length]!] : [];
      for (const task of finishing) {
        const attempt = lead.running.get(task)!;
        lead.running.delete(task);
        post(lead, { type: 'worker-finished', task, run: workerRun(behaviour(task, attempt), attempt), now }, behaviour, gatePasses);
      }
      return;
    }
    case 'commit':
      post(lead, { type: 'integrate', now }, behaviour, gatePasses);
      return;
    case 'land':
      lead.unlanded.clear();
      post(lead, { type: 'landed', unlanded: [], now }, behaviour, gatePasses);
      return;
    case 'gate': {
      // The gate process answers the oldest run it was asked for: the starting commit's first.
      const run = lead.gates.shift();
      if (run) post(lead, { type: 'gated', tasks: run.tasks, passed: gatePasses(run.tasks), output: '', durationMs: 1, now }, behaviour, gatePasses);
      return;
    }
  }
}

const sessionArb = fc.record({
  plan: planArb({ maxTasks: 7, statuses: 'pending' }),
  concurrency: fc.integer({ min: 1, max: 3 }),
  gated: fc.boolean(),
  failuresBefore: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 7, maxLength: 7 }),
  culprits: fc.array(fc.boolean(), { minLength: 7, maxLength: 7 }),
  actions: fc.array(fc.tuple(fc.constantFrom(...ACTIONS), fc.nat({ max: 20 }), fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined })), {
    maxLength: 40,
  }),
});

describe('the step function driven by a session', () => {
  it('starts work only on hand-out, on landed blockers, within the concurrency; records only on integrate (or what a gate verdict passed); and a lead that keeps asking reaches the end', () => {
    fc.assert(
      fc.property(sessionArb, (sim) => {
        const config: EngineConfig = {
          ...SIMULATION_DEFAULTS,
          concurrency: sim.concurrency,
          schedule: 'continuous',
          driver: 'session',
          gate: sim.gated ? { batchSize: 2 } : null,
        };
        const lead = leadFor(config, sim.plan);
        const behaviour = (task: number, attempt: number) => (attempt <= sim.failuresBefore[task]! ? 'FAILED' : 'COMPLETED');
        // A culprit fails the gate the first time it is tested, and passes after its retry.
        const blamed = new Set<number>();
        const gatePasses = (tasks: readonly number[]) => {
          const culprit = tasks.find((t) => sim.culprits[t] === true && !blamed.has(t));
          if (culprit === undefined) return true;
          blamed.add(culprit);
          return false;
        };
        // Whatever the lead does first, in any order...
        for (const [action, pick, handOut] of sim.actions) act(lead, action, pick, behaviour, gatePasses, handOut);
        // ...a lead that then follows the skill's steps finishes the run.
        for (let round = 0; round < 200 && !lead.finished; round++) for (const action of FAIR_ROUND) act(lead, action, 0, behaviour, gatePasses);
        expect(lead.violations).toEqual([]);
        expect(lead.finished).toBe(true);
        const end = lead.state;
        expect(end.attempts.size).toBe(0);
        expect(end.plan.tasks.some((t) => statusOf(t) === 'in_progress')).toBe(false);
        // Stopped early only by the breaker; otherwise nothing pending could still have started.
        if (end.stop?.reason !== 'breaker') {
          for (const [i, task] of end.plan.tasks.entries()) {
            if (statusOf(task) !== 'pending') continue;
            expect(
              task.blockedBy.every((b) => statusOf(end.plan.tasks[b]!) === 'completed'),
              `task ${i} was left pending though it could run`,
            ).toBe(false);
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('holds back a ready task while its blocker waits to land, and starts it on the next hand-out once it landed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3 }), (concurrency) => {
        const plan = {
          goal: 'chain',
          tasks: [0, 1].map((i) => ({
            subject: `task ${i}`,
            description: 'd',
            status: 'pending' as const,
            blockedBy: i === 0 ? [] : [0],
            metadata: { type: 'implementation' as const, files: { create: [`f${i}.ts`], modify: [], read: [] }, acceptanceCriteria: [] },
          })),
        } as unknown as Parameters<typeof initialState>[0];
        const lead = leadFor({ ...SIMULATION_DEFAULTS, concurrency, schedule: 'continuous', driver: 'session', gate: null }, plan);
        const completes = () => 'COMPLETED' as const;
        for (const action of ['next', 'finish-all', 'commit'] as const) act(lead, action, 0, completes, () => true);
        expect(lead.unlanded).toEqual(new Set([0]));
        act(lead, 'next', 0, completes, () => true);
        expect(lead.running.size).toBe(0);
        expect(lead.finished).toBe(false);
        act(lead, 'land', 0, completes, () => true);
        // Landing alone starts nothing: the lead asks.
        expect(lead.running.size).toBe(0);
        act(lead, 'next', 0, completes, () => true);
        expect([...lead.running.keys()]).toEqual([1]);
        expect(lead.violations).toEqual([]);
      }),
      { numRuns: 10 },
    );
  });
});
