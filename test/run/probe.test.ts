// The probe against real git repositories: vacuous, proven and broken checks, time budgets, the
// checkout of its own (provisioned, .worktreeinclude, always removed) and the person's tree untouched.

import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { probeFindings, probeHeadline, probeKey } from '../../src/core/sandbox/probe.ts';
import { saveProbe, storedProbe } from '../../src/run/probe.ts';
import { runProbe } from '../support/probe.ts';
import { afterEachCleanups, tempGitRepo, tempRepoIn } from '../support/git-repo.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

const cleanups = afterEachCleanups();
const repo = tempRepoIn(cleanups);

/** A file the checks append their working directory to, so a test knows where they ran. */
async function whereFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'probe-where-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'where.txt');
}

const check = (command: string) => ({ criterion: command, check: command });

/** A library whose test fails until the task writes `src/lib.mjs`. */
const project = {
  'README.md': 'hello\n',
  'src/old.mjs': 'export const old = 1;\n',
  'test/old.test.mjs': "import { old } from '../src/old.mjs';\nif (old !== 1) process.exit(1);\n",
  'test/lib.test.mjs': "import { add } from '../src/lib.mjs';\nif (add(1, 2) !== 3) process.exit(1);\n",
};

const options = { checkTimeoutMs: 30_000, timeoutMs: 120_000, timeoutFlag: 'plan probe --timeout' };

