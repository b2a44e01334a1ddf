// `execute`: run a plan headless with real `claude -p` workers. This reads the flags
// (execute-flags.ts), checks that the run can start (a git repository, the Claude Code CLI, the
// sandbox, the plan's lock: execute-checks.ts), handles signals and prints; `--dry-run` is
// dry-run.ts's, the run itself run/headless/headless.ts's.

import { realpath } from 'node:fs/promises';
import {
  acquireLock,
  currentLockInfo,
  Git,
  gitProcessCount,
  killAllWorkers,
  type LockTakeover,
  newRunId,
  readLock,
  runWorker,
  type SandboxDecision,
  sandboxUse,
} from '../adapters/index.ts';
import { assertNever, type AuthStatus, describeSandboxUse, type Plan, type RunEventBody, sandboxedCommands, type SandboxUse } from '../core/index.ts';
import { HostLink, realRunAdapters, runHeadless, runLayout } from '../run/index.ts';
import type { Command, Io, Numbers } from './command.ts';
import { CliError, EXIT, type ExitCode } from './exit.ts';
import { findPlan, loadPlanFile, planPathFrom, repositoryTop } from './load.ts';
import { createReporter, type Reporter } from './reporter.ts';
import { hostsOf, limiterAccounts } from './host-flags.ts';
import { executeOptions, type Settings, settingsFrom } from './execute-flags.ts';
import { checkWorkerRules, hostsChecked, lockedError, readyToRun, refusalError } from './execute-checks.ts';
import { dryRun } from './dry-run.ts';

export const executeCommand: Command = {
  name: 'execute',
  summary:
    'Run the plan with parallel Claude Code workers, each in a git worktree of its own: verify, retry, integrate verified work, land it on your branch, resume after any stop.',
  usage: '[options]',
  options: executeOptions,
  run: (args, io) => execute(args.values, args.numbers, io),
};

/** Whether two paths name the same file (through symlinks); null names none. */
const samePath = async (one: string | null, other: string): Promise<boolean> =>
  one !== null && (await realpath(one).catch(() => one)) === (await realpath(other).catch(() => other));

/** What the run's sandbox line says: its checks, setup command, gate and workers, under `decision` (as the run finds it). */
const runSandboxUse = (plan: Plan, settings: Settings, decision: SandboxDecision): Promise<SandboxUse> =>
  sandboxUse(settings.sandbox, plan, sandboxedCommands(plan.context, { gate: settings.gate !== null, workers: true }), decision);

/** The settings from the flags, the repository and the plan settled, what the run needs checked; then its dry run, or the run. */
async function execute(values: Record<string, unknown>, numbers: Numbers, io: Io): Promise<ExitCode> {
  const gitProcessesBefore = gitProcessCount();
  const settings = settingsFrom(values, numbers, io);
  useHosts(settings, await hostsOf(values, numbers.concurrency, io));
  const top = await settleRepository(settings, typeof values.plan === 'string');
  const loaded = await loadPlanFile(settings.planPath);
  const plan = loaded.plan;
  settleGate(settings, plan);
  const git = await openRepository(settings.repo, top);
  await checkWorkerRules(plan, settings);
  const { claudeBin, decision, login } = await readyToRun(plan, settings, io);
  // The run's sandbox line, as the run finds it: the dry run shows it as a setting.
  const sandbox = await runSandboxUse(plan, settings, decision);
  const sandboxed = decision.sandboxed;
  // The dry run reads the lock where the run takes it: the same refusal, nothing written.
  const lockNow = await readLock(settings.planPath);
  if (lockNow.state === 'live' || lockNow.state === 'foreign') throw lockedError(lockNow.holder);
  if (settings.dryRun) return dryRun(plan, settings, sandbox, git, io, sandboxed);
  return runPlan({ plan, planText: loaded.text, settings, claudeBin, login, sandbox, sandboxed, git, gitProcessesBefore }, io);
}

/** The hosts and the concurrency they allow, once `--host`/`--hosts` are read and again once each host is checked. */
function useHosts(settings: Settings, chosen: Pick<Settings, 'hosts' | 'concurrency'> | null): void {
  if (chosen === null) return;
  settings.hosts = chosen.hosts;
  settings.concurrency = chosen.concurrency;
}

