// The person's files and repository states, end to end with the fake worker: ignored paths,
// a repository busy with a merge or the like, a subdirectory, a detached HEAD, a commit that
// fails, and a failing check whose error is at the end of its output.

import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { executeScript, fakeWorker, nodeArgsFor, runExecute, runPlanTool } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import type { TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';
import { waitFor } from '../support/wait.ts';

const { repos } = leftovers();
const setup = (plan: Plan, files?: Record<string, string>) => repoWithPlan(plan, repos, files);

/** Everything of the repository a refused run must leave alone: HEAD, index, status, and the bytes of every file outside .design/. */
async function snapshot(repo: TempGitRepo): Promise<string> {
  const head = await repo.git(['rev-parse', 'HEAD']);
  const branch = await repo.git(['symbolic-ref', '-q', 'HEAD']).catch(() => 'detached');
  const index = await repo.git(['ls-files', '-s']);
  const status = (await repo.git(['status', '--porcelain=v1', '-uall', '--ignored']))
    .split('\n')
    .filter((l) => !l.includes('.design/'))
    .join('\n');
  const files = (await repo.git(['ls-files', '-co', '--exclude-standard'])).split('\n').filter((f) => f && !f.includes('.design/'));
  const contents = await Promise.all(files.map(async (f) => `${f}:${await readFile(join(repo.dir, f), 'utf8').catch(() => '(none)')}`));
  return [head, branch, index, status, ...contents].join('\n');
}

const failingTask = (fake: object = { write: { 'config/app.json': '{}' }, status: 'FAILED: broke it' }) => fakeTask('A', { create: ['config/app.json'], fake });

describe('the person’s ignored files', () => {
  it('execute and plan check refuse a declared path git ignores, naming the rule, and .env survives', async () => {
    const plan = makePlan([fakeTask('A', { create: ['.env', 'dist/'], fake: { write: { '.env': 'TASK=1\n' }, status: 'FAILED: no' } })]);
    const { repo, planPath } = await setup(plan, { '.gitignore': '.env\ndist/\n', 'README.md': 'r\n' });
    await writeFile(join(repo.dir, '.env'), 'SECRET=mine\n');

    const check = await runPlanTool(repo.dir, ['check']);
    expect(check.exitCode).toBe(2);
    expect(check.stderr).toContain('tasks[0]: ".env" is ignored by git (.gitignore:1:.env)');
    expect(check.stderr).toContain('tasks[0]: "dist/" is ignored by git (.gitignore:2:dist/)');

    const before = await snapshot(repo);
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('".env" is ignored by git (.gitignore:1:.env)');
    expect(r.stderr).not.toMatch(/internal error|at .*\.ts:\d+/);
    expect(await readFile(join(repo.dir, '.env'), 'utf8')).toBe('SECRET=mine\n');
    expect(await snapshot(repo)).toBe(before);
    expect((await readPlan(planPath)).tasks[0]!.status ?? 'pending').toBe('pending');

    const setupStep = await runPlanTool(repo.dir, ['setup']);
    expect(setupStep.exitCode).toBe(2);
    expect(JSON.parse(setupStep.stdout).error.kind).toBe('ignored-paths');
  });

  it('ignored files under a declared dir/ survive a failing task; the task’s own files go', async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['config/'], fake: { write: { 'config/app.json': '{}', 'config/sub/x.txt': 'x' }, status: 'FAILED: no' } }),
    ]);
    const { repo, planPath } = await setup(plan, { '.gitignore': '*.env\nconfig/cache/\n', 'README.md': 'r\n' });
    await mkdir(join(repo.dir, 'config/cache'), { recursive: true });
    await writeFile(join(repo.dir, 'config/local.env'), 'SECRET=mine\n');
    await writeFile(join(repo.dir, 'config/cache/blob'), 'cached\n');
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode).toBe(1);
    expect((await readPlan(planPath)).tasks[0]!.status).toBe('failed');
    expect(await readFile(join(repo.dir, 'config/local.env'), 'utf8')).toBe('SECRET=mine\n');
    expect(await readFile(join(repo.dir, 'config/cache/blob'), 'utf8')).toBe('cached\n');
    expect(existsSync(join(repo.dir, 'config/app.json'))).toBe(false);
    expect(existsSync(join(repo.dir, 'config/sub'))).toBe(false);
  });

  it('a file the task was to create that already exists untracked is kept; landing names it (exit 1)', async () => {
    // Changed by design (issue 12): no refusal; the task works in its own worktree, and the
    // person's file blocks only the landing.
    const plan = makePlan([failingTask({ write: { 'config/app.json': '{}' } })]);
    const { repo, planPath } = await setup(plan);
    await mkdir(join(repo.dir, 'config'));
    await writeFile(join(repo.dir, 'config/app.json'), '{"mine": true}\n');
    const head = await repo.git(['rev-parse', 'HEAD']);
    const r = await runExecute(repo.dir, ['--max-attempts', '1']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain('config/app.json (untracked)');
    expect(await readFile(join(repo.dir, 'config/app.json'), 'utf8')).toBe('{"mine": true}\n');
    expect(await repo.git(['rev-parse', 'HEAD'])).toBe(head);
    expect(await repo.git(['ls-files', 'config'])).toBe('');
    const planId = (await readPlan(planPath)).planId;
    expect(await repo.git(['show', `refs/foreman/${planId}:config/app.json`])).toBe('{}');
  });

  it('a declared path through a symlink, or a bare path naming a directory, is refused', async () => {
    const plan = makePlan([fakeTask('A', { modify: ['alias/a.txt', 'lib'], fake: { status: 'FAILED: no' } })]);
    const { repo } = await setup(plan, { 'real/a.txt': 'a\n', 'lib/x.ts': 'x\n' });
    const { symlink } = await import('node:fs/promises');
    await symlink('real', join(repo.dir, 'alias'));
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('"alias/a.txt" is or goes through a symlink');
    expect(r.stderr).toContain('"lib" is a directory; declare it as "lib/"');
    expect(await readFile(join(repo.dir, 'real/a.txt'), 'utf8')).toBe('a\n');
  });
});

