// A headless run's life, from setup to its last event: what `execute` runs once it has parsed its
// flags, taken the plan's lock and opened the journal. Workers and checks a killed run left behind
// are stopped, the run is set up (run/setup.ts) and what setup found goes to the step function
// (`set-up`), the probe checks the acceptance checks, then the engine (run/headless/engine.ts) runs the
// step function with real workers, git and checks until it says the run is over. Around it, the
// lifecycle both paths share (run/lifecycle.ts): the run's start and end in the journal, landing
// the integration tip before and after, finishing the plan. The CLI handles signals and prints.

import { basename, dirname } from 'node:path';
import { type Commands, describeKeptEdit, describeOrphans, ownLayout } from '../../adapters/index.ts';
import {
  assertNever,
  commandHint,
  describeTimeLimitHit,
  driveNow,
  emitsInto,
  err,
  EventQueue,
  initialState,
  Lane,
  type Layout,
  noGateNotice,
  ok,
  type Plan,
  plural,
  probedTasks,
  probeFindings,
  probeHeadline,
  type Result,
  type RunEventBody,
  runStartedEvent,
  taskAt,
} from '../../core/index.ts';
import type { PlanWriter, RunAdapters } from '../adapters.ts';
import { engineConfig, runEngine } from './engine.ts';
import type { EngineAdapters } from './engine-carrier.ts';
import { lander } from '../lifecycle.ts';
import { describeProbeProblem, runProbe, saveProbe } from '../probe.ts';
import { LIMIT_FLAGS, type RunSettings } from '../settings.ts';
import { type RunPlaces, type SetupReport, setupRun } from '../setup.ts';
import type { SetupProblem } from '../refusals.ts';
import { assumptionCheckedEvent } from '../assumptions.ts';
import type { Workspaces, WorkspaceUse, WorktreeSetup } from '../workspace/index.ts';
import { endRun, type HeadlessEnd } from './headless-end.ts';

/** A headless run's settings: the run's own, and what the CLI settled before it. */
export interface HeadlessSettings extends RunSettings {
  /** Probe the pending tasks' acceptance checks at setup. */
  probe: boolean;
  /** Refuse vacuous tasks instead of warning about them. */
  strict: boolean;
  probeTimeoutMs: number;
  /** `--no-gate` was given (the notice of a run without a gate says so). */
  noGate: boolean;
}

/** What the run is given besides its adapters: the plan as read, the signals, and where its events go. */
export interface HeadlessContext {
  /** The plan file's text as read: a person's edit while the run holds the plan is kept aside, never written over. */
  planText: string;
  /** The environment workers and commands run with (the adapters are bound to it too). */
  env: NodeJS.ProcessEnv;
  /** Checks, the setup command and workers' Bash run in the operating-system sandbox. */
  sandboxed: boolean;
  /**
   * The run's sandbox line (core/sandbox/sandbox-words.ts), said once: at once (`say`), before anything
   * runs, and journaled once the run has started, so a run refused before it starts leaves
   * nothing in the journal.
   */
  sandboxNotice?: Extract<RunEventBody, { type: 'notice' }>;
  /** Ctrl-C: workers stop now, what is verified is recorded, the run ends. */
  interrupt: AbortSignal;
  /** SIGTERM (`plan drain`): nothing new starts; what runs finishes and lands. */
  drain: AbortSignal;
  /** A run event: journaled and shown. */
  emit(event: RunEventBody): void;
  /** A run event already shown: journaled only. */
  record(event: RunEventBody): void;
  /** Shows a line at once, before the run starts (null when nothing but events may be shown: --json). */
  say: ((line: string) => void) | null;
  /** This process's count of git processes when the run began: the run-finished event gives the run's own. */
  gitProcessesBefore: number;
  /** The plan tool run where the person is would not find this plan: commands it prints name it (`--plan`). */
  nameThePlan?: boolean;
  /** The person is not at the repository's top (a subfolder, or elsewhere): git commands it prints name it (`git -C`). */
  nameTheRepo?: boolean;
}

/** Why the run did not start: setup refused (run/setup.ts), or the probe did (exit 2, its lines). */
export type HeadlessRefusal = { kind: 'setup'; problem: SetupProblem } | { kind: 'probe'; lines: string[] };

/**
 * How a run spells the commands it prints: the plan named (`--plan`) when the person, where they
 * are, would not find that plan (a run given `--repo` or `--plan`); the repository named (`git -C`)
 * then too, and whenever they are not at its top, where the paths git commands take (relative to
 * the top) would not be found.
 */
