// The merge queue in a session (issue 13): `plan commit` holds verified work as candidates and
// runs the gate in a background process, waiting at most `--wait` seconds; a gate slower than
// that returns `running` and a later `plan commit` collects the result. Culprits go back with the
// gate's output; a flake blames nobody; a red baseline refuses setup; a gate process a killed
// session left is ended by `plan setup`, and its candidates are tested again.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { processAlive } from '../../src/adapters/processes/processes.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { waitFor } from '../support/wait.ts';
import { checkedStep, isolatedSubagent, settledCommit, step } from './support.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function repoWith(plan: Plan, files: Record<string, string> = { 'README.md': 'hello\n' }) {
  const repo = await tempGitRepo(files);
  cleanups.push(() => repo.cleanup());
  const planPath = await writePlan(repo.dir, plan);
  return { repo, planPath };
}

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'foreman-gate-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs every task `next` handed out as an isolated subagent and finalizes them. */
async function round(dir: string) {
  const next = await checkedStep(step, dir, ['next']);
  expect(next.code, next.stderr).toBe(0);
  const ran = await Promise.all(next.json.tasks.map(async (t: any) => ({ task: t.index, ...(await isolatedSubagent(dir, t.promptFile, t.model)) })));
  await writeFile(join(dir, '.design/prompts/results.json'), JSON.stringify(ran));
  const finalize = await checkedStep(step, dir, ['finalize', '--results', '.design/prompts/results.json']);
  expect(finalize.code, finalize.stderr).toBe(0);
  return { next: next.json, finalize: finalize.json };
}

