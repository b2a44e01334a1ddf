// Removing what Claude Code made for a Task subagent: only a registered worktree under
// `<repo>/.claude/worktrees/`, and its branch only when it is named `worktree-agent-*`.

import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentWorktree, removeAgentWorktree } from '../../src/adapters/git/agent-worktrees.ts';
import { type TempGitRepo, tempGitRepo } from '../support/git-repo.ts';
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
});
