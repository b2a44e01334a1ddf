// Limits in the in-session steps (SessionRig: run/session/session.ts's own steps, their I/O faked): a
// subagent whose reply is Claude Code's line for a limit is handed back with no attempt spent;
// after such a round `plan next` hands out no more tasks than the round got through; a usage
// limit's reset, read from the reply, holds every hand-out until then and is told to the lead.

import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/core/plan/plan.ts';
import { SessionRig } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

const task = (marker: string) => fakeTask(marker, { create: [`${marker}.txt`] });
const plan = (n: number) => makePlan(Array.from({ length: n }, (_, i) => task(`T${i}`)));

/** A step's output as the plan tool prints it, checked against schemas/<step>.schema.json. */
async function printed<T>(step: string, output: T): Promise<any> {
  const json = JSON.parse(JSON.stringify(output));
  await expectSchema(step, json);
  return json;
}

const RATE_LIMITED = "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.";

describe('limits in a session', () => {
  it('a subagent a limit refused is handed back (no attempt spent); the next round hands out no more than the last got through, then one more a round', async () => {
    const rig = new SessionRig(plan(8), { concurrency: 4 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1, 2, 3]);
    const finalized = await printed(
      'finalize',
      await rig.finalize([
        [0, 'COMPLETED: made T0'],
        [1, RATE_LIMITED],
        [2, 'API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.'],
        [3, 'COMPLETED: made T3'],
      ]),
    );
    expect(finalized.results.map((r: { index: number; outcome: string }) => [r.index, r.outcome])).toEqual([
      [0, 'completed'],
      [1, 'requeued'],
      [2, 'requeued'],
      [3, 'completed'],
    ]);
    expect(finalized.limit).toEqual({
      message: expect.stringMatching(
        /^a limit refused 2 of this round's subagents \(handed back, no attempt spent\): the next round hands out at most 2 tasks, as many as this one got through$/,
      ),
      handOut: 2,
      resetAt: null,
    });
    expect(rig.state.plan.tasks.slice(0, 4).map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['in_progress', 0],
      ['pending', 0],
      ['pending', 0],
      ['in_progress', 0],
    ]);
    await rig.commit();
    // Two got through: two now, though four may run.
    const next = await printed('next', await rig.nextStep());
    expect(next.tasks.map((t: { index: number }) => t.index)).toEqual([1, 2]);
    expect(next.limit).toEqual({
      message: 'rate-limited: rounds of at most 2 of 4 tasks, one more after each round no limit refused',
      handOut: 2,
      resetAt: null,
    });
    await rig.finalize([
      [1, 'COMPLETED: made T1'],
      [2, 'COMPLETED: made T2'],
    ]);
    await rig.commit();
    // A round none was refused in: one more.
    expect(await rig.next()).toEqual([4, 5, 6]);
    expect(rig.events.filter((e) => e.type === 'limit').map((e) => e.type === 'limit' && [e.change, e.working])).toEqual([
      ['lowered', 2],
      ['raised', 3],
    ]);
  });

  it('a usage limit with a reset time in the reply: nothing is handed out before it (stall limit), and the lead is told when', async () => {
    const rig = new SessionRig(plan(3), { concurrency: 2 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1]);
    const finalized = await printed(
      'finalize',
      await rig.finalize([
        [0, "You've hit your limit · resets 10pm (America/New_York)"],
        [1, "You've hit your limit · resets 10pm (America/New_York)"],
      ]),
    );
    const resetAt = Date.parse(finalized.limit.resetAt);
    // The rig's clock is 2026-01-01 00:00 UTC (19:00 the day before in New York): 10pm there is 03:00 UTC, waited to its end.
    expect(new Date(resetAt).toISOString()).toBe('2026-01-01T03:01:00.000Z');
    expect(finalized.limit.message).toMatch(
      /^a limit refused 2 of this round's subagents \(handed back, no attempt spent\): the usage limit resets at .+; `plan next` hands out nothing before then\. Run \/foreman:execute again after /,
    );
    expect(finalized.limit.handOut).toBe(0);
    expect(finalized.results.map((r: { outcome: string }) => r.outcome)).toEqual(['requeued', 'requeued']);
    const next = await printed('next', await rig.nextStep());
    expect([next.tasks, next.stall]).toEqual([[], 'limit']);
    expect(next.limit).toMatchObject({ handOut: 0, resetAt: finalized.limit.resetAt });
    expect(next.limit.message).toMatch(/^waiting for the usage limit to reset at /);
    // Nothing spent, nothing failed; the run has not ended.
    expect(rig.state.plan.tasks.map((t) => [statusOf(t), t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    expect(rig.finished).toBeNull();
    const hold = rig.events.find((e) => e.type === 'limit' && e.change === 'hold');
    expect(hold).toMatchObject({ limit: 'usage-limit', resetAt: new Date(resetAt).toISOString() });
  });

  it('a reply with a status line is never read as a limit, whatever it says of rate limits', async () => {
    const rig = new SessionRig(plan(1), { concurrency: 2 });
    await rig.setup();
    await rig.next();
    const finalized = await rig.finalize([[0, 'Added the rate limiter; a 429 answers past it.\nCOMPLETED: rate limiter added']]);
    expect(finalized.results.map((r) => r.outcome)).toEqual(['completed']);
    expect(finalized.limit).toBeUndefined();
  });
});
