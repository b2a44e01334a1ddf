// The worker permission rules as the person sees them (`--dry-run`) and the paths refused
// because no rule can express them exactly (exit 2).

import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { repoWithPlan } from '../support/fake-run.ts';
import { runGit, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';

const repos: TempGitRepo[] = [];
const dirs: string[] = [];
afterEach(async () => {
  while (repos.length) await repos.pop()!.cleanup();
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

describe('worker permission rules', () => {
  it("--dry-run shows each pending task's rules: its declared files, its judged commands, no bare Write", async () => {
    const plan = makePlan([
      fakeTask('A', { create: ['src/[id].ts'], modify: ['README.md'], acceptance: [{ criterion: 'exists', check: 'test -f "src/[id].ts"' }] }),
      fakeTask('B', { create: ['docs/'], blockedBy: [0] }),
    ]);
    plan.context = { testCommand: 'npm test' };
    const { repo } = await repoWithPlan(plan, repos);
    const r = await runExecute(repo.dir, ['--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    // As the worker gets them: anchored at its worktree, //<its real path>/…, shown as //<worktree>/….
    const root = '//<worktree>';
    expect(r.stdout).toContain(
      "Worker permission rules, as each worker gets them (permission mode dontAsk; anything else is denied in dontAsk mode); //<worktree> is its worktree's real path:",
    );
    expect(r.stdout).toContain(
      `  task 0 allow: Read  Glob  Grep  Edit(${root}/src/\\[id\\].ts)  Edit(${root}/README.md)  Bash(npm test)  Bash(test -f "src/[id].ts")\n`,
    );
    expect(r.stdout).toContain(`  task 0 deny:  Edit(${root}/src/\\[id\\].ts/*)  Edit(${root}/README.md/*)\n`);
    expect(r.stdout).toContain(`  task 1 allow: Read  Glob  Grep  Edit(${root}/docs/**)  Bash(npm test)\n`);
    expect(r.stdout).not.toContain('task 1 deny');
    expect(r.stdout).not.toMatch(/ (Write|Edit)( |\n)/);
  });

  it("--dry-run anchors the rules at the worktree, and the person's deny rules at the checkout's real path too, when it is reached through a symlink", async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo } = await repoWithPlan(plan, repos);
    await mkdir(join(repo.dir, '.claude'));
    await writeFile(join(repo.dir, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(/secret.txt)'] } }));
    const link = `${repo.dir}-link`;
    await symlink(repo.dir, link);
    dirs.push(link);
    const r = await runExecute(link, ['--dry-run']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Edit(//<worktree>/a.txt)');
    expect(r.stdout).not.toContain(`Edit(/${link}/`);
    expect(r.stdout).toContain(
      `  task 0 deny:  Edit(//<worktree>/a.txt/*)  Read(//<worktree>/secret.txt)  Read(/${repo.dir}/secret.txt)  Read(/${link}/secret.txt)\n`,
    );
  });

  it("--dry-run shows the person's deny rules, which every worker gets besides its own (with --allowed-tools too), anchored at its worktree and at the repository", async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] })]);
    const { repo } = await repoWithPlan(plan, repos);
    await mkdir(join(repo.dir, '.claude'));
    await writeFile(
      join(repo.dir, '.claude/settings.local.json'),
      JSON.stringify({ permissions: { deny: ['Read(./.env)', 'Bash(git push:*)'], allow: ['Bash(*)'] } }),
    );
    const root = `/${repo.dir}`;
    const carried = `Read(//<worktree>/.env)  Read(//<worktree>/**/.env)  Read(${root}/.env)  Read(${root}/**/.env)  Bash(git push:*)`;
    const computed = await runExecute(repo.dir, ['--dry-run']);
    expect(computed.exitCode).toBe(0);
    expect(computed.stdout).toContain(`  task 0 deny:  Edit(//<worktree>/a.txt/*)  ${carried}\n`);
    expect(computed.stdout).not.toContain('Bash(*)');
    const listed = await runExecute(repo.dir, ['--dry-run', '--allowed-tools', 'Read,Write']);
    expect(listed.stdout).toContain(`  task 0 deny:  ${carried}\n`);
  });

  it('--allowed-tools replaces the computed rules, for every task', async () => {
    const plan = makePlan([fakeTask('A', { create: ['a.txt'] }), fakeTask('B', { create: ['b.txt'] })]);
    const { repo } = await repoWithPlan(plan, repos);
    const r = await runExecute(repo.dir, ['--dry-run', '--allowed-tools', 'Read,Write Bash(make check)']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Worker permission rules (--allowed-tools, every task; permission mode dontAsk):');
    expect(r.stdout).toContain('  task 0 allow: Read  Write  Bash(make check)\n');
    expect(r.stdout).toContain('  task 1 allow: Read  Write  Bash(make check)\n');
    expect(r.stdout).not.toContain('Edit(');
  });

  it('refuses (exit 2) a declared file no rule can match exactly, in plan check and in execute', async () => {
    const plan = makePlan([fakeTask('A', { create: ['src/what?.ts'] }), fakeTask('B', { create: ['notes.txt '] })]);
    const { repo, planPath } = await repoWithPlan(plan, repos);
    const check = await runPlanTool(repo.dir, ['check', '--plan', planPath]);
    expect(check.exitCode).toBe(2);
    expect(check.stderr).toContain('tasks[0].metadata.files.create[0]: "src/what?.ts" contains "?"');
    expect(check.stderr).toContain('tasks[1].metadata.files.create[0]: "notes.txt " has a name ending in whitespace');
    const run = await runExecute(repo.dir, ['--dry-run']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('"src/what?.ts" contains "?"');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses (exit 2) a repository whose path no rule can anchor, unless --allowed-tools replaces the rules', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'foreman-scope-'));
    dirs.push(parent);
    const dir = join(parent, 'repo?');
    await runGit(parent, ['init', '-q', '-b', 'main', dir]);
    await writeFile(join(dir, 'README.md'), 'x\n');
    // A commit: a repository without one is refused before the rules are looked at.
    await runGit(dir, ['add', 'README.md']);
    await runGit(dir, ['-c', 'user.name=T', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', 'commit', '-qm', 'initial']);
    await writePlan(dir, makePlan([fakeTask('A', { create: ['a.txt'] })]));
    const r = await runExecute(dir, ['--dry-run']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`the repository path "${dir}" contains "?"`);
    expect((await runExecute(dir, ['--dry-run', '--allowed-tools', 'Read Write'])).exitCode).toBe(0);
  });
});
