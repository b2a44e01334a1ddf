// `execute --dry-run`: what a run of the plan would do, starting nothing. One list of events
// (src/core/report/events.ts, DryRunEventBody) is printed as JSON lines with --json, or as text, so
// both forms say the same: every setting, where each command runs, and each worker's permission
// rules as the worker gets them, anchored at its worktree (shown as `//<worktree>/…`).

import { realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  computeOverlaps,
  countByStatus,
  depsOf,
  depths,
  describeHosts,
  describeSandboxUse,
  type DryRunEventBody,
  explicitPermissions,
  formatCost,
  lintPlan,
  longestRemainingPath,
  ok,
  openReview,
  overlapSets,
  type Plan,
  type PlannedCommand,
  planPermissions,
  type PlanWarning,
  plural,
  projectedRounds,
  type SandboxUse,
  statusOf,
  type Task,
  taskAt,
  type WorkerPermissions,
} from '../core/index.ts';
import { type Git, newRunId, poolDir, uncommittedChangesNotice, workerPersonDenies, worktreesRoot } from '../adapters/index.ts';
import { DEFAULTS, refusalBeforeWork, type RunSettings } from '../run/index.ts';
import type { Io } from './command.ts';
import { EXIT, type ExitCode } from './exit.ts';
import type { Settings } from './execute-flags.ts';
import { hostsChecked, setupProblemError } from './execute-checks.ts';
import { checkResults, hostsListed } from './host-flags.ts';

/** What the dry run reports of the settings (the run's, plus what only the command line sets). */
export interface DryRunSettings extends RunSettings {
  sandbox: string;
  /** What `sandbox` comes to on this machine (adapters/sandbox/sandbox.ts `sandboxUse`). */
  sandboxUse: SandboxUse;
  probe: boolean;
  probeTimeoutMs: number;
  strict: boolean;
}

/**
 * The attempt's worktree in the rules the dry run shows: an absolute path (`//<worktree>/a.ts`
 * in a rule, as `//<its real path>/a.ts` in the worker's), since each attempt has a worktree of
 * its own, known only when it starts.
 */
export const WORKTREE_PLACEHOLDER = '/<worktree>';

/** A task a run would start: pending, or in progress when an earlier run was cut short. */
const willRun = (task: Task): boolean => statusOf(task) === 'pending' || statusOf(task) === 'in_progress';

/** Every command the plan runs on this machine: the setup command, the gate, each task's checks. */
function plannedCommands(plan: Plan, settings: DryRunSettings): PlannedCommand[] {
  const setup = plan.context?.setupCommand;
  return [
    ...(setup !== undefined && setup.trim() !== '' ? [{ kind: 'setup', task: null, command: setup } as const] : []),
    ...(settings.gate !== null ? [{ kind: 'gate', task: null, command: settings.gate.command } as const] : []),
    ...plan.tasks.flatMap((t, i) => [
      ...(t.agent?.assumptions ?? []).map((a) => ({ kind: 'assumption', task: i, command: a.verify, claim: a.claim, severity: a.severity }) as const),
      ...(t.agent?.acceptanceCriteria ?? []).map((a) => ({ kind: 'acceptance', task: i, command: a.check, criterion: a.criterion }) as const),
    ]),
  ];
}

/**
 * Each task's rules as its worker gets them — anchored at its worktree (`WORKTREE_PLACEHOLDER`),
 * with the person's deny rules anchored there and at the checkout (adapters/sandbox/person-denies.ts) —
 * and where that worktree is: `<pool>/slot-<n>`, the pool named by the plan's id (`<planId>`
 * before its first run gives it one).
 */
export async function workerRulesShown(
  plan: Plan,
  repo: string,
  allowedTools: readonly string[] | undefined,
  env: NodeJS.ProcessEnv,
): Promise<{ permissions: WorkerPermissions[]; worktree: string }> {
  const repoReal = await realpath(repo);
  const pool =
    typeof plan.planId === 'string' && plan.planId !== ''
      ? poolDir(worktreesRoot(env), repoReal, plan.planId)
      : join(dirname(poolDir(worktreesRoot(env), repoReal, 'plan')), '<planId>');
  const worktree = join(pool, 'slot-<n>');
  const personDenies = await workerPersonDenies(repo, WORKTREE_PLACEHOLDER, env);
  const rules = allowedTools !== undefined ? ok(plan.tasks.map(() => explicitPermissions(allowedTools))) : planPermissions(plan, WORKTREE_PLACEHOLDER);
  // The declared paths and the checkout's real path were checked already (execute's checkWorkerRules).
  if (!rules.ok) throw new Error(`dry run: rules at ${WORKTREE_PLACEHOLDER}: ${rules.error.join('; ')}`);
  return { permissions: rules.value.map((p) => ({ allow: p.allow, deny: [...p.deny, ...personDenies] })), worktree };
}

/**
 * `worktree`: where an attempt's worktree is (`<pool>/slot-<n>`), which `//<worktree>` stands for;
 * `warnings`: the plan lint's, neither fixed nor accepted; `notices`: the warnings the run's start
 * would give of the repository (uncommitted changes), as its `notice` events.
 */
