// Rate and usage limits in the headless engine, in process: the run's one limiter (core/limits/limiter.ts)
// hears every worker's refusals and responses; workers are released by the test, time is a fake
// clock. A limit never fails a task nor spends an attempt; a worker that has done nothing is
// stopped and its task waits; one that has done something is never cut short, and if a limit ends
// it, its attempt pauses with its worktree and goes on with its conversation; the run waits for a
// usage limit's reset within --limit-wait, and past it drains and stops, saying when to run again.

import { describe, expect, it } from 'vitest';
import type { RunEventBody } from '../../src/core/report/events.ts';
import { type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { apiUrlOf } from '../../src/run/headless/engine.ts';
import { EngineRig, failedRun, reported } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });
const tasks = (n: number): Plan => makePlan(Array.from({ length: n }, (_, i) => task(`T${i}`)));
const limitEvents = (rig: EngineRig) => rig.events.filter((e): e is Extract<RunEventBody, { type: 'limit' }> => e.type === 'limit');
const attemptsOf = (plan: Plan) => plan.tasks.map((t) => t.attempts ?? 0);

/** A worker a limit ended after the API had served it (its session goes on with `--resume`). */
const limitedAfterWork = (sessionId: string, extra: { resetAt?: number; waitedMs?: number; durationMs?: number } = {}) => ({
  ...failedRun({
    reason: 'rate-limited',
    message: 'API Error: Request rejected (429) · slow down',
    ...(extra.resetAt !== undefined ? { resetAt: extra.resetAt } : {}),
  }),
  sessionId,
  progressed: true as const,
  ...(extra.waitedMs !== undefined ? { waitedMs: extra.waitedMs } : {}),
  ...(extra.durationMs !== undefined ? { durationMs: extra.durationMs } : {}),
});

/** Every worker that runs completes, and those that start after them, until none runs. */
async function completeAll(rig: EngineRig): Promise<void> {
  while (rig.runningTasks.length > 0) for (const task of rig.runningTasks) await rig.finish(task, 'COMPLETED: done');
}

