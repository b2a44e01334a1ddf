// The verify stage, in the attempt's own worktree: first the attempt's work is captured (what it
// changed, before any check can write a file), then what it changed outside its declared files
// is set aside (kept on a ref of foreman's, and put back in the worktree as the attempt's starting
// commit has it), then the spot-check (declared files exist / changed) and the acceptance checks,
// each run with a shell in that worktree: they judge exactly the work that would land.

import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { type Capture, captureWork, setAsideInWorktree } from '../../adapters/index.ts';
import {
  type AcceptanceResult,
  byPath,
  type CapturedWork,
  type CheckedWork,
  coveredBy,
  describeGitFailure,
  err,
  type GitFailure,
  isDirPath,
  ok,
  pathsOf,
  type Result,
  type SetAside,
  type Task,
  type Verification,
  writesOf,
} from '../../core/index.ts';
import { LIMIT_FLAGS } from '../settings.ts';
import type { CheckRun, CheckUse } from './workspace.ts';

/** Where an attempt's work is looked at: its worktree here (`localWork`), or a host's slot (./host.ts). */
export interface WorkPlace {
  /** The attempt's work as git's objects here (core/attempt/work.ts), split by the declared paths (adapters/git/capture.ts). */
  capture(declared: readonly string[], kept: readonly string[], base?: string): Promise<Result<Capture, GitFailure>>;
  /** `paths` put back as `base` has them (adapters/git/set-aside.ts); those `base` holds as regular files. */
  setAside(base: string, paths: readonly string[]): Promise<Result<{ tracked: string[] }, GitFailure>>;
  /** Whether the repository path `path` (a file, or a directory) is there. */
  exists(path: string): Promise<boolean>;
}

/** The worktree `dir` on this machine. */
export const localWork = (dir: string): WorkPlace => ({
  capture: (declared, kept, base) => captureWork(dir, declared, kept, base),
  setAside: (base, paths) => setAsideInWorktree(dir, base, paths),
  exists: (path) => exists(join(dir, path)),
});

export interface VerifyOptions {
  /** The attempt's worktree. */
  work: WorkPlace;
  /** What provisioning put in the worktree (dependency folders, `.worktreeinclude` copies): never the worker's change. */
  kept: readonly string[];
  /** The commit the worktree was at when the attempt started (the worker may have committed since). */
  base?: string;
  checkTimeoutMs: number;
  signal?: AbortSignal;
  /** Runs an acceptance check in the worktree (recorded while it runs as a check of `task`). */
  runCheck: (command: string, use: CheckUse) => Promise<CheckRun>;
  /** The task whose attempt this is (-1: none, a worktree of setup's own). */
  task: number;
  /** A change outside the declared files fails the attempt (`--strict-scope`): no check runs then. */
  strictScope?: boolean;
  /** Keeps the attempt's whole work (declared and undeclared) as one commit on a ref of foreman's: what was set aside can be read back. */
  keepAside?: (work: CapturedWork) => Promise<Result<{ commit: string; ref: string }, GitFailure>>;
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/** Declared created files missing from the worktree, and declared modified files the attempt did not change. */
export async function spotCheck(task: Task, work: WorkPlace, changed: readonly string[]): Promise<Pick<CheckedWork, 'missingCreated' | 'unchangedModified'>> {
  const { create, modify } = task.metadata.files;
  const missingCreated: string[] = [];
  for (const p of create) {
    // A created directory path counts when the directory exists.
    if (!(await work.exists(isDirPath(p) ? p.slice(0, -1) : p))) missingCreated.push(p);
  }
  const unchangedModified = modify.filter((p) => !changed.some((c) => coveredBy(c, [p])));
  return { missingCreated, unchangedModified };
}

export async function runAcceptance(task: Task, options: VerifyOptions): Promise<AcceptanceResult[]> {
  const results: AcceptanceResult[] = [];
  // Headless and in-session alike (`plan setup` / `plan finalize`), --check-timeout sets it.
  const timeLimit = { ms: options.checkTimeoutMs, flag: LIMIT_FLAGS.check };
  for (const c of task.agent?.acceptanceCriteria ?? []) {
    const r = await options.runCheck(c.check, {
      timeoutMs: options.checkTimeoutMs,
      role: { kind: 'acceptance-check', task: options.task, command: c.check },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const passed = r.exitCode === 0 && !r.timedOut;
    const refusal = r.sandboxRefusal;
    results.push({
      criterion: c.criterion,
      check: c.check,
      passed,
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      timeLimit,
      output: r.output,
      ...(refusal !== null ? { sandboxRefusal: refusal } : {}),
    });
  }
  return results;
}

export async function verifyTask(task: Task, options: VerifyOptions): Promise<Verification> {
  const captured = await options.work.capture(writesOf(task), options.kept, options.base);
  if (!captured.ok) return err(describeGitFailure(captured.error));
  const { outside, work, aside } = captured.value;
  let setAside: SetAside | undefined;
  if (outside.length > 0) {
    const kept =
      options.keepAside === undefined
        ? null
        : await options.keepAside({ base: work.base, entries: [...work.entries, ...aside].sort((a, b) => byPath(a.path, b.path)) });
    // The checks judge the work that would land: the worktree without what was set aside.
    const restored = await options.work.setAside(work.base, outside);
    if (!restored.ok)
      return err(`what it changed outside its declared files (${outside.join(', ')}) could not be set aside: ${describeGitFailure(restored.error)}`);
    setAside = {
      paths: outside,
      tracked: restored.value.tracked,
      kept: kept?.ok === true ? kept.value : null,
      ...(kept?.ok === false ? { keepFailure: describeGitFailure(kept.error) } : kept === null ? { keepFailure: 'nothing keeps it here' } : {}),
    };
  }
  const spot = await spotCheck(task, options.work, pathsOf(work));
  const failedSpot =
    (options.strictScope === true && outside.length > 0) || spot.missingCreated.length > 0 || (spot.unchangedModified.length > 0 && work.entries.length === 0);
  const acceptance = failedSpot ? [] : await runAcceptance(task, options);
  return ok({ ...spot, outsideChanges: outside, ...(setAside !== undefined ? { setAside } : {}), acceptance, work });
}
