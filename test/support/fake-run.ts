// A temporary repository holding a plan, plus the fake worker's journal next to it.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterEach } from 'vitest';
import { executeScript, fakeWorker, nodeArgsFor } from './execute.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { tempGitRepo, type TempGitRepo } from './git-repo.ts';
import { writePlan } from './plans.ts';

/** One line the fake worker appends per event when FAKE_WORKER_JOURNAL is set. */
export interface FakeEvent {
  event: 'start' | 'end' | 'child' | string;
  pid: number;
  childPid?: number;
  taskMarker?: string;
  attempt?: number;
  t: number;
  /** The worker's working directory and its arguments. */
  cwd?: string;
  args?: string[];
  /** `waited`: whether the file it waited for appeared. */
  found?: boolean;
}

export interface PlanRepo {
  repo: TempGitRepo;
  planPath: string;
  journal: string;
  env: { FAKE_WORKER_JOURNAL: string };
}

/** Creates the repository and registers it in `cleanups` for the caller's afterEach. */
export async function repoWithPlan(plan: Plan, cleanups: TempGitRepo[], files: Record<string, string> = { 'README.md': 'hello\n' }): Promise<PlanRepo> {
  const repo = await tempGitRepo(files);
  const journal = join(repo.dir, '..', `${repo.dir.split('/').pop()}-fake.jsonl`);
  // The fake worker's journal is beside the repository (outside its tree): removed with it.
  cleanups.push({ ...repo, cleanup: () => repo.cleanup().then(() => rm(journal, { force: true })) });
  const planPath = await writePlan(repo.dir, plan);
  return { repo, planPath, journal, env: { FAKE_WORKER_JOURNAL: journal } };
}

export async function fakeEvents(journal: string): Promise<FakeEvent[]> {
  const text = await readFile(journal, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as FakeEvent);
}

/**
 * `scripts/execute.ts` with the fake worker, in the background, to act while it runs. The child
 * goes into `children`, for the test file's afterEach to kill.
 */
export function startExecute(dir: string, args: string[], env: Record<string, string>, children: ResultPromise[]) {
  const child = execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, ...args], {
    cwd: dir,
    reject: false,
    stdin: 'ignore',
    env: { NO_COLOR: '1', FOREMAN_BACKOFF_MS: '50', ...env },
    // A run drains on SIGTERM and goes on: execa would SIGKILL it 5 s after the test's SIGTERM, a
    // deadline a slow machine trips before the test's second signal. afterEach kills what is left.
    forceKillAfterDelay: false,
  });
  children.push(child);
  return child;
}

/**
 * What a test file leaves behind, ended or removed after each test (registers the `afterEach`):
 * repositories a test made (`repoWithPlan` takes the list), runs started in the background, and
 * scratch directories made by `tempDir`.
 */
export function leftovers(): { repos: TempGitRepo[]; children: ResultPromise[]; tempDir: (prefix: string) => Promise<string> } {
  const repos: TempGitRepo[] = [];
  const scratch: string[] = [];
  const children: ResultPromise[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    while (repos.length) await repos.pop()!.cleanup();
    for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  const tempDir = async (prefix: string): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    scratch.push(dir);
    return dir;
  };
  return { repos, children, tempDir };
}
