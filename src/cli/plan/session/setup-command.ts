// `plan setup`: start a session's run (run/session/session.ts `sessionSetup`) with its settings and sandbox
// decision; a gate that fails on the starting commit refuses as a headless run does.

import { decideSandbox, type Git, sandboxModeOf } from '../../../adapters/index.ts';
import { DEFAULTS, type SessionSandbox, sessionSetup } from '../../../run/index.ts';
import { baselineRefusal, type Notice } from '../../../core/index.ts';
import { RANGES } from '../../numeric-flags.ts';
import { EXIT, usageError } from '../../exit.ts';
import { describeSetupProblem } from '../../setup-problem.ts';
import { gateCommandOf, gateOptions } from '../../gate-flags.ts';
import { millisecondsOf, stepCommand, StepError, str, waitOption } from './step-command.ts';

/**
 * What a step that stops had to say before it did (a gate run started again, a person's edit of
 * the plan kept aside): the error's last `details`, one line each, as its output would have had them.
 */
export const noticeLines = (notices: readonly Notice[]): string[] => notices.map((notice) => `${notice.level}: ${notice.message}`);

/** The gate failed on the starting commit (`failedOn`: the integration ref and the tip it ran on): the same refusal as a headless run. */
export async function refuseBaseline(
  ctx: { git: Git },
  command: string,
  failedOn: { ref: string; tip: string },
  output: string,
  notices: readonly Notice[],
): Promise<never> {
  const tested = { ...failedOn, head: await ctx.git.headCommit() };
  throw new StepError(EXIT.invalid, 'baseline-failed', [...baselineRefusal(command, tested, output), ...noticeLines(notices)]);
}

export const setup = stepCommand({
  name: 'setup',
  summary:
    'For /execute: validate the plan, set up its integration ref, clean up after an interrupted session, check blocking assumptions, integrate and land verified work an earlier session left. JSON out.',
  usage:
    '[--repo DIR] [--plan FILE] [--concurrency N] [--max-attempts N] [--check-timeout SECONDS] [--gate CMD | --no-gate] [--gate-batch N] [--gate-timeout SECONDS] [--speculate N | --no-speculate] [--wait SECONDS] [--sandbox MODE] [--strict-scope]',
  options: {
    concurrency: { type: 'string', valueName: 'N', description: `workers at once for this session (default ${DEFAULTS.concurrency})`, range: RANGES.workers },
    'max-attempts': {
      type: 'string',
      valueName: 'N',
      description: `attempts per task, retries included (default ${DEFAULTS.maxAttempts})`,
      range: RANGES.attempts,
    },
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of each acceptance or assumption command (default ${DEFAULTS.checkTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    ...gateOptions({ integrates: 'as soon as plan commit sees it', ended: '' }),
    speculate: {
      type: 'string',
      valueName: 'N',
      description:
        "as execute's; in a session a subagent starts from HEAD, so a dependant always waits for its blockers' work to land (the output's speculate.depth is 0, and a notice says so when more is asked)",
      range: RANGES.speculate,
    },
    'no-speculate': { type: 'boolean', description: 'a dependant waits for its blockers to land (what a session always does)' },
    'strict-scope': {
      type: 'boolean',
      description:
        "as execute's: a change outside a task's declared files fails its attempt (default: it is set aside, never integrated, and the acceptance checks decide)",
    },
    ...waitOption,
    sandbox: {
      type: 'string',
      valueName: 'MODE',
      description: `auto: run the checks, the gate and each worker's Bash commands in the operating-system sandbox where it works, and say once when it cannot (then a worker's commands ask you); on: refuse without it (exit 3); off: never (default: FOREMAN_SANDBOX, else ${DEFAULTS.sandbox})`,
    },
  },
  async prepare(values, _cwd, env): Promise<{ gate: string | undefined; sandbox: SessionSandbox }> {
    const gate = gateCommandOf(values);
    if (values.speculate !== undefined && values['no-speculate'] === true) throw usageError('--speculate and --no-speculate contradict each other: choose one');
    const mode = sandboxModeOf(str(values.sandbox), env);
    if (!mode.ok) throw usageError(mode.error);
    const decided = await decideSandbox(mode.value);
    if (!decided.ok) throw new StepError(EXIT.cannotRun, 'sandbox-unavailable', [decided.error]);
    return { gate, sandbox: { mode: mode.value, ...decided.value } };
  },
  async step({ values, numbers, plan, ctx }, { gate, sandbox }) {
    const setupResult = await sessionSetup(plan, ctx, {
      concurrency: numbers.concurrency,
      maxAttempts: numbers['max-attempts'],
      checkTimeoutMs: millisecondsOf(numbers['check-timeout']),
      ...(gate !== undefined ? { gate } : {}),
      noGate: values['no-gate'] === true,
      gateBatch: numbers['gate-batch'],
      gateTimeoutMs: millisecondsOf(numbers['gate-timeout']),
      waitMs: millisecondsOf(numbers.wait),
      sandbox,
      ...(values['no-speculate'] === true ? { speculate: 0 } : numbers.speculate !== undefined ? { speculate: numbers.speculate } : {}),
      ...(values['strict-scope'] === true ? { strictScope: true } : {}),
    });
    if (setupResult.ok && setupResult.value.gate.baseline === 'failed') {
      const report = setupResult.value.gate;
      // Only setup's own baseline run can have failed (a session starts afresh): its report names what it ran on.
      if (report.failedOn === undefined) throw new Error('plan setup: the baseline failed, and the gate report does not say on what');
      await refuseBaseline(ctx, report.command ?? '', report.failedOn, report.output ?? '', setupResult.value.notices);
    }
    if (setupResult.ok) return setupResult.value;
    // As `execute` refuses it: the same exit code and lines.
    const problem = describeSetupProblem(setupResult.error);
    throw new StepError(problem.code, problem.kind, problem.lines);
  },
});
