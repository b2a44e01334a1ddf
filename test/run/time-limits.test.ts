// Every process foreman starts with a time limit, made to hit a short one in a real repository:
// what the person is told names the command, the limit and the flag that sets it, and says its
// whole process group was ended. Acceptance checks (a retry's failure), assumption checks (the
// blocked task, the event), the gate (headless, and the in-session gate process) and the setup
// command in a worktree. The probe's checks and setup command: test/run/probe.test.ts.

import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellCommands } from '../../src/adapters/sandbox/commands.ts';
import { Git } from '../../src/adapters/git/repository.ts';
import { decide } from '../../src/core/attempt/finalize.ts';
import { ok } from '../../src/core/result.ts';
import { culpritDecision, gateFinishedEvent } from '../../src/core/engine/gate.ts';
import { clonePlan, type Plan, statusOf } from '../../src/core/plan/plan.ts';
import { applySetupFindings } from '../../src/core/attempt/transition.ts';
import { describeSetupRun } from '../../src/run/headless/headless.ts';
import type { WorkspaceUse, WorktreeSetup } from '../../src/run/workspace/local.ts';
import { gateStatePathFor, serveGate } from '../../src/run/session/gate-process.ts';
import { setupRun } from '../../src/run/setup.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { openPlaces } from '../support/places.ts';

const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

/** A command that runs until it is ended, after printing `bytes` of output. */
const hangs = (bytes = 0) => `node -e "process.stdout.write('x'.repeat(${bytes})); setTimeout(() => {}, 60000)"`;
const ended = 'its whole process group was ended';

