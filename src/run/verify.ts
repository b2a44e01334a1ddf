// The verify stage, in the attempt's own worktree: first the attempt's work is captured (what it
// changed, before any check can write a file), then the spot-check (declared files exist /
// changed) and the acceptance checks, each run with a shell in that worktree.

import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { runShell } from '../adapters/checks.ts';
import { captureWork } from '../adapters/git/capture.ts';
import type { CommandSandbox } from '../adapters/sandbox.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { AcceptanceResult, Verification } from '../core/finalize.ts';
import { describeGitFailure } from '../core/git-text.ts';
import { coveredBy, isDirPath } from '../core/paths.ts';
import { type Task, writesOf } from '../core/plan.ts';
import { pathsOf } from '../core/work.ts';
import { LIMIT_FLAGS } from './settings.ts';

export interface VerifyOptions {
  /** The attempt's worktree. */
  dir: string;
  /** What provisioning put in the worktree (dependency folders, `.worktreeinclude` copies): never the worker's change. */
  kept: readonly string[];
  /** The commit the worktree was at when the attempt started (the worker may have committed since). */
  base?: string;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
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

/** Declared created files missing from `dir`, and declared modified files the attempt did not change. */
export async function spotCheck(task: Task, dir: string, changed: readonly string[]): Promise<Pick<Verification, 'missingCreated' | 'unchangedModified'>> {
  const { create, modify } = task.metadata.files;
  const missingCreated: string[] = [];
  for (const p of create) {
    // A created directory path counts when the directory exists.
    if (!(await exists(join(dir, isDirPath(p) ? p.slice(0, -1) : p)))) missingCreated.push(p);
  }
  const unchangedModified = modify.filter((p) => !changed.some((c) => coveredBy(c, [p])));
  return { missingCreated, unchangedModified };
}

export async function runAcceptance(task: Task, options: VerifyOptions): Promise<AcceptanceResult[]> {
  const results: AcceptanceResult[] = [];
  // Headless and in-session alike (`plan setup` / `plan finalize`), --check-timeout sets it.
  const timeLimit = { ms: options.checkTimeoutMs, flag: LIMIT_FLAGS.check };
  for (const c of task.agent?.acceptanceCriteria ?? []) {
    const role = { kind: 'acceptance-check' as const, task: options.record?.task ?? -1, command: c.check };
    const r = await recorded(options.record?.registry, role, (onSpawn) => runShell(c.check, { cwd: options.dir, timeoutMs: options.checkTimeoutMs, signal: options.signal, env: options.env, sandbox: options.sandbox, onSpawn }));
    results.push({
      criterion: c.criterion,
      check: c.check,
      passed: r.exitCode === 0 && !r.timedOut,
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      timeLimit,
      output: r.output,
    });
  }
  return results;
}

export async function verifyTask(task: Task, options: VerifyOptions): Promise<Verification> {
  const captured = await captureWork(options.dir, writesOf(task), options.kept, options.base);
  if (!captured.ok) return { missingCreated: [], unchangedModified: [], outsideChanges: [], acceptance: [], captureFailure: describeGitFailure(captured.error) };
  const { outside, work } = captured.value;
  const spot = await spotCheck(task, options.dir, pathsOf(work));
  const failedSpot = outside.length > 0 || spot.missingCreated.length > 0 || spot.unchangedModified.length > 0;
  const acceptance = failedSpot ? [] : await runAcceptance(task, options);
  return { ...spot, outsideChanges: outside, acceptance, work };
}