export const runLayout = (names: { plan: boolean; repo: boolean }, settings: { planPath: string; repo: string }): Layout => ({
  ...ownLayout(),
  ...(names.plan ? { plan: settings.planPath } : {}),
  ...(names.plan || names.repo ? { repo: settings.repo } : {}),
});

/** Run `plan` headless until the step function ends it (or refuse it before it starts), doing its I/O through `adapters`. */
export async function runHeadless(
  given: Plan,
  settings: HeadlessSettings,
  context: HeadlessContext,
  adapters: RunAdapters,
): Promise<Result<HeadlessEnd, HeadlessRefusal>> {
  let plan = given;
  const { emit, env, sandboxed } = context;
  const { clock, git, commands } = adapters;
  const started = clock.now();
  const opening = context.sandboxNotice;
  if (opening !== undefined) context.say?.(`foreman: ${opening.level === 'warning' ? 'warning: ' : ''}${opening.message}`);
  const layout = runLayout({ plan: context.nameThePlan === true, repo: context.nameTheRepo === true }, settings);
  // Workers and checks a killed run left behind are still editing files: stop them before anything else.
  const orphans = await adapters.processes.endLeftovers();
  if (orphans.length > 0) emit({ type: 'notice', level: 'warning', message: describeOrphans(orphans) });

  const { write, save, settled } = planSaving(adapters.planStore.open(context.planText), emit, { planPath: settings.planPath, layout });
  try {
    const use = workspaceUse(settings, sandboxed, emit);
    const branch = await git.currentBranch();
    // The plan's id is written by setup, once nothing refuses the run (`savePlan`).
    const setup = await setupRun(plan, {
      savePlan: save,
      repo: settings.repo,
      planPath: settings.planPath,
      git,
      open: async () => {
        const integration = await adapters.integration.open(plan);
        if (!integration.ok) return integration;
        const local = await adapters.workspaces.open(plan, integration.value, use, adapters.workers);
        const workspaces: Workspaces = (await adapters.workspaces.placed?.(local, plan, integration.value, use)) ?? local;
        return ok({ integration: integration.value, workspaces });
      },
      checkTimeoutMs: settings.checkTimeoutMs,
      signal: context.interrupt,
      commands,
      sandbox: sandboxed,
    });
    if (!setup.ok) return err({ kind: 'setup', problem: setup.error });
    const report = setup.value;
    // What setup found is applied by the step function, as every later change of a task's state;
    // what it skips is said once the run has started.
    const skips: RunEventBody[] = [];
    const setUp = driveNow(
      initialState(plan, engineConfig(settings, dirname(settings.planPath), env), clock.now(), report.held),
      new EventQueue([{ type: 'set-up', findings: report.findings, now: clock.now() }]),
      emitsInto(skips),
    );
    plan = setUp.state.plan;
    await save(plan);
    // The probe runs before the run starts: a plan it refuses leaves no half-started run in the
    // journal. Its first line is said at once (not with --json, whose output is events only);
    // what it found is journaled once the run has started, the first line without saying it again.
    const probeEvents: Array<{ event: RunEventBody; said: boolean }> = [];
    if (settings.probe && !context.interrupt.aborted) {
      const refused = await probeAtSetup(plan, settings, {
        events: probeEvents,
        say: context.say,
        commands,
        signal: context.interrupt,
        env,
        sandbox: sandboxed,
      });
      if (refused !== null) return err({ kind: 'probe', lines: refused });
    }
    const start = runStartedEvent(plan, {
      planPath: settings.planPath,
      resumed: report.resumed,
      concurrency: settings.concurrency,
      schedule: settings.schedule,
      mode: 'headless',
    });
    announceStart(start, settings, report, { opening, skips, probeEvents }, context);

    const { integration } = report.places;
    const landing = lander(integration, {
      branch: branch === null ? null : `refs/heads/${branch}`,
      commit: settings.commit,
      planPath: settings.planPath,
      layout,
    });
    const engineAdapters = headlessAdapters(adapters, report.places, settings, { save, emit, landing });
    // Integrated work an earlier run could not land (a crash, a blocked landing) lands first.
    const before = await landing.land();
    if (before !== null) emit(before);
    // The step function asks for the gate on the starting commit first; interrupted already, its first event ends the run.
    const result = await runEngine(setUp.state, settings, engineAdapters, context.interrupt, context.drain);
    await settled();
    const end = { landing, layout, startedAt: started, gitProcessesBefore: context.gitProcessesBefore, clock, git, emit, write };
    return ok(await endRun(result, report.places, settings, end));
  } finally {
    await settled();
    await adapters.processes.forget();
  }
}

