import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeAttemptFailure } from '../../src/core/attempt/attempt-failure.ts';
import {
  clipHead,
  clipMiddle,
  clipTail,
  compactTimestamp,
  formatClock,
  formatCost,
  formatCostExact,
  formatDuration,
  formatElapsed,
  formatSeconds,
  isoSeconds,
  listIndices,
  markdownCell,
  namedTasks,
  oneLine,
  plural,
  wrapWords,
} from '../../src/core/format.ts';

/** What `npm test` prints when it fails: a page of warnings, then the error. */
const npmLike = [
  ...Array.from({ length: 200 }, (_, i) => `npm WARN deprecated package-${i}@1.0.0: no longer supported`),
  'Error: expected 2 to equal 3 (test/sum.test.js:4)',
].join('\n');

describe('clipHead / clipTail / clipMiddle', () => {
  it('leave short text alone', () => {
    for (const clip of [clipHead, clipTail, clipMiddle]) expect(clip('short', 10)).toBe('short');
  });

  it('clipHead keeps the beginning, clipTail the end, each marking the cut within the limit', () => {
    expect(clipHead('abcdefghij', 5)).toBe('abcd…');
    expect(clipTail('abcdefghij', 5)).toBe('…ghij');
  });

  it('never return more than `max` characters, whatever the mark', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.integer({ min: 0, max: 70 }), fc.string({ maxLength: 20 }), (text, max, mark) => {
        for (const clipped of [clipHead(text, max, mark), clipTail(text, max, mark), clipMiddle(text, max)]) {
          expect(clipped.length).toBeLessThanOrEqual(max);
          if (text.length <= max) expect(clipped).toBe(text);
        }
        if (text.length > max && max > mark.length) {
          expect(clipHead(text, max, mark)).toBe(text.slice(0, max - mark.length) + mark);
          expect(clipTail(text, max, mark)).toBe(mark + text.slice(text.length - (max - mark.length)));
        }
      }),
    );
  });

  it('take a mark of their own, and give only part of it when there is no room for more', () => {
    expect(clipHead('x'.repeat(100), 20, '… [80 more]')).toBe('xxxxxxxxx… [80 more]');
    expect(clipHead('abcdef', 1)).toBe('…');
    expect(clipHead('abcdef', 0)).toBe('');
    expect(clipTail('abcdef', 0)).toBe('');
  });

  it('never cut a character outside the Basic Multilingual Plane in half', () => {
    const faces = '😀😁😂😃';
    expect(clipHead(faces, 4)).toBe('😀…');
    expect(clipTail(faces, 4)).toBe('…😃');
    expect(clipHead(faces, 5)).toBe('😀😁…');
    expect(clipTail(`a${faces}`, 6)).toBe('…😂😃');
  });

  it('clipMiddle keeps the first line and the end, within the limit', () => {
    const clipped = clipMiddle(`header line\n${npmLike}`, 300);
    expect(clipped.length).toBeLessThanOrEqual(300);
    expect(clipped.startsWith('header line\n…')).toBe(true);
    expect(clipped.endsWith('Error: expected 2 to equal 3 (test/sum.test.js:4)')).toBe(true);
    const oneLine = clipMiddle(`${'x'.repeat(100)}END`, 30);
    expect(oneLine.length).toBeLessThanOrEqual(30);
    expect(oneLine.startsWith('xxxxxxxxxx…')).toBe(true);
    expect(oneLine.endsWith('END')).toBe(true);
  });
});

describe('oneLine', () => {
  it('collapses whitespace and clips with a mark, within the limit', () => {
    expect(oneLine('  a\n\tb   c  ')).toBe('a b c');
    expect(oneLine('word '.repeat(200), 10)).toBe('word word…');
    expect(oneLine('x'.repeat(500)).length).toBe(400);
  });
});

