// The run's limiter (core/limits/limiter.ts) under random streams of refusals and responses: its rules
// hold whatever the order — the working concurrency stays between 1 and --concurrency, a refusal
// never raises it and a response never lowers it, a new burst halves it and the rest of the burst
// leaves it, a hold lasts what the API asked for and only a response lifts one (of the limiter's
// own), holds in a row back off twice as long, a usage limit holds until its reset and lowers
// nothing, additive increase is one step per `working × patience` responses, and --limit-wait
// says when the run would wait too long. The API out of reach (`api-unreachable`) lowers nothing,
// holds for the limiter's own back-off (at most a minute), lets one worker run until a response
// is served, and is bounded by --limit-wait from its first unanswered request. And the session's
// rule: a round a limit refused leaves the next no more tasks than it got through.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  allowed,
  holding,
  type Limiter,
  type LimiterSettings,
  MAX_BACKOFF_MS,
  MAX_PATIENCE,
  MAX_PROBE_MS,
  newLimiter,
  outage,
  overdue,
  type Refusal,
  refused,
  served,
  settleRound,
} from '../../src/core/limits/limiter.ts';

type Step = { at: number } & ({ kind: 'served' } | { kind: 'refused'; refusal: Refusal });

const refusalArb: fc.Arbitrary<Refusal> = fc.oneof(
  fc
    .record({
      kind: fc.constantFrom('rate-limit' as const, 'overloaded' as const),
      delayMs: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: undefined }),
    })
    .map((r) => (r.delayMs === undefined ? { kind: r.kind } : r)),
  fc.integer({ min: 1, max: 30_000_000 }).map((ahead) => ({ kind: 'usage-limit' as const, resetAt: ahead })),
);

/**
 * Steps at non-decreasing times, each a response or one of `refusals` (weighted against responses
 * at 2); a usage limit's reset is taken as that far after its step.
 */
const stepsOf = (...refusals: Array<{ weight: number; arbitrary: fc.Arbitrary<Refusal> }>): fc.Arbitrary<Step[]> =>
  fc
    .array(
      fc.tuple(
        fc.integer({ min: 0, max: 20_000 }),
        fc.oneof(
          { weight: 2, arbitrary: fc.constant<{ kind: 'served' }>({ kind: 'served' }) },
          ...refusals.map(({ weight, arbitrary }) => ({ weight, arbitrary: arbitrary.map((refusal) => ({ kind: 'refused' as const, refusal })) })),
        ),
      ),
      { maxLength: 80 },
    )
    .map((raw) => {
      let at = 0;
      return raw.map(([gap, s]) => {
        at += gap;
        if (s.kind === 'refused' && s.refusal.resetAt !== undefined) return { at, ...s, refusal: { ...s.refusal, resetAt: at + s.refusal.resetAt } };
        return { at, ...s };
      });
    });

const stepsArb: fc.Arbitrary<Step[]> = stepsOf({ weight: 1, arbitrary: refusalArb });

const settingsArb = fc.record({
  ceiling: fc.integer({ min: 1, max: 16 }),
  backoffMs: fc.integer({ min: 0, max: 20_000 }),
  maxWaitMs: fc.integer({ min: 0, max: 20_000_000 }),
});

const apply = (limiter: Limiter, step: Step, settings: LimiterSettings): Limiter =>
  step.kind === 'served' ? served(limiter, step.at, settings) : refused(limiter, step.refusal, step.at, settings);

/** `check` every step of random streams: the limiter before it, the step, the limiter after. */
function everyStep(check: (settings: LimiterSettings, before: Limiter, step: Step, after: Limiter) => void): void {
  fc.assert(
    fc.property(settingsArb, stepsArb, (settings, steps) => {
      let limiter = newLimiter(settings.ceiling);
      for (const step of steps) {
        const next = apply(limiter, step, settings);
        check(settings, limiter, step, next);
        limiter = next;
      }
    }),
    { numRuns: 500 },
  );
}

