// Verifying exactly what lands: what an attempt changed outside its declared files (a rewritten
// lockfile, coverage output git does not ignore, a deleted file, a file it committed) is set
// aside before the checks run — put back in the worktree as the attempt's starting commit has it,
// kept whole on refs/foreman-aside/<planId>/<task> — never with `git stash`; ignored files stay.

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { asideRef } from '../../src/adapters/git/refs.ts';
import type { CheckedWork, Verification } from '../../src/core/attempt/finalize.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { afterEachCleanups, tempRepoIn, withoutMachineGitConfig } from '../support/git-repo.ts';
import { openPlaces } from '../support/places.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

withoutMachineGitConfig();
const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

/** A workspace for task 0 at the integration tip, in a fresh pool; its integration too. */
async function workspaceFor(repo: string, plan: Plan, strictScope = false) {
  const { integration, workspaces } = await openPlaces(cleanups, repo, plan, { strictScope });
  const made = await workspaces.make({ task: 0, commit: integration.tip });
  if (!made.ok) throw new Error(made.error);
  return { integration, workspace: made.value };
}

/** What verification found, once the attempt's work was captured (else its failure is the test's). */
function checked(verification: Verification): CheckedWork {
  if (!verification.ok) throw new Error(`the attempt's work could not be captured: ${verification.error}`);
  return verification.value;
}

const files = { 'a.txt': 'a\n', 'package-lock.json': '{"lock":"base"}\n', 'README.md': 'readme\n', '.gitignore': 'node_modules/\n.design/\n' };
/** What the checks see is what would land: no set-aside change is in the worktree, the ignored output is. */
const landsAsDeclared =
  'grep -q worker a.txt && grep -q base package-lock.json && test ! -e coverage/out.txt && test -f README.md && test -f node_modules/x.js';

describe('set aside', () => {
  it('puts back what the attempt changed outside its declared files before its checks run, keeps it whole on a ref of its own, and leaves ignored files and the stash alone', async () => {
    const repo = await repoWith(files);
    const plan = makePlan([fakeTask('A', { modify: ['a.txt'], acceptance: [{ criterion: 'lands as declared', check: landsAsDeclared }] })]);
    const { integration, workspace } = await workspaceFor(repo.dir, plan);
    const dir = workspace.dir;
    await writeFile(join(dir, 'a.txt'), 'from the worker\n');
    await writeFile(join(dir, 'package-lock.json'), '{"lock":"rewritten by npm install"}\n');
    await mkdir(join(dir, 'coverage'), { recursive: true });
    await writeFile(join(dir, 'coverage/out.txt'), 'coverage report\n');
    await rm(join(dir, 'README.md'));
    await mkdir(join(dir, 'node_modules'), { recursive: true });
    await writeFile(join(dir, 'node_modules/x.js'), 'ignored\n');

    const verification = checked(await workspace.verify(plan, 0));
    workspace.release();
    expect(verification.outsideChanges).toEqual(['README.md', 'coverage/out.txt', 'package-lock.json']);
    expect(verification.acceptance).toMatchObject([{ passed: true }]);
    expect(verification.work.entries.map((entry) => entry.path)).toEqual(['a.txt']);
    // Kept whole: the attempt's work, declared and set aside, on the attempt's starting commit.
    const kept = verification.setAside?.kept;
    expect(kept?.ref).toBe(asideRef(integration.planId, 0));
    expect((await repo.git(['rev-parse', kept!.ref])).trim()).toBe(kept!.commit);
    expect(await repo.git(['show', `${kept!.commit}:package-lock.json`])).toBe('{"lock":"rewritten by npm install"}\n');
    expect(await repo.git(['show', `${kept!.commit}:coverage/out.txt`])).toBe('coverage report\n');
    expect(await repo.git(['show', `${kept!.commit}:a.txt`])).toBe('from the worker\n');
    expect((await repo.git(['ls-tree', '--name-only', kept!.commit])).split('\n')).not.toContain('README.md');
    expect((await repo.git(['rev-parse', `${kept!.commit}^`])).trim()).toBe(integration.tip);
    // Never the stash, which an in-session worktree shares with the person.
    expect(await repo.git(['stash', 'list'])).toBe('');
    expect(await repo.git(['for-each-ref', 'refs/stash'])).toBe('');
  });

  it('a file the worker committed outside its declared files is set aside too', async () => {
    const repo = await repoWith(files);
    const plan = makePlan([
      fakeTask('A', { modify: ['a.txt'], acceptance: [{ criterion: 'no stray file', check: 'test ! -e stray.txt && grep -q worker a.txt' }] }),
    ]);
    const { workspace } = await workspaceFor(repo.dir, plan);
    const dir = workspace.dir;
    await writeFile(join(dir, 'a.txt'), 'from the worker\n');
    await writeFile(join(dir, 'stray.txt'), 'committed, undeclared\n');
    const git = (args: string[]) => repo.git(['-C', dir, '-c', 'user.name=w', '-c', 'user.email=w@w', ...args]);
    await git(['add', '-A']);
    await git(['commit', '-qm', 'wip']);
    const verification = checked(await workspace.verify(plan, 0));
    workspace.release();
    expect(verification.outsideChanges).toEqual(['stray.txt']);
    expect(verification.acceptance).toMatchObject([{ passed: true }]);
    expect(await repo.git(['show', `${verification.setAside!.kept!.commit}:stray.txt`])).toBe('committed, undeclared\n');
  });

  it('with strictScope, a change outside the declared files is set aside and kept, and no check runs', async () => {
    const repo = await repoWith(files);
    const plan = makePlan([fakeTask('A', { modify: ['a.txt'], acceptance: [{ criterion: 'never runs', check: 'true' }] })]);
    const { workspace } = await workspaceFor(repo.dir, plan, true);
    await writeFile(join(workspace.dir, 'a.txt'), 'from the worker\n');
    await writeFile(join(workspace.dir, 'package-lock.json'), '{}\n');
    const verification = checked(await workspace.verify(plan, 0));
    workspace.release();
    expect(verification.outsideChanges).toEqual(['package-lock.json']);
    expect(verification.acceptance).toEqual([]);
    expect(verification.setAside?.kept).not.toBeNull();
    expect(await readFile(join(workspace.dir, 'package-lock.json'), 'utf8')).toBe('{"lock":"base"}\n');
  });
});
