import { describe, expect, it } from 'vitest';
import { buildMessage } from '../../src/core/integration/git-text.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { roundMessage, TRAILER_RESULT } from '../../src/run/commit.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const planWith = (results: Array<string | undefined>): Plan =>
  makePlan(
    results.map((result, index) => ({ ...fakeTask(`t${index}`, {}), ...(result === undefined ? {} : { result }) })),
    { planId: 'plan-1' },
  );

describe('roundMessage', () => {
  it('puts each result on one trailer line, clipped with a mark at 500 characters', () => {
    const long = `COMPLETED: did it\n\n${'all the details '.repeat(60)}`;
    const { trailers } = roundMessage(planWith(['COMPLETED:  wrote\tx/a.txt\n', long, undefined]), 2, [0, 1, 2]);
    const results = trailers.filter(([key]) => key === TRAILER_RESULT).map(([, value]) => value);
    expect(results[0]).toBe('0 COMPLETED: wrote x/a.txt');
    expect(results[1]!.startsWith('1 COMPLETED: did it all the details')).toBe(true);
    expect(results[1]!.length).toBe('1 '.length + 500);
    expect(results[1]!.endsWith('…')).toBe(true);
    expect(results[2]).toBe('2 completed');
    // git accepts them: one line each, no empty value.
    expect(() => buildMessage('m', trailers)).not.toThrow();
  });
});
