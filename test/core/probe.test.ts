// The probe's pure rules: which runs are broken, what a task's checks add up to, the plan key.

import { describe, expect, it } from 'vitest';
import { type CheckRun, judgeCheck, probeFindings, probeKey, type ProbeReport, summarize, taskVerdict } from '../../src/core/sandbox/probe.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const run = (exitCode: number | null, output = '', extra: Partial<CheckRun> = {}): CheckRun => ({
  exitCode,
  output,
  timedOut: false,
  aborted: false,
  ...extra,
});

describe('judgeCheck', () => {
  it('exit 126 and 127 are broken; other failures can prove the work; exit 0 passes', () => {
    expect(judgeCheck(run(127), []).outcome).toBe('broken');
    expect(judgeCheck(run(126), []).outcome).toBe('broken');
    expect(judgeCheck(run(1, 'FAIL test/a.test.ts'), []).outcome).toBe('failed');
    expect(judgeCheck(run(2, "python3: can't open file 'x.py': [Errno 2] No such file or directory"), []).outcome).toBe('failed');
    expect(judgeCheck(run(0), []).outcome).toBe('passed');
    expect(judgeCheck(run(null), []).outcome).toBe('failed');
  });

  it("the shell's words for a command it cannot run are broken, even when a pipeline's exit status hides them", () => {
    for (const line of [
      '/bin/sh: 1: tesst: not found',
      'sh: line 1: tesst: command not found',
      'bash: ./run.sh: Permission denied',
      '/bin/sh: 1: ./tool: No such file or directory',
    ]) {
      const judged = judgeCheck(run(0, `${line}\n`), []);
      expect(judged.outcome, line).toBe('broken');
      expect(judged.reason, line).toMatch(/^the command `(\.\/)?(tesst|run\.sh|tool)` cannot run/);
    }
  });

  it('a command that a pending task creates is expected to be missing: not broken', () => {
    expect(judgeCheck(run(127, '/bin/sh: 1: ./bin/tool: not found'), ['bin/tool']).outcome).toBe('failed');
    expect(judgeCheck(run(127, '/bin/sh: 1: scripts/check.sh: not found'), ['scripts/']).outcome).toBe('failed');
    expect(judgeCheck(run(127, '/bin/sh: 1: ./bin/other: not found'), ['bin/tool']).outcome).toBe('broken');
  });

  it("a package manager's missing script is broken unless a pending task writes a package.json", () => {
    const npm = 'npm error Missing script: "lint"\nnpm error\nnpm error To see a list of scripts, run:';
    expect(judgeCheck(run(1, npm), []).reason).toBe('the package script "lint" does not exist (and no pending task writes a package.json)');
    expect(judgeCheck(run(1, 'npm ERR! missing script: lint'), []).outcome).toBe('broken');
    expect(judgeCheck(run(1, 'error Command "lint" not found.'), []).outcome).toBe('broken');
    expect(judgeCheck(run(1, npm), ['package.json']).outcome).toBe('failed');
    expect(judgeCheck(run(1, npm), ['packages/a/package.json']).outcome).toBe('failed');
  });

  it('a check that failed on a network call the sandbox refused is broken, with what to tell the person', () => {
    const refusal =
      'the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.checkNetwork does not list: add "registry.npmjs.org" to context.checkNetwork to allow it';
    const npm = 'npm error code E403\nnpm error 403 403 Forbidden - GET https://registry.npmjs.org/uvu\n';
    expect(judgeCheck(run(1, npm, { sandboxRefusal: refusal }), [])).toEqual({ outcome: 'broken', reason: refusal });
    // Without the adapter's reading (unsandboxed), the same words prove nothing.
    expect(judgeCheck(run(1, npm), []).outcome).toBe('failed');
    // A time-out is still a time-out.
    expect(judgeCheck(run(null, npm, { timedOut: true, sandboxRefusal: refusal }), []).outcome).toBe('timed-out');
  });

  it("a setup command's refusal replaces the general hint in the probe's findings", () => {
    const refusal =
      'the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.setupNetwork does not list: add "registry.npmjs.org" to context.setupNetwork to allow it';
    const setup = {
      command: 'npm ci',
      exitCode: 1,
      timedOut: false,
      passed: false,
      durationMs: 10,
      output: 'npm error 403 403 Forbidden - GET https://registry.npmjs.org/kleur',
      sandboxed: true,
    };
    const report = (s: typeof setup & { sandboxRefusal?: string }): ProbeReport => ({
      schemaVersion: 1,
      planKey: 'k',
      commit: null,
      startedAt: '2026-11-29T00:00:00Z',
      durationMs: 10,
      budget: { checkTimeoutSeconds: 1, timeoutSeconds: 1, exhausted: false, interrupted: false },
      setup: s,
      included: [],
      ...summarize([], s),
    });
    expect(probeFindings(report({ ...setup, sandboxRefusal: refusal })).problems).toEqual([
      `setup command \`npm ci\` exited 1: npm error 403 403 Forbidden - GET https://registry.npmjs.org/kleur (${refusal})`,
    ]);
    expect(probeFindings(report(setup)).problems[0]).toMatch(/\(it ran in the sandbox: .*context\.setupNetwork hosts\)$/);
  });

  it('a time-out and an interrupt decide nothing', () => {
    expect(judgeCheck(run(null, '', { timedOut: true }), []).outcome).toBe('timed-out');
    expect(judgeCheck(run(null, '', { aborted: true }), []).outcome).toBe('not-run');
  });
});

describe('taskVerdict', () => {
  it('broken beats proven beats vacuous; no checks is unchecked; no failure with gaps is undecided', () => {
    expect(taskVerdict(['failed', 'broken'])).toBe('broken');
    expect(taskVerdict(['passed', 'failed'])).toBe('proven');
    expect(taskVerdict(['passed', 'passed'])).toBe('vacuous');
    expect(taskVerdict([])).toBe('unchecked');
    expect(taskVerdict(['passed', 'timed-out'])).toBe('undecided');
    expect(taskVerdict(['failed', 'not-run'])).toBe('proven');
  });
});

describe('probeKey', () => {
  const plan = () => makePlan([fakeTask('a', { create: ['a'], acceptance: [{ criterion: 'a', check: 'test -f a' }] }), fakeTask('b', { create: ['b'] })]);
  it('changes with the pending checks, the setup command and what is pending; not with prompts', () => {
    const base = probeKey(plan());
    const prompt = plan();
    prompt.tasks[0]!.prompt = 'other words';
    expect(probeKey(prompt)).toBe(base);
    const checks = plan();
    checks.tasks[0]!.agent!.acceptanceCriteria![0]!.check = 'test -f b';
    expect(probeKey(checks)).not.toBe(base);
    expect(probeKey({ ...plan(), context: { setupCommand: 'npm ci' } })).not.toBe(base);
    const done = plan();
    done.tasks[0]!.status = 'completed';
    expect(probeKey(done)).not.toBe(base);
  });
});
