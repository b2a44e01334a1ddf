// The run's limiter (core/limiter.ts) under random streams of refusals and responses: its rules
// hold whatever the order — the working concurrency stays between 1 and --concurrency, a refusal
// never raises it and a response never lowers it, a new burst halves it and the rest of the burst
// only brings it down to what runs on, a hold lasts what the API asked for and never shortens,
// holds in a row back off twice as long, a usage limit holds until its reset and lowers nothing,
// additive increase is one step per `working × patience` responses, and --limit-wait says when
// the run would wait too long. And the session's rule: a round a limit refused leaves the next no
// more tasks than it got through.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Limiter, type LimiterSettings, type Refusal, MAX_BACKOFF_MS, allowed, holding, newLimiter, overdue, refused, served, settleRound } from '../../src/core/limiter.ts';

type Step = { at: number } & ({ kind: 'served' } | { kind: 'refused'; refusal: Refusal; running: number });

const refusalArb: fc.Arbitrary<Refusal> = fc.oneof(
  fc.record({ kind: fc.constantFrom('rate-limit' as const, 'overloaded' as const), delayMs: fc.option(fc.integer({ min: 0, max: 60_000 }), { nil: undefined }) }).map((r) => (r.delayMs === undefined ? { kind: r.kind } : r)),
  fc.integer({ min: 1, max: 30_000_000 }).map((ahead) => ({ kind: 'usage-limit' as const, resetAt: ahead })),
);

/** Steps at non-decreasing times; a usage limit's reset is taken as that far after its step. */
const stepsArb = (ceiling: number): fc.Arbitrary<Step[]> =>
  fc
    .array(
      fc.tuple(
        fc.integer({ min: 0, max: 20_000 }),
        fc.oneof({ weight: 2, arbitrary: fc.constant<{ kind: 'served' }>({ kind: 'served' }) }, { weight: 1, arbitrary: fc.record({ kind: fc.constant('refused' as const), refusal: refusalArb, running: fc.integer({ min: 0, max: ceiling }) }) }),
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

const settingsArb = fc.record({ ceiling: fc.integer({ min: 1, max: 16 }), backoffMs: fc.integer({ min: 0, max: 20_000 }), maxWaitMs: fc.integer({ min: 0, max: 20_000_000 }) });

const apply = (limiter: Limiter, step: Step, settings: LimiterSettings): Limiter =>
  step.kind === 'served' ? served(limiter, step.at, settings) : refused(limiter, step.refusal, step.at, settings, step.running);

/** `check` every step of random streams: the limiter before it, the step, the limiter after. */
function everyStep(check: (settings: LimiterSettings, before: Limiter, step: Step, after: Limiter) => void): void {
  fc.assert(
    fc.property(settingsArb.chain((s) => fc.tuple(fc.constant(s), stepsArb(s.ceiling))), ([settings, steps]) => {
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

  it('a refusal holds new starts for what the API asked (until a usage limit resets); only a response served lifts a hold, one of the limiter\'s own', () => {
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

  it('a new burst halves the working concurrency; the rest of the burst only brings it down to the workers that run on', () => {
    everyStep((_settings, before, step, after) => {
      if (step.kind !== 'refused' || step.refusal.resetAt !== undefined) return;
      const cap = Math.max(1, step.running);
      if (holding(before, step.at)) expect(after.working).toBe(Math.min(before.working, cap));
      else expect(after.working).toBe(Math.max(1, Math.min(Math.ceil(before.working / 2), cap)));
    });
  });

  it('a usage limit lowers nothing', () => {
    fc.assert(
      fc.property(settingsArb, fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 0, max: 16 }), (settings, start, ahead, running) => {
        const limiter = { ...newLimiter(settings.ceiling), working: Math.min(start, settings.ceiling) };
        const next = refused(limiter, { kind: 'rate-limit', resetAt: 1000 + ahead }, 1000, settings, running);
        expect(next.working).toBe(limiter.working);
        expect(next.kind).toBe('usage-limit');
        expect(next.holdUntil).toBe(1000 + ahead);
        expect(next.resetAt).toBe(1000 + ahead);
      }),
    );
  });

  it('holds in a row with nothing served between back off twice as long each time', () => {
    fc.assert(
      fc.property(settingsArb.filter((s) => s.backoffMs > 0), fc.integer({ min: 2, max: 8 }), (settings, holds) => {
        let limiter = newLimiter(settings.ceiling);
        let now = 0;
        for (let k = 1; k <= holds; k++) {
          limiter = refused(limiter, { kind: 'overloaded' }, now, settings, settings.ceiling);
          expect(limiter.strikes).toBe(k);
          const own = k === 1 ? settings.backoffMs : Math.min(MAX_BACKOFF_MS, settings.backoffMs * 2 ** (k - 1));
          expect(limiter.holdUntil - now).toBe(own);
          now = limiter.holdUntil;
        }
        // A response served ends the streak (and lifts the limiter's own hold): the next hold is the API's word again.
        limiter = served(limiter, now - 1, settings);
        expect(holding(limiter, now - 1)).toBe(false);
        limiter = refused(limiter, { kind: 'rate-limit', delayMs: 7 }, now, settings, settings.ceiling);
        expect(limiter.strikes).toBe(1);
        expect(limiter.holdUntil - now).toBe(7);
      }),
    );
  });

  it('raises the working concurrency by one per working × patience responses, up to --concurrency', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 16 }), fc.integer({ min: 0, max: 5 }), (ceiling, refusalsAtOne) => {
        const settings = { ceiling, backoffMs: 100, maxWaitMs: 1_000_000 };
        // Brought down to one, then refused at one again and again: patience doubles each time.
        let limiter = refused(newLimiter(ceiling), { kind: 'rate-limit', delayMs: 1 }, 0, settings, 1);
        expect(limiter.working).toBe(1);
        let now = 10;
        for (let k = 0; k < refusalsAtOne; k++) {
          // Each after the hold before it: a burst of its own.
          limiter = refused(limiter, { kind: 'rate-limit', delayMs: 1 }, now, settings, 1);
          now = limiter.holdUntil;
        }
        const patience = Math.min(32, 2 ** refusalsAtOne);
        expect(limiter.patience).toBe(refusalsAtOne === 0 ? 1 : patience);
        // Each step up takes exactly working × patience responses.
        for (let working = 1; working < ceiling; working++) {
          const need = working * limiter.patience;
          for (let k = 1; k < need; k++) {
            limiter = served(limiter, now++, settings);
            expect(limiter.working).toBe(working);
          }
          limiter = served(limiter, now++, settings);
          expect(limiter.working).toBe(working + 1);
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
      expect(verdict === null ? null : verdict.until).toBe(after.holdUntil - from > settings.maxWaitMs ? after.holdUntil : null);
    });
  });

  it('--limit-wait 0 never waits: any refusal that holds is overdue', () => {
    fc.assert(
      fc.property(refusalArb, fc.integer({ min: 1, max: 16 }), (refusal, ceiling) => {
        const settings = { ceiling, backoffMs: 1000, maxWaitMs: 0 };
        const at = 5000;
        const given = refusal.resetAt !== undefined ? { ...refusal, resetAt: at + refusal.resetAt } : refusal;
        const limiter = refused(newLimiter(ceiling), given, at, settings, ceiling);
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
          for (const through of results) limiter = through ? served(limiter, now++, settings, true) : refused(limiter, { kind: 'rate-limit' }, now++, settings, 0, true);
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
});