describe('the limiter', () => {
  it('keeps the working concurrency from 1 to --concurrency; a refusal never raises it, a response never lowers it, by one at most', () => {
    everyStep((settings, before, step, after) => {
      expect(after.working).toBeGreaterThanOrEqual(1);
      expect(after.working).toBeLessThanOrEqual(settings.ceiling);
      expect(allowed(after, settings.ceiling)).toBe(after.working);
      if (step.kind === 'refused') expect(after.working).toBeLessThanOrEqual(before.working);
      else expect([before.working, before.working + 1]).toContain(after.working);
    });
  });

  it("a refusal holds new starts for what the API asked (until a usage limit resets); only a response served lifts a hold, one of the limiter's own", () => {
    everyStep((settings, before, step, after) => {
      if (step.kind === 'served' && before.ownHold && holding(before, step.at)) expect([after.holdUntil, after.ownHold]).toEqual([step.at, false]);
      else expect(after.holdUntil).toBeGreaterThanOrEqual(before.holdUntil);
      if (step.kind !== 'refused') return;
      const { refusal } = step;
      if (refusal.resetAt !== undefined) expect(after.holdUntil).toBeGreaterThanOrEqual(refusal.resetAt);
      else expect(after.holdUntil).toBeGreaterThanOrEqual(step.at + (refusal.delayMs ?? Math.min(settings.backoffMs, MAX_BACKOFF_MS)));
      expect(after.refusals).toBe(before.refusals + 1);
    });
  });

  it('a new burst halves the working concurrency; the rest of the burst leaves it', () => {
    everyStep((_settings, before, step, after) => {
      if (step.kind !== 'refused' || step.refusal.resetAt !== undefined) return;
      expect(after.working).toBe(holding(before, step.at) ? before.working : Math.ceil(before.working / 2));
    });
  });

  it('a response to a worker the hold refused lifts the hold: the API serves it again', () => {
    fc.assert(
      fc.property(settingsArb, refusalArb, fc.integer({ min: 0, max: 60_000 }), (settings, refusal, after) => {
        const given = refusal.resetAt !== undefined ? { ...refusal, resetAt: 1000 + refusal.resetAt } : refusal;
        const limiter = refused(newLimiter(settings.ceiling), given, 1000, settings);
        const at = 1000 + Math.min(after, Math.max(0, limiter.holdUntil - 1001));
        const lifted = served(limiter, at, settings, false, true);
        expect(holding(lifted, at)).toBe(false);
        expect([lifted.refusedSince, lifted.strikes]).toEqual([null, 0]);
        // Served to another worker, a hold the API asked for stands.
        if (!limiter.ownHold && holding(limiter, at)) expect(served(limiter, at, settings).holdUntil).toBe(limiter.holdUntil);
      }),
    );
  });

  it('a usage limit lowers nothing', () => {
    fc.assert(
      fc.property(settingsArb, fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 10_000_000 }), (settings, start, ahead) => {
        const limiter = { ...newLimiter(settings.ceiling), working: Math.min(start, settings.ceiling) };
        const next = refused(limiter, { kind: 'rate-limit', resetAt: 1000 + ahead }, 1000, settings);
        expect(next.working).toBe(limiter.working);
        expect(next.kind).toBe('usage-limit');
        expect(next.holdUntil).toBe(1000 + ahead);
        expect(next.resetAt).toBe(1000 + ahead);
      }),
    );
  });

  it('holds in a row with nothing served between back off twice as long each time', () => {
    fc.assert(
      fc.property(
        settingsArb.filter((s) => s.backoffMs > 0),
        fc.integer({ min: 2, max: 8 }),
        (settings, holds) => {
          let limiter = newLimiter(settings.ceiling);
          let now = 0;
          for (let k = 1; k <= holds; k++) {
            limiter = refused(limiter, { kind: 'overloaded' }, now, settings);
            expect(limiter.strikes).toBe(k);
            const own = k === 1 ? settings.backoffMs : Math.min(MAX_BACKOFF_MS, settings.backoffMs * 2 ** (k - 1));
            expect(limiter.holdUntil - now).toBe(own);
            now = limiter.holdUntil;
          }
          // A response served ends the streak (and lifts the limiter's own hold): the next hold is the API's word again.
          limiter = served(limiter, now - 1, settings);
          expect(holding(limiter, now - 1)).toBe(false);
          limiter = refused(limiter, { kind: 'rate-limit', delayMs: 7 }, now, settings);
          expect(limiter.strikes).toBe(1);
          expect(limiter.holdUntil - now).toBe(7);
        },
      ),
    );
  });

  it('raises the working concurrency by one per working × patience responses, up to --concurrency; patience doubles (to 2) when a burst comes at a level no higher than the last one’s, and starts over past it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 16 }), fc.integer({ min: 1, max: 5 }), (ceiling, bursts) => {
        const settings = { ceiling, backoffMs: 100, maxWaitMs: 1_000_000 };
        // Brought down burst after burst (each after the hold before it): halved each time, to 1 at least.
        let limiter = newLimiter(ceiling);
        let now = 0;
        let expected = ceiling;
        for (let k = 0; k < bursts; k++) {
          limiter = refused(limiter, { kind: 'rate-limit', delayMs: 1 }, now, settings);
          expected = Math.ceil(expected / 2);
          expect(limiter.working).toBe(expected);
          now = limiter.holdUntil;
        }
        // The first burst came at the ceiling, never refused before; each later one at a level no higher than the last.
        expect(limiter.patience).toBe(bursts === 1 ? 1 : Math.min(MAX_PATIENCE, 2 ** (bursts - 1)));
        const lastLevel = limiter.refusedAt!;
        let patience = limiter.patience;
        for (let working = limiter.working; working < ceiling; working++) {
          const need = working * patience;
          for (let k = 1; k < need; k++) {
            limiter = served(limiter, now++, settings);
            expect(limiter.working).toBe(working);
          }
          limiter = served(limiter, now++, settings);
          expect(limiter.working).toBe(working + 1);
          if (working + 1 > lastLevel) patience = 1;
          expect(limiter.patience).toBe(patience);
        }
        for (let k = 0; k < 3 * ceiling; k++) limiter = served(limiter, now++, settings);
        expect(limiter.working).toBe(ceiling);
      }),
    );
  });

  it('says the run would wait too long exactly when the hold reaches past --limit-wait from the first refusal (or a reset from now)', () => {
    everyStep((settings, _before, step, after) => {
      const verdict = overdue(after, step.at, settings);
      if (step.kind === 'served' && !holding(after, step.at)) expect(verdict).toBeNull();
      if (step.kind !== 'refused') return;
      const from = after.kind === 'usage-limit' ? step.at : after.refusedSince!;
      // A hold that ends at this very step holds nothing (with no back-off, a refusal's own hold ends as it starts).
      const waiting = holding(after, step.at) || outage(after);
      expect(verdict === null ? null : verdict.until).toBe(waiting && after.holdUntil - from > settings.maxWaitMs ? after.holdUntil : null);
    });
  });

  it('--limit-wait 0 never waits: any refusal that holds is overdue', () => {
    fc.assert(
      fc.property(refusalArb, fc.integer({ min: 1, max: 16 }), (refusal, ceiling) => {
        const settings = { ceiling, backoffMs: 1000, maxWaitMs: 0 };
        const at = 5000;
        const given = refusal.resetAt !== undefined ? { ...refusal, resetAt: at + refusal.resetAt } : refusal;
        const limiter = refused(newLimiter(ceiling), given, at, settings);
        expect(overdue(limiter, at, settings) !== null).toBe(holding(limiter, at));
      }),
    );
  });

  it('in a session, a round a limit refused leaves the next no more tasks than it got through (at least one); a clean round, one more', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.array(fc.array(fc.boolean(), { maxLength: 16 }), { maxLength: 10 }), (ceiling, rounds) => {
        const settings = { ceiling, backoffMs: 1000, maxWaitMs: 0 };
        let limiter = newLimiter(ceiling);
        let now = 0;
        for (const results of rounds) {
          const before = limiter.working;
          for (const through of results)
            limiter = through ? served(limiter, now++, settings, true) : refused(limiter, { kind: 'rate-limit' }, now++, settings, true);
          // Nothing changes the working concurrency in the round itself (nor holds, without a reset time).
          expect(limiter.working).toBe(before);
          expect(limiter.holdUntil).toBe(0);
          limiter = settleRound(limiter, ceiling);
          const gotThrough = results.filter(Boolean).length;
          if (results.some((r) => !r)) expect(limiter.working).toBe(Math.max(1, Math.min(before, gotThrough)));
          else if (results.length > 0) expect(limiter.working).toBe(Math.min(ceiling, before + 1));
          else expect(limiter.working).toBe(before);
          expect(limiter.round).toEqual({ through: 0, refused: 0 });
        }
      }),
    );
  });

  describe('the API out of reach', () => {
    const unreachable: Refusal = { kind: 'api-unreachable' };
    /** Random streams of rate and usage limits, outages and responses, at non-decreasing times. */
    const mixedArb: fc.Arbitrary<Step[]> = stepsOf({ weight: 2, arbitrary: fc.constant(unreachable) }, { weight: 1, arbitrary: refusalArb });
    const everyMixedStep = (check: (settings: LimiterSettings, before: Limiter, step: Step, after: Limiter) => void) =>
      fc.assert(
        fc.property(settingsArb, mixedArb, (settings, steps) => {
          let limiter = newLimiter(settings.ceiling);
          for (const step of steps) {
            const next = apply(limiter, step, settings);
            check(settings, limiter, step, next);
            limiter = next;
          }
        }),
        { numRuns: 500 },
      );
    const isOutage = (step: Step) => step.kind === 'refused' && step.refusal.kind === 'api-unreachable';

    it('lowers nothing and lets one worker run (the probe) until a response is served; then the run is as wide as before', () => {
      everyMixedStep((settings, before, step, after) => {
        if (isOutage(step)) {
          expect(after.working).toBe(before.working);
          expect(after.refusals).toBe(before.refusals + 1);
          expect(after.refusedSince).toBe(before.refusedSince ?? step.at);
        }
        expect(allowed(after, settings.ceiling)).toBe(outage(after) ? 1 : Math.min(settings.ceiling, after.working));
        if (step.kind === 'served') {
          expect(outage(after)).toBe(false);
          expect(after.unreachable).toBeNull();
        }
      });
    });

    it('holds new starts for its own back-off, doubling per try that finds no hold, at most a minute (a usage limit’s hold outranks it); a response served lifts it', () => {
      everyMixedStep((settings, before, step, after) => {
        if (!isOutage(step)) return;
        const own = Math.min(MAX_PROBE_MS, settings.backoffMs * 2 ** Math.max(0, after.strikes - 1));
        expect(after.holdUntil).toBe(Math.max(before.holdUntil, step.at + own));
        expect(after.strikes).toBe(holding(before, step.at) ? before.strikes : before.strikes + 1);
        expect(after.kind).toBe(holding(before, step.at) && before.kind === 'usage-limit' ? 'usage-limit' : 'api-unreachable');
        if (after.kind === 'api-unreachable' && after.holdUntil > before.holdUntil) {
          expect(after.ownHold).toBe(true);
          // Its own hold: a response served to any worker lifts it.
          const lifted = served(after, step.at, settings);
          expect([holding(lifted, step.at), outage(lifted)]).toEqual([false, false]);
        }
      });
    });

    it('is overdue exactly when the hold (or now, when none holds) reaches past --limit-wait from the first request left unanswered', () => {
      everyMixedStep((settings, _before, step, after) => {
        if (!isOutage(step) || after.kind !== 'api-unreachable') return;
        const verdict = overdue(after, step.at, settings);
        // Counted from the first unanswered request, held or not (a back-off of 0 holds nothing, and the run would probe on for ever).
        const until = Math.max(after.holdUntil, step.at);
        expect(verdict === null ? null : verdict.until).toBe(until - after.refusedSince! > settings.maxWaitMs ? until : null);
      });
    });

    it('tries again at least once a minute, however long it lasts, and remembers the CLI’s last words for it', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 20_000 }), fc.integer({ min: 1, max: 40 }), (backoffMs, tries) => {
          const settings = { ceiling: 4, backoffMs, maxWaitMs: 18_000_000 };
          let limiter = newLimiter(4);
          let now = 0;
          for (let k = 1; k <= tries; k++) {
            limiter = refused(limiter, k === 1 ? { ...unreachable, message: 'API Error: Connection refused (ECONNREFUSED)' } : unreachable, now, settings);
            expect(limiter.holdUntil - now).toBe(Math.min(MAX_PROBE_MS, backoffMs * 2 ** (k - 1)));
            expect(limiter.holdUntil - now).toBeLessThanOrEqual(MAX_PROBE_MS);
            now = limiter.holdUntil;
          }
          expect([limiter.working, allowed(limiter, 4), limiter.unreachable]).toEqual([4, 1, 'API Error: Connection refused (ECONNREFUSED)']);
        }),
      );
    });
  });
});