/**
 * What the run's start tells, once it has started, in this order: that it runs without a gate,
 * the run-started event, the sandbox line, setup's notices and assumption checks, what the step
 * function skipped at set-up, what the probe found. What was said already is journaled only.
 */
function announceStart(
  start: RunEventBody,
  settings: HeadlessSettings,
  report: Pick<SetupReport, 'notices' | 'assumptions'>,
  told: { opening: Extract<RunEventBody, { type: 'notice' }> | undefined; skips: RunEventBody[]; probeEvents: Array<{ event: RunEventBody; said: boolean }> },
  context: Pick<HeadlessContext, 'emit' | 'record' | 'say'>,
): void {
  const { emit } = context;
  const journal = (event: RunEventBody, said: boolean) => (said ? context.record(event) : emit(event));
  if (settings.gate === null) emit({ type: 'notice', level: 'info', message: noGateNotice(settings.noGate) });
  emit(start);
  if (told.opening !== undefined) journal(told.opening, context.say !== null);
  for (const n of report.notices) emit({ type: 'notice', ...n });
  for (const a of report.assumptions) emit(assumptionCheckedEvent(a));
  for (const event of told.skips) emit(event);
  for (const { event, said } of told.probeEvents) journal(event, said);
}

/**
 * The run's plan writes: one at a time, in a lane, so two never race on the temporary file. A
 * person's edit to the plan file while the run holds it is kept aside, never written over
 * (PlanKeeper): `save` says where, `write` gives it to its caller; `settled` once all are done.
 */
function planSaving(keeper: PlanWriter, emit: (event: RunEventBody) => void, said: { planPath: string; layout: Layout }) {
  const writes = new Lane();
  const write = (plan: Plan): Promise<string | null> => writes.run(() => keeper.save(plan));
  const save = async (plan: Plan) => {
    const kept = await write(plan);
    if (kept !== null) emit({ type: 'notice', level: 'warning', message: describeKeptEdit(said.planPath, kept, said.layout) });
  };
  return { write, save, settled: () => writes.settled() };
}

/** How the run's attempts use their workspaces: the sandbox, the time limits, where logs go. */
function workspaceUse(settings: HeadlessSettings, sandboxed: boolean, emit: (event: RunEventBody) => void): WorkspaceUse {
  return {
    sandbox: sandboxed,
    setupTimeoutMs: settings.checkTimeoutMs,
    // Said, so a slow start or a re-install after a task changed the lock file is not a mystery.
    onSetup: (run: WorktreeSetup) => emit({ type: 'notice', level: 'info', message: describeSetupRun(run) }),
    checkTimeoutMs: settings.checkTimeoutMs,
    strictScope: settings.strictScope === true,
    logDir: dirname(settings.planPath),
    markTracked: (settings.widen ?? []).length > 0,
  };
}

/**
 * What the engine works with, bound to the run's adapters, the plan's integration and its
 * workspaces: each record lands at once with --land continuous; the gate runs only when there is one.
 */
function headlessAdapters(
  adapters: RunAdapters,
  places: RunPlaces,
  settings: HeadlessSettings,
  run: { save: (plan: Plan) => Promise<void>; emit: (event: RunEventBody) => void; landing: ReturnType<typeof lander> },
): EngineAdapters {
  const { integration, workspaces } = places;
  const gate = settings.gate;
  return {
    workspaces,
    integration: {
      startOf: (start) => integration.startOf(start),
      record: async (current, request) => {
        const recorded = await integration.record(current, request);
        if (recorded.ok && settings.land === 'continuous') {
          const landed = await run.landing.land();
          if (landed !== null && landed.level === 'warning') run.emit(landed);
        }
        return recorded;
      },
      gate: (_current, request, signal) =>
        gate === null ? Promise.resolve({ passed: true, output: '', durationMs: 0 }) : integration.gate(workspaces, request, gate, signal),
    },
    save: run.save,
    emit: run.emit,
    clock: adapters.clock,
  };
}

/**
 * The probe before any attempt: broken checks refuse the run (their lines, exit 2), vacuous tasks
 * are warned about (refused with --strict). Its events are kept for the journal once the run has
 * started; the first is said at once (`say`). Returns the refusal, or null.
 */