describe('repository states', () => {
  const markers: Array<[string, string]> = [
    ['CHERRY_PICK_HEAD', 'cherry-pick'],
    ['REVERT_HEAD', 'revert'],
    ['BISECT_LOG', 'bisect'],
    ['rebase-merge/', 'rebase'],
    ['rebase-apply/', 'rebase'],
  ];

  it('refuses a repository in the middle of a real merge (exit 2) and changes nothing', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]);
    const { repo } = await setup(plan, { 'm.txt': 'base\n' });
    await repo.git(['checkout', '-q', '-b', 'other']);
    await repo.write({ 'm.txt': 'other\n' });
    await repo.git(['commit', '-qam', 'other']);
    await repo.git(['checkout', '-q', 'main']);
    await repo.write({ 'm.txt': 'main\n' });
    await repo.git(['commit', '-qam', 'main']);
    await repo.git(['merge', 'other']).catch(() => undefined); // a conflict: MERGE_HEAD stays
    expect(existsSync(join(repo.dir, '.git/MERGE_HEAD'))).toBe(true);
    const before = await snapshot(repo);
    for (const args of [[], ['--no-commit']]) {
      const r = await runExecute(repo.dir, args);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain('the repository is in the middle of a merge');
      expect(await snapshot(repo)).toBe(before);
    }
    const step = await runPlanTool(repo.dir, ['setup']);
    expect(step.exitCode).toBe(2);
    expect(JSON.parse(step.stdout).error.kind).toBe('repository-busy');
    expect(await snapshot(repo)).toBe(before);
  });

  it.each(markers)('refuses a repository with %s (a %s in progress), changing nothing', async (marker, operation) => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a' } } })]);
    const { repo } = await setup(plan);
    const at = join(repo.dir, '.git', marker);
    if (marker.endsWith('/')) await mkdir(at);
    else await writeFile(at, `${(await repo.git(['rev-parse', 'HEAD'])).trim()}\n`);
    const before = await snapshot(repo);
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`the repository is in the middle of a ${operation}`);
    expect(await snapshot(repo)).toBe(before);
  });

  it('takes --repo pointing into a subdirectory as git does: it works at the top, with the plan nearest the folder', async () => {
    // Changed by design (issue 44): a subdirectory was refused (exit 2, naming the top); plan
    // paths are relative to the top either way, so the run now works there.
    const top = makePlan([fakeTask('TOP', { create: ['top.txt'], fake: { write: { 'top.txt': 't' } } })]);
    const { repo } = await setup(top, { 'sub/keep.txt': 'k\n' });
    const nearer = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]);
    await mkdir(join(repo.dir, 'sub/.design'), { recursive: true });
    await writeFile(join(repo.dir, 'sub/.design/plan.json'), JSON.stringify(nearer));
    const topPlan = await readFile(join(repo.dir, '.design/plan.json'), 'utf8');
    const r = await runExecute(repo.dir, ['--repo', join(repo.dir, 'sub')]);
    expect(r.exitCode).toBe(0);
    // The plan in sub/.design ran, its path relative to the top; the top's plan is untouched.
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    expect(existsSync(join(repo.dir, 'sub/a.txt'))).toBe(false);
    expect(await readFile(join(repo.dir, '.design/plan.json'), 'utf8')).toBe(topPlan);
  });

  it('runs on a detached HEAD, with a notice naming the commit; the commit lands on the detached HEAD', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]);
    const { repo } = await setup(plan);
    await repo.git(['checkout', '-q', '--detach']);
    const start = (await repo.git(['rev-parse', 'HEAD'])).trim();
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);
    expect(r.stdout + r.stderr).toContain(`HEAD is detached at ${start.slice(0, 12)}`);
    expect(r.stdout + r.stderr).toContain('git switch -c');
    expect((await repo.git(['rev-parse', 'HEAD~1'])).trim()).toBe(start);
    expect((await repo.git(['rev-parse', 'main'])).trim()).toBe(start);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
  });
});

