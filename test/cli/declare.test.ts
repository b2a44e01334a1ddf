// `plan declare N [PATH…] | --needed`: widen a task's declared files, validate, recompute the
// overlaps, keep every other edit of the plan, and put the task back; never while a run holds it.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLock, currentLockInfo } from '../../src/adapters/store/run-lock.ts';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { blockedOnUndeclared, makePlan, writePlan } from '../support/plans.ts';

const cleanups = afterEachCleanups();
const repoWith = tempRepoIn(cleanups);

async function plan(cwd: string, argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { out: (t) => out.push(...t.split('\n')), err: (t) => err.push(...t.split('\n')), cwd, env: {}, isTTY: false, columns: 200 };
  const code = await runProgram('plan.ts', planCommands, argv, io);
  return { code, out, err };
}

const blockedPlan = (): Plan =>
  makePlan([
    blockedOnUndeclared('ts'),
    {
      subject: 'use it',
      prompt: 'p',
      blockedBy: [0],
      metadata: { files: { create: ['src/use.ts'], modify: [] } },
      status: 'skipped',
      skippedBy: 0,
      result: 'skipped: depends on task 0',
    },
    { subject: 'touches index', prompt: 'p', blockedBy: [], metadata: { files: { create: [], modify: ['README.md'] } } },
  ]);

describe('plan declare', () => {
  it('--needed declares what the task wanted (modify: the repository has it), puts it and what was skipped back, and recomputes the overlaps', async () => {
    const repo = await repoWith({ 'README.md': '# r\n', 'src/index.ts': 'export {};\n' });
    const path = await writePlan(repo.dir, blockedPlan());
    const r = await plan(repo.dir, ['declare', '0', '--needed']);
    expect(r.err.join('\n')).toBe('');
    expect(r.code).toBe(0);
    expect(r.out[0]).toMatch(/^task 0 \(export the feature\): blocked → pending — declares src\/index\.ts now; attempts reset to 0/);
    const after = JSON.parse(await readFile(path, 'utf8')) as Plan;
    expect(after.tasks[0]).toMatchObject({ status: 'pending', attempts: 0, metadata: { files: { create: ['src/feature.ts'], modify: ['src/index.ts'] } } });
    expect(after.tasks[0]!.undeclaredWrites).toBeUndefined();
    expect(after.tasks[1]!.status).toBe('pending');
    // Every task carries the computed overlaps; nothing else changed.
    expect(after.tasks.map((t) => t.fileOverlaps)).toEqual([[], [], []]);
    expect(after.goal).toBe('test goal');
  });

  it('declares named paths, created when the repository lacks them, or as --as says; refuses what validation refuses, writing nothing', async () => {
    const repo = await repoWith({ 'README.md': '# r\n', '.gitignore': 'dist/\n', 'src/index.ts': 'export {};\n' });
    const path = await writePlan(repo.dir, blockedPlan());
    expect((await plan(repo.dir, ['declare', '2', 'src/new.ts', 'src/index.ts'])).code).toBe(0);
    let after = JSON.parse(await readFile(path, 'utf8')) as Plan;
    expect(after.tasks[2]!.metadata.files).toEqual({ create: ['src/new.ts'], modify: ['README.md', 'src/index.ts'] });
    expect((await plan(repo.dir, ['declare', '2', '--as', 'may-change', 'package-lock.json'])).code).toBe(0);
    after = JSON.parse(await readFile(path, 'utf8')) as Plan;
    expect(after.tasks[2]!.metadata.files.mayChange).toEqual(['package-lock.json']);
    const before = await readFile(path, 'utf8');
    const ignored = await plan(repo.dir, ['declare', '2', 'dist/out.js']);
    expect(ignored.code).toBe(2);
    expect(ignored.err.join('\n')).toMatch(/"dist\/out\.js" is ignored by git/);
    const outside = await plan(repo.dir, ['declare', '2', '../x']);
    expect(outside.code).toBe(2);
    expect(await readFile(path, 'utf8')).toBe(before);
  });

  it('--needed takes no path, refuses what it never declares, and a task with no record of what it wanted', async () => {
    const repo = await repoWith({ 'README.md': '# r\n' });
    const p = blockedPlan();
    p.tasks[0]!.undeclaredWrites = ['.claude/settings.json'];
    await writePlan(repo.dir, p);
    expect((await plan(repo.dir, ['declare', '0', '--needed', 'x.ts'])).code).toBe(2);
    const reserved = await plan(repo.dir, ['declare', '0', '--needed']);
    expect(reserved.code).toBe(2);
    expect(reserved.err.join('\n')).toMatch(/wanted \.claude\/settings\.json, under \.claude\/, \.git\/, \.design\/, which --needed never declares/);
    const none = await plan(repo.dir, ['declare', '2', '--needed']);
    expect(none.code).toBe(2);
    expect(none.err.join('\n')).toMatch(/has no record of files it wanted/);
  });

  it('refuses while a run holds the plan (exit 3), saying what to do', async () => {
    const repo = await repoWith({ 'README.md': '# r\n', 'src/index.ts': 'x\n' });
    const path = await writePlan(repo.dir, blockedPlan());
    const lock = await acquireLock(path, currentLockInfo('execute'));
    if (!lock.ok) throw new Error('lock');
    try {
      const r = await plan(repo.dir, ['declare', '0', '--needed']);
      expect(r.code).toBe(3);
      expect(r.err.join('\n')).toMatch(/plan drain/);
    } finally {
      await lock.value.release();
    }
    await writeFile(join(repo.dir, 'unrelated'), '');
  });
});
