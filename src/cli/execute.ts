// `execute`: run a plan headless with real `claude -p` workers. This parses the flags, checks
// that the run can start (a git repository, the Claude Code CLI, the sandbox, the plan's lock),
// handles signals and prints; the run itself is run/headless.ts's.

import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { authStatus } from '../adapters/claude-auth.ts';
import { findExecutable } from '../adapters/executables.ts';
import { Git } from '../adapters/git/repository.ts';
import { gitProcessCount } from '../adapters/git/runner.ts';
import { type LockInfo, type LockTakeover, acquireLock, currentLockInfo, readLock } from '../adapters/run-lock.ts';
import { killAllWorkers } from '../adapters/worker.ts';
import { type SandboxDecision, type SandboxMode, decideSandbox, sandboxModeOf, sandboxUse } from '../adapters/sandbox.ts';
import { type AuthStatus, notLoggedInLines } from '../core/auth-status.ts';
import type { RunEventBody } from '../core/events.ts';
import { newRunId } from '../adapters/journal.ts';
import { assertNever } from '../core/failure.ts';
import { type Plan, statusOf } from '../core/plan.ts';
import { lintPlan } from '../core/plan-lint.ts';
import { planPermissions } from '../core/scope.ts';
import { type SandboxUse, describeSandboxUse, sandboxedCommands } from '../core/sandbox-words.ts';
import { SCHEDULE_POLICIES, type SchedulePolicy } from '../core/schedule.ts';
import { runWorker } from '../adapters/worker.ts';
import { realRunAdapters } from '../run/adapters.ts';
import { type HeadlessRefusal, runHeadless, runLayout } from '../run/headless.ts';
import { LAND_POLICIES, type LandPolicy, type RunSettings, DEFAULTS } from '../run/settings.ts';
import type { Command, Io, Numbers } from './command.ts';
import { RANGES, parseNumber } from './numeric-flags.ts';
import { CliError, EXIT, type ExitCode, usageError } from './exit.ts';
import { findPlan, loadPlanFile, planPathFrom, repositoryTop } from './load.ts';
import { createReporter } from './reporter.ts';
import { describeDryRun, dryRunEvents, workerRulesShown } from './dry-run.ts';
import { describeSetupProblem, lockedLine } from './setup-problem.ts';
import { type SetupProblem, refusalBeforeWork } from '../run/refusals.ts';
import { uncommittedChangesNotice } from '../adapters/git/uncommitted.ts';
import { gateCommandOf, gateOptions } from './gate-flags.ts';
import { checkResults, checkedHosts, hostOptions, hostSandboxNotice, hostsListed, hostsOf, limiterAccounts } from './host-flags.ts';
import { HostLink } from '../run/hosts.ts';
import { objectFormatOf } from '../run/workspace/host.ts';

export const PERMISSION_MODES = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'manual', 'plan'];

