// `execute`: run a plan headless with real `claude -p` workers.

import { realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { findExecutable } from '../adapters/executables.ts';
import { Git } from '../adapters/git/repository.ts';
import { gitProcessCount } from '../adapters/git/runner.ts';
import { ownLayout } from '../adapters/layout.ts';
import { type LockTakeover, PlanKeeper, acquireLock, currentLockInfo, describeKeptEdit } from '../adapters/plan-store.ts';
import { ProcessRegistry, describeOrphans, killOrphans, recorded, registryPathFor } from '../adapters/orphans.ts';
import { killAllWorkers, runWorker } from '../adapters/worker.ts';
import { type SandboxMode, decideSandbox, installAdvice, sandboxModeOf } from '../adapters/sandbox.ts';
import { type RunEventBody } from '../core/events.ts';
import { newRunId } from '../adapters/journal.ts';

import { commandHint } from '../core/command-hint.ts';
import { assertNever } from '../core/failure.ts';
import { plural } from '../core/format.ts';
import { describeTimeLimitHit } from '../core/time-limit.ts';
import { probeFindings, probeHeadline, probedTasks } from '../core/probe.ts';
import { describeProbeProblem, runProbe, saveProbe } from '../run/probe.ts';
import { type Plan } from '../core/plan.ts';
import { type WorkerPermissions, explicitPermissions, planPermissions } from '../core/scope.ts';
import { SCHEDULE_POLICIES, type SchedulePolicy } from '../core/schedule.ts';
import { ensurePlanId } from '../run/commit.ts';
import { engineConfig, runEngine, systemClock } from '../run/engine.ts';
import { initialState, step } from '../core/engine-step.ts';
import { LAND_POLICIES, LIMIT_FLAGS, type LandPolicy, type RunSettings, DEFAULTS } from '../run/settings.ts';
import { recordAttempts, verifyAttempt } from '../run/stages.ts';
import { baselineRefusal, finishPlan, lander, runFinishedEvent, runStartedEvent } from '../run/lifecycle.ts';
import { Isolation, type WorktreeSetup } from '../run/isolation.ts';
import { setupRun } from '../run/setup.ts';
import { type Command, type Io, type Numbers } from './command.ts';
import { RANGES, parseNumber } from './numeric-flags.ts';
import { CliError, EXIT, type ExitCode, usageError } from './exit.ts';
import { loadPlanFile } from './load.ts';
import { createReporter } from './reporter.ts';
import { describeDryRun, dryRunEvents } from './dry-run.ts';
import { describeSetupProblem } from './setup-problem.ts';

export const PERMISSION_MODES = ['acceptEdits', 'auto', 'bypassPermissions', 'default', 'dontAsk', 'manual', 'plan'];

export const executeCommand: Command = {
  name: 'execute',
  summary: 'Run the plan with parallel Claude Code workers, each in a git worktree of its own: verify, retry, integrate verified work, land it on your branch, resume after any stop.',
  usage: '[options]',
  options: {
    repo: { type: 'string', valueName: 'DIR', description: 'the repository to work in (default: the current directory)' },
    plan: { type: 'string', valueName: 'FILE', description: 'the plan (default: <repo>/.design/plan.json)' },
    'claude-bin': { type: 'string', valueName: 'PATH', description: 'the Claude Code CLI (default: $CLAUDE_BIN, else `claude` on PATH)' },
    concurrency: { type: 'string', valueName: 'N', description: `workers at once (default ${DEFAULTS.concurrency})`, range: RANGES.workers },
    'task-timeout': { type: 'string', valueName: 'SECONDS', description: `a worker's time limit; its whole process group is killed (default ${DEFAULTS.taskTimeoutMs / 1000})`, range: RANGES.timeoutSeconds },
    'max-attempts': { type: 'string', valueName: 'N', description: `attempts per task, retries included (default ${DEFAULTS.maxAttempts})`, range: RANGES.attempts },
    'permission-mode': { type: 'string', valueName: 'MODE', description: `passed to every worker (default ${DEFAULTS.permissionMode}; one of ${PERMISSION_MODES.join(', ')})` },
    'allowed-tools': {
      type: 'string',
      valueName: 'LIST',
      description:
        "permission rules every worker gets instead of the computed ones, space or comma separated (default, per task: Read Glob Grep, Edit(<path>) for exactly the task's declared files, Bash(<command>) for the test/build commands and the task's acceptance checks)",
    },
    schedule: { type: 'string', valueName: 'POLICY', description: 'continuous: start a task the moment its blockers finish, integrate work as it is verified; rounds: run the ready set as a round, integrate once per round (default continuous)' },
    gate: { type: 'string', valueName: 'CMD', description: "the merge queue's gate: verified work integrates only in stacks this command passes (default: the plan's context.testCommand)" },
    'no-gate': { type: 'boolean', description: 'no gate: verified work integrates as soon as it is verified' },
    'gate-batch': { type: 'string', valueName: 'N', description: `candidates the gate tests together at most (default ${DEFAULTS.gateBatch})`, range: RANGES.gateBatch },
    'gate-timeout': { type: 'string', valueName: 'SECONDS', description: 'time limit of one gate run; its process group is ended (default: --check-timeout)', range: RANGES.timeoutSeconds },
    speculate: {
      type: 'string',
      valueName: 'N',
      description: `with a gate: a task whose blockers are candidates in the merge queue starts on them, up to N levels deep; cancelled if one is blamed (default ${DEFAULTS.speculate})`,
      range: RANGES.speculate,
    },
    'no-speculate': { type: 'boolean', description: 'a task waits for its blockers to integrate (the same as --speculate 0)' },
    land: { type: 'string', valueName: 'WHEN', description: `end: land integrated work on your branch when the run stops; continuous: also after every integration (default ${DEFAULTS.land})` },
    'max-cost-usd': { type: 'string', valueName: 'N', description: "stop starting work once the run's cost reaches N dollars", range: RANGES.dollars },
    'task-budget-usd': { type: 'string', valueName: 'N', description: 'per-worker spend cap (--max-budget-usd) for tasks that set no agent.maxBudgetUsd', range: RANGES.dollars },
    'check-timeout': { type: 'string', valueName: 'SECONDS', description: `time limit of each acceptance or assumption command, and of the setup command in a worktree; its process group is ended (default ${DEFAULTS.checkTimeoutMs / 1000})`, range: RANGES.timeoutSeconds },
    sandbox: { type: 'string', valueName: 'MODE', description: `auto: run checks, the setup command and workers' Bash in the operating-system sandbox where it works, say once when it cannot; on: refuse to run without it (exit 3); off: never (default ${DEFAULTS.sandbox})` },
    'dry-run': { type: 'boolean', description: "validate, print the settings, the rounds, every command the plan would run and the permission rules of each task it would start (with --json: as events); start nothing" },
    'no-commit': { type: 'boolean', description: 'land integrated work in your files as uncommitted changes instead of commits on your branch' },
    'no-probe': { type: 'boolean', description: "skip the probe of the pending tasks' acceptance checks at setup" },
    strict: { type: 'boolean', description: 'refuse to run (exit 2) when the probe finds a vacuous task (every check passes before the work)' },
    'probe-timeout': { type: 'string', valueName: 'SECONDS', description: `time limit of the whole probe at setup, its setup command included; each check has --check-timeout (default ${DEFAULTS.probeTimeoutMs / 1000})`, range: RANGES.timeoutSeconds },
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
  if (!PERMISSION_MODES.includes(permissionMode)) throw usageError(`--permission-mode: "${permissionMode}" is not one of ${PERMISSION_MODES.join(', ')}`);
  const schedule = (str('schedule') ?? DEFAULTS.schedule) as SchedulePolicy;
  if (!SCHEDULE_POLICIES.includes(schedule)) throw usageError(`--schedule: "${schedule}" is not one of ${SCHEDULE_POLICIES.join(', ')}`);
  const tools = str('allowed-tools');
  // `FOREMAN_SANDBOX` is the default, checked like the flag.
  const sandboxMode = sandboxModeOf(str('sandbox'), io.env);
  if (!sandboxMode.ok) throw usageError(sandboxMode.error);
  const sandbox = sandboxMode.value;
  const land = (str('land') ?? DEFAULTS.land) as LandPolicy;
  if (!LAND_POLICIES.includes(land)) throw usageError(`--land: "${land}" is not one of ${LAND_POLICIES.join(', ')}`);
  const checkTimeoutMs = seconds(numbers['check-timeout']) ?? DEFAULTS.checkTimeoutMs;
  const gateCommand = str('gate');
  if (gateCommand !== undefined && gateCommand.trim() === '') throw usageError('--gate: the command is empty (use --no-gate for no gate)');
  if (gateCommand !== undefined && values['no-gate'] === true) throw usageError('--gate and --no-gate contradict each other: choose one');
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
    maxRequeues: DEFAULTS.maxRequeues,
    speculate: values['no-speculate'] === true ? 0 : (numbers.speculate ?? DEFAULTS.speculate),
    dryRun: values['dry-run'] === true,
    commit: values['no-commit'] !== true,
    json: values.json === true,
    probe: values['no-probe'] !== true,
    strict: values.strict === true,
    probeTimeoutMs: seconds(numbers['probe-timeout']) ?? DEFAULTS.probeTimeoutMs,
  };
}

const seconds = (value: number | undefined): number | undefined => (value === undefined ? undefined : value * 1000);

/** `--dry-run`: what the run would do, as text or (--json) one event per line; nothing starts. */
function dryRun(plan: Plan, settings: Settings, permissions: WorkerPermissions[], io: Io): ExitCode {
  const events = dryRunEvents(plan, settings, permissions);
  if (settings.json) {
    // Its own id: nothing is journaled under it, it only ties the lines of this dry run together.
    const envelope = { runId: newRunId(), at: new Date().toISOString() };
    for (const event of events) io.out(JSON.stringify({ ...event, ...envelope }));
  } else {
    io.out(describeDryRun(events, plan).join('\n'));
  }
  return EXIT.ok;
}

/** Every task's permission rules, or exit 2 naming each path no rule can express exactly. */
async function workerRules(plan: Plan, settings: Settings): Promise<WorkerPermissions[]> {
  if (settings.allowedTools) return plan.tasks.map(() => explicitPermissions(settings.allowedTools!));
  const rules = planPermissions(plan, await realpath(settings.repo));
  if (!rules.ok) throw new CliError(EXIT.invalid, ['these paths cannot be given to a worker as exact permission rules:', ...rules.error.map((p) => `  ${p}`)]);
  return rules.value;
}

async function execute(values: Record<string, unknown>, numbers: Numbers, io: Io): Promise<ExitCode> {
  const gitProcessesBefore = gitProcessCount();
  const settings = settingsFrom(values, numbers, io);
  const loaded = await loadPlanFile(settings.planPath);
  let plan = loaded.plan;
  const testCommand = typeof plan.context?.testCommand === 'string' && plan.context.testCommand.trim() !== '' ? plan.context.testCommand : undefined;
  const gateCommand = settings.gateFlags.off ? undefined : (settings.gateFlags.command ?? testCommand);
  settings.gate = gateCommand === undefined ? null : { command: gateCommand, batchSize: settings.gateFlags.batchSize, timeoutMs: settings.gateFlags.timeoutMs };
  const git = new Git(settings.repo);
  if (!(await git.isRepo())) throw usageError(`${settings.repo} is not a git repository (foreman commits each round; run \`git init\` first)`);
  const permissions = await workerRules(plan, settings);
  if (settings.dryRun) return dryRun(plan, settings, permissions, io);

  const claudeBin = findExecutable(settings.claudeBin, io.env, io.cwd);
  if (claudeBin === null) {
    throw new CliError(EXIT.cannotRun, [
      `the Claude Code CLI "${settings.claudeBin}" was not found. Install it with \`npm install -g @anthropic-ai/claude-code\`, or pass --claude-bin PATH (or set CLAUDE_BIN).`,
    ]);
  }

  // The sandbox is asked about once: `on` refuses without it, `auto` says why it goes without.
  const decided = await decideSandbox(settings.sandbox);
  if (!decided.ok) throw new CliError(EXIT.cannotRun, [decided.error]);
  const sandboxed = decided.value.sandboxed;
  const unavailable = decided.value.sandboxed ? null : decided.value.unavailable;

  const runId = newRunId();
  const lock = await acquireLock(settings.planPath, currentLockInfo('execute'));
  if (!lock.ok) {
    const h = lock.error.holder;
    throw new CliError(EXIT.cannotRun, [`another run holds ${join(dirname(settings.planPath), 'plan.lock')}: pid ${h.pid} on ${h.host}, started ${h.startedAt}. Wait for it, or stop it first.`]);
  }
  const reporter = await createReporter({ io, json: settings.json, runId, planPath: settings.planPath, plan });
  const emit = (event: RunEventBody) => reporter.emit(event);
  if (lock.value.takenOver) {
    emit({ type: 'notice', level: 'warning', message: describeTakeover(lock.value.takenOver) });
  }
  if (unavailable !== null) {
    emit({
      type: 'notice',
      level: 'warning',
      message: `running without the sandbox: ${unavailable}. Acceptance and assumption checks run unsandboxed, and workers' Bash stays limited to the commands they are judged by; to sandbox them, ${installAdvice()}`,
    });
  }

  // Workers and checks a killed run left behind are still editing files: stop them before anything else.
  const registryPath = registryPathFor(settings.planPath);
  const orphans = await killOrphans(registryPath);
  if (orphans.length > 0) emit({ type: 'notice', level: 'warning', message: describeOrphans(orphans) });
  const registry = new ProcessRegistry(registryPath);
  const indexLock = await git.clearStaleIndexLock();
  if (indexLock === 'removed') emit({ type: 'notice', level: 'warning', message: 'removed a stale .git/index.lock left by a git process that was killed' });

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

  const started = Date.now();
  const layout = ownLayout();
  let saving = Promise.resolve();
  // Writes are chained so two never race on the temporary file. A person's edit to the plan file
  // while the run holds it is kept aside, never written over (PlanKeeper), and the run says where.
  const keeper = new PlanKeeper(settings.planPath, loaded.text);
  const save = (p: Plan) =>
    (saving = saving.then(async () => {
      const kept = await keeper.save(p);
      if (kept !== null) emit({ type: 'notice', level: 'warning', message: describeKeptEdit(settings.planPath, kept, layout) });
    }));
  try {
    if (indexLock === 'held') {
      throw new CliError(EXIT.cannotRun, ['another git process is using this repository (.git/index.lock is held open); wait for it to finish and run again']);
    }
    const isolationOptions = {
      repo: settings.repo,
      planPath: settings.planPath,
      env: io.env,
      sandbox: sandboxed,
      setupTimeoutMs: settings.checkTimeoutMs,
      registry,
      // Said, so a slow start or a re-install after a task changed the lock file is not a mystery.
      onSetup: (run: WorktreeSetup) => emit({ type: 'notice', level: 'info', message: describeSetupRun(run) }),
    };
    const branch = await git.currentBranch();
    // The plan's id names its refs and worktrees: written before anything is made under it, so a
    // run killed at once leaves nothing a later run (with the same id) cannot find and clean up.
    if (typeof plan.planId !== 'string' || plan.planId === '') {
      ensurePlanId(plan);
      await save(plan);
      await saving;
    }
    const setup = await setupRun(plan, {
      repo: settings.repo,
      planPath: settings.planPath,
      git,
      openIsolation: () => Isolation.open(plan, isolationOptions),
      gated: settings.gate !== null,
      checkTimeoutMs: settings.checkTimeoutMs,
      signal: controller.signal,
      env: io.env,
      registry,
      sandbox: sandboxed,
    });
    if (!setup.ok) {
      const problem = describeSetupProblem(setup.error);
      throw new CliError(problem.code, problem.lines);
    }
    const report = setup.value;
    // What setup found is applied by the step function, as every later change of a task's state.
    const setUp = step(initialState(plan, engineConfig({ ...settings, claudeBin }, dirname(settings.planPath)), Date.now(), report.held), { type: 'set-up', findings: report.findings, now: Date.now() });
    plan = setUp.state.plan;
    await save(plan);
    // The probe runs before the run starts: a plan it refuses leaves no half-started run in the
    // journal. Its first line is said at once (not in --json mode, whose stdout is events only);
    // what it found is journaled once the run has started, the first line without saying it again.
    const probeEvents: Array<{ event: RunEventBody; said: boolean }> = [];
    if (settings.probe && !controller.signal.aborted) {
      const announce = (event: Extract<RunEventBody, { type: 'notice' }>) => {
        if (!settings.json) io.out(`foreman: ${event.message}`);
        probeEvents.push({ event, said: !settings.json });
      };
      await probeAtSetup(plan, settings, { emit: (event) => probeEvents.push({ event, said: false }), announce, registry, signal: controller.signal, env: io.env, sandbox: sandboxed });
    }
    if (settings.gate === null) {
      emit({ type: 'notice', level: 'info', message: settings.gateFlags.off ? 'no gate (--no-gate): verified work integrates as soon as it is verified, untested together' : "no gate: the plan has no context.testCommand, so verified work integrates untested together (--gate CMD sets one)" });
    }
    emit(runStartedEvent(plan, { planPath: settings.planPath, resumed: report.resumed, concurrency: settings.concurrency, schedule: settings.schedule, mode: 'headless' }));
    for (const n of report.notices) emit({ type: 'notice', ...n });
    for (const a of report.assumptions) emit({ type: 'assumption-checked', task: a.task, claim: a.claim, severity: a.severity, passed: a.passed, output: a.output });
    for (const effect of setUp.effects) if (effect.type === 'emit') emit(effect.event);
    for (const { event, said } of probeEvents) {
      if (said) reporter.record(event);
      else emit(event);
    }

    const isolation = report.isolation;
    const gateOptions = settings.gate === null ? null : { command: settings.gate.command, timeoutMs: settings.gate.timeoutMs, sandbox: sandboxed };
    const stages = { isolation, checkTimeoutMs: settings.checkTimeoutMs, env: io.env, registry, sandbox: sandboxed };
    const landing = lander(isolation, { branch: branch === null ? null : `refs/heads/${branch}`, commit: settings.commit, planPath: settings.planPath, layout });
    // Integrated work an earlier run could not land (a crash, a blocked landing) lands first.
    const before = await landing.land();
    if (before !== null) emit(before);
    // Interrupted already: the step function's first event is the interrupt, and it ends the run.
    const result = await runEngine(
          setUp.state,
          { ...settings, claudeBin },
          {
            prepare: (task, signal, stack) => isolation.prepare(task, signal, stack),
            release: (task) => isolation.release(task),
            runWorker: (request) => recorded(registry, { kind: 'worker', task: request.taskIndex }, (onSpawn) =>
                runWorker({ ...request, onSpawn, ...(sandboxed ? { sandbox: { allowedDomains: plan.context?.checkNetwork ?? [] } } : {}) }),
              ),
            verify: (current, task, input) => verifyAttempt(stages, current, task, input),
            gate: (current, request, signal) => (gateOptions === null ? Promise.resolve({ passed: true, output: '', durationMs: 0 }) : isolation.runGate(current, request, gateOptions, signal)),
            record: async (current, request) => {
              const recordedWork = await recordAttempts(stages, current, request);
              if (recordedWork.ok && settings.land === 'continuous') {
                const landed = await landing.land();
                if (landed !== null && landed.level === 'warning') emit(landed);
              }
              return recordedWork;
            },
            save,
            emit,
            clock: systemClock,
            env: io.env,
          },
          controller.signal,
          draining.signal,
        );
    await saving;
    plan = result.plan;

    // Whatever stopped the run, what was integrated lands now (when nothing of the person's is in its way).
    const after = await landing.land();
    if (after !== null) emit(after);
    let archived: string | null = null;
    if (result.reason === 'all-done') {
      // An edit made since the last write is kept aside before the plan moves to history.
      await save(plan);
      await saving;
    }
    archived = await finishPlan(result, isolation, settings.planPath, landing.landed);
    const finished = runFinishedEvent(
      plan,
      { ...result, durationMs: Date.now() - started },
      { layout, planPath: settings.planPath, landing: { landed: landing.landed, advice: landing.advice() }, archived },
    );
    // The git processes this process started since the run began: the run's, one run at a time.
    emit({ ...finished, gitProcesses: gitProcessCount() - gitProcessesBefore });
    reporter.summary(plan, result.usage);
    // The gate failed on the starting commit: the run was refused, as `plan setup` refuses it.
    if (result.baselineFailure !== undefined) throw new CliError(EXIT.invalid, baselineRefusal(settings.gate!.command, isolation.tip, result.baselineFailure.output));
    return finished.exitCode as ExitCode;
  } finally {
    // The handlers stay until the end: a second Ctrl-C while the run winds up still exits 130.
    await saving.catch(() => undefined);
    await registry.clear();
    await reporter.close();
    await lock.value.release();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}

/**
 * The probe before any attempt: broken checks stop the run (exit 2, naming them), vacuous tasks
 * are warned about (refused with --strict). Its time shows in the run's events as notices.
 */
async function probeAtSetup(
  plan: Plan,
  settings: Settings,
  context: { emit: (event: RunEventBody) => void; announce: (event: Extract<RunEventBody, { type: 'notice' }>) => void; registry: ProcessRegistry; signal: AbortSignal; env: NodeJS.ProcessEnv; sandbox: boolean },
): Promise<void> {
  const { emit } = context;
  const checks = probedTasks(plan).reduce((n, i) => n + (plan.tasks[i]!.agent?.acceptanceCriteria?.length ?? 0), 0);
  if (checks === 0) return;
  const setupCommand = plan.context?.setupCommand;
  const probing = `probing ${plural(checks, 'acceptance check')} of the pending tasks in a checkout of HEAD${setupCommand ? ` prepared with \`${setupCommand}\`` : ' (the plan has no context.setupCommand: nothing is installed there)'} (--no-probe skips this)`;
  context.announce({ type: 'notice', level: 'info', message: probing });
  const probed = await runProbe(plan, { repo: settings.repo, checkTimeoutMs: settings.checkTimeoutMs, timeoutMs: settings.probeTimeoutMs, timeoutFlag: LIMIT_FLAGS.probe, env: context.env, signal: context.signal, registry: context.registry, sandbox: context.sandbox });
  if (!probed.ok) {
    emit({ type: 'notice', level: 'warning', message: `the probe could not run: ${describeProbeProblem(probed.error)}` });
    return;
  }
  const report = probed.value;
  if (context.signal.aborted) return;
  await saveProbe(settings.planPath, report);
  const { problems, information } = probeFindings(report);
  emit({ type: 'notice', level: report.verdict === 'ok' ? 'info' : 'warning', message: probeHeadline(report) });
  for (const line of information) emit({ type: 'notice', level: 'info', message: `probe: ${line}` });
  const hint = setupCommand ? '' : ' If a check needs installed dependencies, set context.setupCommand (e.g. `npm ci`) in the plan.';
  switch (report.verdict) {
    case 'setup-failed':
      throw new CliError(EXIT.invalid, [`the plan's setup command \`${setupCommand ?? ''}\` fails in a fresh checkout of HEAD, so its checks cannot be probed: ${problems.join('; ')}. Fix it, or run with --no-probe.`]);
    case 'problems': {
      const broken = report.tasks.flatMap((t) => t.checks.filter((c) => c.outcome === 'broken').map((c) => `  task ${t.index}: \`${c.check}\`: ${c.reason ?? 'cannot run'}`));
      if (broken.length > 0) {
        throw new CliError(EXIT.invalid, [`${plural(broken.length, 'acceptance check')} cannot run, so every attempt of ${broken.length === 1 ? 'its task' : 'their tasks'} would fail; nothing was started. Fix the plan (\`${commandHint('plan', 'probe', ownLayout())}\` shows the details), or run with --no-probe.${hint}`, ...broken]);
      }
      const vacuous = report.tasks.filter((t) => t.verdict === 'vacuous');
      const lines = vacuous.map((t) => `task ${t.index} (${t.subject}): every acceptance check passes before the work is done, so they prove nothing about it`);
      if (settings.strict) throw new CliError(EXIT.invalid, [`${plural(vacuous.length, 'vacuous task')} refused (--strict); give each a check that fails until its work is done:`, ...lines.map((l) => `  ${l}`)]);
      for (const line of lines) emit({ type: 'notice', level: 'warning', message: `${line} (--strict refuses this)` });
      return;
    }
    case 'ok':
      return;
    default:
      assertNever(report.verdict, 'probe verdict');
  }
}

/** A run of the setup command in a worktree: `set up the worktree slot-0 with \`npm ci\` (2.1 s)`. */
export function describeSetupRun(run: WorktreeSetup): string {
  const unread = run.npmUnread ? `; ${run.npmUnread}` : '';
  if (run.timedOut) return `set up the worktree ${basename(run.dir)}: ${describeTimeLimitHit(run.command, run.timeLimit)}${unread}`;
  const how = run.exitCode === 0 ? null : `failed (exit ${run.exitCode ?? 'without a code'})`;
  return `set up the worktree ${basename(run.dir)} with \`${run.command}\`${how ? `: ${how}` : ''} (${(run.durationMs / 1000).toFixed(1)} s)${unread}`;
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