describe('the in-session merge queue', () => {
  it('a gate slower than --wait: setup and commit return running, a later commit returns the result, and the steps complete', async () => {
    const { repo, planPath } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    const setup = await checkedStep(step, repo.dir, ['setup', '--gate', 'sleep 3', '--wait', '1']);
    expect(setup.code, setup.stderr).toBe(0);
    expect(setup.json.gate).toMatchObject({ state: 'running', baseline: 'running', command: 'sleep 3', testing: [] });
    // Nothing starts before the baseline passed.
    const held = await checkedStep(step, repo.dir, ['next']);
    expect(held.json).toMatchObject({ tasks: [], stall: 'gate' });
    const baseline = await settledCommit(step, repo.dir, ['commit', '--wait', '60']);
    expect(baseline.code, baseline.stderr).toBe(0);
    expect(baseline.json.gate).toMatchObject({ state: 'idle', baseline: 'passed', runs: [{ tasks: [], passed: true }] });

    await round(repo.dir);
    const running = await checkedStep(step, repo.dir, ['commit', '--wait', '1']);
    expect(running.code, running.stderr).toBe(0);
    expect(running.json).toMatchObject({ tasks: [], complete: false, gate: { state: 'running', testing: [0], waiting: [] } });
    // Held, not integrated: the task stays in progress and the branch does not have it.
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('in_progress');
    await expect(readFile(join(repo.dir, 'a.txt'), 'utf8')).rejects.toThrow();

    const done = await settledCommit(step, repo.dir, ['commit', '--wait', '60']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.json).toMatchObject({
      tasks: [0],
      complete: true,
      gate: { state: 'idle', runs: [{ tasks: [0], passed: true, integrated: [0], culprit: null }] },
    });
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('A\n');
    const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'gate-started').map((e) => e.tasks)).toEqual([[0]]);
    expect(events.filter((e) => e.type === 'gate-finished').map((e) => [e.tasks, e.passed])).toEqual([
      [[], true],
      [[0], true],
    ]);
  });

  it('two tasks that break together: one lands, the culprit goes back with the gate output and lands after a compatible retry', async () => {
    const check =
      "const fs = require('fs'); const lib = require('./lib.js'); try { if (fs.existsSync('./use.js')) require('./use.js')(lib); } catch (e) { console.error(e.message); process.exit(1); }\n";
    const { repo, planPath } = await repoWith(
      makePlan(
        [
          fakeTask('A', { modify: ['lib.js'], fake: { write: { 'lib.js': 'exports.hello = () => "hi";\n' } } }),
          fakeTask('B', {
            create: ['use.js'],
            fake: {
              attempts: [
                { write: { 'use.js': 'module.exports = (lib) => { if (typeof lib.greet !== "function") throw new Error("GREET-IS-GONE"); };\n' } },
                { write: { 'use.js': 'module.exports = (lib) => { if (typeof lib.hello !== "function") throw new Error("HELLO-IS-GONE"); };\n' } },
              ],
            },
          }),
        ],
        { context: { testCommand: 'node check.js' } } as Partial<Plan>,
      ),
      { 'lib.js': 'exports.greet = () => "hi";\n', 'check.js': check },
    );
    const setup = await checkedStep(step, repo.dir, ['setup', '--concurrency', '2', '--wait', '60', '--speculate', '3']);
    expect(setup.json.gate).toMatchObject({ state: 'idle', baseline: 'passed', command: 'node check.js' });
    // A session cannot build on candidates: its subagents start from HEAD. It says so, once.
    expect(setup.json.speculate).toEqual({ asked: 3, depth: 0 });
    expect(setup.json.notices.filter((n: any) => n.message.startsWith('no speculation in a session'))).toHaveLength(1);
    const first = await round(repo.dir);
    expect(first.next.tasks.map((t: any) => t.index)).toEqual([0, 1]);
    const commit = await settledCommit(step, repo.dir, ['commit', '--wait', '120']);
    expect(commit.code, commit.stderr).toBe(0);
    expect(commit.json.tasks).toEqual([0]);
    expect(commit.json.gate.runs.map((r: any) => [r.tasks, r.passed])).toEqual([
      [[0, 1], false],
      [[0], true],
      [[1], false],
    ]);
    expect(commit.json.gate.blamed).toEqual([expect.objectContaining({ index: 1, outcome: 'retry', reason: expect.stringContaining('GREET-IS-GONE') })]);
    const plan = await readPlan(planPath);
    expect(plan.tasks.map((t) => t.status)).toEqual(['completed', 'pending']);
    // The tip that landed passes the gate: A alone.
    expect(await readFile(join(repo.dir, 'lib.js'), 'utf8')).toContain('hello');
    await expect(readFile(join(repo.dir, 'use.js'), 'utf8')).rejects.toThrow();

    const retry = await round(repo.dir);
    expect(retry.next.tasks).toEqual([expect.objectContaining({ index: 1, attempt: 2 })]);
    expect(await readFile(retry.next.tasks[0].promptFile, 'utf8')).toContain('GREET-IS-GONE');
    const last = await settledCommit(step, repo.dir, ['commit', '--wait', '120']);
    expect(last.json).toMatchObject({ tasks: [1], complete: true });
    expect(await readFile(join(repo.dir, 'use.js'), 'utf8')).toContain('hello');
  });

  it('a flaky gate (fails once, then passes) blames no task', async () => {
    const dir = await scratch();
    const counter = join(dir, 'runs');
    const gate = `n=$(cat ${counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${counter}; [ $n -ne 2 ]`;
    const { repo } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    // The gate counts its runs in a file outside its worktree, which the sandbox would refuse.
    await checkedStep(step, repo.dir, ['setup', '--gate', gate, '--wait', '60', '--sandbox', 'off']);
    await round(repo.dir);
    const commit = await settledCommit(step, repo.dir, ['commit', '--wait', '120']);
    expect(commit.json).toMatchObject({ tasks: [0], complete: true, gate: { blamed: [], flakes: [0] } });
    expect(commit.json.gate.runs.map((r: any) => [r.tasks, r.passed, r.flake])).toEqual([
      [[0], false, false],
      [[0], true, true],
    ]);
  });

  it('a red baseline refuses setup with exit 2, before anything is handed out', async () => {
    const { repo } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    const setup = await checkedStep(step, repo.dir, ['setup', '--gate', 'echo BASELINE-RED; exit 1', '--wait', '60']);
    expect(setup.code).toBe(2);
    expect(setup.json.error.kind).toBe('baseline-failed');
    expect(setup.json.error.message).toContain('already fails on');
    expect(setup.json.error.details.join('\n')).toContain('BASELINE-RED');
    const next = await checkedStep(step, repo.dir, ['next']);
    expect(next.json).toMatchObject({ tasks: [], stall: 'gate' });
    // The journal ends the run as a headless run's (test/e2e/gate.test.ts): refused, exit 2.
    const events = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'run-finished')).toEqual([
      expect.objectContaining({
        reason: 'failures',
        exitCode: 2,
        message: expect.stringMatching(
          /^the gate `echo BASELINE-RED; exit 1` already fails on the starting commit, before any task ran, so it would blame every task; nothing was started\..*then \/foreman:execute again$/s,
        ),
      }),
    ]);
  });

  it('a red baseline on integrated work that has not landed names the integration tip it ran on, not HEAD', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } }),
      fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'B\n' } } }),
    ]);
    const { repo, planPath } = await repoWith(plan);
    await checkedStep(step, repo.dir, ['setup', '--no-gate']);
    const next = await checkedStep(step, repo.dir, ['next', '--concurrency', '1']);
    expect(next.json.tasks.map((t: any) => t.index)).toEqual([0]);
    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, next.json.tasks[0].model);
    await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify([{ task: 0, ...ran }]));
    await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json']);
    // The person's own a.txt is in the way: A's work is integrated, and cannot land.
    await writeFile(join(repo.dir, 'a.txt'), 'mine\n');
    const blocked = await checkedStep(step, repo.dir, ['commit']);
    expect(blocked.json.landing.landed).toBe(false);
    const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
    const ref = `refs/foreman/${(await readPlan(planPath)).planId}`;
    const tip = (await repo.git(['rev-parse', ref])).trim();
    expect(tip).not.toBe(head);
    // The gate fails where A's a.txt is: on the integration tip, not on HEAD.
    const setup = await checkedStep(step, repo.dir, ['setup', '--gate', 'if [ -f a.txt ]; then echo RED-ON-TIP; exit 1; fi', '--wait', '60']);
    expect(setup.code).toBe(2);
    expect(setup.json.error.kind).toBe('baseline-failed');
    expect(setup.json.error.message).toBe(
      `the gate \`if [ -f a.txt ]; then echo RED-ON-TIP; exit 1; fi\` already fails on ${tip.slice(0, 12)}, the tip of the plan's integration ref ${ref} (not your HEAD, at ${head.slice(0, 12)}), before any task ran, so it would blame every task; nothing was started. Fix the failure first, or run with --no-gate (or --gate CMD for another command):`,
    );
    expect(setup.json.error.details[0]).toContain('RED-ON-TIP');
    // What setup had to say besides comes with the refusal: the landing your a.txt blocks, among the rest.
    expect(setup.json.error.details.slice(1)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^warning: the integrated work could not land: .*a\.txt/),
        expect.stringMatching(/^warning: you have an uncommitted change \(a\.txt\)/),
      ]),
    );
  });

  it('a commit refused by a red baseline still says what it said on the way (a gate process that died, run again) in its details', async () => {
    const dir = await scratch();
    const red = join(dir, 'red');
    const { repo } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    const setup = await checkedStep(step, repo.dir, ['setup', '--gate', `if [ -f ${red} ]; then echo BASELINE-RED; exit 1; fi; sleep 120`, '--wait', '0']);
    expect(setup.json.gate).toMatchObject({ baseline: 'running' });
    // The gate process dies (killed) before it has a result; the run after it fails.
    const state = JSON.parse(await readFile(join(repo.dir, '.design/gate.json'), 'utf8'));
    process.kill(-state.pid, 'SIGKILL');
    await writeFile(red, '');
    const commit = await settledCommit(step, repo.dir, ['commit', '--wait', '60']);
    expect(commit.code).toBe(2);
    expect(commit.json.error.kind).toBe('baseline-failed');
    expect(commit.json.error.details[0]).toContain('BASELINE-RED');
    expect(commit.json.error.details.slice(1)).toEqual(['warning: the gate process for the starting commit ended without a result: it runs again']);
  });

  it('a held candidate git cannot read stops setup as a git failure saying what it was reading (exit 4)', async () => {
    const { repo, planPath } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    await checkedStep(step, repo.dir, ['setup', '--gate', 'true', '--wait', '60']);
    expect((await checkedStep(step, repo.dir, ['next'])).json.tasks.map((t: any) => t.index)).toEqual([0]);
    // A candidate ref foreman did not write: a commit with no parent, so no work can be read from it.
    const candidate = `refs/foreman-candidate/${(await readPlan(planPath)).planId}/0`;
    const root = (await repo.git(['commit-tree', 'HEAD^{tree}', '-m', 'not a candidate'])).trim();
    await repo.git(['update-ref', candidate, root]);
    const again = await checkedStep(step, repo.dir, ['setup', '--gate', 'true', '--wait', '60']);
    expect(again.code).toBe(4);
    expect(again.json.error).toMatchObject({
      kind: 'git-failed',
      message: `could not read the candidates an earlier run held for the gate: git rev-parse failed (exit 1): ${candidate} is at ${root}, which has no parent: no work foreman parked; nothing is left staged. Fix it and run again.`,
    });
  });

  it('a gate process a killed session left is ended by plan setup, and its candidates are tested again and land', async () => {
    const dir = await scratch();
    const release = join(dir, 'release');
    const gate = `if [ -f a.txt ] && [ ! -f ${release} ]; then sleep 120; fi`;
    const { repo, planPath } = await repoWith(makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'A\n' } } })]));
    await checkedStep(step, repo.dir, ['setup', '--gate', gate, '--wait', '60']);
    await round(repo.dir);
    const running = await checkedStep(step, repo.dir, ['commit', '--wait', '1']);
    expect(running.json.gate).toMatchObject({ state: 'running', testing: [0] });
    const state = JSON.parse(await readFile(join(repo.dir, '.design/gate.json'), 'utf8'));
    expect(processAlive(state.pid)).toBe(true);
    // The gate process and, once it runs, the test command it started: a process group each.
    const recorded = async (): Promise<Array<{ pgid?: number }>> => JSON.parse(await readFile(join(repo.dir, '.design/gate-workers.json'), 'utf8'));
    await waitFor('the gate to record its test command', async () => (await recorded()).filter((r) => r.pgid !== undefined).length === 2);
    const groups = (await recorded()).map((r) => r.pgid);
    expect(groups[0]).toBe(state.pid);
    // The session is killed; a new one starts with plan setup.
    const again = await checkedStep(step, repo.dir, ['setup', '--gate', gate, '--wait', '0']);
    expect(again.code, again.stderr).toBe(0);
    expect(processAlive(state.pid)).toBe(false);
    // One gate, said once: its process and the test command it ran are a process group each.
    expect(again.json.notices.filter((n: { message: string }) => n.message.startsWith('stopped '))).toEqual([
      {
        level: 'warning',
        message: `stopped the gate \`${gate}\` (process groups ${groups[0]} and ${groups[1]}) left running by an earlier session: its candidates are tested again`,
      },
    ]);
    expect(again.json.notices).toContainEqual({ level: 'info', message: 'task 0: its verified work waits in the merge queue, as an earlier run left it' });
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('in_progress');
    expect([...again.json.gate.testing, ...again.json.gate.waiting]).toEqual([0]);
    await expect(readFile(join(repo.dir, 'a.txt'), 'utf8')).rejects.toThrow();
    await writeFile(release, '');
    const done = await settledCommit(step, repo.dir, ['commit', '--wait', '120']);
    expect(done.json).toMatchObject({ tasks: [0], complete: true });
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('A\n');
  });
});