describe('an integration that fails', () => {
  it('exits 4 naming git’s reason, touches neither branch nor index, and a re-run integrates the work', async () => {
    // Changed by design (issue 12): verified work is committed with plumbing onto refs/foreman/<planId>
    // (commit signing and hooks play no part, see the next test); a git failure there leaves the
    // tasks to run again rather than kept.
    const go = join(await mkdtemp(join(tmpdir(), 'foreman-go-')), 'go');
    const plan = makePlan([
      fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' }, waitForFile: go } }),
      fakeTask('B', { create: ['b.txt'], blockedBy: [0], fake: { write: { 'b.txt': 'b\n' } } }),
    ]);
    const { repo, planPath, journal, env } = await setup(plan, { 'README.md': 'r\n', 'mine.txt': 'm\n' });
    await repo.write({ 'mine.txt': 'my staged edit\n' });
    await repo.git(['add', 'mine.txt']);
    await repo.git(['config', 'commit.gpgsign', 'true']);
    await repo.git(['config', 'gpg.program', 'false']);
    const head = (await repo.git(['rev-parse', 'HEAD'])).trim();

    const run = execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker], {
      cwd: repo.dir,
      reject: false,
      stdin: 'ignore',
      env: { ...env, NO_COLOR: '1' },
    });
    await waitFor('A to start', async () => (await readFile(journal, 'utf8').catch(() => '')).includes('"start"'));
    // A lock on the integration ref, as a git process of someone else's would hold it.
    const planId = (await readPlan(planPath)).planId!;
    const lock = join(repo.dir, `.git/refs/foreman/${planId}.lock`);
    await writeFile(lock, '');
    await writeFile(go, '');
    const r = await run;
    expect(r.exitCode).toBe(4);
    expect(r.stdout + r.stderr).toMatch(/could not integrate the verified work of tasks 0: .*(File exists|Unable to create)/);
    expect(r.stderr).not.toContain('internal error');
    expect((await repo.git(['rev-parse', 'HEAD'])).trim()).toBe(head);
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('mine.txt\n');
    expect(existsSync(join(repo.dir, 'a.txt'))).toBe(false);
    expect((await readPlan(planPath)).tasks.map((t) => t.status ?? 'pending')).not.toContain('completed');

    await rm(lock);
    const again = await runExecute(repo.dir, [], env);
    expect(again.exitCode, again.stdout).toBe(0);
    const log = await repo.git(['log', '--format=%s %G?', `${head}..HEAD`]);
    expect(log).toContain('task A');
    expect(log).toContain('task B');
    expect(log).not.toMatch(/ [GBUXYRE]$/m); // the person's signing setting played no part
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('mine.txt\n');
    expect(await repo.git(['show', 'HEAD:mine.txt'])).toBe('m\n');
    // Nothing of A had been integrated, so A ran again.
    const starts = (await readFile(journal, 'utf8')).split('\n').filter((l) => l.includes('"start"') && l.includes('"taskMarker":"A"'));
    expect(starts).toHaveLength(2);
    await rm(join(go, '..'), { recursive: true, force: true });
  });

  it('a failing prepare-commit-msg hook does not touch foreman’s commits', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]);
    const { repo } = await setup(plan);
    await mkdir(join(repo.dir, '.git/hooks'), { recursive: true });
    await writeFile(join(repo.dir, '.git/hooks/prepare-commit-msg'), '#!/bin/sh\necho "no commits today" >&2\nexit 1\n', { mode: 0o755 });
    const r = await runExecute(repo.dir);
    expect(r.exitCode).toBe(0);
    expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    expect(await repo.git(['diff', '--cached', '--name-only'])).toBe('');
  });
});