export function dryRunEvents(
  plan: Plan,
  settings: DryRunSettings,
  permissions: readonly WorkerPermissions[],
  worktree: string,
  warnings: readonly PlanWarning[] = [],
  notices: readonly string[] = [],
  /** With `--host`: each host's listing (core/report/host-listing.ts `hostEvents`). */
  hosts: readonly DryRunEventBody[] = [],
): DryRunEventBody[] {
  const deps = depsOf(plan.tasks);
  const rounds = projectedRounds(plan.tasks, overlapSets(computeOverlaps(plan.tasks)), longestRemainingPath(deps));
  return [
    {
      type: 'dry-run-plan',
      goal: plan.goal,
      planPath: settings.planPath,
      taskCount: plan.tasks.length,
      counts: countByStatus(plan),
      maxDepth: Math.max(...depths(deps)),
      worktree,
      settings: {
        concurrency: settings.concurrency,
        schedule: settings.schedule,
        maxAttempts: settings.maxAttempts,
        permissionMode: settings.permissionMode,
        taskTimeoutMs: settings.taskTimeoutMs,
        checkTimeoutMs: settings.checkTimeoutMs,
        land: settings.land,
        commit: settings.commit,
        sandbox: settings.sandbox,
        probe: settings.probe,
        probeTimeoutMs: settings.probeTimeoutMs,
        strict: settings.strict,
        strictScope: settings.strictScope === true,
        limitWaitMs: settings.limitWaitMs,
        widen: settings.widen ?? [],
        speculate: settings.speculate ?? DEFAULTS.speculate,
        maxCostUsd: settings.maxCostUsd ?? null,
        taskBudgetUsd: settings.taskBudgetUsd ?? null,
        gate: settings.gate,
        allowedTools: settings.allowedTools ?? null,
      },
      rounds,
      sandbox: settings.sandboxUse,
    },
    ...hosts,
    ...plannedCommands(plan, settings).map((command): DryRunEventBody => ({ type: 'dry-run-command', ...command })),
    ...plan.tasks.flatMap((task, i): DryRunEventBody[] =>
      willRun(task) ? [{ type: 'dry-run-permissions', task: i, allow: permissions[i]!.allow, deny: permissions[i]!.deny }] : [],
    ),
    ...plan.tasks.flatMap((task, i): DryRunEventBody[] => {
      const review = openReview(task);
      return review === null
        ? []
        : [{ type: 'dry-run-review', task: i, round: task.reviews!.length, feedback: review.feedback, commit: review.commit, base: review.base }];
    }),
    ...warnings.map((warning): DryRunEventBody => ({ type: 'dry-run-warning', ...warning })),
    ...notices.map((message): DryRunEventBody => ({ type: 'notice', level: 'warning', message })),
  ];
}

/** One line for a command the plan runs, with where it runs. */
function describeCommand(command: PlannedCommand): string {
  switch (command.kind) {
    case 'setup':
      return `setup, in each new worktree and in the probe's checkout of HEAD: ${command.command}`;
    case 'gate':
      return `gate, in a worktree of its own: on the starting commit, then on each batch of verified work on the integration tip: ${command.command}`;
    case 'assumption':
      return `task ${command.task} assumption (${command.severity}), in a worktree of the integration tip before any worker starts: ${command.command}`;
    case 'acceptance':
      return `task ${command.task} acceptance, in the attempt's worktree after its worker: ${command.command}`;
  }
}

