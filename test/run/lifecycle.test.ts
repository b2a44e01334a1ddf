// The lifecycle both paths share (run/lifecycle.ts), on its own: what a landing says, and
// finishing the plan — only a run that ended all-done, only once its work landed, and never
// archiving a person's edit unseen.

import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ownLayout } from '../../src/adapters/layout.ts';
import { PlanKeeper, serializePlan } from '../../src/adapters/store/plan-file.ts';
import { err, ok } from '../../src/core/result.ts';
import { baselineRefusal, landingNotice } from '../../src/core/engine/run-lifecycle.ts';
import { finishPlan } from '../../src/run/lifecycle.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const TIP = '0123456789abcdef0123456789abcdef01234567';
const REF = 'refs/foreman/p1';

describe('a landing, as a run tells it', () => {
  const layout = ownLayout();
  it('names the files and where they landed; says nothing when there was nothing to land', () => {
    expect(landingNotice(ok({ from: 'x', to: TIP, paths: ['a.txt', 'b.txt'], upToDate: false }), { ref: REF, layout, where: 'main' })).toEqual({
      type: 'notice',
      level: 'info',
      message: `landed 2 files on main (${TIP.slice(0, 12)})`,
    });
    expect(landingNotice(ok({ from: TIP, to: TIP, paths: [], upToDate: true }), { ref: REF, layout, where: 'main' })).toBeNull();
  });

  it('a landing an earlier run started, completed by setup, says so; one that is blocked says what blocks it', () => {
    expect(landingNotice(ok({ from: 'x', to: TIP, paths: ['a.txt'], upToDate: false }), { ref: REF, layout, where: null, resumed: true })?.message).toBe(
      `completed a landing an earlier run started: landed 1 file (${TIP.slice(0, 12)})`,
    );
    const blocked = err({ kind: 'local-changes' as const, paths: [{ path: 'notes.txt', why: 'modified' as const }] });
    expect(landingNotice(blocked, { ref: REF, layout, where: 'main' })).toMatchObject({
      level: 'warning',
      message: expect.stringMatching(/^the integrated work could not land: .*notes\.txt/),
    });
    expect(landingNotice(blocked, { ref: REF, layout, where: null, resumed: true })?.message).toMatch(
      /^a landing an earlier run started could not land: .*notes\.txt/,
    );
  });
});

describe('the refusal of a red baseline', () => {
  const HEAD = 'fedcba9876543210fedcba9876543210fedcba98';
  it('names the commit the gate ran on; the integration ref too when that commit is not HEAD', () => {
    expect(baselineRefusal('npm test', { tip: TIP, ref: REF, head: TIP }, 'FAIL\n')).toEqual([
      `the gate \`npm test\` already fails on ${TIP.slice(0, 12)}, before any task ran, so it would blame every task; nothing was started. Fix the failure first, or run with --no-gate (or --gate CMD for another command):`,
      'FAIL',
    ]);
    expect(baselineRefusal('npm test', { tip: TIP, ref: REF, head: HEAD }, 'FAIL')[0]).toContain(
      `already fails on ${TIP.slice(0, 12)}, the tip of the plan's integration ref ${REF} (not your HEAD, at ${HEAD.slice(0, 12)}), before any task ran`,
    );
    expect(baselineRefusal('npm test', { tip: TIP, ref: REF, head: null }, 'FAIL')[0]).toContain(`${REF} (not your HEAD, which has no commit)`);
  });
});

