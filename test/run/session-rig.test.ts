// The in-session steps in the test process (SessionRig): the test plays the lead — `setup`,
// `next`, `finalize` with each subagent's final text, `commit` — with the session file, git and
// the gate process replaced by fakes. The same events and carrier as the plan tool's steps, so
// what the step function decides for a session is checked here in milliseconds; the real-git
// side of the steps stays with test/skills/lead-*.test.ts.

import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/core/plan.ts';
import { noFindings } from '../../src/core/transition.ts';
import { SessionRig, gitFailure } from '../support/engine-rig.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const task = (marker: string, spec: Parameters<typeof fakeTask>[1] = {}) => fakeTask(marker, { create: [`${marker}.txt`], ...spec });
const statuses = (rig: SessionRig) => rig.state.plan.tasks.map((t) => statusOf(t));

describe('the in-session steps, in process', () => {
  it('runs a plan with a dependency to the end: a dependant is handed out only once its blocker landed', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] }), task('C')]), { concurrency: 4 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 2]);
    // A second `next` while they run hands out nothing more.
    expect(await rig.next()).toEqual([]);
    await rig.finalize([
      [0, 'COMPLETED: made A'],
      [2, 'COMPLETED: made C'],
    ]);
    // Verified is not integrated: only `commit` records.
    expect(rig.recorded).toEqual([]);
    expect(await rig.next()).toEqual([]);
    await rig.commit();
    expect(rig.recorded.map((r) => r.tasks)).toEqual([[0, 2]]);
    expect(await rig.next()).toEqual([1]);
    await rig.finalize([[1, 'COMPLETED: made B']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
    expect(statuses(rig)).toEqual(['completed', 'completed', 'completed']);
    expect(rig.state.plan.tasks.map((t) => t.commit)).toEqual(['commit-1', 'commit-2', 'commit-1']);
    // A subagent's usage is not measured: the run's is unknown, not zero.
    expect(rig.state.usage).toBe('unknown');
  });

  it('holds a dependant back while its blocker’s landing is blocked, and hands it out once it lands', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] })]));
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: made A']]);
    rig.blockLanding = true;
    await rig.commit();
    expect(statuses(rig)).toEqual(['completed', 'pending']);
    expect(await rig.next()).toEqual([]);
    // Waiting to land is not the end of the run.
    expect(rig.finished).toBeNull();
    rig.blockLanding = false;
    await rig.commit();
    expect(await rig.next()).toEqual([1]);
  });

  it('work the integration tip conflicts with goes back to pending without spending an attempt, and runs again', async () => {
    let conflicts = 1;
    const rig = new SessionRig(makePlan([task('A')]), {
      record: (_tasks, round) => (conflicts-- > 0 ? gitFailure('integrate', `CONFLICT (content): Merge conflict in A.txt`) : { ok: true, value: `commit-${round}` }),
    });
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: made A']]);
    await rig.commit();
    expect(statuses(rig)).toEqual(['pending']);
    expect(rig.state.plan.tasks[0]!.attempts ?? 0).toBe(0);
    expect(rig.events.some((e) => e.type === 'notice' && e.level === 'warning' && e.message.startsWith('could not integrate'))).toBe(true);
    expect(await rig.next()).toEqual([0]);
    expect(rig.subagents.get(0)).toBe(1);
    await rig.finalize([[0, 'COMPLETED: made A again']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
  });

  it("a subagent Claude Code could not make a worktree for goes back to pending without spending an attempt, and is handed out at the next `next`", async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B')]), { concurrency: 4 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1]);
    await rig.finalize([
      [0, "Failed to create worktree: Preparing worktree (new branch 'worktree-agent-a1')\nfatal: failed to read /r/.git/worktrees/agent-a1/commondir: Success"],
      [1, 'COMPLETED: made B'],
    ]);
    const finished = rig.events.filter((e) => e.type === 'task-finished');
    expect(finished).toEqual([
      expect.objectContaining({ task: 0, outcome: 'requeued', reason: expect.stringContaining("Claude Code could not make the worker's worktree, so it did not start (Failed to create worktree:") }),
      expect.objectContaining({ task: 1, outcome: 'completed' }),
    ]);
    expect(statuses(rig)[0]).toBe('pending');
    expect(rig.state.plan.tasks[0]!.attempts ?? 0).toBe(0);
    // No back-off: the next hand-out gives it out again, as the same attempt.
    expect(await rig.next()).toEqual([0]);
    await rig.finalize([[0, 'COMPLETED: made A']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('all-done');
    expect(rig.state.plan.tasks.map((t) => t.attempts)).toEqual([1, 1]);
  });

  it('git failing while recording stops the run', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B')]), { record: () => gitFailure('update-ref', 'fatal: cannot lock ref') });
    await rig.setup();
    await rig.next();
    await rig.finalize([[0, 'COMPLETED: made A'], [1, 'COMPLETED: made B']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('git-failed');
  });

  it('a gate that blames a candidate: its task-finished says retry with the gate output, the others integrate', async () => {
    let blamed = false;
    const rig = new SessionRig(makePlan([task('A'), task('B')]), {
      gate: (tasks) => {
        if (tasks.includes(1) && !blamed) {
          if (tasks.length === 1) blamed = true;
          return false;
        }
        return true;
      },
    });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 1]);
    await rig.finalize([[0, 'COMPLETED: made A'], [1, 'COMPLETED: made B']]);
    await rig.commit();
    expect(rig.integrated).toEqual([0]);
    const finished = rig.events.filter((e) => e.type === 'task-finished' && e.task === 1);
    expect(finished.map((e) => e.type === 'task-finished' && e.outcome)).toEqual(['completed', 'retry']);
    expect(finished[1]!.type === 'task-finished' && finished[1]!.reason).toContain('FAIL');
    expect(statuses(rig)).toEqual(['completed', 'pending']);
    expect(await rig.next()).toEqual([1]);
    await rig.finalize([[1, 'COMPLETED: made B, fixed']]);
    await rig.commit();
    expect(rig.integrated).toEqual([0, 1]);
    expect(rig.finished?.reason).toBe('all-done');
  });

  it('failures trip the circuit breaker and end the run', async () => {
    const rig = new SessionRig(makePlan([task('A'), task('B', { blockedBy: [0] }), task('C', { blockedBy: [0] }), task('D')]), { maxAttempts: 1 });
    await rig.setup();
    expect(await rig.next()).toEqual([0, 3]);
    await rig.finalize([[0, 'FAILED: cannot make A']]);
    expect(rig.events.some((e) => e.type === 'breaker')).toBe(true);
    expect(statuses(rig)).toEqual(['failed', 'skipped', 'skipped', 'in_progress']);
    // The run ends once D, under way, is settled.
    await rig.finalize([[3, 'COMPLETED: made D']]);
    await rig.commit();
    expect(rig.finished?.reason).toBe('breaker');
  });

  it('what setup found is applied before anything starts: interrupted work runs again, a failed assumption blocks and skips', async () => {
    const plan = makePlan([task('A'), task('B', { blockedBy: [0] }), task('C'), task('D')]);
    plan.tasks[2]!.status = 'in_progress';
    const rig = new SessionRig(plan, { concurrency: 4 });
    await rig.setup({ ...noFindings(), interrupted: [2], blocked: [{ task: 0, result: 'BLOCKED: assumption failed (x): `false`' }] });
    expect(statuses(rig)).toEqual(['blocked', 'skipped', 'pending', 'pending']);
    expect(rig.events.filter((e) => e.type === 'task-skipped').map((e) => e.type === 'task-skipped' && [e.task, e.rootCause])).toEqual([[1, 0]]);
    expect(await rig.next()).toEqual([2, 3]);
  });
});
