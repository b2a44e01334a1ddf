// Setting up a run (headless or the /execute skill's `plan.ts setup`): resume detection and
// reconciliation, cleanup of interrupted work, the dirty-tree guard, path safety and blocking
// assumptions. Mutates the plan it is given; the caller saves it.

import { lstat, realpath } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import type { Git } from '../adapters/git.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { Skip } from '../core/graph.ts';
import { cascade, depsOf, depths } from '../core/graph.ts';
import { applyCascade } from '../core/finalize.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import { type Plan, readsOf, statusOf, writesOf } from '../core/plan.ts';
import { commitTasks, ensurePlanId, reconcileWithHistory } from './commit.ts';
import { dirtyByOthers, spotCheck } from './verify.ts';

export interface AssumptionResult {
  task: number;
  claim: string;
  verify: string;
  severity: 'blocking' | 'warning';
  passed: boolean;
  output: string;
}

export interface SetupReport {
  goal: string;
  taskCount: number;
  maxDepth: number;
  resumed: boolean;
  /** Tasks whose round commit landed though plan.json had not recorded it. */
  recovered: number[];
  /** Tasks found `in_progress` (interrupted): cleaned up and back to pending. */
  reset: number[];
  /** Completed tasks whose created files are gone: back to pending. */
  reverted: number[];
  /** Approved tasks whose work was committed now. */
  committedApproved: number[];
  assumptions: AssumptionResult[];
  blocked: number[];
  skipped: Skip[];
  notices: Array<{ level: 'info' | 'warning'; message: string }>;
  /** Paths dirty before anything ran (a person's unrelated work): never touched, never reported. */
  baselineDirty: string[];
}

export type SetupProblem =
  /** A person's uncommitted changes are in the way. */
  | { kind: 'dirty'; files: string[] }
  /** Declared paths that resolve outside the repository through a symlink. */
  | { kind: 'unsafe-paths'; problems: string[] };

export interface SetupOptions {
  repo: string;
  git: Git;
  commit: boolean;
  checkTimeoutMs: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Where assumption checks are recorded while they run, so a run after a crash ends them. */
  registry?: ProcessRegistry;
}

/** Declared paths that lead outside the repository through a symlink somewhere along them. */
export async function unsafePaths(plan: Plan, repo: string): Promise<string[]> {
  const root = await realpath(repo);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, task] of plan.tasks.entries()) {
    for (const p of [...writesOf(task), ...readsOf(task)]) {
      if (seen.has(p)) continue;
      seen.add(p);
      // Resolve the deepest part of the path that exists; it must stay inside the repository.
      let probe = join(repo, isDirPath(p) ? p.slice(0, -1) : p);
      for (;;) {
        const st = await lstat(probe).catch(() => null);
        if (st) break;
        const up = dirname(probe);
        if (up === probe) break;
        probe = up;
      }
      const real = await realpath(probe).catch(() => probe);
      const rel = relative(root, real);
      if (rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) {
        problems.push(`tasks[${i}]: "${p}" resolves outside the repository (through a symlink to ${real})`);
      } else if (rel === '.git' || rel.startsWith(`.git${sep}`)) {
        problems.push(`tasks[${i}]: "${p}" resolves into .git/ through a symlink`);
      }
    }
  }
  return problems;
}

