// The plan's setup command in a slot of the pool (worktree-pool.ts): whether a reused slot needs it
// again (the fingerprint of its inputs at the new commit), its run, and what it made there, which
// the slot keeps from one attempt to the next.

import { clipTail, coveredBy, err, failureOf, ok, parseStatus, type Result, splitNul } from '../../core/index.ts';
import { sha256 } from './pool-slots.ts';
import { type ProvisionFailure, SETUP_OUTPUT_TAIL, type SetupRun } from './provisioning.ts';
import { runGit } from './runner.ts';

/** Runs the setup command in `dir` (the caller sandboxes it, records its process, applies the timeout). */
export type RunSetup = (dir: string, command: string, signal?: AbortSignal) => Promise<SetupRun>;

/**
 * The setup inputs' blob ids at `commit` in `repo` (one `git ls-tree`), hashed: a slot provisioned
 * under another fingerprint runs the setup again.
 */
export async function setupInputsFingerprint(repo: string, commit: string, setupInputs: readonly string[]): Promise<Result<string, ProvisionFailure>> {
  if (setupInputs.length === 0) return ok(sha256(''));
  const specs = setupInputs.map((entry) => entry.replace(/\/$/, ''));
  const listed = await runGit(['--literal-pathspecs', 'ls-tree', '-r', '-z', '--full-tree', commit, '--', ...specs], { cwd: repo });
  if (!listed.ok) return err({ kind: 'git-failed', doing: `read the setup inputs at ${commit.slice(0, 12)}`, failure: failureOf(listed.error) });
  return ok(
    sha256(
      splitNul(listed.value)
        .filter((line) => coveredBy(line.slice(line.indexOf('\t') + 1), setupInputs))
        .sort()
        .join('\n'),
    ),
  );
}

/**
 * Runs `command` in the slot at `dir` and returns what it made there, which git does not track.
 * It fails when it fails, when it changed a file git tracks (every attempt there would be charged
 * with it), or when it was interrupted. `ours`: what provisioning put there before it.
 */
export async function runSetupCommand(
  runSetup: RunSetup,
  dir: string,
  command: string,
  ours: readonly string[],
  signal: AbortSignal | undefined,
): Promise<Result<string[], ProvisionFailure>> {
  const run = await runSetup(dir, command, signal);
  if (signal?.aborted) return err({ kind: 'interrupted' });
  if (run.exitCode !== 0 || run.timedOut) {
    return err({
      kind: 'setup-failed',
      command,
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      ...(run.timeLimit ? { timeLimit: run.timeLimit } : {}),
      output: clipTail(run.output, SETUP_OUTPUT_TAIL),
      ...(run.note !== undefined ? { note: run.note } : {}),
    });
  }
  const changed = await runGit(['--no-optional-locks', 'status', '--porcelain=v1', '-z', '-uno', '--no-renames'], { cwd: dir });
  if (!changed.ok) return err({ kind: 'git-failed', doing: `check what the setup changed in ${dir}`, failure: failureOf(changed.error) });
  const paths = parseStatus(changed.value).map((entry) => entry.path);
  if (paths.length > 0) return err({ kind: 'setup-changed-files', command, paths: [...new Set(paths)].sort() });
  return untrackedAfterSetup(dir, ours);
}

/**
 * What git does not track in `dir` after the setup ran, as git lists it (`--directory`: a
 * wholly untracked directory once, as `dir/`). A directory listed only because it holds one of
 * `ours` (a `.worktreeinclude` copy, a link) is listed file by file instead, so that keeping
 * what the setup made there does not keep the whole directory.
 */
async function untrackedAfterSetup(dir: string, ours: readonly string[]): Promise<Result<string[], ProvisionFailure>> {
  const listed = await runGit(['ls-files', '-z', '--others', '--directory'], { cwd: dir });
  if (!listed.ok) return err({ kind: 'git-failed', doing: `list the files the setup made in ${dir}`, failure: failureOf(listed.error) });
  const entries = splitNul(listed.value);
  const holding = entries.filter((entry) => entry.endsWith('/') && ours.some((file) => coveredBy(file, [entry])));
  if (holding.length === 0) return ok(entries);
  const expanded = await runGit(['--literal-pathspecs', 'ls-files', '-z', '--others', '--', ...holding], { cwd: dir });
  if (!expanded.ok) return err({ kind: 'git-failed', doing: `list the files the setup made in ${dir}`, failure: failureOf(expanded.error) });
  return ok([...entries.filter((entry) => !holding.includes(entry)), ...splitNul(expanded.value)]);
}
