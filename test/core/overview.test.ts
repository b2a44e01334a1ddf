import { describe, expect, it } from 'vitest';
import { planOverview } from '../../src/core/plan/overview.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const options = { headless: 'foreman execute', status: 'foreman plan status' };

describe('planOverview', () => {
  it('lists the rounds a plan takes, a round of one task as a task, overlapping groups one after another', () => {
    const plan = makePlan([
      fakeTask('a', { create: ['a.ts'] }),
      fakeTask('b', { create: ['b.ts'] }),
      fakeTask('c', { modify: ['a.ts'], blockedBy: [0] }),
      fakeTask('d', { modify: ['a.ts'], blockedBy: [1] }),
      fakeTask('e', { create: ['e.ts'], blockedBy: [2, 3] }),
    ]);
    const markdown = planOverview(plan, options);
    const rounds = markdown.slice(markdown.indexOf('### Rounds'), markdown.indexOf('### Run it')).trim().split('\n');
    expect(rounds).toEqual([
      '### Rounds if every task succeeds (3)',
      '',
      '1. tasks 0, 1',
      expect.stringMatching(/^2\. tasks [23] \| then [23] \(the groups overlap on files, so they run one after another\)$/),
      '3. task 4',
    ]);
    // Read in the design session and at a terminal alike: both ways to run it, each said as such.
    expect(markdown).toContain('- in Claude Code: `/foreman:execute`\n- headless, from a terminal: `foreman execute` (watch it with `foreman plan status`)');
  });
});
