// A run's folder on the host, `<work dir>/<repository>/<plan>/`: taken for one remote process by
// its lock (./run-lock.ts) with the run's bare repository, the git commands run in it, the paths a
// command may use inside it, and cleaning: the folders no live process holds removed.

import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { forkProcess } from '../adapters/index.ts';
import {
  err,
  type HostError,
  type HostReplies,
  type HostRequest,
  isFolderName,
  isObjectId,
  NO_HOOKS,
  type ObjectFormat,
  ok,
  oneLine,
  type Result,
} from '../core/index.ts';
import { removeLeftTemporaryFolders, removeOldPrograms } from './program-folders.ts';
import { takeRunLock } from './run-lock.ts';

/** How long a git command on the host may take. */
const GIT_LIMIT_MS = 10 * 60_000;

export interface RunFolder {
  /** The git binary there. */
  git: string;
  dir: string;
  repository: string;
  tmp: string;
}

export const refused = (message: string): HostError => ({ kind: 'refused', message });
export const fault = (message: string): HostError => ({ kind: 'fault', message });

/** Takes the run's folder: made private, locked for this process (another live holder refuses), with its bare repository. */
export async function openRun(
  gitBinary: string,
  workDir: string,
  repository: string,
  plan: string,
  objectFormat: ObjectFormat,
): Promise<Result<RunFolder, HostError>> {
  const dir = join(workDir, repository, plan);
  const folder: RunFolder = { git: gitBinary, dir, repository: join(dir, 'repository.git'), tmp: join(dir, 'tmp') };
  try {
    mkdirSync(folder.tmp, { recursive: true, mode: 0o700 });
    const holder = takeRunLock(dir);
    if (holder !== null) return err(refused(`the run's folder ${dir} is held by another live run (process ${holder} there)`));
  } catch (caught) {
    return err(fault(`could not make the run's folder ${dir}: ${(caught as Error).message}`));
  }
  if (!existsSync(join(folder.repository, 'HEAD'))) {
    const made = await git(gitBinary, ['init', '--quiet', '--bare', `--object-format=${objectFormat}`, folder.repository], dir);
    if (!made.ok) return made;
  }
  return ok(folder);
}

/** A git command on the host, its output; a failure is the host's fault. */
export async function git(binary: string, args: readonly string[], cwd: string): Promise<Result<string, HostError>> {
  const ended = await forkProcess({ file: binary, args: [...NO_HOOKS, ...args], cwd, env: process.env, timeoutMs: GIT_LIMIT_MS });
  if (ended.kind === 'exited' && ended.code === 0) return ok(ended.stdout.toString('utf8'));
  const why =
    ended.kind === 'exited' ? oneLine(ended.stderr.toString('utf8')) || `exit ${ended.code}` : ended.kind === 'timed-out' ? 'it timed out' : ended.message;
  return err(fault(`git ${args.find((a) => !a.startsWith('-'))} failed on the host: ${why}`));
}

/**
 * Removes the runs' folders under `<work dir>/<repository>/` (every repository's without one; only
 * `plans`' with them) that no live process holds, each taken by its lock first so no run can open
 * it meanwhile; this process's own is kept.
 */
export function clean(workDir: string, request: Extract<HostRequest, { op: 'clean' }>, own: RunFolder | null): HostReplies['clean'] {
  const list = (dir: string): string[] => {
    try {
      return readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && isFolderName(entry.name))
        .map((entry) => entry.name);
    } catch {
      return [];
    }
  };
  const answer: HostReplies['clean'] = { removed: [], held: [] };
  const { repository, plans } = request;
  for (const repo of repository === undefined ? list(workDir) : [repository]) {
    const present = list(join(workDir, repo));
    for (const plan of plans === undefined ? present : plans.filter((name) => present.includes(name))) {
      const dir = join(workDir, repo, plan);
      if (dir === own?.dir || takeRunLock(dir) !== null) answer.held.push(`${repo}/${plan}`);
      else {
        // Moved aside in one step first: a run opening the folder meanwhile makes a new one rather than one half removed.
        const aside = join(workDir, repo, `.removing-${plan}-${process.pid}`);
        renameSync(dir, aside);
        rmSync(aside, { recursive: true, force: true });
        answer.removed.push(`${repo}/${plan}`);
      }
    }
  }
  return answer;
}

/**
 * A run starting here tidies the work dir: the other versions' program folders no live process
 * uses, and the temporary folders of programs that are gone, removed; what fails to go stays for a
 * later run.
 */
export function tidyWorkDir(workDir: string, keptFile: string | undefined): void {
  try {
    if (keptFile !== undefined) removeOldPrograms(workDir, basename(dirname(keptFile)));
    removeLeftTemporaryFolders(workDir);
  } catch {
    // Housekeeping only.
  }
}

/** Which of `commits` the run's repository has, as commits. */
export async function hasCommits(run: RunFolder, commits: readonly string[]): Promise<Result<HostReplies['has-commits'], HostError>> {
  const bad = commits.find((name) => !isObjectId(name));
  if (bad !== undefined) return err(refused(`${bad} is not an object id`));
  if (commits.length === 0) return ok({ present: [] });
  const ended = await forkProcess({
    file: run.git,
    args: [...NO_HOOKS, 'cat-file', '--batch-check=%(objectname) %(objecttype)'],
    cwd: run.repository,
    env: process.env,
    input: commits.map((commit) => `${commit}\n`).join(''),
    timeoutMs: GIT_LIMIT_MS,
  });
  if (ended.kind !== 'exited' || ended.code !== 0)
    return err(fault(`git cat-file failed on the host: ${ended.kind === 'exited' ? oneLine(ended.stderr.toString('utf8')) : ended.kind}`));
  const present = ended.stdout
    .toString('utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter(([, type]) => type === 'commit')
    .map(([name]) => name as string);
  return ok({ present });
}

/** Whether the absolute `path` is in the work dir. */
export function insideWorkDir(workDir: string, path: string): boolean {
  const inside = relative(workDir, path);
  return isAbsolute(path) && inside !== '' && !inside.startsWith('..') && !isAbsolute(inside);
}

/** Where a command runs: `cwd` inside the run's folder, never outside it. */
export function commandDir(folder: RunFolder, cwd: string): string | null {
  const dir = resolve(folder.dir, cwd);
  const inside = relative(folder.dir, dir);
  return isAbsolute(cwd) || inside.startsWith('..') || isAbsolute(inside) ? null : dir;
}