/** An environment whose worktrees go in a directory of their own, removed after the test. */
async function worktreesEnv(): Promise<NodeJS.ProcessEnv> {
  const root = await mkdtemp(join(tmpdir(), 'foreman-limits-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return { ...process.env, FOREMAN_WORKTREES: root };
}

async function open(repo: string, plan: Plan, use: Partial<WorkspaceUse> = {}) {
  return openPlaces(cleanups, repo, plan, use, await worktreesEnv());
}

/** A workspace for task 0 at the integration tip. */
async function workspaceFor(repo: string, plan: Plan, use: Partial<WorkspaceUse> = {}) {
  const { integration, workspaces } = await open(repo, plan, use);
  return workspaces.make({ task: 0, commit: integration.tip });
}

describe('a time limit hit says what, after how long, which flag, and that the process group was ended', () => {
  it('an acceptance check: the attempt fails with it, and the retry is told', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'], acceptance: [{ criterion: 'it finishes', check: 'sleep 5' }] })]);
    const made = await workspaceFor(repo.dir, plan, { checkTimeoutMs: 1000 });
    if (!made.ok) throw new Error(made.error);
    await writeFile(join(made.value.dir, 'b.txt'), 'b\n');
    const verification = await made.value.verify(plan, 0);
    made.value.release();
    expect(verification).toMatchObject({ ok: true, value: { acceptance: [{ passed: false, timedOut: true }] } });
    const decision = decide({
      task: plan.tasks[0]!,
      judgement: { kind: 'verify', summary: 'done', claimed: true },
      verification,
      permissionDenials: [],
      maxAttempts: 3,
    });
    expect(decision.kind).toBe('retry');
    expect(decision.kind === 'retry' && decision.failure).toBe(
      `acceptance check failed (it finishes): \`sleep 5\` timed out after 1s (the limit set by --check-timeout); ${ended}`,
    );
  });

  it("an assumption check: the blocked task and the check's output say so first", async () => {
    const repo = await repoWith({ 'a.txt': 'a\n', '.gitignore': '.design/\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'], assumptions: [{ claim: 'the service answers', verify: hangs(10_000), severity: 'blocking' }] })]);
    const env = await worktreesEnv();
    const setup = await setupRun(plan, {
      repo: repo.dir,
      planPath: join(repo.dir, '.design/plan.json'),
      git: new Git(repo.dir),
      open: async () => ok(await openPlaces(cleanups, repo.dir, plan, {}, env)),
      checkTimeoutMs: 1000,
      commands: shellCommands(env),
    });
    if (!setup.ok) throw new Error(setup.error.kind);
    const said = `\`${hangs(10_000)}\` timed out after 1s (the limit set by --check-timeout); ${ended}`;
    const [checked] = setup.value.assumptions;
    expect(checked).toMatchObject({ passed: false });
    // The first line, which the live view's one line and the step's clipped JSON keep.
    expect(checked!.output.split('\n')[0]).toBe(`${said}:`);
    expect(setup.value.blocked).toEqual([0]);
    // The task's result, once the step function applies what setup found.
    const applied = clonePlan(plan);
    applySetupFindings(applied, setup.value.findings);
    expect(statusOf(applied.tasks[0]!)).toBe('blocked');
    expect(applied.tasks[0]!.result).toContain(said);
    // Its output's end is kept too.
    expect(applied.tasks[0]!.result).toMatch(/x+$/);
  });

  it("the gate: its output starts with it, and the journal and a culprit's retry keep that line past a long output", async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const { integration, workspaces } = await open(repo.dir, plan);
    const command = hangs(20_000);
    const run = await integration.gate(workspaces, { tasks: [], works: [] }, { command, timeoutMs: 1000 });
    expect(run.passed).toBe(false);
    const said = `timed out after 1s (the limit set by --gate-timeout); ${ended}`;
    expect(run.output.split('\n')[0]).toMatch(`\` ${said}:`);
    expect(gateFinishedEvent([0], { ...run, passed: false }, null).output).toContain(said);
    expect(culpritDecision(run.output, 0, 3).failure).toContain(said);
  });

  it('the in-session gate process: the result it leaves for the step says so', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })]);
    const { integration } = await open(repo.dir, plan);
    const planPath = join(repo.dir, '.design/plan.json');
    await mkdir(dirname(planPath), { recursive: true });
    await serveGate({
      repo: repo.dir,
      planPath,
      plan,
      env: await worktreesEnv(),
      id: 'limit-1',
      tip: integration.tip,
      tasks: [],
      command: 'sleep 5',
      timeoutMs: 1000,
      sandbox: false,
    });
    const state = JSON.parse(await readFile(gateStatePathFor(planPath), 'utf8')) as { state: string; passed: boolean; output: string };
    expect(state).toMatchObject({ state: 'finished', passed: false });
    expect(state.output.split('\n')[0]).toBe(`\`sleep 5\` timed out after 1s (the limit set by --gate-timeout); ${ended}:`);
  });

  it('the setup command in a worktree: the attempt cannot start, and the notice of the run says so', async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })], { context: { setupCommand: 'sleep 5' } });
    const reports: WorktreeSetup[] = [];
    const prepared = await workspaceFor(repo.dir, plan, { setupTimeoutMs: 1000, onSetup: (report) => reports.push(report) });
    const said = `\`sleep 5\` timed out after 1s (the limit set by --check-timeout); ${ended}`;
    expect(prepared).toEqual({ ok: false, error: `in a new worktree, the setup command ${said}` });
    expect(reports).toHaveLength(1);
    expect(describeSetupRun(reports[0]!)).toBe(`set up the worktree slot-0: ${said}`);
  });

  it("the setup command in the in-session gate process's worktree: its limit is the gate's", async () => {
    const repo = await repoWith({ 'a.txt': 'a\n' });
    const plan = makePlan([fakeTask('A', { create: ['b.txt'] })], { context: { setupCommand: 'sleep 5' } });
    // The run's integration makes the integration ref the gate process reads.
    const { integration } = await open(repo.dir, plan);
    const gate = await open(repo.dir, plan, { role: 'gate', setupTimeoutMs: 1000 });
    const run = await integration.gate(gate.workspaces, { tasks: [], works: [] }, { command: 'true', timeoutMs: 1000 });
    expect(run).toMatchObject({
      passed: false,
      output: `in a new worktree, the setup command \`sleep 5\` timed out after 1s (the limit set by --gate-timeout); ${ended}`,
    });
  });
});