export const executeCommand: Command = {
  name: 'execute',
  summary:
    'Run the plan with parallel Claude Code workers, each in a git worktree of its own: verify, retry, integrate verified work, land it on your branch, resume after any stop.',
  usage: '[options]',
  options: {
    repo: {
      type: 'string',
      valueName: 'DIR',
      description: 'a folder of the repository to work in, which foreman works in at its top, as git finds it (default: the current folder)',
    },
    plan: {
      type: 'string',
      valueName: 'FILE',
      description: 'the plan, relative to DIR (default: .design/plan.json in DIR or the nearest folder above it in the repository, else at its top)',
    },
    'claude-bin': { type: 'string', valueName: 'PATH', description: 'the Claude Code CLI (default: $CLAUDE_BIN, else `claude` on PATH)' },
    concurrency: {
      type: 'string',
      valueName: 'N',
      description: `workers at once (default ${DEFAULTS.concurrency}; with hosts, their slots together, which it may lower but not exceed)`,
      range: RANGES.workers,
    },
    ...hostOptions,
    'task-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `a worker's time limit; its whole process group is killed (default ${DEFAULTS.taskTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    'max-attempts': {
      type: 'string',
      valueName: 'N',
      description: `attempts per task, retries included (default ${DEFAULTS.maxAttempts})`,
      range: RANGES.attempts,
    },
    'permission-mode': {
      type: 'string',
      valueName: 'MODE',
      description: `passed to every worker (default ${DEFAULTS.permissionMode}; one of ${PERMISSION_MODES.join(', ')})`,
    },
    'allowed-tools': {
      type: 'string',
      valueName: 'LIST',
      description:
        "permission rules every worker gets instead of the computed ones, space or comma separated (default, per task: Read Glob Grep, Edit(<path>) for exactly the task's declared files, Bash(<command>) for the test/build commands and the task's acceptance checks)",
    },
    schedule: {
      type: 'string',
      valueName: 'POLICY',
      description:
        'continuous: start a task the moment its blockers finish, integrate work as it is verified; rounds: run the ready set as a round, integrate once per round (default continuous)',
    },
    ...gateOptions({ integrates: 'as soon as it is verified', ended: '; its process group is ended' }),
    speculate: {
      type: 'string',
      valueName: 'N',
      description: `with a gate: a task whose blockers are candidates in the merge queue starts on them, up to N levels deep; cancelled if one is blamed (default ${DEFAULTS.speculate})`,
      range: RANGES.speculate,
    },
    'no-speculate': { type: 'boolean', description: 'a task waits for its blockers to integrate (the same as --speculate 0)' },
    land: {
      type: 'string',
      valueName: 'WHEN',
      description: `end: land integrated work on your branch when the run stops; continuous: also after every integration (default ${DEFAULTS.land})`,
    },
    'max-cost-usd': { type: 'string', valueName: 'N', description: "stop starting work once the run's cost reaches N dollars", range: RANGES.dollars },
    'task-budget-usd': {
      type: 'string',
      valueName: 'N',
      description: 'per-worker spend cap (--max-budget-usd) for tasks that set no agent.maxBudgetUsd',
      range: RANGES.dollars,
    },
    'limit-wait': {
      type: 'string',
      valueName: 'SECONDS',
      description: `the longest the run waits for a rate or usage limit to lift (a usage limit's reset), or for the API to answer when it is out of reach, or (with hosts) for one when every host is down; past it, it drains and stops (exit 75), saying when to run again; 0: wait for none (default ${DEFAULTS.limitWaitMs / 1000}, 5 hours)`,
      range: RANGES.limitWait,
    },
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of each acceptance or assumption command, and of the setup command in a worktree; its process group is ended (default ${DEFAULTS.checkTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    sandbox: {
      type: 'string',
      valueName: 'MODE',
      description: `auto: run checks, the setup command, the gate and workers' Bash in the operating-system sandbox where it works (the run says once whether they do, and with what network); on: refuse to run without it (exit 3); off: never (default ${DEFAULTS.sandbox})`,
    },
    'dry-run': {
      type: 'boolean',
      description:
        "validate, refuse what the run would refuse before its first worker (with its exit code and line), print the settings, the rounds, every command the plan would run, the permission rules of each task it would start and the run's warnings (with --json: as events); start and write nothing",
    },
    'no-commit': { type: 'boolean', description: 'land integrated work in your files as uncommitted changes instead of commits on your branch' },
    'no-probe': { type: 'boolean', description: "skip the probe of the pending tasks' acceptance checks at setup" },
    strict: { type: 'boolean', description: 'refuse to run (exit 2) when the probe finds a vacuous task (every check passes before the work)' },
    widen: {
      type: 'string',
      valueName: 'PATTERNS',
      description:
        "let the run add to a task's declared files what an attempt showed it needs (refused, or changed and set aside), when the path matches one of these patterns (space or comma separated, git's wildmatch: 'src/**'), is a file the repository has, lies outside .design/, .git/ and .claude/, and no other task not yet landed declares it; once per task per run, no attempt counted (default: never)",
    },
    'strict-scope': {
      type: 'boolean',
      description: "a change outside a task's declared files fails its attempt (default: it is set aside, never integrated, and the acceptance checks decide)",
    },
    'probe-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of the whole probe at setup, its setup command included; each check has --check-timeout (default ${DEFAULTS.probeTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    json: { type: 'boolean', description: 'one JSON event per line on stdout (with --dry-run too)' },
  },
  run: (args, io) => execute(args.values, args.numbers, io),
};

/** The run's settings (declared once, in `run/settings.ts`) and what only the CLI needs. */
interface Settings extends RunSettings {
  /** What the flags say of the gate; `gate` itself is settled once the plan is read. */
  gateFlags: { command: string | undefined; off: boolean; batchSize: number; timeoutMs: number };
  sandbox: SandboxMode;
  dryRun: boolean;
  json: boolean;
  /** Probe the pending tasks' acceptance checks at setup. */
  probe: boolean;
  /** Refuse vacuous tasks instead of warning about them. */
  strict: boolean;
  probeTimeoutMs: number;
}

function settingsFrom(values: Record<string, unknown>, numbers: Numbers, io: Io): Settings {
  const str = (key: string) => (typeof values[key] === 'string' ? (values[key] as string) : undefined);
  const repo = resolve(io.cwd, str('repo') ?? '.');
  const permissionMode = str('permission-mode') ?? DEFAULTS.permissionMode;
  if (!PERMISSION_MODES.includes(permissionMode)) throw usageError(`--permission-mode expects one of ${PERMISSION_MODES.join(', ')}, got "${permissionMode}"`);
  const schedule = (str('schedule') ?? DEFAULTS.schedule) as SchedulePolicy;
  if (!SCHEDULE_POLICIES.includes(schedule)) throw usageError(`--schedule expects one of ${SCHEDULE_POLICIES.join(', ')}, got "${schedule}"`);
  const tools = str('allowed-tools');
  // `FOREMAN_SANDBOX` is the default, checked like the flag.
  const sandboxMode = sandboxModeOf(str('sandbox'), io.env);
  if (!sandboxMode.ok) throw usageError(sandboxMode.error);
  const sandbox = sandboxMode.value;
  const land = (str('land') ?? DEFAULTS.land) as LandPolicy;
  if (!LAND_POLICIES.includes(land)) throw usageError(`--land expects one of ${LAND_POLICIES.join(', ')}, got "${land}"`);
  const checkTimeoutMs = seconds(numbers['check-timeout']) ?? DEFAULTS.checkTimeoutMs;
  const gateCommand = gateCommandOf(values);
  if (numbers.speculate !== undefined && values['no-speculate'] === true) throw usageError('--speculate and --no-speculate contradict each other: choose one');
  const gateFlags = {
    command: gateCommand,
    off: values['no-gate'] === true,
    batchSize: numbers['gate-batch'] ?? DEFAULTS.gateBatch,
    timeoutMs: seconds(numbers['gate-timeout']) ?? checkTimeoutMs,
  };
  return {
    gateFlags,
    gate: null,
    sandbox,
    land,
    repo,
    planPath: resolve(repo, str('plan') ?? '.design/plan.json'),
    claudeBin: str('claude-bin') ?? io.env.CLAUDE_BIN ?? 'claude',
    concurrency: numbers.concurrency ?? DEFAULTS.concurrency,
    taskTimeoutMs: seconds(numbers['task-timeout']) ?? DEFAULTS.taskTimeoutMs,
    maxAttempts: numbers['max-attempts'] ?? DEFAULTS.maxAttempts,
    permissionMode,
    allowedTools: tools === undefined ? undefined : tools.split(/[\s,]+(?![^(]*\))/).filter(Boolean),
    schedule,
    maxCostUsd: numbers['max-cost-usd'],
    taskBudgetUsd: numbers['task-budget-usd'],
    checkTimeoutMs,
    // Checked like a flag: a typo must not silently turn the back-off off.
    backoffMs: parseNumber('FOREMAN_BACKOFF_MS', io.env.FOREMAN_BACKOFF_MS, RANGES.backoffMs) ?? DEFAULTS.backoffMs,
    limitWaitMs: seconds(numbers['limit-wait']) ?? DEFAULTS.limitWaitMs,
    speculate: values['no-speculate'] === true ? 0 : (numbers.speculate ?? DEFAULTS.speculate),
    dryRun: values['dry-run'] === true,
    commit: values['no-commit'] !== true,
    strictScope: values['strict-scope'] === true,
    ...(str('widen') !== undefined ? { widen: widenPatterns(str('widen')!) } : {}),
    json: values.json === true,
    probe: values['no-probe'] !== true,
    strict: values.strict === true,
    probeTimeoutMs: seconds(numbers['probe-timeout']) ?? DEFAULTS.probeTimeoutMs,
  };
}

const seconds = (value: number | undefined): number | undefined => (value === undefined ? undefined : value * 1000);

/** Whether two paths name the same file (through symlinks); null names none. */
const samePath = async (one: string | null, other: string): Promise<boolean> =>
  one !== null && (await realpath(one).catch(() => one)) === (await realpath(other).catch(() => other));

/** `--widen`'s patterns: repository paths with wildmatch's `*`, `**`, `?`, `[…]`; none may leave the repository. */
function widenPatterns(value: string): string[] {
  const patterns = value.split(/[\s,]+/).filter(Boolean);
  if (patterns.length === 0) throw usageError("--widen: no pattern given (e.g. --widen 'src/**')");
  const bad = patterns.find((pattern) => pattern.startsWith('/') || pattern.split('/').includes('..'));
  if (bad !== undefined) throw usageError(`--widen: "${bad}" is not a pattern of repository paths (relative to its top, without ..)`);
  return patterns;
}

/** What the run's sandbox line says: its checks, setup command, gate and workers, under `decision` (as the run finds it). */
const runSandboxUse = (plan: Plan, settings: Settings, decision: SandboxDecision): Promise<SandboxUse> =>
  sandboxUse(settings.sandbox, plan, sandboxedCommands(plan.context, { gate: settings.gate !== null, workers: true }), decision);

/**
 * `--dry-run`: what the run would do, as text or (--json) one event per line; nothing starts and
 * nothing is written. It refuses what the run would refuse in its setup, with the same line and
 * exit code (`refusalBeforeWork`, looking only), and warns of uncommitted changes as the run does.
 */
async function dryRun(plan: Plan, settings: Settings, sandbox: SandboxUse, git: Git, io: Io, sandboxed: boolean): Promise<ExitCode> {
  const refusal = await refusalBeforeWork(plan, { repo: settings.repo, git, look: true });
  if (refusal.problem !== null) throw setupProblemError(refusal.problem);
  const { committed } = refusal;
  const uncommitted = await uncommittedChangesNotice(settings.repo, settings.planPath, git);
  if (!uncommitted.ok) throw setupProblemError({ kind: 'git-failed', doing: 'list your uncommitted changes', failure: uncommitted.error });
  const warnings = lintPlan(plan, committed).warnings;
  // Each ssh host reached and checked, nothing written there: refused as the run would refuse with none left.
  const checked = await hostsChecked(settings, sandboxed, io, true);
  const { permissions, worktree } = await workerRulesShown(plan, settings.repo, settings.allowedTools, io.env);
  const events = dryRunEvents(
    plan,
    { ...settings, sandboxUse: sandbox },
    permissions,
    worktree,
    warnings,
    uncommitted.value === null ? [] : [uncommitted.value],
    settings.hosts === undefined ? [] : await hostsListed(settings.hosts, git, settings.repo, checkResults(checked?.checked ?? [])),
  );
  if (settings.json) {
    // Its own id: nothing is journaled under it, it only ties the lines of this dry run together.
    const envelope = { runId: newRunId(), at: new Date().toISOString() };
    for (const event of events) io.out(JSON.stringify({ ...event, ...envelope }));
  } else {
    io.out(describeDryRun(events, plan).join('\n'));
  }
  return EXIT.ok;
}

/** The run's ssh hosts reached and checked (`checkedHosts`); null without hosts. */
async function hostsChecked(settings: Settings, sandboxed: boolean, io: Io, dryRun: boolean) {
  if (settings.hosts === undefined) return null;
  return checkedHosts(settings.hosts, settings.concurrency, { objectFormat: await objectFormatOf(settings.repo), sandbox: sandboxed, dryRun, env: io.env });
}

/** Exit 2 naming each path no permission rule can express exactly (the repository's own included). */
async function checkWorkerRules(plan: Plan, settings: Settings): Promise<void> {
  if (settings.allowedTools) return;
  const rules = planPermissions(plan, await realpath(settings.repo));
  if (!rules.ok) throw new CliError(EXIT.invalid, ['these paths cannot be given to a worker as exact permission rules:', ...rules.error.map((p) => `  ${p}`)]);
}

async function execute(values: Record<string, unknown>, numbers: Numbers, io: Io): Promise<ExitCode> {
  const gitProcessesBefore = gitProcessCount();
  const settings = settingsFrom(values, numbers, io);
  const hosts = await hostsOf(values, numbers.concurrency, io);
  if (hosts !== null) {
    settings.hosts = hosts.hosts;
    settings.concurrency = hosts.concurrency;
  }
  // As git finds its repository: the one holding --repo DIR (or the current folder), worked in at
  // its top, and the plan found from DIR up to that top (`--plan FILE` is relative to DIR).
  const top = await repositoryTop(settings.repo);
  if (typeof values.plan !== 'string') settings.planPath = await findPlan(settings.repo, top);
  if (top !== null) settings.repo = top;
  const loaded = await loadPlanFile(settings.planPath);
  const plan = loaded.plan;
  const testCommand = typeof plan.context?.testCommand === 'string' && plan.context.testCommand.trim() !== '' ? plan.context.testCommand : undefined;
  const gateCommand = settings.gateFlags.off ? undefined : (settings.gateFlags.command ?? testCommand);
  settings.gate = gateCommand === undefined ? null : { command: gateCommand, batchSize: settings.gateFlags.batchSize, timeoutMs: settings.gateFlags.timeoutMs };
  const git = new Git(settings.repo);
  if (top === null || !(await git.isRepo()))
    throw new CliError(EXIT.invalid, [`${settings.repo} is not in a git repository (foreman commits each round; run \`git init\` first)`]);
  await checkWorkerRules(plan, settings);
  const { claudeBin, decision, login } = await readyToRun(plan, settings, io);
  // The run's sandbox line, as the run finds it: the dry run shows it as a setting.
  const sandbox = await runSandboxUse(plan, settings, decision);
  const sandboxed = decision.sandboxed;
  // The dry run reads the lock where the run takes it: the same refusal, nothing written.
  const lockNow = await readLock(settings.planPath);
  if (lockNow.state === 'live' || lockNow.state === 'foreign') throw lockedError(lockNow.holder);
  if (settings.dryRun) return dryRun(plan, settings, sandbox, git, io, sandboxed);
  // Each ssh host reached and checked before anything starts; its channel kept for the run.
  const hostRun = await hostsChecked(settings, sandboxed, io, false);
  if (hostRun !== null) {
    settings.hosts = hostRun.hosts;
    settings.concurrency = hostRun.concurrency;
    settings.hostAccounts = limiterAccounts(login, hostRun.checked);
  }
  const links = (hostRun?.checked ?? []).flatMap((checked) => (checked.leftOut === null ? [new HostLink(checked.host, checked.channel, io.env)] : []));
  const closeLinks = () => Promise.all(links.map((link) => link.close()));

  const runId = newRunId();
  const lock = await acquireLock(settings.planPath, currentLockInfo('execute'));
  if (!lock.ok) {
    await closeLinks();
    throw lockedError(lock.error.holder);
  }
  const adapters = realRunAdapters({ repo: settings.repo, planPath: settings.planPath, git, env: io.env }, runWorker, links);
  // `plan …` where the person is would find another plan (or none): printed commands name this one, and its repository.
  const nameThePlan = !(await samePath(await planPathFrom({}, io.cwd).catch(() => null), settings.planPath));
  // Git takes paths relative to where it is typed: from anywhere but the top, printed git commands name the repository.
  const nameTheRepo = !(await samePath(io.cwd, settings.repo));
  const reporter = createReporter({
    io,
    json: settings.json,
    runId,
    journal: adapters.journal,
    plan,
    layout: runLayout({ plan: nameThePlan, repo: nameTheRepo }, settings),
  });
  const emit = (event: RunEventBody) => reporter.emit(event);
  if (lock.value.takenOver) {
    emit({ type: 'notice', level: 'warning', message: describeTakeover(lock.value.takenOver) });
  }
  for (const message of hostRun?.leftOut ?? []) emit({ type: 'notice', level: 'warning', message });
  if (sandboxed && links.length > 0) emit({ type: 'notice', level: 'warning', message: hostSandboxNotice(links.map((link) => link.host.name)) });

  const controller = new AbortController();
  // SIGTERM (what `plan drain` sends) drains: nothing new starts, what runs finishes and lands.
  // A second SIGTERM, or SIGINT / SIGHUP at any time, interrupts; one more exits at once.
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
    void lock.value.release().finally(() => process.exit(EXIT.interrupted));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);

  try {
    const run = await runHeadless(
      plan,
      { ...settings, claudeBin, noGate: settings.gateFlags.off },
      {
        planText: loaded.text,
        env: io.env,
        sandboxed,
        // Said once, at the start: whether checks, the setup command, the gate and the workers run sandboxed, and with what network.
        sandboxNotice: { type: 'notice', level: sandbox.unavailable === null ? 'info' : 'warning', message: describeSandboxUse(sandbox), sandbox },
        interrupt: controller.signal,
        drain: draining.signal,
        emit,
        record: (event) => reporter.record(event),
        // The probe's first line is said at once, but not with --json: its stdout is events only.
        say: settings.json ? null : (line) => io.out(line),
        gitProcessesBefore,
        nameThePlan,
        nameTheRepo,
      },
      adapters,
    );
    if (!run.ok) throw refusalError(run.error);
    reporter.summary(run.value.plan, run.value.usage, run.value.next);
    // The gate failed on the starting commit: the run was refused, as `plan setup` refuses it.
    if (run.value.refusal !== null) throw new CliError(EXIT.invalid, run.value.refusal);
    return run.value.finished.exitCode as ExitCode;
  } finally {
    // The handlers stay until the end: a second Ctrl-C while the run winds up still exits 130.
    await closeLinks();
    await reporter.close();
    await lock.value.release();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}

/**
 * What the run needs of this machine before it starts anything, its dry run alike: the Claude
 * Code CLI (logged in, when a task is to start) and the sandboxing `--sandbox` asks for. Refuses
 * (exit 3) without them; else the CLI's path, the sandbox's decision (sandboxed, or why not) and
 * the CLI's login (null when not asked: the account the run's own limiter is).
 */
async function readyToRun(plan: Plan, settings: Settings, io: Io): Promise<{ claudeBin: string; decision: SandboxDecision; login: AuthStatus | null }> {
  const claudeBin = findExecutable(settings.claudeBin, io.env, io.cwd);
  if (claudeBin === null) {
    throw new CliError(EXIT.cannotRun, [
      `the Claude Code CLI "${settings.claudeBin}" was not found. Install it with \`npm install -g @anthropic-ai/claude-code\`, or pass --claude-bin PATH (or set CLAUDE_BIN).`,
    ]);
  }
  // The CLI's login is asked about before anything starts (the probe, the gate, a worker), beside
  // the sandbox, when the run has a task to start: a CLI that says it is not logged in refuses the
  // run; one that cannot say does not. A run with nothing to start (it lands, or gates approved work) needs no login.
  const login = plan.tasks.some((task) => statusOf(task) === 'pending' || statusOf(task) === 'in_progress')
    ? authStatus(claudeBin, settings.repo, io.env)
    : null;
  // The sandbox is asked about once: `on` refuses without it, `auto` says why it goes without.
  const decided = await decideSandbox(settings.sandbox);
  const status = await login;
  if (status?.kind === 'logged-out') throw new CliError(EXIT.cannotRun, notLoggedInLines(claudeBin));
  if (!decided.ok) throw new CliError(EXIT.cannotRun, [decided.error]);
  return { claudeBin, decision: decided.value, login: status };
}

const setupProblemError = (setupProblem: SetupProblem): CliError => {
  const problem = describeSetupProblem(setupProblem);
  return new CliError(problem.code, problem.lines);
};

const lockedError = (holder: LockInfo): CliError => new CliError(EXIT.cannotRun, [lockedLine(holder)]);

/** A run refused before it started, as the person is told. */
function refusalError(refusal: HeadlessRefusal): CliError {
  switch (refusal.kind) {
    case 'setup':
      return setupProblemError(refusal.problem);
    case 'probe':
      return new CliError(EXIT.invalid, refusal.lines);
    default:
      return assertNever(refusal, 'run refusal');
  }
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