/** The settings of the dry-run-plan event, one line each, in the words of their flags. */
function describeSettings(event: Extract<DryRunEventBody, { type: 'dry-run-plan' }>): string[] {
  const s = event.settings;
  const seconds = (ms: number) => `${ms / 1000} s`;
  return [
    `Plan: ${event.planPath}`,
    `Goal: ${event.goal}`,
    `Tasks: ${event.taskCount} (max dependency depth ${event.maxDepth}); ${event.counts.pending ?? 0} pending`,
    `Workers: up to ${s.concurrency} at once, ${s.schedule} scheduling, ${s.maxAttempts} attempts per task, ${seconds(s.taskTimeoutMs)} each (--task-timeout), permission mode ${s.permissionMode}; each in a worktree of its own, ${event.worktree}`,
    s.gate === null
      ? 'Gate: none (verified work integrates untested together)'
      : `Gate: \`${s.gate.command}\` on batches of up to ${s.gate.batchSize}, ${seconds(s.gate.timeoutMs)} each (--gate-timeout); first on the starting commit; ${s.speculate === 0 ? 'a task waits for its blockers to integrate (--speculate 0)' : `a task may start on candidates in the queue, up to ${plural(s.speculate, 'level')} (--speculate)`}`,
    `Checks: ${seconds(s.checkTimeoutMs)} each (--check-timeout); ${s.probe ? `the pending tasks' acceptance checks probed before any worker starts, ${seconds(s.probeTimeoutMs)} in all (--probe-timeout), a vacuous task ${s.strict ? 'refusing the run (--strict)' : 'warned about (--strict refuses it)'}` : 'no probe (--no-probe)'}`,
    `Scope: ${s.strictScope ? "a change outside a task's declared files fails its attempt (--strict-scope)" : "a change outside a task's declared files is set aside, never integrated, and the checks decide (--strict-scope fails it)"}; ${s.widen.length === 0 ? 'no task is widened during the run (--widen)' : `a task may be widened to files it needs matching ${s.widen.join(' ')} (--widen)`}`,
    `Limits: a rate limit or overload slows the whole run (no attempt spent, no task failed); ${s.limitWaitMs === 0 ? 'a usage limit or the API out of reach stops the run at once (--limit-wait 0)' : `the run waits up to ${seconds(s.limitWaitMs)} for a usage limit to reset or for the API to answer when it is out of reach, else it stops (exit 75) saying when to run again (--limit-wait)`}`,
    // The run's own line (`sandbox: …`), as a setting.
    `S${describeSandboxUse(event.sandbox).slice(1)}`,
    `Landing: integrated work lands on your branch ${s.land === 'continuous' ? 'after every integration and when the run stops (--land continuous)' : 'when the run stops (--land end)'}, ${s.commit ? 'as commits' : 'as uncommitted changes in your files (--no-commit)'}`,
    `Cost: ${s.maxCostUsd === null ? 'no limit (--max-cost-usd)' : `no new work once the run has spent ${formatCost(s.maxCostUsd)} (--max-cost-usd)`}; ${s.taskBudgetUsd === null ? 'no budget per worker (--task-budget-usd)' : `${formatCost(s.taskBudgetUsd)} per worker whose task sets none (--task-budget-usd)`}`,
  ];
}

/** The text form of the events; the plan gives the tasks' subjects. */
export function describeDryRun(events: readonly DryRunEventBody[], plan: Plan): string[] {
  const lines: string[] = [];
  const commands = events.flatMap((e) => (e.type === 'dry-run-command' ? [e] : []));
  const warnings = events.filter((e) => e.type === 'dry-run-warning').length;
  const hosts = events.flatMap((e) => (e.type === 'dry-run-host' ? [e] : []));
  let warned = false;
  for (const event of events) {
    switch (event.type) {
      case 'dry-run-plan': {
        const s = event.settings;
        lines.push(...describeSettings(event));
        lines.push(...describeHosts(hosts, s.concurrency));
        event.rounds.forEach((groups, r) => {
          lines.push(`Round ${r + 1}:`);
          groups.forEach((group, k) => {
            const note = k > 0 ? '  (overlaps the group above: runs after it)' : '';
            lines.push(`  ${group.map((i) => `[${i}] ${taskAt(plan.tasks, i).subject}`).join('  |  ')}${note}`);
          });
        });
        lines.push(
          `Commands this plan runs on this machine (with bash in the sandbox, /bin/sh without it; never in your working tree; sandbox: ${event.sandbox.sandboxed ? 'on' : 'off'}, as above):`,
        );
        lines.push(...(commands.length > 0 ? commands.map((c) => `  ${describeCommand(c)}`) : ['  (none)']));
        lines.push(
          s.allowedTools !== null
            ? `Worker permission rules (--allowed-tools, every task; permission mode ${s.permissionMode}):`
            : `Worker permission rules, as each worker gets them (permission mode ${s.permissionMode}; anything else is denied in dontAsk mode); //<worktree> is its worktree's real path:`,
        );
        break;
      }
      case 'dry-run-command':
      case 'dry-run-host':
        break;
      case 'dry-run-permissions':
        lines.push(`  task ${event.task} allow: ${event.allow.length > 0 ? event.allow.join('  ') : '(nothing)'}`);
        if (event.deny.length > 0) lines.push(`  task ${event.task} deny:  ${event.deny.join('  ')}`);
        break;
      case 'dry-run-review':
        lines.push(
          `Task ${event.task}, review round ${event.round}: its next attempt starts from its parked work (commit ${event.commit.slice(0, 12)}, its work counted from ${event.base.slice(0, 12)}), asked: ${JSON.stringify(event.feedback)}`,
        );
        break;
      case 'dry-run-warning':
        if (!warned) lines.push(`Plan warnings (${warnings}; fix each in the plan, or accept it with a reason in the plan's "acceptedWarnings"):`);
        warned = true;
        lines.push(`  ${event.message}`);
        break;
      case 'notice':
        lines.push(`${event.level === 'warning' ? 'Warning' : 'Note'}: ${event.message}`);
        break;
    }
  }
  lines.push('Nothing was started (--dry-run).');
  return lines;
}

/**
 * `--dry-run`: what the run would do, as text or (--json) one event per line; nothing starts and
 * nothing is written. It refuses what the run would refuse in its setup, with the same line and
 * exit code (`refusalBeforeWork`, looking only), and warns of uncommitted changes as the run does.
 */
export async function dryRun(plan: Plan, settings: Settings, sandbox: SandboxUse, git: Git, io: Io, sandboxed: boolean): Promise<ExitCode> {
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