describe('finishing the plan', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  /** A plan file as a run read it, the keeper that writes it, and the integration ref and workspaces, counting what they remove. */
  async function setting() {
    const dir = join(tmpdir(), `foreman-lifecycle-${process.pid}-${Date.now()}-${dirs.length}`);
    dirs.push(dir);
    await mkdir(dir, { recursive: true });
    const planPath = join(dir, 'plan.json');
    const plan = makePlan([{ ...fakeTask('A', { create: ['a.txt'] }), status: 'completed', result: 'made a', attempts: 1 }]);
    const text = serializePlan({ ...plan, tasks: [{ ...plan.tasks[0]!, status: 'pending' }] });
    await writeFile(planPath, text);
    const keeper = new PlanKeeper(planPath, text);
    const removed: string[] = [];
    const isolation = {
      integration: {
        removeRefs: async () => {
          removed.push('refs');
          return ok(undefined);
        },
      },
      workspaces: { remove: async () => void removed.push('worktrees') },
    };
    return { dir, planPath, plan, keeper, isolation, removed };
  }

  it('moves the plan to history once a run that ended all-done has landed, as the run left it', async () => {
    const { dir, planPath, plan, keeper, isolation, removed } = await setting();
    const finished = await finishPlan({ reason: 'all-done' }, plan, isolation, { planPath, landed: true, save: (p) => keeper.save(p) });
    expect(finished.notice).toBeNull();
    expect(finished.archived).toMatch(/history\/\d{8}T\d{6}Z-plan\.json$/);
    expect(await readFile(finished.archived!, 'utf8')).toBe(serializePlan(plan));
    expect(removed).toEqual(['worktrees', 'refs']);
    expect(await readdir(dir)).toEqual(['history']);
  });

  it('keeps an edit made after the run last wrote the plan, byte for byte, and says where, instead of archiving it unseen', async () => {
    const { dir, planPath, plan, keeper, isolation } = await setting();
    const mine = '{"edited": "by a person"}\n';
    await writeFile(planPath, mine);
    const finished = await finishPlan({ reason: 'all-done' }, plan, isolation, { planPath, landed: true, save: (p) => keeper.save(p) });
    expect(await readFile(finished.archived!, 'utf8')).toBe(serializePlan(plan));
    const kept = (await readdir(dir)).filter((f) => f.startsWith('plan.edited-'));
    expect(kept).toHaveLength(1);
    expect(await readFile(join(dir, kept[0]!), 'utf8')).toBe(mine);
    expect(finished.notice).toEqual({
      type: 'notice',
      level: 'warning',
      message: `${planPath} was changed after the run last wrote it: the finished plan moved to ${finished.archived} as the run left it, and the change was kept, byte for byte, in ${join(dir, kept[0]!)}`,
    });
  });

  it('a plan whose refs git cannot remove is not archived: it says so, and how to finish it once git works', async () => {
    const { dir, planPath, plan, keeper, isolation } = await setting();
    const failure = { step: 'update-ref', exitCode: 128, stderr: "fatal: cannot lock ref 'refs/foreman/p1': File exists\n" };
    const stuck = { ...isolation, integration: { removeRefs: async () => err(failure) } };
    const finished = await finishPlan({ reason: 'all-done' }, plan, stuck, { planPath, landed: true, save: (p) => keeper.save(p) });
    expect(finished).toEqual({
      archived: null,
      refsKept: failure,
      notice: {
        type: 'notice',
        level: 'warning',
        message: expect.stringMatching(
          /^every task is completed and landed, but git could not remove the plan's refs \(git update-ref failed \(exit 128\): fatal: cannot lock ref .*\), so the plan was not archived: once git works, `[^`]* land --plan [^`]*plan\.json` finishes it$/,
        ),
      },
    });
    expect(await readdir(dir)).toEqual(['plan.json']);
  });

  it('leaves the plan where it is when the run did not end all-done, or its work has not landed', async () => {
    const { dir, planPath, plan, keeper, isolation, removed } = await setting();
    for (const reason of ['failures', 'awaiting_approval', 'interrupted', 'drained'] as const) {
      expect(await finishPlan({ reason }, plan, isolation, { planPath, landed: true, save: (p) => keeper.save(p) })).toEqual({ archived: null, notice: null });
    }
    expect(await finishPlan(null, plan, isolation, { planPath, landed: true, save: (p) => keeper.save(p) })).toEqual({ archived: null, notice: null });
    expect(removed).toEqual([]);
    // Every task completed but not landed: the worktrees go, the refs and the plan stay.
    expect(await finishPlan({ reason: 'all-done' }, plan, isolation, { planPath, landed: false, save: (p) => keeper.save(p) })).toEqual({
      archived: null,
      notice: null,
    });
    expect(removed).toEqual(['worktrees']);
    expect(await readdir(dir)).toEqual(['plan.json']);
  });
});
