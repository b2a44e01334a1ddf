// The probe from the outside: `plan probe` (exit codes, JSON against its schema, the table,
// `plan summary`), and the headless run probing at setup with the fake worker.

import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { fakeEvents, leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

const { repos } = leftovers();
const sandbox = await sandboxSupport();

const files = { 'README.md': 'hello\n', 'present.txt': 'here\n' };
const setup = (plan: Plan) => repoWithPlan(plan, repos, files);
const check = (command: string) => ({ criterion: command, check: command });
const proven = () => fakeTask('P', { create: ['p.txt'], acceptance: [check('test -f p.txt')], fake: { write: { 'p.txt': 'p\n' } } });
const vacuous = () => fakeTask('V', { create: ['v.txt'], acceptance: [check('test -f present.txt')], fake: { write: { 'v.txt': 'v\n' } } });
const broken = () => fakeTask('B', { create: ['b.txt'], acceptance: [check('tesst -f b.txt')], fake: { write: { 'b.txt': 'b\n' } } });

describe('plan probe', () => {
  it('exits 0 when every pending task is proven, 1 with a vacuous task or a broken check; JSON follows its schema; summary shows the verdict', async () => {
    const good = await setup(makePlan([proven()]));
    const ok = await runPlanTool(good.repo.dir, ['probe', '--json']);
    expect(ok.exitCode, ok.stderr).toBe(0);
    await expectSchema('probe', JSON.parse(ok.stdout));

    const bad = await setup(makePlan([proven(), vacuous(), broken()]));
    const json = await runPlanTool(bad.repo.dir, ['probe', '--json']);
    expect(json.exitCode, json.stderr).toBe(1);
    const report = JSON.parse(json.stdout);
    await expectSchema('probe', report);
    expect(report.tasks.map((t: { verdict: string }) => t.verdict)).toEqual(['proven', 'vacuous', 'broken']);
    expect(JSON.parse(await readFile(join(bad.repo.dir, '.design/probe.json'), 'utf8'))).toEqual(report);

    const text = await runPlanTool(bad.repo.dir, ['probe']);
    expect(text.exitCode).toBe(1);
    expect(text.stdout).toMatch(/1 broken, 1 vacuous task/);
    expect(text.stdout).toMatch(/task 1 \(task V\) is vacuous/);
    expect(text.stdout).toMatch(/task 2: broken check `tesst -f b.txt`: the command `tesst` cannot run/);

    const summary = await runPlanTool(bad.repo.dir, ['summary']);
    expect(summary.stdout).toMatch(/## Probe\n\nprobe found problems/);
    // A changed plan: the stored probe is not its probe.
    const plan = await readPlan(bad.planPath);
    plan.tasks[2]!.agent!.acceptanceCriteria![0]!.check = 'test -f b.txt';
    await bad.repo.write({ '.design/plan.json': JSON.stringify(plan) });
    expect((await runPlanTool(bad.repo.dir, ['summary'])).stdout).not.toMatch(/## Probe/);
    // Nothing of the probe is left in the person's tree.
    expect(await bad.repo.git(['status', '--porcelain', '--untracked-files=all'])).toBe('?? .design/plan.json\n?? .design/probe.json\n');
  });

  it.runIf(sandbox.ok)("--sandbox on holds its checks to the person's Read deny rules, and says the one it cannot hold", async () => {
    const { repo } = await setup(
      makePlan([fakeTask('S', { create: ['s.txt'], acceptance: [check('grep -q here present.txt')], fake: { write: { 's.txt': 's\n' } } })]),
    );
    // Unsandboxed, the check passes before any work (vacuous); with present.txt's reads denied, it fails.
    await mkdir(join(repo.dir, '.claude'));
    await writeFile(join(repo.dir, '.claude/settings.local.json'), JSON.stringify({ permissions: { deny: ['Read(./present.txt)', 'Read(//**/*.pem)'] } }));
    await writeFile(join(repo.dir, '.git/info/exclude'), '.claude/\n');
    const probed = await runPlanTool(repo.dir, ['probe', '--json', '--sandbox', 'on']);
    expect(JSON.parse(probed.stdout).tasks[0].checks[0].outcome, probed.stderr).toBe('failed');
    expect(probed.stderr).toContain('plan probe: these deny rules of yours cannot be held as written by the sandbox foreman runs its own commands in');
    expect(probed.stderr).toContain('Read(//**/*.pem): a pattern over the whole file system');
    const unsandboxed = await runPlanTool(repo.dir, ['probe', '--json', '--sandbox', 'off']);
    expect(JSON.parse(unsandboxed.stdout).tasks[0].checks[0].outcome).toBe('passed');
  });

  it('exits 2 on bad flags', async () => {
    const { repo } = await setup(makePlan([proven()]));
    for (const args of [['--timeout', '0'], ['--check-timeout', 'x'], ['--nope']]) {
      const r = await runPlanTool(repo.dir, ['probe', ...args]);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('execute probes at setup', () => {
  it('a broken check stops the run with exit 2 before any attempt: the worker never starts', async () => {
    const { repo, planPath, journal, env } = await setup(makePlan([proven(), broken()]));
    const r = await runExecute(repo.dir, [], env);
    expect(r.exitCode, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toMatch(/1 acceptance check cannot run/);
    expect(r.stderr).toMatch(/task 1: `tesst -f b.txt`/);
    expect(await fakeEvents(journal)).toEqual([]);
    const plan = await readPlan(planPath);
    expect(plan.tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
    // Said as it starts; the run never started, so nothing of it is journaled.
    expect(r.stdout).toMatch(/probing 2 acceptance checks/);
    expect(existsSync(join(repo.dir, '.design/events.jsonl')) ? await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8') : '').not.toMatch(/run-started/);
  });

  it('its first line is said once, as it starts, and journaled once the run has started', async () => {
    const { repo } = await setup(makePlan([proven()]));
    const r = await runExecute(repo.dir, []);
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.match(/probing 1 acceptance check/g)).toHaveLength(1);
    // The run's sandbox line opens it; the probe's first line is said next, as it starts.
    const [first, second] = r.stdout.split('\n');
    expect(first).toMatch(/^foreman: (warning: )?sandbox: /);
    expect(second).toMatch(/^foreman: probing 1 acceptance check/);
    const journal = await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8');
    const events = journal
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; message?: string });
    expect(events.filter((e) => e.type === 'notice' && e.message?.startsWith('probing 1 acceptance check'))).toHaveLength(1);
    expect(events.findIndex((e) => e.type === 'run-started')).toBeLessThan(events.findIndex((e) => e.message?.startsWith('probing') === true));
  });

  it('--no-probe skips it (the broken check then fails its task)', async () => {
    const { repo, journal, env } = await setup(makePlan([broken()]));
    const r = await runExecute(repo.dir, ['--no-probe', '--max-attempts', '1'], env);
    expect(r.exitCode).toBe(1);
    expect((await fakeEvents(journal)).filter((e) => e.event === 'start')).toHaveLength(1);
    expect(r.stdout).not.toMatch(/probing/);
  });

  it('warns about a vacuous task and runs; --strict refuses it with exit 2', async () => {
    const warned = await setup(makePlan([proven(), vacuous()]));
    const r = await runExecute(warned.repo.dir, ['--json'], warned.env);
    expect(r.exitCode, r.stderr).toBe(0);
    const notices = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; level?: string; message?: string })
      .filter((e) => e.type === 'notice');
    // With --json, stdout is events only: the first line is a notice among them.
    expect(notices.filter((n) => n.message?.startsWith('probing 2 acceptance checks'))).toHaveLength(1);
    expect(notices).toContainEqual(
      expect.objectContaining({
        level: 'warning',
        message: expect.stringMatching(/^task 1 \(task V\): every acceptance check passes before the work is done/),
      }),
    );
    expect(notices).toContainEqual(
      expect.objectContaining({ level: 'warning', message: expect.stringMatching(/^probe found problems: .* \(on [0-9a-f]{12}, \S+\)/) }),
    );

    const strict = await setup(makePlan([proven(), vacuous()]));
    const s = await runExecute(strict.repo.dir, ['--strict'], strict.env);
    expect(s.exitCode).toBe(2);
    expect(s.stderr).toMatch(/1 vacuous task refused \(--strict\)/);
    expect(await fakeEvents(strict.journal)).toEqual([]);
  });
});
