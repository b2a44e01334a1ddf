import { describe, expect, it } from 'vitest';
import { describeAttemptFailure } from '../../src/core/finalize.ts';
import { clipHead, clipMiddle, clipTail } from '../../src/core/text.ts';

/** What `npm test` prints when it fails: a page of warnings, then the error. */
const npmLike = [...Array.from({ length: 200 }, (_, i) => `npm WARN deprecated package-${i}@1.0.0: no longer supported`), 'Error: expected 2 to equal 3 (test/sum.test.js:4)'].join('\n');

describe('clipHead / clipTail / clipMiddle', () => {
  it('leave short text alone', () => {
    for (const clip of [clipHead, clipTail, clipMiddle]) expect(clip('short', 10)).toBe('short');
  });

  it('clipHead keeps the beginning, clipTail the end, each marking the cut', () => {
    expect(clipHead('abcdefghij', 4)).toBe('abcd…');
    expect(clipTail('abcdefghij', 4)).toBe('…ghij');
  });

  it('clipMiddle keeps the first line and the end, within the limit', () => {
    const clipped = clipMiddle(`header line\n${npmLike}`, 300);
    expect(clipped.length).toBeLessThanOrEqual(300);
    expect(clipped.startsWith('header line\n…')).toBe(true);
    expect(clipped.endsWith('Error: expected 2 to equal 3 (test/sum.test.js:4)')).toBe(true);
    const oneLine = clipMiddle('x'.repeat(100) + 'END', 30);
    expect(oneLine.length).toBeLessThanOrEqual(30);
    expect(oneLine.startsWith('xxxxxxxxxx…')).toBe(true);
    expect(oneLine.endsWith('END')).toBe(true);
  });
});

describe('failure reasons quote the end of a command’s output', () => {
  it('an acceptance check that prints 200 warnings then its error shows the error', () => {
    const reason = describeAttemptFailure({
      reason: 'acceptance',
      failures: [{ criterion: 'tests pass', check: 'npm test', passed: false, exitCode: 1, timedOut: false, output: npmLike }],
    });
    expect(reason).toContain('acceptance check failed (tests pass): `npm test` exited 1');
    expect(reason).toContain('Error: expected 2 to equal 3 (test/sum.test.js:4)');
    expect(reason).not.toContain('package-0@');
    expect(reason.length).toBeLessThan(2200);
  });
});
