// The sandbox says what it did, with the real sandbox: a check (acceptance or assumption), the gate and the setup command that
// reach for a host the plan does not allow fail on the sandbox's refusal, and what shows each
// failure names the sandbox and the plan's setting that allows the host (`context.checkNetwork`,
// `context.setupNetwork`); the run and `plan probe` say once whether their commands run sandboxed
// and with what network. The network call is `npm view kleur version`: the sandbox's proxy refuses
// registry.npmjs.org by its name, before any connection, so the test needs no network (checked
// by hand: npm prints `403 Forbidden - GET https://registry.npmjs.org/kleur` and exits 1). Workers
// are the fake worker. Needs the sandbox (Debian: bubblewrap, socat, ripgrep); says so and skips
// without it.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

const support = await sandboxSupport();
if (!support.ok) console.warn(`sandbox-network: skipped, the sandbox cannot run here: ${support.error}`);

const { repos } = leftovers();
const NETWORK = 'npm view kleur version';
const REFUSED = 'the sandbox refused the connection to registry.npmjs.org';
const ALLOW_IT = 'add "registry.npmjs.org" to context.checkNetwork to allow it';

/** A task whose worker writes its file and whose check then reaches for the registry. */
const reaching = () =>
  fakeTask('N', {
    create: ['n.txt'],
    acceptance: [{ criterion: 'the registry answers', check: `${NETWORK} && test -f n.txt` }],
    fake: { write: { 'n.txt': 'n\n' } },
  });

const temporary: string[] = [];
afterAll(async () => {
  for (const dir of temporary) await rm(dir, { recursive: true, force: true });
});