describe('runProbe', () => {
  it('reports a vacuous task (test -f of an existing file; a test that already passes), not a proven one, and a misspelt command as broken', async () => {
    const r = await repo(project);
    const plan: Plan = makePlan([
      fakeTask('exists', { modify: ['src/old.mjs'], acceptance: [check('test -f src/old.mjs')] }),
      fakeTask('passing test', { modify: ['src/old.mjs'], acceptance: [check('node test/old.test.mjs')] }),
      fakeTask('proven', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs'), check('node test/old.test.mjs')] }),
      fakeTask('misspelt', { create: ['src/x.mjs'], acceptance: [check('nodee test/lib.test.mjs')] }),
      fakeTask('no checks', { create: ['src/y.mjs'] }),
    ]);
    const probed = await runProbe(plan, { repo: r.dir, ...options });
    expect(probed.ok).toBe(true);
    if (!probed.ok) return;
    const report = probed.value;
    await expectSchema('probe', report);
    expect(report.tasks.map((t) => t.verdict)).toEqual(['vacuous', 'vacuous', 'proven', 'broken', 'unchecked']);
    expect(report.tasks[2]!.checks.map((c) => c.outcome)).toEqual(['failed', 'passed']);
    expect(report.tasks[3]!.checks[0]!.reason).toContain('`nodee`');
    expect(report.counts).toMatchObject({ tasks: 5, checks: 5, broken: 1, vacuous: 2, passing: 3 });
    expect(report.verdict).toBe('problems');
    expect(report.commit).toBe((await r.git(['rev-parse', 'HEAD'])).trim());
  });

  it('only probes pending tasks, and says ok when every task can be proven', async () => {
    const r = await repo(project);
    const plan = makePlan([
      { ...fakeTask('done', { modify: ['src/old.mjs'], acceptance: [check('nodee x')] }), status: 'completed' },
      fakeTask('proven', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs')] }),
    ]);
    const probed = await runProbe(plan, { repo: r.dir, ...options });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.tasks.map((t) => t.index)).toEqual([1]);
    expect(probed.value.verdict).toBe('ok');
  });

  it('runs in a checkout of its own prepared by setupCommand, with .worktreeinclude files, removes it, and leaves the tree, index and branch as they were', async () => {
    const r = await repo({ ...project, '.gitignore': '.env\nbuild/\n', '.worktreeinclude': '.env\n' });
    await writeFile(join(r.dir, '.env'), 'SECRET=1\n');
    await r.write({ 'build/out.txt': 'ignored, not listed\n' });
    // The person's own work in progress: a staged change and an unstaged one.
    await r.write({ 'README.md': 'staged\n' });
    await r.git(['add', 'README.md']);
    await r.write({ 'README.md': 'staged then edited\n', 'notes.txt': 'untracked\n' });
    const before = {
      status: await r.git(['status', '--porcelain=v2', '--branch']),
      index: await r.git(['ls-files', '-s']),
      readme: await readFile(join(r.dir, 'README.md'), 'utf8'),
    };
    const where = await whereFile();
    const plan = makePlan(
      [
        fakeTask('provisioned', {
          create: ['src/lib.mjs'],
          acceptance: [
            check(
              'pwd >> "$PROBE_WHERE"; test -f provisioned.txt && grep -q SECRET .env && test ! -e build/out.txt && test ! -e notes.txt && grep -q hello README.md && touch src/lib.mjs README.md && echo changed > README.md',
            ),
          ],
        }),
      ],
      { context: { setupCommand: 'touch provisioned.txt' } },
    );
    const probed = await runProbe(plan, { repo: r.dir, ...options, env: { ...process.env, PROBE_WHERE: where } });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.setup).toMatchObject({ command: 'touch provisioned.txt', passed: true });
    expect(probed.value.included).toEqual(['.env']);
    // Every condition of the check held in the checkout: it passed.
    expect(probed.value.tasks[0]!.checks[0]!.outcome).toBe('passed');
    const ranIn = (await readFile(where, 'utf8')).trim();
    expect(ranIn).not.toBe(r.dir);
    expect(existsSync(ranIn)).toBe(false);
    expect((await r.git(['worktree', 'list', '--porcelain'])).match(/^worktree /gm)).toHaveLength(1);
    expect(existsSync(join(r.dir, 'provisioned.txt'))).toBe(false);
    expect(existsSync(join(r.dir, 'src/lib.mjs'))).toBe(false);
    expect({
      status: await r.git(['status', '--porcelain=v2', '--branch']),
      index: await r.git(['ls-files', '-s']),
      readme: await readFile(join(r.dir, 'README.md'), 'utf8'),
    }).toEqual(before);
  });

  it('a failing setup command is the verdict, and no check runs', async () => {
    const r = await repo(project);
    const plan = makePlan([fakeTask('a', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs')] })], { context: { setupCommand: 'exit 3' } });
    const probed = await runProbe(plan, { repo: r.dir, ...options });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.verdict).toBe('setup-failed');
    expect(probed.value.setup).toMatchObject({ exitCode: 3, passed: false });
    expect(probeHeadline(probed.value)).toMatch(/^probe: the setup command `exit 3` failed in a fresh checkout /);
    expect(probed.value.tasks[0]!.checks[0]!.outcome).toBe('not-run');
    await expectSchema('probe', probed.value);
  });

  it('a setup command that outlasts the whole budget says what timed out, after how long and which flag sets it', async () => {
    const r = await repo(project);
    const plan = makePlan([fakeTask('a', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs')] })], {
      context: { setupCommand: 'sleep 5' },
    });
    const probed = await runProbe(plan, { repo: r.dir, checkTimeoutMs: 30_000, timeoutMs: 1000, timeoutFlag: '--probe-timeout' });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.verdict).toBe('setup-failed');
    // It had what was left of the whole budget once the checkout was made.
    expect(probed.value.setup).toMatchObject({ timedOut: true, passed: false });
    const reason = probed.value.setup!.reason!;
    expect(reason).toMatch(/^`sleep 5` timed out after \d+ms \(the rest of the 1s set by --probe-timeout\); its whole process group was ended$/);
    expect(probeFindings(probed.value).problems[0]).toBe(`setup command ${reason}`);
    expect(probeHeadline(probed.value)).toMatch(/^probe: the setup command `sleep 5` ran out of time in a fresh checkout /);
    await expectSchema('probe', probed.value);
  });

  it('respects the per-check budget with a check that never ends, and the whole budget after it', async () => {
    const r = await repo(project);
    const where = await whereFile();
    const plan = makePlan([
      fakeTask('hangs', { create: ['src/lib.mjs'], acceptance: [check('echo $$ >> "$PROBE_WHERE"; sleep 1000')] }),
      fakeTask('proven', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs')] }),
    ]);
    // Each check's limit is long enough for `node` to start on a loaded machine (the proven check must finish in it).
    const perCheck = await runProbe(plan, {
      repo: r.dir,
      checkTimeoutMs: 3000,
      timeoutMs: 120_000,
      timeoutFlag: 'plan probe --timeout',
      env: { ...process.env, PROBE_WHERE: where },
    });
    if (!perCheck.ok) throw new Error('probe failed');
    expect(perCheck.value.tasks.map((t) => t.verdict)).toEqual(['undecided', 'proven']);
    expect(perCheck.value.tasks[0]!.checks[0]).toMatchObject({ outcome: 'timed-out' });
    // Said with the command, the limit and the flag that sets it: here the check's own.
    expect(perCheck.value.tasks[0]!.checks[0]!.reason).toBe(
      '`echo $$ >> "$PROBE_WHERE"; sleep 1000` timed out after 3s (the limit set by --check-timeout); its whole process group was ended',
    );
    expect(probeFindings(perCheck.value).information).toContain(`task 0: ${perCheck.value.tasks[0]!.checks[0]!.reason}`);
    expect(perCheck.value.budget.exhausted).toBe(false);

    // The whole probe's budget: the hanging check is cut at what is left, the next is not run.
    // The budget covers the probe's scratch checkout too: 3 s, so that on a loaded machine the
    // first check still starts inside it (with 300 ms it sometimes did not, and was not run).
    const whole = await runProbe(plan, {
      repo: r.dir,
      checkTimeoutMs: 600_000,
      timeoutMs: 3000,
      timeoutFlag: 'plan probe --timeout',
      env: { ...process.env, PROBE_WHERE: where },
    });
    if (!whole.ok) throw new Error('probe failed');
    expect(whole.value.tasks[0]!.checks[0]!.outcome).toBe('timed-out');
    // Cut at what was left of the whole probe's budget: that flag is named.
    expect(whole.value.tasks[0]!.checks[0]!.reason).toMatch(
      /^`echo \$\$ >> "\$PROBE_WHERE"; sleep 1000` timed out after (\d+ms|\d(\.\d)?s) \(the rest of the 3s set by plan probe --timeout\); its whole process group was ended$/,
    );
    expect(whole.value.tasks[1]!.checks[0]).toMatchObject({ outcome: 'not-run', reason: expect.stringContaining('budget') });
    expect(whole.value.budget.exhausted).toBe(true);
    await expectSchema('probe', whole.value);
    // Nothing the hanging checks started is left running.
    for (const pid of (await readFile(where, 'utf8')).trim().split('\n').map(Number)) {
      expect(() => process.kill(pid, 0)).toThrow();
    }
  });

  it('an interrupt stops the running check and still removes the scratch worktree', async () => {
    const r = await repo(project);
    const where = await whereFile();
    const plan = makePlan([fakeTask('hangs', { create: ['src/lib.mjs'], acceptance: [check('pwd >> "$PROBE_WHERE"; sleep 1000'), check('true')] })]);
    const controller = new AbortController();
    const running = runProbe(plan, { repo: r.dir, ...options, signal: controller.signal, env: { ...process.env, PROBE_WHERE: where } });
    while (!existsSync(where) || (await readFile(where, 'utf8')).trim() === '') await new Promise((f) => setTimeout(f, 20));
    controller.abort();
    const probed = await running;
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.budget.interrupted).toBe(true);
    expect(probed.value.tasks[0]!.checks.map((c) => c.outcome)).toEqual(['not-run', 'not-run']);
    expect(existsSync((await readFile(where, 'utf8')).trim())).toBe(false);
    expect((await r.git(['worktree', 'list', '--porcelain'])).match(/^worktree /gm)).toHaveLength(1);
  });

  it('a repository without a commit is a problem value', async () => {
    const r = await tempGitRepo({}, { unborn: true });
    cleanups.push(r.cleanup);
    const probed = await runProbe(makePlan([fakeTask('a', { create: ['a'], acceptance: [check('test -f a')] })]), { repo: r.dir, ...options });
    expect(probed).toEqual({ ok: false, error: { kind: 'no-commit' } });
  });

  it('is stored next to the plan and found again only while the plan probes the same checks', async () => {
    const r = await repo(project);
    const plan = makePlan([fakeTask('proven', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs')] })]);
    const probed = await runProbe(plan, { repo: r.dir, ...options });
    if (!probed.ok) throw new Error('probe failed');
    const planPath = join(r.dir, '.design/plan.json');
    await r.write({ '.design/plan.json': '{}' });
    await saveProbe(planPath, probed.value);
    expect((await storedProbe(planPath, plan))?.planKey).toBe(probeKey(plan));
    const changed = makePlan([fakeTask('proven', { create: ['src/lib.mjs'], acceptance: [check('node test/lib.test.mjs && true')] })]);
    expect(await storedProbe(planPath, changed)).toBeNull();
  });
});
