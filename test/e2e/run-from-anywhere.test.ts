// Every command runs from anywhere in the repository, as git does: from a subfolder, the plan at
// the repository's top (or one nearer the folder) is found, and execute and the in-session steps
// work at the top. `--plan FILE` is read relative to the current folder (execute: to --repo DIR).
// The fake worker, in process (runExecute / runPlanTool).

import { execa } from 'execa';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPlan, planPathFrom, repositoryTop } from '../../src/cli/load.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';

const { repos, tempDir } = leftovers();

const onePlan = (marker: string, file: string) => makePlan([fakeTask(marker, { create: [file], fake: { write: { [file]: `${marker}\n` } } })]);

/** A repository with the plan at its top and a folder `src/deep` in it. */
async function repoWithSubfolder() {
  const made = await repoWithPlan(onePlan('A', 'a.txt'), repos, { 'README.md': 'hello\n', 'src/deep/keep.txt': 'k\n' });
  return { ...made, deep: join(made.repo.dir, 'src/deep') };
}

describe('from a subfolder of the repository', () => {
  it('execute finds the plan at the top and runs it there', async () => {
    const { repo, planPath, deep } = await repoWithSubfolder();
    const r = await runExecute(deep, ['--no-probe']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('A\n');
    // Finished and archived where it was, at the top.
    expect(r.stdout).toContain(`the plan was moved to ${join(repo.dir, '.design/history')}`);
    await expect(readPlan(planPath)).rejects.toThrow(/ENOENT/);
  });

  it('execute --dry-run and the plan commands read the top plan', async () => {
    const { repo, deep } = await repoWithSubfolder();
    const dry = await runExecute(deep, ['--dry-run']);
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain(join(repo.dir, '.design/plan.json'));
    for (const command of [['check'], ['status'], ['graph'], ['ready'], ['summary']]) {
      const r = await runPlanTool(deep, command);
      expect(r.exitCode, `${command.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect((await runPlanTool(deep, ['check'])).stdout).toBe(`${join(repo.dir, '.design/plan.json')}: valid (1 task)`);
  });

  it('the in-session steps work at the top: setup and next from a subfolder', async () => {
    const { repo, deep } = await repoWithSubfolder();
    const setup = await runPlanTool(deep, ['setup']);
    expect(setup.exitCode, setup.stdout).toBe(0);
    const next = await runPlanTool(deep, ['next']);
    expect(next.exitCode, next.stdout).toBe(0);
    expect(JSON.parse(next.stdout).tasks.map((t: { index: number }) => t.index)).toEqual([0]);
    // Its worker prompt is where the skill reads it, beside the top's plan.
    expect(JSON.parse(next.stdout).tasks[0].promptFile).toBe(join(repo.dir, '.design/prompts/task-0.md'));
  });

  it('with no plan anywhere up to the top, names the plan path at the top (exit 2)', async () => {
    const repo = (await repoWithPlan(onePlan('A', 'a.txt'), repos, { 'sub/keep.txt': 'k\n' })).repo;
    await runPlanTool(repo.dir, ['archive']);
    const sub = join(repo.dir, 'sub');
    const run = await runExecute(sub, []);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^no plan at ${join(repo.dir, '.design/plan.json')}: the last one .* was archived to `));
    const status = await runPlanTool(sub, ['status']);
    expect(status.exitCode).toBe(2);
    expect(status.stderr).toContain(`no plan at ${join(repo.dir, '.design/plan.json')}`);
  });

  it('a plan nearer the folder comes first, as a nested repository would for git', async () => {
    const { repo, deep } = await repoWithSubfolder();
    const nearer = await writePlan(repo.dir, onePlan('B', 'b.txt'), 'src/.design/plan.json');
    expect(await planPathFrom({}, deep)).toBe(nearer);
    expect(await planPathFrom({}, join(repo.dir, 'src'))).toBe(nearer);
    expect(await planPathFrom({}, repo.dir)).toBe(join(repo.dir, '.design/plan.json'));
    const r = await runExecute(deep, ['--no-probe']);
    expect(r.exitCode).toBe(0);
    expect(await repo.git(['show', 'HEAD:b.txt'])).toBe('B\n');
  });

  it('--plan FILE is relative to the current folder for the plan commands, and to --repo DIR for execute', async () => {
    const { repo, deep } = await repoWithSubfolder();
    await writeFile(join(deep, 'other.json'), JSON.stringify(onePlan('C', 'c.txt')));
    expect((await runPlanTool(deep, ['check', '--plan', 'other.json'])).stdout).toBe(`${join(deep, 'other.json')}: valid (1 task)`);
    const dry = await runExecute(repo.dir, ['--repo', deep, '--plan', 'other.json', '--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(join(deep, 'other.json'));
  });
});

describe('outside any repository', () => {
  it('a plan command reads the plan in the current folder only, and execute says there is no repository', async () => {
    const outside = await tempDir('foreman-no-repo-');
    const inner = join(outside, 'inner');
    await mkdir(inner);
    await writePlan(outside, onePlan('A', 'a.txt'));
    expect(await repositoryTop(inner)).toBeNull();
    expect(await findPlan(inner, null)).toBe(join(inner, '.design/plan.json'));
    const check = await runPlanTool(inner, ['check']);
    expect(check.exitCode).toBe(2);
    expect(check.stderr).toContain(`no plan at ${join(inner, '.design/plan.json')}`);
    const run = await runExecute(outside, []);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe(`${outside} is not in a git repository (foreman commits each round; run \`git init\` first)`);
  });
});

// Root can give a repository to another user; git then refuses to read it (`safe.directory`).
describe.runIf(process.getuid?.() === 0)('in a repository git refuses to read', () => {
  it('says what git said and exits 4, rather than that there is no plan', async () => {
    const { repo, deep } = await repoWithSubfolder();
    await execa('chown', ['-R', '54321:54321', repo.dir]);
    const said = `could not find the git repository holding ${deep}: git rev-parse failed (exit 128): fatal: `;
    const run = await runExecute(deep, ['--dry-run']);
    expect(run.exitCode, run.stderr).toBe(4);
    expect(run.stderr.startsWith(said), run.stderr).toBe(true);
    expect(run.stderr).toContain(`safe.directory ${repo.dir}`);
    for (const command of [['status'], ['land']]) {
      const r = await runPlanTool(deep, command);
      expect(r.exitCode, `${command.join(' ')}: ${r.stderr}`).toBe(4);
      expect(r.stderr.startsWith(said), r.stderr).toBe(true);
    }
    // A session step says it in its JSON, as git failing.
    const next = await runPlanTool(deep, ['next']);
    expect(next.exitCode).toBe(4);
    const error = JSON.parse(next.stdout).error;
    expect(error.kind).toBe('git-failed');
    expect(error.message.startsWith(said), error.message).toBe(true);
  });
});
