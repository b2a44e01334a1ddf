// The worktrees Claude Code makes for a session's Task subagents dispatched with
// `isolation: "worktree"`: `<repo>/.claude/worktrees/agent-<id>` on a branch
// `worktree-agent-<id>` (see test/support/CLI-NOTES.md). foreman did not make them, so it
// removes only what has exactly that shape: a registered worktree of this repository under
// `<repo>/.claude/worktrees/`, and its branch when the branch is named `worktree-agent-*`.
// Anything else (the person's own worktrees, other branches) is refused, never touched.

import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { assertNever, describeGitFailure, err, failureOf, type GitFailure, ok, type Result } from '../../core/index.ts';
import { runGit } from './runner.ts';

/** Where Claude Code puts a session's subagent worktrees, inside the repository. */
export const AGENT_WORKTREES_DIR = path.join('.claude', 'worktrees');
const AGENT_BRANCH = /^refs\/heads\/worktree-agent-[A-Za-z0-9_-]+$/;

export interface AgentWorktree {
  /** The worktree's top directory (real path). */
  dir: string;
  /** `refs/heads/worktree-agent-<id>`, or null when its HEAD is detached. */
  branch: string | null;
  /** The commit its HEAD is at. */
  head: string;
}

export type AgentWorktreeProblem =
  /** Not a directory under `<repo>/.claude/worktrees/`. */
  | { kind: 'outside'; dir: string }
  /** Under it, but not a worktree git has registered for this repository. */
  | { kind: 'not-registered'; dir: string }
  | { kind: 'git-failed'; failure: GitFailure };

export function describeAgentWorktreeProblem(problem: AgentWorktreeProblem): string {
  switch (problem.kind) {
    case 'outside':
      return `${problem.dir} is not a subagent worktree (they live under <repository>/${AGENT_WORKTREES_DIR}/)`;
    case 'not-registered':
      return `${problem.dir} is not a worktree of this repository (\`git worktree list\` does not show it)`;
    case 'git-failed':
      return describeGitFailure(problem.failure);
    default:
      return assertNever(problem, 'agent worktree problem');
  }
}

/** The registered worktree at `dir`, which must lie under `<repo>/.claude/worktrees/`. */
export async function agentWorktree(repo: string, dir: string): Promise<Result<AgentWorktree, AgentWorktreeProblem>> {
  const top = await realpath(repo);
  // A worktree removed already is judged by its path as given.
  const real = await realpath(path.resolve(top, dir)).catch(() => path.resolve(top, dir));
  const root = path.join(top, AGENT_WORKTREES_DIR);
  if (!real.startsWith(`${root}${path.sep}`)) return err({ kind: 'outside', dir });
  const listed = await runGit(['worktree', 'list', '--porcelain', '-z'], { cwd: top });
  if (!listed.ok) return err({ kind: 'git-failed', failure: failureOf(listed.error) });
  // Records are `worktree <path>`, `HEAD <id>`, `branch <ref>` | `detached`, …, ended by an empty field.
  let current: { dir: string; head: string; branch: string | null } | null = null;
  for (const field of [...listed.value.split('\0'), '']) {
    if (field.startsWith('worktree ')) current = { dir: field.slice('worktree '.length), head: '', branch: null };
    else if (current !== null && field.startsWith('HEAD ')) current.head = field.slice('HEAD '.length);
    else if (current !== null && field.startsWith('branch ')) current.branch = field.slice('branch '.length);
    else if (field === '' && current !== null) {
      const candidate = current;
      current = null;
      if ((await realpath(candidate.dir).catch(() => candidate.dir)) === real) return ok({ dir: real, branch: candidate.branch, head: candidate.head });
    }
  }
  return err({ kind: 'not-registered', dir });
}

/** Work parked for a task: the commit holding it, whose parent is the commit its attempt started from. */
export interface ParkedStart {
  base: string;
  commit: string;
}

/**
 * Make a subagent's fresh worktree hold a task's parked work, before the subagent works there (the
 * worker hook does it when the subagent binds to its task): its files become the parked commit's,
 * by a two-way `read-tree` from the worktree's HEAD, which refuses to overwrite a change made
 * there; then HEAD (its `worktree-agent-*` branch) and the index move to the parked attempt's
 * base, so the work so far shows as the worktree's changes and what the attempt leaves is captured
 * from that base: the whole change, never the revision alone. Only a registered worktree under
 * `<repo>/.claude/worktrees/` is touched.
 */
export async function startFromParked(repo: string, dir: string, parked: ParkedStart): Promise<Result<void, AgentWorktreeProblem>> {
  const found = await agentWorktree(repo, dir);
  if (!found.ok) return found;
  const cwd = found.value.dir;
  const put = await runGit(['read-tree', '-u', '-m', 'HEAD', parked.commit], { cwd });
  if (!put.ok) return err({ kind: 'git-failed', failure: failureOf(put.error) });
  const based = await runGit(['reset', '-q', '--mixed', parked.base], { cwd });
  return based.ok ? ok(undefined) : err({ kind: 'git-failed', failure: failureOf(based.error) });
}

/**
 * Remove a subagent worktree Claude Code made (`git worktree remove --force --force`: its files
 * were the subagent's, and what foreman keeps of them is captured already) and its
 * `worktree-agent-*` branch. A worktree already gone counts as removed.
 */
export async function removeAgentWorktree(repo: string, dir: string): Promise<Result<void, AgentWorktreeProblem>> {
  const found = await agentWorktree(repo, dir);
  if (!found.ok) return found.error.kind === 'not-registered' ? ok(undefined) : found;
  const top = await realpath(repo);
  const removed = await runGit(['worktree', 'remove', '--force', '--force', found.value.dir], { cwd: top });
  if (!removed.ok) return err({ kind: 'git-failed', failure: failureOf(removed.error) });
  const branch = found.value.branch;
  if (branch !== null && AGENT_BRANCH.test(branch)) {
    const deleted = await runGit(['branch', '-D', branch.slice('refs/heads/'.length)], { cwd: top });
    if (!deleted.ok) return err({ kind: 'git-failed', failure: failureOf(deleted.error) });
  }
  return ok(undefined);
}
