// `plan.ts probe`: run every pending task's acceptance checks before any work, in a checkout
// of the last commit of its own, and report broken checks and vacuous tasks (src/run/probe.ts).

import { dirname } from 'node:path';
import { acquireLock, currentLockInfo, decideSandbox, describeOrphans, Git, ownSandboxNotice, sandboxModeOf, sandboxUse } from '../../adapters/index.ts';
import {
  DEFAULTS,
  describeProbeProblem,
  LIMIT_FLAGS,
  planRepositoryProblem,
  planWarningNotices,
  realRunAdapters,
  runProbe,
  saveProbe,
} from '../../run/index.ts';
import {
  assertNever,
  describeSandboxUse,
  formatDuration,
  oneLine,
  probeFindings,
  probeHeadline,
  type ProbeReport,
  sandboxedCommands,
} from '../../core/index.ts';
import { describeSetupProblem, lockedLine } from '../setup-problem.ts';
import { table } from '../../ui/index.ts';
import type { Command, Io } from '../command.ts';
import { RANGES } from '../numeric-flags.ts';
import { CliError, EXIT, type ExitCode, gitFailedError, usageError } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export const probe: Command = {
  name: 'probe',
  summary:
    "Run every pending task's acceptance checks before any work, in a checkout of the last commit of its own (prepared with context.setupCommand): report broken checks (the command cannot run) and vacuous tasks (every check passes already). It first refuses what `plan check` refuses of the plan on the repository, in its words and exit code. Exit 0 when there are none, 1 when there are. The result is kept in .design/probe.json for `plan summary`.",
  usage: '[--plan FILE] [--json] [--check-timeout SECONDS] [--timeout SECONDS] [--sandbox MODE]',
  options: {
    ...planOption,
    ...jsonOption,
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of each check (default ${DEFAULTS.checkTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    timeout: {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of the whole probe, the setup command included (default ${DEFAULTS.probeTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    sandbox: {
      type: 'string',
      valueName: 'MODE',
      description: `auto: run the setup command and the checks in the operating-system sandbox where it works (the result says whether they did, and with what network); on: refuse without it (exit 3); off: never (default: FOREMAN_SANDBOX, else ${DEFAULTS.sandbox})`,
    },
  },
  async run({ values, numbers }, io) {
    const checkTimeoutMs = (numbers['check-timeout'] ?? DEFAULTS.checkTimeoutMs / 1000) * 1000;
    const timeoutMs = (numbers.timeout ?? DEFAULTS.probeTimeoutMs / 1000) * 1000;
    const mode = sandboxModeOf(str(values.sandbox), io.env);
    if (!mode.ok) throw usageError(mode.error);
    const path = await planPathFrom(values, io.cwd);
    const plan = await loadPlan(path);
    const git = new Git(dirname(path));
    if (!(await git.isRepo())) throw new CliError(EXIT.invalid, [`${dirname(path)} is not in a git repository: the probe checks out the last commit`]);
    const top = await git.root();
    if (!top.ok) throw gitFailedError('find the top of the repository', top.error);
    const repo = top.value;
    // What `plan check` and every run refuse of this plan on this repository's last commit (no
    // commit, a directory declared as a file, …) the probe refuses too, in the same words and code.
    const committed = await git.committedFiles();
    const problem = await planRepositoryProblem(plan, repo, git, committed);
    if (problem !== null) {
      const described = describeSetupProblem(problem);
      throw new CliError(described.code, described.lines);
    }
    // A check that needs a file nothing makes fails before the work, so the probe counts it as
    // proving the task; the lint says why it will never pass.
    for (const notice of planWarningNotices(plan, path, committed, 'missing-check-file')) io.err(`plan probe: ${notice}`);

    // The lock keeps the probe's records in .design/workers.json from clobbering a run's.
    const lock = await acquireLock(path, currentLockInfo('plan probe'));
    if (!lock.ok) throw new CliError(EXIT.cannotRun, [lockedLine(lock.error.holder)]);
    const controller = new AbortController();
    const onSignal = () => controller.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
    // Its checks are recorded while they run, as a run's are, so a run after a crash ends them.
    const { processes, commands } = realRunAdapters({ repo, planPath: path, git, env: io.env });
    try {
      const orphans = await processes.endLeftovers();
      if (orphans.length > 0) io.err(describeOrphans(orphans));
      const sandbox = await decideSandbox(mode.value);
      if (!sandbox.ok) throw new CliError(EXIT.cannotRun, [`plan probe ${sandbox.error}`]);
      const unheld = sandbox.value.sandboxed ? await ownSandboxNotice(repo) : null;
      if (unheld !== null) io.err(`plan probe: ${unheld}`);
      const probed = await runProbe(plan, {
        repo,
        checkTimeoutMs,
        timeoutMs,
        timeoutFlag: LIMIT_FLAGS.planProbe,
        env: io.env,
        signal: controller.signal,
        commands,
        sandbox: sandbox.value.sandboxed,
      });
      if (!probed.ok) throw new CliError(EXIT.cannotRun, [`plan probe: ${describeProbeProblem(probed.error)}`]);
      // Whether its setup command and checks ran sandboxed, and with what network: said with the result, once.
      const report = {
        ...probed.value,
        sandbox: await sandboxUse(mode.value, plan, sandboxedCommands(plan.context, { gate: false, workers: false }), sandbox.value),
      };
      if (controller.signal.aborted) {
        io.err('plan probe: interrupted; its checkout was removed and nothing was stored');
        return EXIT.interrupted;
      }
      await saveProbe(path, report);
      if (values.json === true) io.out(JSON.stringify(report, null, 2));
      else io.out(renderProbe(report, io));
      return probeExitCode(report);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.off('SIGHUP', onSignal);
      await processes.forget();
      await lock.value.release();
    }
  },
};

/** 0 when nothing is broken or vacuous (and the setup command worked), 1 otherwise. */
export function probeExitCode(report: ProbeReport): ExitCode {
  switch (report.verdict) {
    case 'ok':
      return EXIT.ok;
    case 'problems':
    case 'setup-failed':
      return EXIT.incomplete;
    default:
      return assertNever(report.verdict, 'probe verdict');
  }
}

/** The table for people: one row per check, then what to fix and what is only information. */
export function renderProbe(report: ProbeReport, io: Pick<Io, 'columns'>): string {
  const rows = report.tasks.flatMap((t) =>
    t.checks.length === 0
      ? [[String(t.index), t.verdict, '-', '(no acceptance checks)', '']]
      : t.checks.map((c, k) => [
          k === 0 ? String(t.index) : '',
          k === 0 ? t.verdict : '',
          c.outcome,
          oneLine(c.check, 200),
          c.outcome === 'not-run' ? '' : formatDuration(c.durationMs),
        ]),
  );
  const lines = [probeHeadline(report)];
  if (report.sandbox !== undefined) lines.push(describeSandboxUse(report.sandbox));
  if (report.setup) lines.push(`setup: \`${report.setup.command}\` ${report.setup.passed ? 'ok' : 'FAILED'} (${formatDuration(report.setup.durationMs)})`);
  if (report.included.length > 0) lines.push(`copied from .worktreeinclude: ${report.included.join(', ')}`);
  if (rows.length > 0)
    lines.push('', table(['task', 'verdict', 'check', 'command', 'time'], rows, { maxWidth: Math.max(60, io.columns), shrink: [{ column: 3 }] }));
  const { problems, information } = probeFindings(report);
  if (problems.length > 0) lines.push('', 'To fix:', ...problems.map((p) => `  - ${p}`));
  if (information.length > 0) lines.push('', 'For information:', ...information.map((p) => `  - ${p}`));
  const broken = report.tasks.flatMap((t) =>
    t.checks
      .filter((c) => c.outcome === 'broken' && c.output !== '')
      .map((c) => `  task ${t.index}, \`${oneLine(c.check, 120)}\`: ${oneLine(c.output.split('\n').slice(-3).join(' '), 300)}`),
  );
  if (broken.length > 0) lines.push('', 'What the broken checks printed (the end):', ...broken);
  return lines.join('\n');
}