describe('wrapWords', () => {
  it('breaks at spaces, cuts a word longer than a line, and loses no word', () => {
    expect(wrapWords('run the same command again to resume', 12)).toEqual(['run the same', 'command', 'again to', 'resume']);
    expect(wrapWords('see /a/very/long/path/name here', 8)).toEqual(['see', '/a/very/', 'long/pat', 'h/name', 'here']);
    expect(wrapWords('', 10)).toEqual(['']);
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-zé✓]{1,15}$/), { maxLength: 30 }), fc.integer({ min: 1, max: 40 }), (words, width) => {
        const lines = wrapWords(words.join(' '), width);
        for (const line of lines) expect([...line].length).toBeLessThanOrEqual(width);
        expect(lines.join('').replace(/ /g, '')).toBe(words.join(''));
      }),
    );
  });
});

describe('durations, clocks and timestamps', () => {
  it('formatDuration and formatElapsed', () => {
    expect([850, 42_000, 187_000, 7_500_000, -5, Number.NaN].map(formatDuration)).toEqual(['850ms', '42s', '3m07s', '2h05m', '0ms', '0ms']);
    expect([850, 42_000].map(formatElapsed)).toEqual(['0s', '42s']);
  });

  it('formatSeconds gives tenths of a second', () => {
    expect([163, 0, 61_250].map(formatSeconds)).toEqual(['0.2s', '0.0s', '61.3s']);
  });

  it('formatClock gives mm:ss.s and never shows 60 seconds', () => {
    expect([0, 1_234, 62_345, 59_960, 6_000_000, -3].map(formatClock)).toEqual(['00:00.0', '00:01.2', '01:02.3', '01:00.0', '100:00.0', '00:00.0']);
  });

  it('isoSeconds and compactTimestamp drop the milliseconds', () => {
    const at = Date.UTC(2026, 10, 22, 1, 2, 3, 456);
    expect(isoSeconds(at)).toBe('2026-11-22T01:02:03Z');
    expect(compactTimestamp(new Date(at))).toBe('20261122T010203Z');
  });
});

describe('costs', () => {
  it('formatCost rounds to cents and never shows a measured cost under a cent as zero', () => {
    expect([0, 0.0002, 0.004, 0.005, 0.42, 12.345, -1, Number.NaN].map(formatCost)).toEqual([
      '$0.00',
      '<$0.01',
      '<$0.01',
      '$0.01',
      '$0.42',
      '$12.35',
      '$0.00',
      '$0.00',
    ]);
  });

  it('formatCostExact keeps four places under a cent', () => {
    expect([0, 0.000235, 0.0099, 0.01, 1.2345, -1].map(formatCostExact)).toEqual(['$0.00', '$0.0002', '$0.0099', '$0.01', '$1.23', '$0.00']);
  });
});

describe('lists', () => {
  it('markdownCell keeps a table cell on one line and escapes its bars', () => {
    expect(markdownCell(' a | b\r\n\nc ')).toBe('a \\| b c');
  });

  it('listIndices, namedTasks and plural', () => {
    expect([[], [1], [1, 3], [1, 3, 4]].map(listIndices)).toEqual(['', '1', '1 and 3', '1, 3 and 4']);
    expect([[1], [1, 3], [1, 3, 4]].map(namedTasks)).toEqual(['task 1', 'tasks 1 and 3', 'tasks 1, 3 and 4']);
    expect([plural(1, 'task'), plural(2, 'task'), plural(0, 'entry', 'entries')]).toEqual(['1 task', '2 tasks', '0 entries']);
  });
});

describe('failure reasons quote the end of a command’s output', () => {
  it('an acceptance check that prints 200 warnings then its error shows the error', () => {
    const reason = describeAttemptFailure({
      reason: 'acceptance',
      failures: [
        {
          criterion: 'tests pass',
          check: 'npm test',
          passed: false,
          exitCode: 1,
          timedOut: false,
          timeLimit: { ms: 300_000, flag: '--check-timeout' },
          output: npmLike,
        },
      ],
    });
    expect(reason).toContain('acceptance check failed (tests pass): `npm test` exited 1');
    expect(reason).toContain('Error: expected 2 to equal 3 (test/sum.test.js:4)');
    expect(reason).not.toContain('package-0@');
    expect(reason.length).toBeLessThan(2200);
  });
});