async function probeAtSetup(
  plan: Plan,
  settings: HeadlessSettings,
  context: {
    events: Array<{ event: RunEventBody; said: boolean }>;
    say: ((line: string) => void) | null;
    commands: Commands;
    signal: AbortSignal;
    env: NodeJS.ProcessEnv;
    sandbox: boolean;
  },
): Promise<string[] | null> {
  const emit = (event: RunEventBody) => context.events.push({ event, said: false });
  const checks = probedTasks(plan).reduce((n, i) => n + (taskAt(plan.tasks, i).agent?.acceptanceCriteria?.length ?? 0), 0);
  if (checks === 0) return null;
  const setupCommand = plan.context?.setupCommand;
  const probing = `probing ${plural(checks, 'acceptance check')} of the pending tasks in a checkout of HEAD${setupCommand ? ` prepared with \`${setupCommand}\`` : ' (the plan has no context.setupCommand: nothing is installed there)'} (--no-probe skips this)`;
  context.say?.(`foreman: ${probing}`);
  context.events.push({ event: { type: 'notice', level: 'info', message: probing }, said: context.say !== null });
  const probed = await runProbe(plan, {
    repo: settings.repo,
    checkTimeoutMs: settings.checkTimeoutMs,
    timeoutMs: settings.probeTimeoutMs,
    timeoutFlag: LIMIT_FLAGS.probe,
    env: context.env,
    signal: context.signal,
    commands: context.commands,
    sandbox: context.sandbox,
  });
  if (!probed.ok) {
    emit({ type: 'notice', level: 'warning', message: `the probe could not run: ${describeProbeProblem(probed.error)}` });
    return null;
  }
  const report = probed.value;
  if (context.signal.aborted) return null;
  await saveProbe(settings.planPath, report);
  const { problems, information } = probeFindings(report);
  emit({ type: 'notice', level: report.verdict === 'ok' ? 'info' : 'warning', message: probeHeadline(report) });
  for (const line of information) emit({ type: 'notice', level: 'info', message: `probe: ${line}` });
  const hint = setupCommand ? '' : ' If a check needs installed dependencies, set context.setupCommand (e.g. `npm ci`) in the plan.';
  switch (report.verdict) {
    case 'setup-failed':
      return [
        `the plan's setup command \`${setupCommand ?? ''}\` fails in a fresh checkout of HEAD, so its checks cannot be probed: ${problems.join('; ')}. Fix it, or run with --no-probe.`,
      ];
    case 'problems': {
      const broken = report.tasks.flatMap((t) =>
        t.checks.filter((c) => c.outcome === 'broken').map((c) => `  task ${t.index}: \`${c.check}\`: ${c.reason ?? 'cannot run'}`),
      );
      if (broken.length > 0) {
        return [
          `${plural(broken.length, 'acceptance check')} cannot run, so every attempt of ${broken.length === 1 ? 'its task' : 'their tasks'} would fail; nothing was started. Fix the plan (\`${commandHint('plan', 'probe', ownLayout())}\` shows the details), or run with --no-probe.${hint}`,
          ...broken,
        ];
      }
      const vacuous = report.tasks.filter((t) => t.verdict === 'vacuous');
      const lines = vacuous.map((t) => `task ${t.index} (${t.subject}): every acceptance check passes before the work is done, so they prove nothing about it`);
      if (settings.strict)
        return [
          `${plural(vacuous.length, 'vacuous task')} refused (--strict); give each a check that fails until its work is done:`,
          ...lines.map((l) => `  ${l}`),
        ];
      for (const line of lines) emit({ type: 'notice', level: 'warning', message: `${line} (--strict refuses this)` });
      return null;
    }
    case 'ok':
      return null;
    default:
      return assertNever(report.verdict, 'probe verdict');
  }
}

/** A run of the setup command in a worktree: `set up the worktree slot-0 with \`npm ci\` (2.1 s)`. */
export function describeSetupRun(run: WorktreeSetup): string {
  const unread = run.npmUnread ? `; ${run.npmUnread}` : '';
  const refused = run.sandboxRefusal === undefined ? '' : ` (${run.sandboxRefusal})`;
  if (run.timedOut) return `set up the worktree ${basename(run.dir)}: ${describeTimeLimitHit(run.command, run.timeLimit)}${refused}${unread}`;
  const how = run.exitCode === 0 ? null : `failed (exit ${run.exitCode ?? 'without a code'})${refused}`;
  return `set up the worktree ${basename(run.dir)} with \`${run.command}\`${how ? `: ${how}` : ''} (${(run.durationMs / 1000).toFixed(1)} s)${unread}`;
}
