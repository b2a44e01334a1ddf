// The one wording of a time limit that was hit: what timed out, after how long, what sets the
// limit, and that its whole process group was ended.

import { describe, expect, it } from 'vitest';
import { describeTimeLimitHit, formatLimit } from '../../src/core/limits/time-limit.ts';

describe('describeTimeLimitHit', () => {
  it('names the command, the limit and the flag that sets it', () => {
    expect(describeTimeLimitHit('npm test', { ms: 300_000, flag: '--check-timeout' })).toBe(
      '`npm test` timed out after 300s (the limit set by --check-timeout); its whole process group was ended',
    );
  });

  it("says when the limit is a fixed one of foreman's own", () => {
    expect(describeTimeLimitHit('npm config get cache registry', { ms: 30_000, flag: null })).toBe(
      '`npm config get cache registry` timed out after 30s (a fixed limit); its whole process group was ended',
    );
  });

  it('says when the limit was what was left of a larger budget', () => {
    expect(describeTimeLimitHit('npm ci', { ms: 412_300, flag: '--probe-timeout', budgetMs: 600_000 })).toBe(
      '`npm ci` timed out after 412.3s (the rest of the 600s set by --probe-timeout); its whole process group was ended',
    );
  });

  it('shows a long or multi-line command on one line, clipped', () => {
    const command = `node -e "\n${'x'.repeat(500)}\n"`;
    const text = describeTimeLimitHit(command, { ms: 1000, flag: '--gate-timeout' });
    expect(text).not.toContain('\n');
    expect(text).toMatch(/^`node -e " x+…` timed out after 1s \(the limit set by --gate-timeout\)/);
    expect(text.length).toBeLessThan(250);
  });
});

describe('formatLimit', () => {
  it('gives seconds as the flags take them, tenths when not whole, milliseconds under a second', () => {
    expect([formatLimit(300_000), formatLimit(1000), formatLimit(2_500), formatLimit(4_321), formatLimit(300), formatLimit(0)]).toEqual([
      '300s',
      '1s',
      '2.5s',
      '4.3s',
      '300ms',
      '0ms',
    ]);
  });
});
