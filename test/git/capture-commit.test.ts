// Capture from a commit (a host's snapshot of its slot, fetched here): the same split as a
// worktree's capture — declared work, what was changed outside (set aside, kept), provisioning and
// Claude Code's scratch folder never the worker's — read from base..snapshot in this repository.

import { afterEach, describe, expect, it } from 'vitest';
import { captureCommit, captureWork } from '../../src/adapters/git/capture.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';

const repos: TempGitRepo[] = [];
afterEach(async () => {
  while (repos.length > 0) await repos.pop()!.cleanup();
});

/** A repository at a base commit, then the worker's changes in its worktree, committed as a snapshot on top of the base (as a host makes it). */
async function snapshotOf(changes: Record<string, string>, deleted: string[] = []) {
  const repo = await tempGitRepo({ 'README.md': 'hello\n', 'src/a.ts': 'a\n', 'docs/guide.md': 'guide\n' });
  repos.push(repo);
  const base = (await repo.git(['rev-parse', 'HEAD'])).trim();
  await repo.write(changes);
  if (deleted.length > 0) await repo.git(['rm', '-q', '--', ...deleted]);
  await repo.git(['add', '-A']);
  const tree = (await repo.git(['write-tree'])).trim();
  const snapshot = (await repo.git(['commit-tree', tree, '-p', base, '-m', 'snapshot'])).trim();
  return { repo, base, snapshot };
}

describe('captureCommit', () => {
  it('splits base..snapshot as a worktree capture does: declared work, changes outside, provisioning and the CLI scratch left out', async () => {
    const { repo, base, snapshot } = await snapshotOf(
      { 'src/a.ts': 'a changed\n', 'src/new file.ts': 'new\n', 'notes.txt': 'outside\n', '.env': 'TOKEN=x\n', '.claude/.cc-writes/plan.md': 'scratch\n' },
      ['docs/guide.md'],
    );
    const captured = await captureCommit(repo.dir, ['src/', 'docs/guide.md'], ['.env'], base, snapshot);
    if (!captured.ok) throw new Error(JSON.stringify(captured.error));
    const { changed, outside, work, aside } = captured.value;
    expect(work.base).toBe(base);
    expect(work.entries.map((entry) => [entry.path, 'deleted' in entry])).toEqual([
      ['docs/guide.md', true],
      ['src/a.ts', false],
      ['src/new file.ts', false],
    ]);
    expect(outside).toEqual(['notes.txt']);
    expect(aside.map((entry) => entry.path)).toEqual(['notes.txt']);
    expect(changed).toEqual(['docs/guide.md', 'notes.txt', 'src/a.ts', 'src/new file.ts']);
    // The blobs are this repository's: what the integration reads.
    const blob = work.entries.find((entry) => entry.path === 'src/a.ts');
    expect(blob && 'object' in blob ? await repo.git(['cat-file', '-p', blob.object]) : null).toBe('a changed\n');
  });

  it('reads the same work as capturing the worktree itself', async () => {
    const { repo, base, snapshot } = await snapshotOf({ 'src/a.ts': 'a changed\n', 'src/b.ts': 'b\n', 'other.txt': 'x\n' });
    // The worktree as the worker left it: the snapshot's files, its index back at the base.
    await repo.git(['reset', '-q', base]);
    const fromCommit = await captureCommit(repo.dir, ['src/'], [], base, snapshot);
    const fromWorktree = await captureWork(repo.dir, ['src/'], [], base);
    if (!fromCommit.ok || !fromWorktree.ok) throw new Error('capture failed');
    expect(fromCommit.value).toEqual(fromWorktree.value);
  });

  it('a snapshot that changed nothing captures nothing', async () => {
    const { repo, base } = await snapshotOf({});
    const tree = (await repo.git(['rev-parse', `${base}^{tree}`])).trim();
    const same = (await repo.git(['commit-tree', tree, '-p', base, '-m', 'nothing'])).trim();
    const captured = await captureCommit(repo.dir, ['src/'], [], base, same);
    expect(captured.ok && captured.value).toEqual({ changed: [], outside: [], work: { base, entries: [] }, aside: [] });
  });
});
