// A run's integration and workspaces against real git: the integration ref starts at HEAD,
// attempts get worktrees outside the repository, verified work is integrated there and lands on
// the branch only through `land`; what a killed run leaves in the git directory does not stop the
// next one.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { captureWork } from '../../src/adapters/git/capture.ts';
import { gitProcessCount } from '../../src/adapters/git/runner.ts';
import { candidateRef, integrationRef } from '../../src/adapters/git/refs.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import type { CapturedWork } from '../../src/core/attempt/work.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { openPlaces } from '../support/places.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { succeeded } from '../support/results.ts';

const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

const open = (repo: string, plan: Plan) => openPlaces(cleanups, repo, plan);

/** A workspace of `places` for `task`, where the integration says its attempt starts. */
async function workspaceFor(places: Awaited<ReturnType<typeof open>>, task: number, stack: Array<{ task: number; work: CapturedWork }> = []) {
  const start = await places.integration.startOf({ task, stack });
  if (!start.ok) throw new Error(start.error);
  const made = await places.workspaces.make({ task, ...start.value });
  if (!made.ok) throw new Error(made.error);
  return made.value;
}

/** Integrate task 0's `work` in round 1. */
const integrateOne = (integration: Awaited<ReturnType<typeof open>>['integration'], plan: Plan, work: CapturedWork) =>
  integration.record(plan, { tasks: [0], round: 1, integrate: [{ task: 0, work }], park: [], hold: [], drop: [] });

describe('the integration and its workspaces', () => {
  it('starts the integration ref at HEAD, gives attempts worktrees outside the repository, and lands only when asked', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', '.gitignore': '.design/\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const places = await open(repo.dir, plan);
    const { integration, root } = places;
    const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
    expect(integration.tip).toBe(head);
    expect((await repo.git(['rev-parse', integrationRef(integration.planId)])).trim()).toBe(head);

    const workspace = await workspaceFor(places, 0);
    const dir = workspace.dir;
    expect(dir.startsWith(root)).toBe(true);
    await writeFile(join(dir, 'b.txt'), 'made by the worker\n');
    const captured = await captureWork(dir, ['b.txt'], workspace.kept, workspace.base);
    if (!captured.ok) throw new Error('capture');
    workspace.release();

    const recorded = await integrateOne(integration, plan, captured.value.work);
    expect(recorded.ok && recorded.value).toBe(integration.tip);
    // Integrated, not landed: the person's branch and files have not moved.
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(head);
    await expect(readFile(join(repo.dir, 'b.txt'), 'utf8')).rejects.toThrow();

    const landed = await integration.land({ branch: 'refs/heads/main', mode: 'commit' });
    expect(landed.ok).toBe(true);
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(integration.tip);
    expect(await readFile(join(repo.dir, 'b.txt'), 'utf8')).toBe('made by the worker\n');
    expect(await repo.git(['status', '--porcelain'])).toBe('');
  });

  it('clears a lock on its ref that a killed run left, so the next integration works', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const first = await open(repo.dir, plan);
    const lock = join(repo.dir, '.git', `${integrationRef(first.integration.planId)}.lock`);
    await writeFile(lock, 'left by a killed update-ref\n');
    const places = await open(repo.dir, plan);
    const integration = places.integration;
    const workspace = await workspaceFor(places, 0);
    await writeFile(join(workspace.dir, 'b.txt'), 'b\n');
    const captured = await captureWork(workspace.dir, ['b.txt'], [], workspace.base);
    if (!captured.ok) throw new Error('capture');
    const recorded = await integrateOne(integration, plan, captured.value.work);
    expect(recorded.ok).toBe(true);
  });

  it('knows the commits it made, so a workspace made at one asks git nothing about it', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] }), fakeTask('B', { create: ['c.txt'] })]);
    const places = await open(repo.dir, plan);
    const { integration } = places;
    const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
    expect(integration.knows(head)).toBe(true);
    const workspace = await workspaceFor(places, 0);
    await writeFile(join(workspace.dir, 'b.txt'), 'b\n');
    const captured = await captureWork(workspace.dir, ['b.txt'], workspace.kept, workspace.base);
    if (!captured.ok) throw new Error('capture');
    workspace.release();
    // A speculative start: task 1 on task 0's work stacked on the tip, a commit made here.
    const start = await integration.startOf({ task: 1, stack: [{ task: 0, work: captured.value.work }] });
    if (!start.ok) throw new Error(start.error);
    expect(start.value.commit).not.toBe(head);
    expect(integration.knows(start.value.commit)).toBe(true);
    const gitBefore = gitProcessCount();
    const made = await places.workspaces.make({ task: 1, ...start.value });
    if (!made.ok) throw new Error(made.error);
    expect(made.value.base).toBe(start.value.commit);
    made.value.release();
    // Resetting the free slot (a checkout and a clean) is all it took: no lookup of the commit.
    expect(gitProcessCount() - gitBefore).toBeLessThanOrEqual(2);

    const recorded = await integrateOne(integration, plan, captured.value.work);
    if (!recorded.ok || recorded.value === null) throw new Error('integrate');
    // The tip it made, and the commit it built it on; not a commit it never met.
    expect(integration.knows(recorded.value)).toBe(true);
    expect(integration.knows(head)).toBe(true);
    await repo.git(['commit', '-q', '--allow-empty', '-m', 'elsewhere']);
    expect(integration.knows((await repo.git(['rev-parse', 'HEAD'])).trim())).toBe(false);
  });

  it('follows the branch when the person committed on top of everything integrated', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const { integration } = await open(repo.dir, plan);
    await repo.write({ 'mine.txt': 'mine\n' });
    await repo.git(['add', 'mine.txt']);
    await repo.git(['commit', '-qm', 'mine']);
    await integration.followHead();
    expect(integration.tip).toBe((await repo.git(['rev-parse', 'HEAD'])).trim());
  });

  it('a held candidate keeps the stack it was built on; one an earlier foreman held names none, and stands only if built on the tip', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] }), fakeTask('B', { create: ['c.txt'], blockedBy: [0] }), fakeTask('C', { create: ['d.txt'] })]);
    for (const t of plan.tasks) t.status = 'in_progress';
    const places = await open(repo.dir, plan);
    const integration = places.integration;
    const workIn = async (task: number, file: string, stack: Array<{ task: number; work: CapturedWork }> = []): Promise<CapturedWork> => {
      const workspace = await workspaceFor(places, task, stack);
      await writeFile(join(workspace.dir, file), `${file}\n`);
      const captured = await captureWork(workspace.dir, [file], workspace.kept, workspace.base);
      workspace.release();
      if (!captured.ok) throw new Error('capture');
      return captured.value.work;
    };
    const a = await workIn(0, 'b.txt');
    // B was built on A's candidate: its base is A's work stacked on the tip.
    const b = await workIn(1, 'c.txt', [{ task: 0, work: a }]);
    expect(b.base).not.toBe(integration.tip);
    const held = await integration.record(plan, {
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
    const found = async () => (await succeeded(integration.heldCandidates(plan, () => true))).map((h) => [h.task, h.stack]);
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
      await integration.park(task, work, `foreman: round 0: task ${task}`, 'candidate');
    expect(await found()).toEqual([[0, []]]);
    expect((await repo.git(['for-each-ref', '--format=%(refname)', 'refs/foreman-candidate/'])).trim()).toBe(candidateRef(integration.planId, 0));
  });
});
