// Removing what Claude Code made for a Task subagent: only a registered worktree under
// `<repo>/.claude/worktrees/`, and its branch only when it is named `worktree-agent-*`.

import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentWorktree, removeAgentWorktree, startFromParked } from '../../src/adapters/git/agent-worktrees.ts';
import { runGit, tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { leftovers } from '../support/fake-run.ts';

const { repos } = leftovers();

async function repo(): Promise<TempGitRepo> {
  const r = await tempGitRepo({ 'README.md': 'x\n' });
  repos.push(r);
  return r;
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );
const branches = async (r: TempGitRepo) => (await r.git(['branch', '--format=%(refname:short)'])).split('\n').filter(Boolean).sort();

describe('agent worktrees', () => {
  it('removes a subagent worktree and its worktree-agent-* branch', async () => {
    const r = await repo();
    const dir = join(r.dir, '.claude/worktrees/agent-abc123');
    await r.git(['worktree', 'add', '-q', '-b', 'worktree-agent-abc123', dir, 'HEAD']);
    const found = await agentWorktree(r.dir, dir);
    expect(found).toMatchObject({ ok: true, value: { branch: 'refs/heads/worktree-agent-abc123' } });
    expect(await removeAgentWorktree(r.dir, dir)).toEqual({ ok: true, value: undefined });
    expect(await exists(dir)).toBe(false);
    expect(await branches(r)).not.toContain('worktree-agent-abc123');
    // Already gone: nothing to do.
    expect((await removeAgentWorktree(r.dir, dir)).ok).toBe(true);
  });

  it('keeps a branch that is not a subagent branch, and refuses a worktree elsewhere or the checkout itself', async () => {
    const r = await repo();
    const dir = join(r.dir, '.claude/worktrees/mine');
    await r.git(['worktree', 'add', '-q', '-b', 'feature', dir, 'HEAD']);
    expect((await removeAgentWorktree(r.dir, dir)).ok).toBe(true);
    expect(await branches(r)).toContain('feature');

    const outside = join(r.dir, '..', `${r.dir.split('/').at(-1)}-elsewhere`);
    await r.git(['worktree', 'add', '-q', '-b', 'worktree-agent-out', outside, 'HEAD']);
    try {
      for (const refused of [outside, r.dir, join(r.dir, '.claude/worktrees')]) {
        expect(await removeAgentWorktree(r.dir, refused)).toMatchObject({ ok: false, error: { kind: 'outside' } });
      }
      expect(await exists(outside)).toBe(true);
      expect(await branches(r)).toContain('worktree-agent-out');
    } finally {
      await r.git(['worktree', 'remove', '--force', outside]);
    }
    // A directory there that git does not know as a worktree is not one of them either.
    await mkdir(join(r.dir, '.claude/worktrees/agent-plain'), { recursive: true });
    expect(await agentWorktree(r.dir, join(r.dir, '.claude/worktrees/agent-plain'))).toMatchObject({ ok: false, error: { kind: 'not-registered' } });
  });

  it('puts a task’s parked work in a fresh subagent worktree: its files as parked, HEAD at the parked base, the work as the worktree’s changes', async () => {
    const r = await repo();
    const base = (await r.git(['rev-parse', 'HEAD'])).trim();
    await r.write({ 'lib.txt': 'parked\n', 'README.md': 'x\nparked too\n' });
    await r.git(['add', '-A']);
    await r.git(['commit', '-q', '-m', 'parked']);
    const parked = (await r.git(['rev-parse', 'HEAD'])).trim();
    await r.git(['reset', '-q', '--hard', base]);
    // The branch moved on since (another task landed): the worktree is made there, as Claude Code makes it.
    await r.write({ 'later.txt': 'landed later\n' });
    await r.git(['add', '-A']);
    await r.git(['commit', '-q', '-m', 'later']);
    const dir = join(r.dir, '.claude/worktrees/agent-rev1');
    await r.git(['worktree', 'add', '-q', '-b', 'worktree-agent-rev1', dir, 'HEAD']);
    expect(await startFromParked(r.dir, dir, { base, commit: parked })).toEqual({ ok: true, value: undefined });
    expect((await runGit(dir, ['rev-parse', 'HEAD'])).trim()).toBe(base);
    expect(await runGit(dir, ['status', '--porcelain'])).toBe(' M README.md\n?? lib.txt\n');
    expect(await readFile(join(dir, 'lib.txt'), 'utf8')).toBe('parked\n');
    expect(await exists(join(dir, 'later.txt'))).toBe(false);
    // Claude Code's branch for it moved with it; the person's branch did not.
    expect((await r.git(['rev-parse', 'worktree-agent-rev1'])).trim()).toBe(base);
    expect((await r.git(['log', '-1', '--format=%s', 'main'])).trim()).toBe('later');
  });

  it('refuses to put parked work over a change made in the worktree, and anywhere but a subagent worktree', async () => {
    const r = await repo();
    const base = (await r.git(['rev-parse', 'HEAD'])).trim();
    await r.write({ 'README.md': 'parked\n' });
    await r.git(['commit', '-q', '-am', 'parked']);
    const parked = (await r.git(['rev-parse', 'HEAD'])).trim();
    await r.git(['reset', '-q', '--hard', base]);
    const dir = join(r.dir, '.claude/worktrees/agent-rev2');
    await r.git(['worktree', 'add', '-q', '-b', 'worktree-agent-rev2', dir, 'HEAD']);
    await writeFile(join(dir, 'README.md'), 'changed here\n');
    const refused = await startFromParked(r.dir, dir, { base, commit: parked });
    expect(refused).toMatchObject({ ok: false, error: { kind: 'git-failed' } });
    expect(await readFile(join(dir, 'README.md'), 'utf8')).toBe('changed here\n');
    expect(await startFromParked(r.dir, r.dir, { base, commit: parked })).toMatchObject({ ok: false, error: { kind: 'outside' } });
    expect(await readFile(join(r.dir, 'README.md'), 'utf8')).toBe('x\n');
  });
});
