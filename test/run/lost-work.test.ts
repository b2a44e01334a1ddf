import { describe, expect, it } from 'vitest';
import { noFindings, statusAfter } from '../../src/core/attempt/transition.ts';
import { revertLostWork } from '../../src/run/lost-work.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const cleanups = afterEachCleanups();
const tempRepo = tempRepoIn(cleanups);

describe('revertLostWork', () => {
  it('puts back to pending a completed task whose created file the tip no longer holds, and says which files are gone', async () => {
    const repo = await tempRepo({ 'kept.txt': 'here\n', 'other.txt': 'here\n' });
    const tip = (await repo.git(['rev-parse', 'HEAD'])).trim();
    const plan = makePlan([
      { ...fakeTask('kept', { subject: 'keep it', create: ['kept.txt'] }), status: 'completed' },
      { ...fakeTask('lost', { subject: 'lose it', create: ['gone.txt', 'other.txt'] }), status: 'completed' },
      // Not completed: its missing file is no lost work.
      fakeTask('pending', { create: ['never.txt'] }),
    ]);
    const findings = noFindings();
    const lost = await revertLostWork(plan, { repo: repo.dir, tip }, findings, (index) => statusAfter(plan, index, findings));
    expect(lost.reverted).toEqual([1]);
    expect(findings.reverted).toEqual([{ task: 1, missing: ['gone.txt'] }]);
    expect(statusAfter(plan, 1, findings)).toBe('pending');
    expect(lost.notices).toEqual([{ level: 'warning', message: 'task 1 (lose it) was completed but gone.txt no longer exist; it will run again' }]);
  });

  it('finds nothing lost when every completed task’s created files are at the tip', async () => {
    const repo = await tempRepo({ 'kept.txt': 'here\n' });
    const tip = (await repo.git(['rev-parse', 'HEAD'])).trim();
    const plan = makePlan([{ ...fakeTask('kept', { create: ['kept.txt'] }), status: 'completed' }]);
    const findings = noFindings();
    const lost = await revertLostWork(plan, { repo: repo.dir, tip }, findings, (index) => statusAfter(plan, index, findings));
    expect(lost).toEqual({ reverted: [], notices: [] });
    expect(findings.reverted).toEqual([]);
  });
});