describe('limits in the headless engine', () => {
  it('a refusal halves what runs at once and holds new starts for the API’s delay; a worker that has done nothing is stopped while more run than that, or when it would ask again before the hold ends (its task waits, no attempt)', async () => {
    const rig = new EngineRig(tasks(8), { settings: { concurrency: 4 } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 1, 2, 3]);
    await rig.serve(1);
    await rig.refuse(0, { kind: 'rate-limit', delayMs: 2000 });
    const [hold] = limitEvents(rig);
    expect(hold).toMatchObject({ change: 'hold', limit: 'rate-limit', working: 2, concurrency: 4, task: 0, refusals: 1 });
    expect(hold!.message).toMatch(/^rate-limited: 2 of 4 workers until \d\d:\d\d:\d\d$/);
    // Four run where two may: it had done nothing, so it is stopped, requeued, no attempt spent.
    expect(rig.outcomes()).toEqual([[0, 'requeued']]);
    expect(rig.released).toEqual([0]);
    // One that has done something is never stopped, however crowded.
    await rig.refuse(1, { kind: 'rate-limit', delayMs: 500 });
    // Crowded still (three for two): stopped.
    await rig.refuse(2, { kind: 'rate-limit', delayMs: 3000 });
    expect(rig.runningTasks).toEqual([1, 3]);
    // Two for two, and its CLI waits out the hold (until 3 s) itself: it runs on, spared a restart.
    await rig.refuse(3, { kind: 'rate-limit', delayMs: 3000 });
    expect(rig.runningTasks).toEqual([1, 3]);
    expect(rig.outcomes()).toEqual([
      [0, 'requeued'],
      [2, 'requeued'],
    ]);
    // The refusals of one burst halved it once.
    expect(
      limitEvents(rig)
        .filter((e) => e.change !== 'serving')
        .map((e) => e.working),
    ).toEqual([2]);
    await rig.finish(1, 'COMPLETED: one');
    await rig.advance(2999);
    expect(rig.runningTasks).toEqual([3]);
    await rig.advance(1);
    // Then up to two at once (the working concurrency), the stopped tasks first again (attempt 1).
    expect(rig.runningTasks).toEqual([0, 3]);
    expect(rig.started.filter((r) => r.taskIndex === 0).map((r) => r.attempt)).toEqual([1, 1]);
    // Responses served raise it again, one step per `working` of them.
    await rig.serve(3, 2);
    expect(rig.runningTasks).toEqual([0, 2, 3]);
    expect(limitEvents(rig).at(-1)).toMatchObject({ change: 'raised', working: 3 });
    await rig.serve(0, 3);
    expect(rig.runningTasks).toEqual([0, 2, 3, 4]);
    await completeAll(rig);
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(attemptsOf(result.plan)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });

  it('a response to a worker the hold refused lifts the hold: the API serves again', async () => {
    const rig = new EngineRig(tasks(3), { settings: { concurrency: 2 } });
    await rig.advance(0);
    await rig.serve(0);
    await rig.refuse(0, { kind: 'rate-limit', delayMs: 15_000 });
    await rig.finish(1, 'COMPLETED: one');
    expect(rig.runningTasks).toEqual([0]);
    // Its CLI retried sooner than the run's hold (jitter, a shorter word from the API) and got through.
    await rig.advance(12_000);
    await rig.serve(0);
    expect(rig.runningTasks).toEqual([0, 2]);
    expect(limitEvents(rig).at(-1)).toMatchObject({ change: 'serving', until: null });
  });

  it('a worker that has done something is never cut short; when a limit ends it, the attempt pauses with its worktree and goes on with its conversation', async () => {
    const rig = new EngineRig(tasks(2), { settings: { concurrency: 2, taskTimeoutMs: 600_000 } });
    await rig.advance(0);
    await rig.serve(0);
    await rig.refuse(0, { kind: 'rate-limit', delayMs: 3000 });
    // Not stopped: its CLI retries on its own.
    expect(rig.runningTasks).toEqual([0, 1]);
    expect(rig.outcomes()).toEqual([]);
    // Its own retries did not get through either: the CLI ends with the 429.
    await rig.finish(0, limitedAfterWork('session-0', { durationMs: 200_000, waitedMs: 170_000 }));
    expect(rig.events.filter((e) => e.type === 'task-paused')).toEqual([
      {
        type: 'task-paused',
        task: 0,
        subject: 'task T0',
        attempt: 1,
        reason: 'rate limited: API Error: Request rejected (429) · slow down',
        sessionId: 'session-0',
      },
    ]);
    // It keeps its worktree, is still in progress, and nothing is spent.
    expect(rig.worktrees.get(0)).toBe('/worktrees/0');
    expect(rig.released).toEqual([]);
    expect(rig.outcomes()).toEqual([]);
    // The end was one more refusal, within the hold of the first (3 s). One worker at a time now: task 1 runs.
    await rig.advance(3000);
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: one');
    // Resumed: the same attempt, in the same worktree, its session continued, told why.
    const resumed = rig.started.at(-1)!;
    expect([resumed.taskIndex, resumed.attempt, resumed.cwd, resumed.resume]).toEqual([0, 1, '/worktrees/0', 'session-0']);
    expect(resumed.prompt).toMatch(/^Your last request to the API did not go through \(rate limited: API Error: Request rejected \(429\)/);
    // Its --task-timeout is what the attempt has left: the 30 s it worked (its 170 s of waiting on the limit not counted).
    expect(resumed.timeoutMs).toBe(570_000);
    expect(rig.events.some((e) => e.type === 'task-resumed' && e.task === 0 && e.attempt === 1)).toBe(true);
    await rig.finish(0, reported('COMPLETED: went on'));
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(attemptsOf(result.plan)).toEqual([1, 1]);
    expect(rig.outcomes()).toEqual([
      [1, 'completed'],
      [0, 'completed'],
    ]);
  });

  it('a resumed worker the API refuses before serving it anything is stopped and pauses again: nothing of the conversation is lost', async () => {
    const rig = new EngineRig(tasks(1), { settings: { concurrency: 1 } });
    await rig.advance(0);
    await rig.serve(0);
    await rig.finish(0, limitedAfterWork('s'));
    await rig.advance(1000);
    expect(rig.started.at(-1)!.resume).toBe('s');
    await rig.refuse(0, { kind: 'overloaded', delayMs: 500 });
    expect(rig.events.filter((e) => e.type === 'task-paused').length).toBe(2);
    expect(rig.worktrees.get(0)).toBe('/worktrees/0');
    await rig.advance(60_000);
    expect(rig.started.at(-1)!.resume).toBe('s');
    await rig.finish(0, 'COMPLETED: at last');
    const result = await rig.ended();
    expect([result.reason, attemptsOf(result.plan)]).toEqual(['all-done', [1]]);
  });

  it('a usage limit within --limit-wait: the run waits for its reset, then goes on', async () => {
    const rig = new EngineRig(tasks(3), { settings: { concurrency: 2, limitWaitMs: 5 * 3_600_000 } });
    await rig.advance(0);
    const resetAt = rig.clock.now() + 3 * 3_600_000;
    await rig.finish(0, failedRun({ reason: 'rate-limited', message: "You've hit your limit · resets 10pm (America/New_York)", resetAt }));
    const [hold] = limitEvents(rig);
    expect(hold).toMatchObject({
      change: 'hold',
      limit: 'usage-limit',
      working: 2,
      resetAt: new Date(resetAt).toISOString(),
      until: new Date(resetAt).toISOString(),
    });
    expect(hold!.message).toMatch(/^waiting for the usage limit to reset at \d\d:\d\d$/);
    await rig.finish(1, 'COMPLETED: one');
    // Nothing starts before the reset, and the run does not end.
    expect(rig.runningTasks).toEqual([]);
    await rig.advance(3 * 3_600_000 - 1);
    expect([rig.runningTasks, rig.result]).toEqual([[], null]);
    await rig.advance(1);
    expect(rig.runningTasks).toEqual([0, 2]);
    await rig.finish(0, 'COMPLETED: zero');
    await rig.finish(2, 'COMPLETED: two');
    const result = await rig.ended();
    expect(result.reason).toBe('all-done');
    expect(attemptsOf(result.plan)).toEqual([1, 1, 1]);
  });

  it('a usage limit past --limit-wait: the run drains and stops (reason limited), saying when to run again; nothing is spent', async () => {
    const rig = new EngineRig(tasks(3), { settings: { concurrency: 2, limitWaitMs: 3_600_000 } });
    await rig.advance(0);
    const resetAt = rig.clock.now() + 10 * 3_600_000;
    await rig.serve(1);
    await rig.finish(0, failedRun({ reason: 'rate-limited', message: "You've hit your limit · resets 10pm", resetAt }));
    expect(rig.events.some((e) => e.type === 'draining')).toBe(true);
    // It does not wait for the reset, so it never says it waits.
    expect(limitEvents(rig)).toEqual([]);
    // What runs finishes and is integrated; nothing new starts.
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: one');
    const result = await rig.ended();
    expect(result.reason).toBe('limited');
    expect(result.resumeAfter).toBe(resetAt);
    expect(result.message).toMatch(
      /^the usage limit resets at .+; that is longer than --limit-wait \(1h00m\) lets the run wait: nothing new started, and the run stopped once what ran had finished\. Run the same command again after /,
    );
    expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['pending', 'completed', 'pending']);
    expect(attemptsOf(result.plan)).toEqual([0, 1, 0]);
  });

  it('a run that drains for a limit past --limit-wait waits for nothing: a worker served after says neither that the API serves again nor what it waits for', async () => {
    const rig = new EngineRig(tasks(4), { settings: { concurrency: 4, limitWaitMs: 5000 } });
    await rig.advance(0);
    for (const t of [0, 1, 2, 3]) await rig.serve(t);
    // Its CLI retries a 429 first (a rate limit: two of four), then its last refusal names a reset an hour away.
    await rig.refuse(0, { kind: 'rate-limit', delayMs: 500 });
    expect(limitEvents(rig).map((e) => [e.change, e.working])).toEqual([['hold', 2]]);
    await rig.finish(0, limitedAfterWork('session-0', { resetAt: rig.clock.now() + 3_600_000 }));
    const drained = rig.events.findIndex((e) => e.type === 'draining');
    expect(drained).toBeGreaterThan(-1);
    // The workers that ran go on and are served, enough to raise a working concurrency.
    for (const t of [1, 2, 3]) await rig.serve(t, 4);
    await rig.advance(1000);
    for (const t of [1, 2, 3]) await rig.serve(t, 4);
    expect(rig.events.slice(drained).filter((e) => e.type === 'limit')).toEqual([]);
    for (const t of [1, 2, 3]) await rig.finish(t, 'COMPLETED: done');
    const result = await rig.ended();
    expect(result.reason).toBe('limited');
    expect(result.message).toMatch(/^the usage limit resets at /);
    expect(attemptsOf(result.plan)).toEqual([0, 1, 1, 1]);
  });

  it('--limit-wait 0 waits for no limit: the first refusal drains the run', async () => {
    const rig = new EngineRig(tasks(3), { settings: { concurrency: 2, limitWaitMs: 0 } });
    await rig.advance(0);
    await rig.serve(1);
    await rig.refuse(0, { kind: 'rate-limit', delayMs: 1000 });
    expect(rig.runningTasks).toEqual([1]);
    await rig.finish(1, 'COMPLETED: one');
    const result = await rig.ended();
    expect([result.reason, attemptsOf(result.plan)]).toEqual(['limited', [0, 1, 0]]);
  });

  it('a 429 with no reset time waits at most --limit-wait: holds in a row back off twice as long, and past the limit the run stops', async () => {
    const rig = new EngineRig(tasks(1), { settings: { concurrency: 1, backoffMs: 1000, limitWaitMs: 10_000 } });
    await rig.advance(0);
    const holds: number[] = [];
    let at = 0;
    for (;;) {
      if (rig.runningTasks.length === 0) break;
      at = rig.clock.now();
      await rig.refuse(0, { kind: 'overloaded' });
      if (rig.result !== null || rig.events.some((e) => e.type === 'draining')) break;
      const last = limitEvents(rig).at(-1)!;
      holds.push(Date.parse(last.until!) - at);
      await rig.advance(Date.parse(last.until!) - at);
    }
    // 1 s, then 2 s, 4 s: 7 s waited; the next (8 s) would make 15 s, past the 10 s --limit-wait: the run stops rather than wait (and never says it waits).
    expect(holds).toEqual([1000, 2000, 4000]);
    const result = await rig.ended();
    expect(result.reason).toBe('limited');
    expect(result.resumeAfter! - at).toBe(8000);
    expect(result.message).toMatch(/^the API has refused every request since .+ and asks to wait until .+; that is longer than --limit-wait \(10s\)/);
    expect(attemptsOf(result.plan)).toEqual([0]);
  });

  it('a paused attempt keeps its files (an overlapping task does not start beside it); an interrupt sends it back to pending and frees its worktree', async () => {
    const plan = makePlan([task('A', { create: ['shared.txt'] }), task('B', { modify: ['shared.txt'], create: [] }), task('C')]);
    const rig = new EngineRig(plan, { settings: { concurrency: 3 } });
    await rig.advance(0);
    expect(rig.runningTasks).toEqual([0, 2]);
    await rig.serve(0);
    await rig.finish(0, limitedAfterWork('a'));
    await rig.finish(2, 'COMPLETED: c');
    // B depends on nothing but writes A's file: it does not start beside the paused A, nor beside it resumed.
    expect(rig.runningTasks).toEqual([]);
    await rig.advance(1000);
    expect(rig.runningTasks).toEqual([0]);
    expect(rig.started.at(-1)!.resume).toBe('a');
    await rig.finish(0, limitedAfterWork('a'));
    expect(rig.runningTasks).toEqual([]);
    expect(rig.events.filter((e) => e.type === 'task-paused').length).toBe(2);
    await rig.interrupt();
    const result = await rig.ended();
    expect(result.reason).toBe('interrupted');
    expect(rig.released).toContain(0);
    expect(result.plan.tasks.map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['completed', 1],
    ]);
  });

  describe('the API out of reach', () => {
    const outage = { kind: 'api-unreachable' as const };
    const drainingAt = (rig: EngineRig) => rig.events.findIndex((e) => e.type === 'draining');

    it('stops every worker it served nothing (no attempt), holds new starts with back-off, tries again with one worker, and past --limit-wait stops with api-unreachable; the breaker is untouched', async () => {
      const rig = new EngineRig(tasks(3), { settings: { concurrency: 2, backoffMs: 1000, limitWaitMs: 10_000 } });
      await rig.advance(0);
      expect(rig.runningTasks).toEqual([0, 1]);
      await rig.refuse(0, outage);
      const [hold] = limitEvents(rig);
      expect(hold).toMatchObject({ change: 'hold', limit: 'api-unreachable', working: 1, concurrency: 2, task: 0 });
      expect(hold!.since).not.toBeNull();
      expect(hold!.message).toMatch(/^waiting for the API to answer \(out of reach since \d\d:\d\d:\d\d\): one worker tries again at \d\d:\d\d:\d\d$/);
      await rig.refuse(1, outage);
      // Both had been served nothing: stopped, their tasks wait, no attempt spent.
      expect(rig.runningTasks).toEqual([]);
      expect(rig.outcomes()).toEqual([
        [0, 'requeued'],
        [1, 'requeued'],
      ]);
      const probes: number[] = [];
      for (let wait = 1000; rig.result === null; wait *= 2) {
        // Nothing starts while the hold lasts; then one worker (the probe), however many may run.
        await rig.advance(wait - 1);
        expect(rig.runningTasks).toEqual([]);
        await rig.advance(1);
        expect(rig.runningTasks).toEqual([0]);
        probes.push(rig.clock.now());
        await rig.refuse(0, outage);
        expect(rig.runningTasks).toEqual([]);
        if (drainingAt(rig) >= 0) break;
      }
      // Held 1 s, 2 s, 4 s; the next hold (8 s) would make 15 s without an answer, past the 10 s --limit-wait.
      expect(probes.length).toBe(3);
      const result = await rig.ended();
      expect(result.reason).toBe('api-unreachable');
      expect(result.resumeAfter).toBeUndefined();
      expect(result.message).toMatch(
        /^could not reach https:\/\/api\.anthropic\.com since \d\d:\d\d:\d\d \(its requests got no answer\); that is longer than --limit-wait \(10s\) lets the run wait: nothing new started, and the run stopped once what ran had finished\. Check the network, a proxy \(HTTPS_PROXY\) and ANTHROPIC_BASE_URL, then run the same command again when the API answers/,
      );
      expect(attemptsOf(result.plan)).toEqual([0, 0, 0]);
      expect(result.plan.tasks.map((t) => statusOf(t))).toEqual(['pending', 'pending', 'pending']);
      expect(rig.events.some((e) => e.type === 'breaker')).toBe(false);
      expect(new Set(rig.outcomes().map(([, outcome]) => outcome))).toEqual(new Set(['requeued']));
      // Once it drains, it says no more that it waits.
      expect(rig.events.slice(drainingAt(rig)).some((e) => e.type === 'limit')).toBe(false);
    });

    it('with no back-off (FOREMAN_BACKOFF_MS=0) it tries again at once, and still stops once the API has been out of reach longer than --limit-wait', async () => {
      const rig = new EngineRig(tasks(1), { settings: { concurrency: 1, backoffMs: 0, limitWaitMs: 3000 } });
      await rig.advance(0);
      let tries = 0;
      while (drainingAt(rig) < 0) {
        expect(rig.runningTasks).toEqual([0]);
        await rig.refuse(0, outage);
        tries++;
        await rig.advance(1000);
      }
      // Unanswered at 0, 1, 2 and 3 s; at 4 s it has been out of reach longer than the 3 s --limit-wait.
      expect(tries).toBe(5);
      const result = await rig.ended();
      expect([result.reason, attemptsOf(result.plan)]).toEqual(['api-unreachable', [0]]);
    });

    it('names where the workers reach the API: ANTHROPIC_BASE_URL, else Bedrock or Vertex when the CLI is told to use them, else Anthropic’s', () => {
      expect(apiUrlOf({ ANTHROPIC_BASE_URL: ' https://gateway.example.com/anthropic ' })).toBe('https://gateway.example.com/anthropic');
      expect(apiUrlOf({ CLAUDE_CODE_USE_BEDROCK: '1' })).toBe('Amazon Bedrock');
      expect(apiUrlOf({ CLAUDE_CODE_USE_VERTEX: '1' })).toBe('Google Vertex AI');
      expect(apiUrlOf({ ANTHROPIC_BASE_URL: '' })).toBe('https://api.anthropic.com');
    });

    it('names what it could not reach in the CLI’s own words when a worker ended with them; --limit-wait 0 stops at the first', async () => {
      const rig = new EngineRig(tasks(2), { settings: { concurrency: 1, limitWaitMs: 0 } });
      await rig.advance(0);
      await rig.finish(
        0,
        failedRun({ reason: 'api-unreachable', message: 'API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)' }),
      );
      const result = await rig.ended();
      expect(result.reason).toBe('api-unreachable');
      expect(result.message).toMatch(
        /^could not reach https:\/\/api\.anthropic\.com since .+ \(API Error: Connection refused — a firewall or proxy may be blocking it \(ECONNREFUSED\)\); --limit-wait 0 waits for no limit:/,
      );
      expect(attemptsOf(result.plan)).toEqual([0, 0]);
    });

    it('a worker the API had served is never cut short: it waits out the outage with its CLI, and the run goes on when the API answers', async () => {
      const rig = new EngineRig(tasks(3), { settings: { concurrency: 2, backoffMs: 1000, limitWaitMs: 60_000 } });
      await rig.advance(0);
      await rig.serve(0);
      await rig.refuse(0, outage);
      await rig.refuse(1, outage);
      // Task 0 had done something: it runs on (its CLI retries by itself); task 1 had not: stopped.
      expect(rig.runningTasks).toEqual([0]);
      expect(rig.outcomes()).toEqual([[1, 'requeued']]);
      // The hold ends, but one worker already tries the API: nothing more starts.
      await rig.advance(5000);
      expect(rig.runningTasks).toEqual([0]);
      // Its CLI got an answer: the API is back, the run goes on as wide as before.
      await rig.serve(0);
      expect(limitEvents(rig).at(-1)).toMatchObject({ change: 'serving', since: null });
      expect(rig.runningTasks).toEqual([0, 1]);
      await completeAll(rig);
      const result = await rig.ended();
      expect(result.reason).toBe('all-done');
      expect(attemptsOf(result.plan)).toEqual([1, 1, 1]);
    });

    it('a worker the outage ended after it had done something pauses with its worktree, and goes on as the probe when the hold ends', async () => {
      const rig = new EngineRig(tasks(2), { settings: { concurrency: 2, backoffMs: 1000, limitWaitMs: 60_000 } });
      await rig.advance(0);
      await rig.serve(0);
      await rig.finish(0, {
        ...failedRun({
          reason: 'api-unreachable',
          message: 'API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.',
        }),
        sessionId: 'session-0',
        progressed: true,
      });
      expect(rig.events.filter((e) => e.type === 'task-paused').map((e) => e.type === 'task-paused' && e.reason)).toEqual([
        'the API could not be reached: API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again.',
      ]);
      expect(rig.worktrees.get(0)).toBe('/worktrees/0');
      await rig.refuse(1, outage);
      expect(rig.runningTasks).toEqual([]);
      // The paused attempt is the probe: resumed alone, in its worktree, with its conversation.
      await rig.advance(1000);
      expect(rig.runningTasks).toEqual([0]);
      expect([rig.started.at(-1)!.resume, rig.started.at(-1)!.cwd]).toEqual(['session-0', '/worktrees/0']);
      expect(rig.started.at(-1)!.prompt).toMatch(
        /^Your last request to the API did not go through \(the API could not be reached: API Error: Connection dropped \(ECONNRESET\)/,
      );
      await rig.serve(0);
      expect(rig.runningTasks).toEqual([0, 1]);
      await rig.finish(0, 'COMPLETED: zero');
      await rig.finish(1, 'COMPLETED: one');
      const result = await rig.ended();
      expect([result.reason, attemptsOf(result.plan)]).toEqual(['all-done', [1, 1]]);
    });
  });
});
