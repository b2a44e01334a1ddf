// Crash consistency: kill the orchestrator with SIGKILL at random moments, resume, repeat; the
// result must be exactly that of an uninterrupted run.

import { execa } from 'execa';
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rng } from '../../bench/random.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';
import { executeScript, fakeWorker, nodeArgsFor, runExecute } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { alive } from '../support/processes.ts';

// Every task appends a line to its own file, so a task that ran again after its work was
// committed leaves two lines behind. Tasks 9-11 append, in a chain, to one shared file; tasks 3
// and 4 both modify notes.txt without an order between them, so they may never run together.
function chaosPlan(): Plan {
  const t = (i: number, spec: Parameters<typeof fakeTask>[1]) => fakeTask(`T${i}`, { ...spec, subject: `step ${i}` });
  const own = (i: number, sleepMs: number, blockedBy: number[] = []) =>
    t(i, { create: [`out/t${i}.txt`], blockedBy, fake: { append: { [`out/t${i}.txt`]: `ran ${i}\n` }, sleepMs } });
  return makePlan([
    own(0, 150),
    own(1, 250),
    own(2, 100, [0]),
    t(3, { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'three\n' }, sleepMs: 200 } }),
    t(4, { modify: ['notes.txt'], fake: { append: { 'notes.txt': 'four\n' }, sleepMs: 150 } }),
    own(5, 300, [1, 2]),
    own(6, 120, [2]),
    own(7, 200, [5]),
    own(8, 100, [6, 7]),
    t(9, { modify: ['shared.txt'], blockedBy: [0], fake: { append: { 'shared.txt': 'nine\n' }, sleepMs: 150 } }),
    t(10, { modify: ['shared.txt'], blockedBy: [9], fake: { append: { 'shared.txt': 'ten\n' }, sleepMs: 150 } }),
    t(11, { modify: ['shared.txt'], blockedBy: [10], fake: { append: { 'shared.txt': 'eleven\n' }, sleepMs: 150 } }),
  ]);
}

const initialFiles = { 'README.md': 'chaos\n', 'notes.txt': 'notes\n', 'shared.txt': 'shared\n' };

async function finalTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of ['notes.txt', 'shared.txt']) out[f] = await readFile(join(dir, f), 'utf8');
  for (const f of (await readdir(join(dir, 'out'))).sort()) out[`out/${f}`] = await readFile(join(dir, 'out', f), 'utf8');
  return out;
}

/** Sorted lines, since unordered tasks may append in either order. */
const normalised = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, v.split('\n').sort().join('\n')]));

const archivedPlans = async (dir: string) => (await readdir(join(dir, '.design/history')).catch(() => [] as string[])).filter((f) => f.endsWith('-plan.json'));

const repos: TempGitRepo[] = [];
afterAll(async () => {
  for (const r of repos) await r.cleanup();
});

describe('SIGKILL at random moments', () => {
  it('converges to the result of an uninterrupted run, committing every task exactly once', async () => {
    const reference = await tempGitRepo(initialFiles);
    repos.push(reference);
    await writePlan(reference.dir, chaosPlan());
    const clean = await runExecute(reference.dir, ['--concurrency', '3']);
    expect(clean.exitCode).toBe(0);
    const expected = await finalTree(reference.dir);

    const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100000);
    const random = rng(seed);
    const repo = await tempGitRepo(initialFiles);
    const journal = join(repo.dir, '..', `${repo.dir.split('/').pop()}-fake.jsonl`);
    repos.push({ ...repo, cleanup: () => repo.cleanup().then(() => rm(journal, { force: true })) });
    const planPath = await writePlan(repo.dir, chaosPlan());

    let kills = 0;
    let finished = false;
    for (let run = 0; run < 40 && !finished; run++) {
      const child = execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--concurrency', '3'], {
        cwd: repo.dir,
        reject: false,
        stdin: 'ignore',
        env: { FAKE_WORKER_JOURNAL: journal, NO_COLOR: '1' },
      });
      // Early runs are killed; later ones get longer and longer, and the last ones run to the end.
      const killAfter = run < 12 ? 150 + random() * 1200 : Infinity;
      const timer = Number.isFinite(killAfter) ? setTimeout(() => child.kill('SIGKILL'), killAfter) : undefined;
      const r = await child;
      clearTimeout(timer);
      if (r.signal === 'SIGKILL') kills++;
      else {
        expect(r.exitCode, `seed ${seed}, run ${run}: ${r.stderr}`).toBe(0);
        finished = true;
      }
      // plan.json is a whole, valid plan after every kill; it is gone only once a run completed
      // and archived it (a kill can land just after that, before the process exits).
      const text = await readFile(planPath, 'utf8').catch(() => null);
      if (text === null) {
        expect(await archivedPlans(repo.dir), `seed ${seed}: no plan.json after run ${run}, and no archive`).toHaveLength(1);
        finished = true;
      } else {
        expect(finished, `seed ${seed}: run ${run} exited 0 but left plan.json unarchived`).toBe(false);
        const parsed = parsePlan(text);
        expect(parsed.ok, `seed ${seed}: plan.json after run ${run}: ${parsed.ok ? '' : parsed.error.join('; ')}`).toBe(true);
      }
    }
    expect(finished, `seed ${seed}`).toBe(true);
    expect(kills, `seed ${seed}`).toBeGreaterThan(0);

    expect(normalised(await finalTree(repo.dir)), `seed ${seed}`).toEqual(normalised(expected));
    expect(await repo.git(['status', '--porcelain', '--', 'out', 'notes.txt', 'shared.txt'])).toBe('');

    // Each task is named by exactly one commit's trailer, and each own file was committed once.
    const trailers = (await repo.git(['log', '--format=%(trailers:key=Foreman-Tasks,valueonly)']))
      .split(/[\s,]+/)
      .filter(Boolean)
      .map(Number);
    expect(
      trailers.sort((a, b) => a - b),
      `seed ${seed}`,
    ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    for (const i of [0, 1, 2, 5, 6, 7, 8]) {
      const commits = (await repo.git(['log', '--format=%H', '--', `out/t${i}.txt`])).trim().split('\n').filter(Boolean);
      expect(commits, `seed ${seed}: out/t${i}.txt`).toHaveLength(1);
    }

    // The same files as the uninterrupted run in the commit the branch is at (their content is checked above).
    const committed = async (dir: string) => (await execa('git', ['ls-tree', '-r', '--name-only', 'HEAD'], { cwd: dir })).stdout;
    expect(await committed(repo.dir), `seed ${seed}`).toBe(await committed(reference.dir));
    // Done and landed: no worktree is registered and no foreman ref is left, in either repository.
    for (const dir of [reference.dir, repo.dir]) {
      const worktrees = (await execa('git', ['worktree', 'list', '--porcelain'], { cwd: dir })).stdout.match(/^worktree /gm);
      expect(worktrees, `seed ${seed}: ${dir}`).toHaveLength(1);
      expect(
        (await execa('git', ['for-each-ref', '--format=%(refname)', 'refs/foreman/', 'refs/foreman-awaiting/', 'refs/foreman-candidate/'], { cwd: dir }))
          .stdout,
        `seed ${seed}`,
      ).toBe('');
    }

    // No worker of any killed run is left running.
    const lines = (await readFile(journal, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { pid: number; childPid?: number });
    expect(lines.map((l) => l.pid).filter(alive)).toEqual([]);
  }, 240_000);
});
