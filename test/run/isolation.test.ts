// A run's isolation against real git: the integration ref starts at HEAD, attempts get worktrees
// outside the repository, verified work is integrated there and lands on the branch only through
// `land`; what a killed run leaves in the git directory does not stop the next one.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureWork } from '../../src/adapters/git/capture.ts';
import { candidateRef, integrationRef } from '../../src/adapters/git/refs.ts';
import type { Plan } from '../../src/core/plan.ts';
import type { CapturedWork } from '../../src/core/work.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { openIsolation } from '../support/isolation.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { succeeded } from '../support/results.ts';

const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

const open = (repo: string, plan: Plan) => openIsolation(cleanups, repo, plan);

describe('Isolation', () => {
  it('starts the integration ref at HEAD, gives attempts worktrees outside the repository, and lands only when asked', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', '.gitignore': '.design/\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const { isolation, root } = await open(repo.dir, plan);
    const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
    expect(isolation.tip).toBe(head);
    expect((await repo.git(['rev-parse', integrationRef(isolation.planId)])).trim()).toBe(head);

    const prepared = await isolation.prepare(0);
    if (!prepared.ok) throw new Error(prepared.error);
    const dir = prepared.value;
    expect(dir.startsWith(root)).toBe(true);
    await writeFile(join(dir, 'b.txt'), 'made by the worker\n');
    const captured = await captureWork(dir, ['b.txt'], isolation.workspaceOf(0)!.kept, isolation.workspaceOf(0)!.base);
    if (!captured.ok) throw new Error('capture');
    isolation.release(0);

    const recorded = await isolation.record(plan, { tasks: [0], round: 1, integrate: [{ task: 0, work: captured.value.work }], park: [], hold: [], drop: [] });
    expect(recorded.ok && recorded.value).toBe(isolation.tip);
    // Integrated, not landed: the person's branch and files have not moved.
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(head);
    await expect(readFile(join(repo.dir, 'b.txt'), 'utf8')).rejects.toThrow();

    const landed = await isolation.land({ branch: 'refs/heads/main', mode: 'commit' });
    expect(landed.ok).toBe(true);
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(isolation.tip);
    expect(await readFile(join(repo.dir, 'b.txt'), 'utf8')).toBe('made by the worker\n');
    expect(await repo.git(['status', '--porcelain'])).toBe('');
  });

  it('clears a lock on its ref that a killed run left, so the next integration works', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const first = await open(repo.dir, plan);
    const lock = join(repo.dir, '.git', `${integrationRef(first.isolation.planId)}.lock`);
    await writeFile(lock, 'left by a killed update-ref\n');
    const { isolation } = await open(repo.dir, plan);
    const prepared = await isolation.prepare(0);
    if (!prepared.ok) throw new Error(prepared.error);
    await writeFile(join(prepared.value, 'b.txt'), 'b\n');
    const captured = await captureWork(prepared.value, ['b.txt'], [], isolation.workspaceOf(0)!.base);
    if (!captured.ok) throw new Error('capture');
    const recorded = await isolation.record(plan, { tasks: [0], round: 1, integrate: [{ task: 0, work: captured.value.work }], park: [], hold: [], drop: [] });
    expect(recorded.ok).toBe(true);
  });

  it('follows the branch when the person committed on top of everything integrated', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const { isolation } = await open(repo.dir, plan);
    await repo.write({ 'mine.txt': 'mine\n' });
    await repo.git(['add', 'mine.txt']);
    await repo.git(['commit', '-qm', 'mine']);
    await isolation.followHead();
    expect(isolation.tip).toBe((await repo.git(['rev-parse', 'HEAD'])).trim());
  });

  it('a held candidate keeps the stack it was built on; one an earlier foreman held names none, and stands only if built on the tip', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] }), fakeTask('B', { create: ['c.txt'], blockedBy: [0] }), fakeTask('C', { create: ['d.txt'] })]);
    for (const t of plan.tasks) t.status = 'in_progress';
    const { isolation } = await open(repo.dir, plan);
    const workIn = async (task: number, file: string, stack: Array<{ task: number; work: CapturedWork }> = []): Promise<CapturedWork> => {
      const prepared = await isolation.prepare(task, undefined, stack);
      if (!prepared.ok) throw new Error(prepared.error);
      await writeFile(join(prepared.value, file), `${file}\n`);
      const captured = await captureWork(prepared.value, [file], isolation.workspaceOf(task)!.kept, isolation.workspaceOf(task)!.base);
      isolation.release(task);
      if (!captured.ok) throw new Error('capture');
      return captured.value.work;
    };
    const a = await workIn(0, 'b.txt');
    // B was built on A's candidate: its base is A's work stacked on the tip.
    const b = await workIn(1, 'c.txt', [{ task: 0, work: a }]);
    expect(b.base).not.toBe(isolation.tip);
    const held = await isolation.record(plan, {
      tasks: [0, 1],
      round: 0,
      integrate: [],
      park: [],
      hold: [
        { task: 0, work: a },
        { task: 1, work: b, stack: [0] },
      ],
      drop: [],
    });
    expect(held.ok).toBe(true);
    const found = async () => (await succeeded(isolation.heldCandidates(plan, () => true))).map((h) => [h.task, h.stack]);
    expect(await found()).toEqual([
      [0, []],
      [1, [0]],
    ]);

    // Parked as an earlier foreman did, with no stack named: A's base is the tip (it stands on
    // it), B's is a stack of candidates nothing names (it goes, and runs again).
    for (const [task, work] of [
      [0, a],
      [1, b],
    ] as const)
      await isolation.park(task, work, `foreman: round 0: task ${task}`, 'candidate');
    expect(await found()).toEqual([[0, []]]);
    expect((await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman-candidate/'])).trim()).toBe(candidateRef(isolation.planId, 0));
  });
});
