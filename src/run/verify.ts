// Verifying a task's work after its worker says COMPLETED: the spot-check (declared files
// exist / changed) and the acceptance checks, each run with a shell in the repository.

import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import type { Git } from '../adapters/git.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { AcceptanceResult, Verification } from '../core/finalize.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import { type Plan, type Task, statusOf, writesOf } from '../core/plan.ts';

export interface VerifyOptions {
  repo: string;
  git: Git;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Declared paths of every task that may legitimately have changed files (for the outside-changes report). */
  declaredElsewhere?: readonly string[];
  /** Paths that were already dirty when the run started (a person's unrelated edits). */
  baselineDirty?: ReadonlySet<string>;
  /** Where the acceptance checks are recorded while they run (so a run after a crash ends them), and for which task. */
  record?: { registry: ProcessRegistry; task: number };
}

/**
 * Files other tasks may legitimately have changed while `index` ran: tasks in progress beside it
 * (or still being settled), gated work awaiting approval, and verified work not committed yet.
 */
export function dirtyByOthers(plan: Plan, index: number): string[] {
  return plan.tasks.flatMap((t, j) => {
    const s = statusOf(t);
    return j !== index && (s === 'in_progress' || s === 'awaiting_approval' || (s === 'completed' && !t.commit)) ? writesOf(t) : [];
  });
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

export async function spotCheck(task: Task, o: Pick<VerifyOptions, 'repo' | 'git'>): Promise<Pick<Verification, 'missingCreated' | 'unchangedModified'>> {
  const { create, modify } = task.metadata.files;
  const missingCreated: string[] = [];
  for (const p of create) {
    // A created directory path counts when the directory exists.
    if (!(await exists(join(o.repo, isDirPath(p) ? p.slice(0, -1) : p)))) missingCreated.push(p);
  }
  const changed = modify.length > 0 ? await o.git.changedPaths(modify) : new Map();
  const unchangedModified = modify.filter((p) => ![...changed.keys()].some((c) => coveredBy(c, [p])));
  return { missingCreated, unchangedModified };
}

export async function runAcceptance(task: Task, o: VerifyOptions): Promise<AcceptanceResult[]> {
  const results: AcceptanceResult[] = [];
  for (const c of task.agent?.acceptanceCriteria ?? []) {
    const role = { kind: 'acceptance-check' as const, task: o.record?.task ?? -1, command: c.check };
    const r = await recorded(o.record?.registry, role, (onSpawn) => runShell(c.check, { cwd: o.repo, timeoutMs: o.checkTimeoutMs, signal: o.signal, env: o.env, onSpawn }));
    results.push({
      criterion: c.criterion,
      check: c.check,
      passed: r.exitCode === 0 && !r.timedOut,
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      output: r.output,
    });
  }
  return results;
}

export async function verifyTask(task: Task, o: VerifyOptions): Promise<Verification> {
  const spot = await spotCheck(task, o);
  const failedSpot = spot.missingCreated.length > 0 || spot.unchangedModified.length > 0;
  const acceptance = failedSpot ? [] : await runAcceptance(task, o);
  const own = [...task.metadata.files.create, ...task.metadata.files.modify, ...(o.declaredElsewhere ?? [])];
  const outside = await o.git.changesOutside(own);
  const outsideChanges = [...outside.keys()].filter((p) => !p.startsWith('.design/') && !(o.baselineDirty?.has(p) ?? false)).sort();
  return { ...spot, outsideChanges, acceptance };
}
