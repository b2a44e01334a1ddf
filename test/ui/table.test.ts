import { describe, expect, it } from 'vitest';
import { table } from '../../src/ui/table.ts';

const headers = ['run', 'goal', 'archive'];
const rows = [['r1', 'Add rate limiting to the public API', '.design/history/20261125T181147Z-plan.json']];
const width = (text: string) => Math.max(...text.split('\n').map((line) => line.length));

describe('table', () => {
  it('with room (or no width to fit, as piped), keeps every cell whole', () => {
    for (const maxWidth of [undefined, Number.POSITIVE_INFINITY, 200]) {
      expect(table(headers, rows, { maxWidth, shrink: [{ column: 1 }] }).split('\n')).toEqual([
        'run  goal                                 archive',
        `───  ${'─'.repeat(35)}  ${'─'.repeat(42)}`,
        'r1   Add rate limiting to the public API  .design/history/20261125T181147Z-plan.json',
      ]);
    }
  });

  it('too wide, narrows the columns in the order given, each to its minimum before the next', () => {
    const shrink = [
      { column: 2, min: 27, keep: 'end' as const },
      { column: 1, min: 10 },
    ];
    // The archive alone gives up enough: its folder goes, its file name stays.
    const some = table(headers, rows, { maxWidth: 70, shrink });
    expect(width(some)).toBe(70);
    expect(some.split('\n')[2]).toBe('r1   Add rate limiting to the public API  …/20261125T181147Z-plan.json');
    // At its minimum, the goal gives up the rest, keeping its start.
    const more = table(headers, rows, { maxWidth: 45, shrink });
    expect(width(more)).toBe(45);
    expect(more.split('\n')[2]).toBe('r1   Add rate l…  …20261125T181147Z-plan.json');
    // Narrower than every minimum: no column goes below it (the terminal wraps what is left).
    expect(table(headers, rows, { maxWidth: 10, shrink }).split('\n')[2]).toBe('r1   Add rate …  …20261125T181147Z-plan.json');
  });

  it('never narrows a column below its header, nor one not named', () => {
    const narrow = table(['#', 'subject', 'status'], [['0', 'Survey the request pipeline', 'completed']], { maxWidth: 5, shrink: [{ column: 1 }] });
    expect(narrow.split('\n')[2]).toBe('0  Survey…  completed');
  });
});