/**
 * As git finds its repository: the one holding --repo DIR (or the current folder), worked in at
 * its top, and the plan found from DIR up to that top (`--plan FILE`, `planGiven`, is relative to
 * DIR). The top, or null when DIR is in no repository.
 */
async function settleRepository(settings: Settings, planGiven: boolean): Promise<string | null> {
  const top = await repositoryTop(settings.repo);
  if (!planGiven) settings.planPath = await findPlan(settings.repo, top);
  if (top !== null) settings.repo = top;
  return top;
}

/** The gate, once the plan is read: `--gate`'s command, else the plan's test command; none with `--no-gate`. */
function settleGate(settings: Settings, plan: Plan): void {
  const testCommand = typeof plan.context?.testCommand === 'string' && plan.context.testCommand.trim() !== '' ? plan.context.testCommand : undefined;
  const gateCommand = settings.gateFlags.off ? undefined : (settings.gateFlags.command ?? testCommand);
  settings.gate = gateCommand === undefined ? null : { command: gateCommand, batchSize: settings.gateFlags.batchSize, timeoutMs: settings.gateFlags.timeoutMs };
}

/** The repository the run works in; exit 2 when `repo` is in none (`top` null). */
async function openRepository(repo: string, top: string | null): Promise<Git> {
  const git = new Git(repo);
  if (top === null || !(await git.isRepo()))
    throw new CliError(EXIT.invalid, [`${repo} is not in a git repository (foreman commits each round; run \`git init\` first)`]);
  return git;
}

/** What a run starts from once everything before it is checked. */
interface CheckedRun {
  /** This machine's CLI login (null: not asked): the account of the run's own limiter. */
  login: AuthStatus | null;
  plan: Plan;
  /** The plan file's text, as read. */
  planText: string;
  settings: Settings;
  /** The Claude Code CLI, as found. */
  claudeBin: string;
  sandbox: SandboxUse;
  sandboxed: boolean;
  git: Git;
  /** Git processes run before this run: the run counts its own. */
  gitProcessesBefore: number;
}

/** The run itself: its hosts reached and every channel to them closed however the run ends (a refusal, an exception before it starts, an interrupt). */
async function runPlan(checked: CheckedRun, io: Io): Promise<ExitCode> {
  // Each ssh host reached and checked before anything starts; its channel kept for the run.
  const hostRun = await hostsChecked(checked.settings, checked.sandboxed, io, false);
  useHosts(checked.settings, hostRun);
  if (hostRun !== null) checked.settings.hostAccounts = limiterAccounts(checked.login, hostRun.checked);
  const links = (hostRun?.checked ?? []).flatMap((host) => (host.leftOut === null ? [new HostLink(host.host, host.channel, io.env)] : []));
  try {
    return await runLocked(checked, links, hostRun?.leftOut ?? [], io);
  } finally {
    await Promise.all(links.map((link) => link.close()));
  }
}