describe.runIf(support.ok)('what the sandbox refused, said where the failure is shown (real sandbox)', () => {
  it("a check's refused network call fails its attempt, and the run's output and the retry's prompt name the sandbox and context.checkNetwork", async () => {
    const { repo, env } = await repoWithPlan(makePlan([reaching()]), repos);
    const prompts = await mkdtemp(join(tmpdir(), 'foreman-prompts-'));
    temporary.push(prompts);
    const r = await runExecute(repo.dir, ['--no-probe', '--no-gate', '--max-attempts', '2'], { ...env, FAKE_WORKER_PROMPTS: prompts });
    expect(r.exitCode, r.stdout + r.stderr).toBe(1);
    // Said once, at the start: the checks and the workers run sandboxed, reaching no network.
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^foreman: sandbox: on \(--sandbox auto\): checks and the workers' Bash commands run in it, reaching no network but their own loopback \(context\.checkNetwork would name hosts\)$/,
    );
    expect(lines.filter((line) => line.includes('sandbox: on'))).toHaveLength(1);
    // Each attempt's failure, as the run shows it.
    const failures = lines.filter((line) => /task 0 failed/.test(line));
    expect(failures.length, r.stdout).toBe(2);
    for (const line of failures) {
      expect(line).toContain(`acceptance check failed (the registry answers): \`${NETWORK} && test -f n.txt\` exited 1 (${REFUSED}`);
      expect(line).toContain(ALLOW_IT);
    }
    // The second attempt is told why the first did not pass.
    const retry = await readFile(join(prompts, 'N-2.txt'), 'utf8');
    expect(retry).toContain('The previous attempt did not pass:');
    expect(retry).toContain(REFUSED);
    expect(retry).toContain(ALLOW_IT);
    expect(retry).toMatch(/403 Forbidden - GET https:\/\/registry\.npmjs\.org\/kleur/);
    // The worker's log keeps the whole output, with the same words.
    expect(await readFile(join(repo.dir, '.design/worker-0.log'), 'utf8')).toContain(REFUSED);
    // Journaled once the run has started, with what it says as a description.
    const journal = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; message?: string; sandbox?: unknown });
    const said = journal.findIndex((e) => e.sandbox !== undefined);
    expect(journal.filter((e) => e.sandbox !== undefined)).toHaveLength(1);
    expect(said).toBeGreaterThan(journal.findIndex((e) => e.type === 'run-started'));
    expect(journal[said]).toMatchObject({
      type: 'notice',
      level: 'info',
      message: lines[0]!.replace(/^foreman: /, ''),
      sandbox: { mode: 'auto', sandboxed: true, commands: ['checks', 'workers'], checkNetwork: [] },
    });
  }, 120_000);

  it("the run's probe refuses the check as broken, naming the sandbox and context.checkNetwork", async () => {
    const { repo, env } = await repoWithPlan(makePlan([reaching()]), repos);
    const r = await runExecute(repo.dir, ['--no-gate'], env);
    expect(r.exitCode, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain('1 acceptance check cannot run, so every attempt of its task would fail; nothing was started.');
    expect(r.stderr).toContain(`task 0: \`${NETWORK} && test -f n.txt\`: ${REFUSED}, which the plan's context.checkNetwork does not list: ${ALLOW_IT}`);
    // Said at once, but a run refused before it started leaves nothing in the journal.
    expect(r.stdout.split('\n')[0]).toMatch(/^foreman: sandbox: on \(--sandbox auto\)/);
    expect(await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8').catch(() => '')).toBe('');
  }, 120_000);

  it('the gate that fails on the starting commit on a refused network call names the sandbox and context.checkNetwork', async () => {
    const plan = makePlan([fakeTask('G', { create: ['g.txt'], fake: { write: { 'g.txt': 'g\n' } } })], { context: { testCommand: NETWORK } });
    const { repo, env } = await repoWithPlan(plan, repos);
    const r = await runExecute(repo.dir, ['--no-probe', '--json'], env);
    expect(r.exitCode, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`the gate \`${NETWORK}\` already fails on`);
    expect(r.stderr).toContain(`\`${NETWORK}\` exited 1 (${REFUSED}, which the plan's context.checkNetwork does not list: ${ALLOW_IT})`);
    // With --json the run's line is an event, its description beside it; it names the gate among what runs sandboxed.
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; message?: string; sandbox?: { commands: string[] } });
    const lines = events.filter((e) => e.sandbox !== undefined);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.message).toMatch(/^sandbox: on \(--sandbox auto\): checks, the gate and the workers' Bash commands run in it/);
    expect(lines[0]!.sandbox!.commands).toEqual(['checks', 'gate', 'workers']);
    for (const event of events) await expectSchema('event', event);
  }, 120_000);

  it("an assumption check the sandbox refused says so first, in the run's output and in the task it blocks", async () => {
    const task = fakeTask('A', {
      create: ['a.txt'],
      assumptions: [{ claim: 'the registry has kleur', verify: NETWORK, severity: 'blocking' }],
      fake: { write: { 'a.txt': 'a\n' } },
    });
    const { repo, env, planPath } = await repoWithPlan(makePlan([task]), repos);
    const r = await runExecute(repo.dir, ['--no-probe', '--no-gate'], env);
    expect(r.exitCode, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toContain(`task 0 assumption failed (blocking): the registry has kleur — ${REFUSED}, which the plan's context.checkNetwork`);
    const plan = JSON.parse(await readFile(planPath, 'utf8')) as Plan;
    expect(plan.tasks[0]!.status).toBe('blocked');
    expect(plan.tasks[0]!.result).toContain(`\`${NETWORK}\`: ${REFUSED}`);
  }, 120_000);

  it('plan probe says its sandbox line, judges the check broken with the hint, and keeps both in its JSON', async () => {
    const plan: Plan = makePlan([reaching()], { context: { checkNetwork: ['example.org'] } });
    const { repo } = await repoWithPlan(plan, repos);
    const text = await runPlanTool(repo.dir, ['probe']);
    expect(text.exitCode, text.stdout + text.stderr).toBe(1);
    const lines = text.stdout.split('\n');
    expect(lines[1]).toBe('sandbox: on (--sandbox auto): checks run in it, reaching only example.org (context.checkNetwork) and their own loopback');
    expect(text.stdout).toContain(
      `task 0: broken check \`${NETWORK} && test -f n.txt\`: ${REFUSED}, which the plan's context.checkNetwork does not list: ${ALLOW_IT}`,
    );

    const json = await runPlanTool(repo.dir, ['probe', '--json']);
    const report = JSON.parse(json.stdout);
    await expectSchema('probe', report);
    expect(report.sandbox).toEqual({
      mode: 'auto',
      sandboxed: true,
      unavailable: null,
      install: null,
      commands: ['checks'],
      checkNetwork: ['example.org'],
      setupNetwork: { registries: true, hosts: [] },
    });
    expect(report.tasks[0].checks[0]).toMatchObject({ outcome: 'broken', reason: expect.stringContaining(REFUSED) });
  }, 120_000);

  it('a setup command refused its registry names the sandbox and context.setupNetwork, in the probe and in the run', async () => {
    // `no-defaults` and no host of its own: the setup command reaches no registry.
    const context = { setupCommand: NETWORK, setupNetwork: ['no-defaults'] };
    const plan = makePlan(
      [fakeTask('S', { create: ['s.txt'], acceptance: [{ criterion: 's', check: 'test -f s.txt' }], fake: { write: { 's.txt': 's\n' } } })],
      {
        context,
      },
    );
    const { repo, env } = await repoWithPlan(plan, repos);
    const probed = await runPlanTool(repo.dir, ['probe']);
    expect(probed.exitCode).toBe(1);
    expect(probed.stdout).toContain('the setup command runs in it, reaching no network but its own loopback (context.setupNetwork: no-defaults)');
    expect(probed.stdout).toContain(`setup command \`${NETWORK}\` exited 1: `);
    expect(probed.stdout).toContain(
      '(the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.setupNetwork does not list: add "registry.npmjs.org" to context.setupNetwork to allow it)',
    );

    const run = await runExecute(repo.dir, ['--no-probe', '--no-gate', '--max-attempts', '1'], env);
    // A setup command that fails is the run's to fix, not an attempt's: it cannot run (exit 3).
    expect(run.exitCode, run.stdout + run.stderr).toBe(3);
    const setupRefused =
      '(the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.setupNetwork does not list: add "registry.npmjs.org" to context.setupNetwork to allow it)';
    // The setup's own notice, the task it kept from starting, and the run's end.
    expect(run.stdout).toContain(`with \`${NETWORK}\`: failed (exit 1) ${setupRefused}`);
    expect(run.stdout).toContain(`task 0 could not start: the setup command \`${NETWORK}\` exited with code 1 in a new worktree ${setupRefused}`);
    expect(run.stdout).toMatch(/finished: cannot-run \(setup-failed\).*the sandbox refused the connection to registry\.npmjs\.org/);
    // With the probe (the default), the run is refused before it starts, saying the same.
    const refused = await runExecute(repo.dir, ['--no-gate'], env);
    expect(refused.exitCode, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`the plan's setup command \`${NETWORK}\` fails in a fresh checkout of HEAD`);
    expect(refused.stderr).toContain(setupRefused);
  }, 120_000);
});
