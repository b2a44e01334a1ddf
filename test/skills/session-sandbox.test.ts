// The in-session steps sandbox their commands by default, as a headless run does (`--sandbox auto`):
// `plan finalize`'s acceptance checks, the in-session gate and `plan probe` run in the sandbox
// where it works; `--sandbox` (and FOREMAN_SANDBOX) override it; `on` without it is refused
// (exit 3) and `auto` without it says so once, at setup. `finalize --sandbox on` and `commit
// --sandbox on` (the forms the execute skill pre-approves) refuse, doing nothing, in a session
// that runs its checks or gate unsandboxed.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { runPlanToolProcess } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { checkedStep, expectSchema, isolatedSubagent, settledCommit, step } from './support.ts';

const support = await sandboxSupport();
let scratch: string;
const repos: TempGitRepo[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'foreman-lead-sandbox-'));
});
afterEach(async () => {
  while (repos.length) await repos.pop()!.cleanup();
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A plan whose one task's acceptance check also writes a file outside the worktree. */
async function repoWithOutsideWrite(marker: string) {
  const repo = await tempGitRepo({ 'README.md': 'hello\n' });
  repos.push(repo);
  const outside = join(scratch, marker);
  await writePlan(
    repo.dir,
    makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        acceptance: [{ criterion: 'a.txt exists', check: `touch ${outside} && test -f a.txt` }],
        fake: { write: { 'a.txt': 'a\n' } },
      }),
    ]),
  );
  return { repo, outside };
}

async function oneRound(dir: string, setupArgs: string[]) {
  const setup = await checkedStep(step, dir, ['setup', ...setupArgs]);
  expect(setup.code, setup.stderr).toBe(0);
  const next = await checkedStep(step, dir, ['next']);
  const ran = await isolatedSubagent(dir, next.json.tasks[0].promptFile, 'haiku');
  await writeFile(join(dir, '.design/prompts/results.json'), JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]));
  const finalize = await checkedStep(step, dir, ['finalize', '--results', '.design/prompts/results.json']);
  return { setup: setup.json, finalize: finalize.json };
}

describe.runIf(support.ok)('in-session checks in the sandbox by default', () => {
  it("finalize's acceptance checks cannot write outside the worktree: the attempt fails, nothing is written", async () => {
    const { repo, outside } = await repoWithOutsideWrite('by-default');
    const { setup, finalize } = await oneRound(repo.dir, []);
    expect(setup.sandbox).toEqual({ mode: 'auto', sandboxed: true });
    expect(finalize.results[0]).toMatchObject({ index: 0, outcome: 'retry' });
    expect(existsSync(outside)).toBe(false);
  });

  it('--sandbox off runs them as they are', async () => {
    const { repo, outside } = await repoWithOutsideWrite('unsandboxed');
    const { setup, finalize } = await oneRound(repo.dir, ['--sandbox', 'off']);
    expect(setup.sandbox).toEqual({ mode: 'off', sandboxed: false });
    expect(setup.notices.map((n: any) => n.message)).toContainEqual(expect.stringMatching(/^--sandbox off: .*each Bash command of a worker asks you/));
    expect(finalize.results[0]).toMatchObject({ index: 0, outcome: 'completed' });
    expect(existsSync(outside)).toBe(true);
  });
});

