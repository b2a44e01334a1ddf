// A throwaway git repository for tests. Runs git itself (not through src/adapters/git/runner.ts),
// so tests of the adapter check it against git.

import { appendFile, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { runProcess } from '../../src/adapters/processes/spawner.ts';
import { restoreEnv } from './env.ts';

export interface TempGitRepo {
  /** Absolute, symlink-free path of the working tree. */
  dir: string;
  /** Runs `git <args>` in the repository; resolves stdout (untrimmed), rejects on a non-zero exit. */
  git: (args: string[]) => Promise<string>;
  /** Writes files (creating directories) relative to the repository. */
  write: (files: Record<string, string>) => Promise<void>;
  cleanup: () => Promise<void>;
}

export interface TempGitRepoOptions {
  /** Skip the initial commit, leaving an unborn `main`. Default false (unless no files are given, see below). */
  unborn?: boolean;
  /** Configure user.name/user.email locally. Default true. */
  identity?: boolean;
}

export async function runGit(cwd: string, args: string[], call: { input?: string; env?: Record<string, string> } = {}): Promise<string> {
  // Started through the process starter, as foreman's runner starts git: a fork of this test
  // process for each command costs more than the command.
  const ended = await runProcess({
    file: 'git',
    args,
    cwd,
    env: { ...process.env, ...call.env },
    ...(call.input !== undefined ? { input: call.input } : {}),
    timeoutMs: 120_000,
  });
  if (ended.kind === 'exited' && ended.code === 0) return ended.stdout.toString('utf8');
  const said = ended.kind === 'exited' ? ended.stderr.toString('utf8') || `exit ${ended.code}` : ended.kind === 'timed-out' ? 'timed out' : ended.message;
  throw new Error(`git ${args.join(' ')} failed: ${said}`);
}

async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(dir, rel);
    await mkdir(path.dirname(full), { recursive: true });
    await writeFile(full, content);
  }
}

/**
 * Creates a repository on `main` in a temp directory with `files` committed as its first commit
 * (an empty commit when `files` is empty), a local identity and no signing.
 */
export async function tempGitRepo(files: Record<string, string> = {}, opts: TempGitRepoOptions = {}): Promise<TempGitRepo> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'foreman-git-')));
  const git = (args: string[]) => runGit(dir, args);
  await git(['init', '-q', '-b', 'main']);
  // The settings in one write, as `git config` would write them (a git process each cost more
  // than the test they serve). No automatic maintenance after a commit: a process a commit
  // would start for nothing a test looks at.
  const identity = opts.identity === false ? '' : '[user]\n\tname = Test Person\n\temail = person@example.com\n';
  await appendFile(path.join(dir, '.git', 'config'), `${identity}[commit]\n\tgpgsign = false\n[maintenance]\n\tauto = false\n`);
  await writeFiles(dir, files);
  if (!opts.unborn) {
    if (Object.keys(files).length > 0) await git(['add', '-A']);
    const id = opts.identity === false ? ['-c', 'user.name=Setup', '-c', 'user.email=setup@example.com'] : [];
    await git([...id, 'commit', '-q', '--allow-empty', '-m', 'initial']);
  }
  return {
    dir,
    git,
    write: (f) => writeFiles(dir, f),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Cleanups of the calling test file, run (last first) after each of its tests: push to the list. */
export function afterEachCleanups(): Array<() => Promise<void>> {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return cleanups;
}

/** `tempGitRepo`, removed after the test through `cleanups`. */
export const tempRepoIn =
  (cleanups: Array<() => Promise<void>>) =>
  async (files: Record<string, string>): Promise<TempGitRepo> => {
    const made = await tempGitRepo(files);
    cleanups.push(made.cleanup);
    return made;
  };

/**
 * For the calling test file: git sees no global or system configuration and no identity or
 * repository from the environment while its tests run; the environment is put back after.
 */
export function withoutMachineGitConfig(): void {
  const savedEnv = { ...process.env };
  beforeAll(() => {
    process.env.GIT_CONFIG_GLOBAL = '/dev/null';
    process.env.GIT_CONFIG_NOSYSTEM = '1';
    for (const k of [
      'GIT_AUTHOR_NAME',
      'GIT_AUTHOR_EMAIL',
      'GIT_COMMITTER_NAME',
      'GIT_COMMITTER_EMAIL',
      'EMAIL',
      'GIT_DIR',
      'GIT_WORK_TREE',
      'GIT_INDEX_FILE',
    ]) {
      delete process.env[k];
    }
  });
  afterAll(() => {
    restoreEnv(savedEnv);
  });
}
