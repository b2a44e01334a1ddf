// `plan.ts approve|reject|retry|skip N`: a person's decisions between runs. Each takes the run
// lock for the moment it edits the plan (so no run can start halfway), refuses with exit 3 while
// a run holds it, refuses with exit 2 when the task's state does not allow the change, writes
// the plan atomically and prints what changed. Run events are the run's: none is journaled here.

import { type LockInfo, acquireLock, currentLockInfo, writePlanAtomic } from '../../adapters/plan-store.ts';
import { type InterventionResult, approveTask, describeChange, rejectTask, retryTask, skipTask } from '../../core/interventions.ts';
import type { Plan } from '../../core/plan.ts';
import { type Command, type OptionSpec, intArg } from '../command.ts';
import { CliError, EXIT, usageError } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const lockHeldMessage = (holder: LockInfo): string =>
  `a run (pid ${holder.pid} on host ${holder.host}, started ${holder.startedAt}) holds the lock; stop it first or wait`;

const reasonOption: Record<string, OptionSpec> = {
  reason: { type: 'string', valueName: 'TEXT', description: 'why (required; recorded in the task\'s result)' },
};

const taskPositional = [{ name: 'N', description: 'the task index', required: true }];

interface Spec {
  name: string;
  summary: string;
  needsReason: boolean;
  apply(plan: Plan, index: number, reason: string, now: string): InterventionResult;
}

function interventionCommand(spec: Spec): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: `N [--plan FILE]${spec.needsReason ? ' --reason TEXT' : ''}`,
    options: { ...planOption, ...(spec.needsReason ? reasonOption : {}) },
    positionals: taskPositional,
    async run({ values, positionals }, io) {
      const index = intArg('N', positionals[0])!;
      const reason = typeof values.reason === 'string' ? values.reason : '';
      if (spec.needsReason && reason.trim() === '') throw usageError(`${spec.name}: --reason "…" is required (say why; it is recorded in the plan)`);
      const path = planPathFrom(values, io.cwd);
      const lock = await acquireLock(path, currentLockInfo(`plan.ts ${spec.name} ${index}`));
      if (!lock.ok) throw new CliError(EXIT.cannotRun, [`${spec.name}: ${lockHeldMessage(lock.error.holder)}`]);
      try {
        const plan = await loadPlan(path);
        const result = spec.apply(plan, index, reason, new Date().toISOString());
        if (!result.ok) throw new CliError(EXIT.invalid, [`${spec.name}: ${result.error}`]);
        await writePlanAtomic(path, result.value.plan);
        for (const c of result.value.changes) io.out(describeChange(c));
        return EXIT.ok;
      } finally {
        await lock.value.release();
      }
    },
  };
}

export const approve = interventionCommand({
  name: 'approve',
  summary: 'Approve a task awaiting approval: it becomes completed (its work is verified; the next run commits it).',
  needsReason: false,
  apply: (plan, i, _reason, now) => approveTask(plan, i, now),
});

export const reject = interventionCommand({
  name: 'reject',
  summary: 'Reject a task awaiting approval: it fails with the reason, and the tasks depending on it are skipped.',
  needsReason: true,
  apply: (plan, i, reason, now) => rejectTask(plan, i, reason, now),
});

export const retry = interventionCommand({
  name: 'retry',
  summary: 'Retry a failed or blocked task: back to pending with attempts reset, with the tasks skipped because of it.',
  needsReason: false,
  apply: (plan, i) => retryTask(plan, i),
});

export const skip = interventionCommand({
  name: 'skip',
  summary: 'Skip a pending, failed or blocked task with a reason; the tasks depending on it are skipped too.',
  needsReason: true,
  apply: (plan, i, reason) => skipTask(plan, i, reason),
});