export async function setupRun(plan: Plan, o: SetupOptions): Promise<{ ok: true; report: SetupReport } | { ok: false; problem: SetupProblem }> {
  const unsafe = await unsafePaths(plan, o.repo);
  if (unsafe.length > 0) return { ok: false, problem: { kind: 'unsafe-paths', problems: unsafe } };

  const resumed = plan.tasks.some((t) => statusOf(t) !== 'pending');
  const notices: SetupReport['notices'] = [];
  ensurePlanId(plan);

  const recovered = await reconcileWithHistory(o.git, plan);
  if (recovered.length > 0) {
    notices.push({ level: 'info', message: `tasks ${recovered.join(', ')}: their round commit had landed; recorded as completed` });
  }

  // Interrupted attempts: only the task's declared files are restored; nothing else is touched.
  const reset: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'in_progress') continue;
    await o.git.restore(writesOf(task));
    task.status = 'pending';
    reset.push(i);
  }
  if (reset.length > 0) notices.push({ level: 'info', message: `tasks ${reset.join(', ')} were interrupted: their files were restored and they will run again` });

  const reverted: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'completed') continue;
    const { missingCreated } = await spotCheck({ ...task, metadata: { ...task.metadata, files: { create: task.metadata.files.create, modify: [] } } }, o);
    if (missingCreated.length === 0) continue;
    task.status = 'pending';
    task.result = `was completed, but its created files are missing: ${missingCreated.join(', ')}`;
    delete task.commit;
    reverted.push(i);
    notices.push({ level: 'warning', message: `task ${i} (${task.subject}) was completed but ${missingCreated.join(', ')} no longer exist; it will run again` });
  }

  // Approved gated work is verified but not yet committed: commit it before anything else runs.
  const committedApproved: number[] = [];
  const approved = plan.tasks.flatMap((t, i) => (statusOf(t) === 'completed' && !t.commit && t.approvedAt !== undefined ? [i] : []));
  if (o.commit && approved.length > 0) {
    const hash = await commitTasks(o.git, plan, 0, approved);
    for (const i of approved) if (hash) plan.tasks[i]!.commit = hash;
    committedApproved.push(...approved);
  }

  const problem = await dirtyFiles(plan, o.git);
  if (problem.length > 0) return { ok: false, problem: { kind: 'dirty', files: problem } };
  const baselineDirty = await o.git.diffNames();

  const assumptions = await checkAssumptions(plan, o);
  const blocked: number[] = [];
  for (const a of assumptions) {
    if (a.passed) continue;
    if (a.severity === 'warning') {
      notices.push({ level: 'warning', message: `task ${a.task}: assumption not confirmed (${a.claim}): \`${a.verify}\`` });
      continue;
    }
    const task = plan.tasks[a.task]!;
    if (statusOf(task) !== 'blocked') blocked.push(a.task);
    task.status = 'blocked';
    task.result = `BLOCKED: assumption failed (${a.claim}): \`${a.verify}\`${a.output.trim() ? `: ${a.output.trim().slice(0, 1000)}` : ''}`;
  }
  const skipped = cascade(plan.tasks).length > 0 ? applyCascade(plan).skips : [];

  return {
    ok: true,
    report: {
      goal: plan.goal,
      taskCount: plan.tasks.length,
      maxDepth: Math.max(...depths(depsOf(plan.tasks))),
      resumed,
      recovered,
      reset,
      reverted,
      committedApproved,
      assumptions,
      blocked,
      skipped,
      notices,
      baselineDirty,
    },
  };
}

/**
 * Files the plan will still write that have uncommitted changes no task of this plan made.
 * Called after interrupted tasks were reset, so what remains legitimately dirty is work awaiting
 * approval and completed work of a `--no-commit` run.
 */
export async function dirtyFiles(plan: Plan, git: Git): Promise<string[]> {
  const ours = dirtyByOthers(plan, -1);
  const planned = plan.tasks.flatMap((t) => (statusOf(t) === 'pending' ? writesOf(t) : []));
  if (planned.length === 0) return [];
  const changed = await git.changedPaths([...new Set(planned)]);
  return [...changed.keys()].filter((p) => !coveredBy(p, ours)).sort();
}

async function checkAssumptions(plan: Plan, o: SetupOptions): Promise<AssumptionResult[]> {
  const results: AssumptionResult[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'pending') continue;
    for (const a of task.agent?.assumptions ?? []) {
      const role = { kind: 'assumption-check' as const, task: i, command: a.verify };
      const r = await recorded(o.registry, role, (onSpawn) => runShell(a.verify, { cwd: o.repo, timeoutMs: o.checkTimeoutMs, env: o.env, signal: o.signal, onSpawn }));
      results.push({ task: i, claim: a.claim, verify: a.verify, severity: a.severity, passed: r.exitCode === 0 && !r.timedOut, output: r.output });
    }
  }
  return results;
}
