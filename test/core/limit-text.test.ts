// What Claude Code's words say of a limit (core/limits/limit-text.ts): the forms 2.1.330 wrote against
// the scripted API (CLI-NOTES.md, "Rate and usage limits"), at the moment they were seen.

import { describe, expect, it } from 'vitest';
import { readLimitText } from '../../src/core/limits/limit-text.ts';

// 2026-11-27 17:18:30 UTC: 12:18:30 in New York (EST, UTC−5).
const now = Date.parse('2026-11-27T17:18:30Z');

describe('readLimitText', () => {
  it.each([
    // Seen on the real CLI with resets 600 s, 3 h, ~28 h and ~4.6 days ahead.
    ["You've hit your 5-hour limit · resets 12:28pm (America/New_York)", '2026-11-27T17:28:00Z'],
    ["You've hit your 5-hour limit · resets 8:18pm (UTC)", '2026-11-27T20:18:00Z'],
    ["You've hit your 5-hour limit · resets Nov 28, 4:05pm (America/New_York)", '2026-11-28T21:05:00Z'],
    ["You've hit your 5-hour limit · resets Dec 2, 8:25am (UTC)", '2026-12-02T08:25:00Z'],
    ["You've hit your 5-hour limit · resets 3pm (America/New_York)", '2026-11-27T20:00:00Z'],
    ["You've hit your limit · resets 2:18pm (America/New_York)", '2026-11-27T19:18:00Z'],
    // As people reported them.
    ["You've hit your limit · resets 10pm (America/New_York)", '2026-11-28T03:00:00Z'],
    ["You've hit your session limit · resets 12:50am (America/Los_Angeles)", '2026-11-28T08:50:00Z'],
    ['Claude AI usage limit reached|1749924000', '2025-06-14T18:00:00Z'],
  ])('%s → %s', (text, reset) => {
    // The end of the minute named, except for an epoch second (exact).
    const minute = text.includes('|') ? 0 : 60_000;
    expect(readLimitText(text, now)).toEqual({ usage: true, resetAt: Date.parse(reset) + minute });
  });

  it('a time of day already past today is tomorrow’s', () => {
    // 12:18 in New York: 9am has passed.
    expect(readLimitText("You've hit your limit · resets 9am (America/New_York)", now)?.resetAt).toBe(Date.parse('2026-11-28T14:01:00Z'));
  });

  it('reads a time without a zone in the local zone', () => {
    const read = readLimitText("You're out of extra usage · resets 5pm", now);
    expect(read?.usage).toBe(true);
    const local = new Date(read!.resetAt!);
    expect([local.getHours(), local.getMinutes()]).toEqual([17, 1]);
    expect(read!.resetAt! > now && read!.resetAt! - now <= 86_400_000).toBe(true);
  });

  it('a daylight-saving change between now and the reset is counted', () => {
    // 2026-03-08: New York goes from EST to EDT at 2am. Seen the evening before, 10am is EDT.
    const before = Date.parse('2026-03-08T04:00:00Z');
    expect(readLimitText("You've hit your limit · resets 10am (America/New_York)", before)?.resetAt).toBe(Date.parse('2026-03-08T14:01:00Z'));
  });

  it('a rate limit or overload with no reset, a zone Intl does not know, or no limit at all', () => {
    expect(readLimitText('API Error: Request rejected (429) · This request would exceed your account’s rate limit.', now)).toEqual({ usage: false });
    expect(readLimitText('API Error: Server is temporarily limiting requests (not your usage limit) · scripted 429 rate_limit_error', now)).toEqual({
      usage: false,
    });
    expect(readLimitText("You've hit your limit · resets 10pm (Mars/Olympus_Mons)", now)).toEqual({ usage: true });
    // A task about rate limits is not one.
    expect(readLimitText('COMPLETED: added the rate limiter; a 429 answers past the rate limit', now)).toBeNull();
    expect(readLimitText('COMPLETED: wrote a.txt', now)).toBeNull();
  });
});