describe('a failing check’s error is at the end of its output', () => {
  it('the failure reason and the retry prompt quote the error line after 200 warnings', async () => {
    const check =
      'i=0; while [ $i -lt 200 ]; do echo "npm WARN deprecated pkg-$i@1.0.0: unsupported"; i=$((i+1)); done; echo "npm ERR! Test failed: expected 2 to equal 3"; exit 1';
    const plan = makePlan([
      fakeTask('A', {
        create: ['a.txt'],
        acceptance: [{ criterion: 'tests pass', check }],
        fake: { attempts: [{ write: { 'a.txt': 'a\n' } }, { write: { 'a.txt': 'a\n' }, echoPrompt: true }] },
      }),
    ]);
    const { repo, planPath } = await setup(plan);
    const r = await runExecute(repo.dir, ['--max-attempts', '2']);
    expect(r.exitCode).toBe(1);
    const result = (await readPlan(planPath)).tasks[0]!.result ?? '';
    expect(result).toContain('acceptance check failed (tests pass)');
    expect(result).toContain('npm ERR! Test failed: expected 2 to equal 3');
    expect(result).not.toContain('pkg-0@');
    const log = await readFile(join(repo.dir, '.design/worker-0.log'), 'utf8');
    const retryPrompt = log.slice(log.indexOf('This is attempt 2 of 2'));
    expect(retryPrompt).toContain('npm ERR! Test failed: expected 2 to equal 3');
    // The closing message says what makes a re-run retry it.
    expect(r.stdout + r.stderr).toContain('task 0 is failed');
    expect(r.stdout + r.stderr).toContain('`npx tsx scripts/plan.ts retry 0`');

    // The worker's log has each attempt's whole check output, warnings and all; the report, a few lines.
    const sections = [
      ...log.matchAll(/^==== acceptance check failed \(tests pass\): `.*` exited 1; its whole output ====\n([\s\S]*?)^==== end of its output ====$/gm),
    ];
    expect(sections).toHaveLength(2);
    for (const [, output] of sections) {
      expect(output!.split('\n').filter(Boolean)).toHaveLength(201);
      expect(output).toMatch(/^npm WARN deprecated pkg-0@1\.0\.0: unsupported\n/);
      expect(output).toMatch(/npm ERR! Test failed: expected 2 to equal 3\n$/);
    }
    const report = await runPlanTool(repo.dir, ['report']);
    expect(report.exitCode).toBe(0);
    const fenced = [...report.stdout.matchAll(/^```text\n([\s\S]*?)\n```$/gm)].map((m) => m[1]!);
    expect(fenced).toHaveLength(2);
    const runId = /^# foreman run (\S+)/m.exec(report.stdout)![1];
    for (const reason of fenced) {
      const lines = reason.split('\n');
      expect(lines).toHaveLength(7);
      expect(lines[0]).toBe(`acceptance check failed (tests pass): \`${check}\` exited 1:`);
      expect(lines[1]).toMatch(
        new RegExp(
          `^… \\d+ lines cut: the whole reason is in \`npx tsx scripts/plan\\.ts report --run ${runId} --json\`, each failed check's whole output in the log …$`,
        ),
      );
      expect(lines[6]).toBe('npm ERR! Test failed: expected 2 to equal 3');
    }
  });
});
