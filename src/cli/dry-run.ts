// `execute --dry-run`: what a run of the plan would do, starting nothing. One list of events
// (src/core/events.ts, DryRunEventBody) is printed as JSON lines with --json, or as text, so
// both forms say the same.

import type { DryRunEventBody, PlannedCommand } from '../core/events.ts';
import { countByStatus, depsOf, depths, longestRemainingPath } from '../core/graph.ts';
import { computeOverlaps, overlapSets } from '../core/overlap.ts';
import { type Plan, type Task, statusOf } from '../core/plan.ts';
import type { PlanWarning } from '../core/plan-lint.ts';
import { projectedRounds } from '../core/schedule.ts';
import type { WorkerPermissions } from '../core/scope.ts';
import type { RunSettings } from '../run/settings.ts';

/** What the dry run reports of the settings (the run's, plus what only the command line sets). */
export interface DryRunSettings extends RunSettings {
  sandbox: string;
  probe: boolean;
}

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

export function dryRunEvents(plan: Plan, settings: DryRunSettings, permissions: readonly WorkerPermissions[], warnings: readonly PlanWarning[] = []): DryRunEventBody[] {
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
        maxCostUsd: settings.maxCostUsd ?? null,
        taskBudgetUsd: settings.taskBudgetUsd ?? null,
        gate: settings.gate,
        allowedTools: settings.allowedTools ?? null,
      },
      rounds,
    },
    ...plannedCommands(plan, settings).map((command): DryRunEventBody => ({ type: 'dry-run-command', ...command })),
    ...plan.tasks.flatMap((task, i): DryRunEventBody[] =>
      willRun(task) ? [{ type: 'dry-run-permissions', task: i, allow: permissions[i]!.allow, deny: permissions[i]!.deny }] : [],
    ),
    ...warnings.map((warning): DryRunEventBody => ({ type: 'dry-run-warning', ...warning })),
  ];
}

/** One line for a command the plan runs. */
function describeCommand(command: PlannedCommand): string {
  switch (command.kind) {
    case 'setup':
      return `setup (in each new worktree, and the probe's checkout): ${command.command}`;
    case 'gate':
      return `gate (on the starting commit, then on each batch of verified work): ${command.command}`;
    case 'assumption':
      return `task ${command.task} assumption (${command.severity}): ${command.command}`;
    case 'acceptance':
      return `task ${command.task} acceptance: ${command.command}`;
  }
}

/** The text form of the events; the plan gives the tasks' subjects. */
export function describeDryRun(events: readonly DryRunEventBody[], plan: Plan): string[] {
  const lines: string[] = [];
  const commands = events.flatMap((e) => (e.type === 'dry-run-command' ? [e] : []));
  const warnings = events.filter((e) => e.type === 'dry-run-warning').length;
  let warned = false;
  for (const event of events) {
    switch (event.type) {
      case 'dry-run-plan': {
        const s = event.settings;
        lines.push(`Goal: ${event.goal}`);
        lines.push(`Tasks: ${event.taskCount} (max dependency depth ${event.maxDepth}); ${event.counts.pending ?? 0} pending`);
        lines.push(`Workers: up to ${s.concurrency} at once, ${s.schedule} scheduling, ${s.maxAttempts} attempts per task, permission mode ${s.permissionMode}`);
        lines.push(s.gate === null ? 'Gate: none (verified work integrates untested together)' : `Gate: \`${s.gate.command}\` on batches of up to ${s.gate.batchSize}, ${s.gate.timeoutMs / 1000} s each; first on the starting commit`);
        event.rounds.forEach((groups, r) => {
          lines.push(`Round ${r + 1}:`);
          groups.forEach((group, k) => {
            const note = k > 0 ? '  (overlaps the group above: runs after it)' : '';
            lines.push(`  ${group.map((i) => `[${i}] ${plan.tasks[i]!.subject}`).join('  |  ')}${note}`);
          });
        });
        lines.push('Commands this plan runs on this machine (with /bin/sh, in the repository):');
        lines.push(...(commands.length > 0 ? commands.map((c) => `  ${describeCommand(c)}`) : ['  (none)']));
        lines.push(
          s.allowedTools !== null
            ? `Worker permission rules (--allowed-tools, every task; permission mode ${s.permissionMode}):`
            : `Worker permission rules (permission mode ${s.permissionMode}; anything else is denied in dontAsk mode):`,
        );
        break;
      }
      case 'dry-run-command':
        break;
      case 'dry-run-permissions':
        lines.push(`  task ${event.task} allow: ${event.allow.length > 0 ? event.allow.join('  ') : '(nothing)'}`);
        if (event.deny.length > 0) lines.push(`  task ${event.task} deny:  ${event.deny.join('  ')}`);
        break;
      case 'dry-run-warning':
        if (!warned) lines.push(`Plan warnings (${warnings}; fix each in the plan, or accept it with a reason in the plan's "acceptedWarnings"):`);
        warned = true;
        lines.push(`  ${event.message}`);
        break;
    }
  }
  lines.push('Nothing was started (--dry-run).');
  return lines;
}
