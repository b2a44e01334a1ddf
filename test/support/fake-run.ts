// A temporary repository holding a plan, plus the fake worker's journal next to it.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Plan } from '../../src/core/plan.ts';
import { type TempGitRepo, tempGitRepo } from './git-repo.ts';
import { writePlan } from './plans.ts';

/** One line the fake worker appends per event when FAKE_WORKER_JOURNAL is set. */
export interface FakeEvent {
  event: 'start' | 'end' | 'child' | string;
  pid: number;
  childPid?: number;
  taskMarker?: string;
  attempt?: number;
  t: number;
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
  cleanups.push(repo);
  const planPath = await writePlan(repo.dir, plan);
  const journal = join(repo.dir, '..', `${repo.dir.split('/').pop()}-fake.jsonl`);
  return { repo, planPath, journal, env: { FAKE_WORKER_JOURNAL: journal } };
}

export async function fakeEvents(journal: string): Promise<FakeEvent[]> {
  const text = await readFile(journal, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as FakeEvent);
}