describe('--sandbox on on the steps after setup', () => {
  it('refuses in a session set up with --sandbox off: finalize (its checks) and commit (its gate); only `on` is taken', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(
      repo.dir,
      makePlan(
        [fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a.txt exists', check: 'test -f a.txt' }], fake: { write: { 'a.txt': 'a\n' } } })],
        { context: { testCommand: 'true' } },
      ),
    );
    expect((await checkedStep(step, repo.dir, ['setup', '--sandbox', 'off'])).json.sandbox).toEqual({ mode: 'off', sandboxed: false });
    // The gate's check of the starting commit, run by setup, waited for by a plain commit.
    expect((await settledCommit(step, repo.dir, ['commit', '--wait', '60'])).json.gate.baseline).toBe('passed');
    const next = await checkedStep(step, repo.dir, ['next']);
    const ran = await isolatedSubagent(repo.dir, next.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    const refused = await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json', '--sandbox', 'on']);
    expect(refused.code).toBe(3);
    expect(refused.json.error).toMatchObject({
      kind: 'sandbox-unavailable',
      message: expect.stringContaining('runs the acceptance checks outside the sandbox (it was set up with --sandbox off); nothing was done'),
    });
    const bad = await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json', '--sandbox', 'off']);
    expect(bad.code).toBe(2);
    expect(bad.json.error).toMatchObject({ kind: 'usage', message: expect.stringContaining('a step after setup takes only --sandbox on') });
    expect((await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json'])).json.results[0]).toMatchObject({
      outcome: 'completed',
    });
    const commitRefused = await checkedStep(step, repo.dir, ['commit', '--sandbox', 'on']);
    expect(commitRefused.code).toBe(3);
    expect(commitRefused.json.error.message).toMatch(
      /^--sandbox on: this session runs the gate \(the plan's test command\) outside the sandbox \(it was set up with --sandbox off\)/,
    );
    const commit = await settledCommit(step, repo.dir, ['commit', '--wait', '60']);
    expect(commit.code, commit.stderr).toBe(0);
    expect(commit.json.archived).toEqual(expect.any(String));
  });
});

describe('without the sandbox (a PATH without bubblewrap)', () => {
  let bin: string;
  beforeAll(async () => {
    bin = join(scratch, 'bin-without-bwrap');
    await mkdir(bin, { recursive: true });
    for (const tool of ['node', 'git', 'sh']) if (!existsSync(join(bin, tool))) await symlink(`/usr/bin/${tool}`, join(bin, tool));
  });

  it('setup --sandbox on refuses with exit 3, naming what to install; auto goes on and says why, once', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'] })]));
    const env = { PATH: bin, FOREMAN_WORKTREES: join(scratch, 'worktrees') };
    const on = await runPlanToolProcess(repo.dir, ['setup', '--sandbox', 'on'], env);
    expect(on.exitCode).toBe(3);
    await expectSchema('step-error', JSON.parse(on.stdout));
    expect(JSON.parse(on.stdout).error).toMatchObject({
      kind: 'sandbox-unavailable',
      message: expect.stringMatching(/--sandbox on: the sandbox cannot run here .*bwrap.*apt-get install bubblewrap socat ripgrep/),
    });
    const auto = await runPlanToolProcess(repo.dir, ['setup'], env);
    expect(auto.exitCode, auto.stderr).toBe(0);
    const out = JSON.parse(auto.stdout);
    await expectSchema('setup', out);
    expect(out.sandbox).toEqual({ mode: 'auto', sandboxed: false });
    expect(out.notices.filter((n: any) => /running without the sandbox/.test(n.message))).toHaveLength(1);
    expect(out.notices.map((n: any) => n.message).join('\n')).toMatch(
      /each Bash command of a worker asks you before it runs; to sandbox them, install bubblewrap/,
    );
  });

  it('finalize --sandbox on refuses, doing nothing, in a session set up without the sandbox; the plain step goes on; a commit with no gate runs nothing', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(
      repo.dir,
      makePlan([
        fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a.txt exists', check: 'test -f a.txt' }], fake: { write: { 'a.txt': 'a\n' } } }),
      ]),
    );
    const env = { PATH: bin, FOREMAN_WORKTREES: join(scratch, 'worktrees') };
    const run = async (args: string[]) => {
      const r = await runPlanToolProcess(repo.dir, args, env);
      const out = JSON.parse(r.stdout);
      await expectSchema(out.error ? 'step-error' : args[0]!, out);
      return { code: r.exitCode, out, stderr: r.stderr };
    };
    expect((await run(['setup'])).out.sandbox).toEqual({ mode: 'auto', sandboxed: false });
    const next = await run(['next']);
    const ran = await isolatedSubagent(repo.dir, next.out.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    const refused = await run(['finalize', '--results', '.design/prompts/results.json', '--sandbox', 'on']);
    expect(refused.code).toBe(3);
    expect(refused.out.error).toMatchObject({
      kind: 'sandbox-unavailable',
      message: expect.stringMatching(
        /^--sandbox on: this session runs the acceptance checks outside the sandbox \(plan setup found that the sandbox cannot run here: .*bwrap.*\); nothing was done\. To go on unsandboxed, run `plan finalize` as before without --sandbox on \(the person approves it\); to sandbox them, install bubblewrap/,
      ),
    });
    expect(refused.stderr).toMatch(/^plan finalize: --sandbox on: /);
    // Nothing was done: the task is still in progress, its worktree still there.
    expect(existsSync(ran.worktree!)).toBe(true);
    const finalized = await run(['finalize', '--results', '.design/prompts/results.json']);
    expect(finalized.code, finalized.stderr).toBe(0);
    expect(finalized.out.results[0]).toMatchObject({ index: 0, outcome: 'completed' });
    const committed = await run(['commit', '--sandbox', 'on']);
    expect(committed.code, committed.stderr).toBe(0);
    expect(committed.out.archived).toEqual(expect.any(String));
  });

  it('plan probe --sandbox on refuses with exit 3; FOREMAN_SANDBOX=on the same; a bad mode is exit 2', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a', check: 'test -f a.txt' }] })]));
    const env = { PATH: bin };
    const on = await runPlanToolProcess(repo.dir, ['probe', '--sandbox', 'on'], env);
    expect(on.exitCode).toBe(3);
    expect(on.stderr).toMatch(/--sandbox on: the sandbox cannot run here/);
    expect((await runPlanToolProcess(repo.dir, ['probe'], { ...env, FOREMAN_SANDBOX: 'on' })).exitCode).toBe(3);
    const bad = await runPlanToolProcess(repo.dir, ['probe', '--sandbox', 'sometimes'], env);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--sandbox expects one of auto, on, off, got "sometimes" (see --help)');
  });

  it('plan probe (auto) goes on without it and says so once, with its result: why, what runs without it, what to install', async () => {
    const repo = await tempGitRepo({ 'README.md': 'hello\n' });
    repos.push(repo);
    await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a', check: 'test -f a.txt' }] })]));
    const probed = await runPlanToolProcess(repo.dir, ['probe'], { PATH: bin, FOREMAN_WORKTREES: join(scratch, 'worktrees') });
    expect(probed.exitCode, probed.stderr).toBe(0);
    expect(probed.stderr).toBe('');
    const line = probed.stdout.split('\n')[1]!;
    expect(line).toMatch(
      /^sandbox: off \(--sandbox auto: it cannot run here: .*bubblewrap \(bwrap\) not installed.*\): checks run without it, with this machine's network and files; to sandbox them, install bubblewrap, socat and ripgrep/,
    );
    expect(probed.stdout.match(/sandbox: /g)).toHaveLength(1);
  });
});