/** The run under the plan's lock: signals heard, its events reported; all let go at the end, however it ends. */
async function runLocked(checked: CheckedRun, links: readonly HostLink[], hostsLeftOut: readonly string[], io: Io): Promise<ExitCode> {
  const { plan, settings, sandbox, sandboxed } = checked;
  const runId = newRunId();
  const lock = await acquireLock(settings.planPath, currentLockInfo('execute'));
  if (!lock.ok) throw lockedError(lock.error.holder);
  let reporter: Reporter | null = null;
  let signals: ReturnType<typeof listenForSignals> | null = null;
  try {
    const adapters = realRunAdapters({ repo: settings.repo, planPath: settings.planPath, git: checked.git, env: io.env }, runWorker, [...links]);
    const named = await namedInCommands(settings, io.cwd);
    const opened = createReporter({ io, json: settings.json, runId, journal: adapters.journal, plan, layout: runLayout(named, settings) });
    reporter = opened;
    const emit = (event: RunEventBody) => opened.emit(event);
    for (const message of startWarnings(lock.value.takenOver, hostsLeftOut)) emit({ type: 'notice', level: 'warning', message });
    const heard = listenForSignals(emit, () => lock.value.release());
    signals = heard;
    const run = await runHeadless(
      plan,
      { ...settings, claudeBin: checked.claudeBin, noGate: settings.gateFlags.off },
      {
        planText: checked.planText,
        env: io.env,
        sandboxed,
        // Said once, at the start: whether checks, the setup command, the gate and the workers run sandboxed, and with what network.
        sandboxNotice: { type: 'notice', level: sandbox.unavailable === null ? 'info' : 'warning', message: describeSandboxUse(sandbox), sandbox },
        interrupt: heard.interrupt,
        drain: heard.drain,
        emit,
        record: (event) => opened.record(event),
        // The probe's first line is said at once, but not with --json: its stdout is events only.
        say: settings.json ? null : (line) => io.out(line),
        gitProcessesBefore: checked.gitProcessesBefore,
        nameThePlan: named.plan,
        nameTheRepo: named.repo,
      },
      adapters,
    );
    if (!run.ok) throw refusalError(run.error);
    opened.summary(run.value.plan, run.value.usage, run.value.next);
    // The gate failed on the starting commit: the run was refused, as `plan setup` refuses it.
    if (run.value.refusal !== null) throw new CliError(EXIT.invalid, run.value.refusal);
    return run.value.finished.exitCode as ExitCode;
  } finally {
    // The hosts let go of the plan's folders there before the plan's lock here is released.
    await Promise.all(links.map((link) => link.close()));
    await reporter?.close();
    await lock.value.release();
    signals?.stop();
  }
}

/** Whether the commands the run prints name the plan and the repository: only where, typed where the person is, they would miss them. */
async function namedInCommands(settings: Settings, cwd: string): Promise<{ plan: boolean; repo: boolean }> {
  // `plan …` where the person is would find another plan (or none): printed commands name this one, and its repository.
  const plan = !(await samePath(await planPathFrom({}, cwd).catch(() => null), settings.planPath));
  // Git takes paths relative to where it is typed: from anywhere but the top, printed git commands name the repository.
  const repo = !(await samePath(cwd, settings.repo));
  return { plan, repo };
}

/** The warnings a run starts with: a lock taken over, hosts left out. */
function startWarnings(takenOver: LockTakeover | undefined, leftOut: readonly string[]): string[] {
  return [...(takenOver ? [describeTakeover(takenOver)] : []), ...leftOut];
}

/**
 * SIGTERM (what `plan drain` sends) drains: nothing new starts, what runs finishes and lands.
 * A second SIGTERM, or SIGINT / SIGHUP at any time, interrupts; one more exits at once. The
 * handlers stay until `stop`: a second Ctrl-C while the run winds up still exits 130.
 */
function listenForSignals(
  emit: (event: RunEventBody) => void,
  releaseLock: () => Promise<unknown>,
): { interrupt: AbortSignal; drain: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  const draining = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signal === 'SIGTERM' && !draining.signal.aborted && signals === 0) {
      draining.abort();
      return;
    }
    signals++;
    if (signals === 1) {
      emit({ type: 'interrupted', signal });
      controller.abort();
      return;
    }
    // A second interrupt: no more waiting. Kill every worker group and leave; resume will clean up.
    killAllWorkers(0);
    void releaseLock().finally(() => process.exit(EXIT.interrupted));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  const stop = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  };
  return { interrupt: controller.signal, drain: draining.signal, stop };
}

/** The notice for a lock taken over from a run that is gone. */
export function describeTakeover(takeover: LockTakeover): string {
  const { previous } = takeover;
  switch (takeover.reason) {
    case 'dead-process':
    case 'pid-reused':
      if (previous === null) return 'took over a stale lock';
      return `took over a stale lock left by pid ${previous.pid} (started ${previous.startedAt}), ${takeover.reason === 'dead-process' ? 'which is no longer running' : 'a pid that now belongs to another process'}`;
    case 'unparseable':
      return 'replaced an unreadable lock file (left by a crash)';
    default:
      return assertNever(takeover.reason, 'lock takeover');
  }
}
