// The verify stage: after a worker says COMPLETED, the spot-check (declared files exist /
// changed) and the acceptance checks, each run with a shell in the attempt's workspace.

import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import { type CommandSandbox, sandboxMountPoints } from '../adapters/sandbox.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { AcceptanceResult, Verification } from '../core/finalize.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import type { Task } from '../core/plan.ts';
import type { Workspace } from './workspace.ts';

export interface VerifyOptions {
  workspace: Workspace;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** Declared paths of every task that may legitimately have changed files (for the outside-changes report). */
  declaredElsewhere?: readonly string[];
  /** Paths that were already dirty when the run started (a person's unrelated edits). */
  baselineDirty?: ReadonlySet<string>;
  /** Where the acceptance checks are recorded while they run (so a run after a crash ends them), and for which task. */
  record?: { registry: ProcessRegistry; task: number };
  /** Run the checks in the operating-system sandbox with these limits. */
  sandbox?: CommandSandbox;
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

export async function spotCheck(task: Task, workspace: Workspace): Promise<Pick<Verification, 'missingCreated' | 'unchangedModified'>> {
  const { create, modify } = task.metadata.files;
  const missingCreated: string[] = [];
  for (const p of create) {
    // A created directory path counts when the directory exists.
    if (!(await exists(join(workspace.dir, isDirPath(p) ? p.slice(0, -1) : p)))) missingCreated.push(p);
  }
  const changed = modify.length > 0 ? await workspace.changedPaths(modify) : new Map();
  const unchangedModified = modify.filter((p) => ![...changed.keys()].some((c) => coveredBy(c, [p])));
  return { missingCreated, unchangedModified };
}

export async function runAcceptance(task: Task, options: VerifyOptions): Promise<AcceptanceResult[]> {
  const results: AcceptanceResult[] = [];
  for (const c of task.agent?.acceptanceCriteria ?? []) {
    const role = { kind: 'acceptance-check' as const, task: options.record?.task ?? -1, command: c.check };
    const r = await recorded(options.record?.registry, role, (onSpawn) => runShell(c.check, { cwd: options.workspace.dir, timeoutMs: options.checkTimeoutMs, signal: options.signal, env: options.env, sandbox: options.sandbox, onSpawn }));
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

export async function verifyTask(task: Task, options: VerifyOptions): Promise<Verification> {
  const spot = await spotCheck(task, options.workspace);
  const failedSpot = spot.missingCreated.length > 0 || spot.unchangedModified.length > 0;
  const acceptance = failedSpot ? [] : await runAcceptance(task, options);
  const own = [...task.metadata.files.create, ...task.metadata.files.modify, ...(options.declaredElsewhere ?? [])];
  const outside = await options.workspace.changesOutside(own);
  // A sandboxed command running beside this one holds empty placeholders in the tree: not changes.
  const placeholders = options.sandbox ? await sandboxMountPoints(options.workspace.dir, [...outside].flatMap(([p, change]) => (change === 'untracked' ? [p] : []))) : new Set<string>();
  const outsideChanges = [...outside.keys()].filter((p) => !p.startsWith('.design/') && !(options.baselineDirty?.has(p) ?? false) && !placeholders.has(p)).sort();
  return { ...spot, outsideChanges, acceptance };
}
