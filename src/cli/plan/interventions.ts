// `plan.ts approve|revise|reject|retry|skip N…`: a person's decisions between runs, on one task or several
// (`plan retry 0 1 2`), all or nothing. Each takes the run lock for the moment it edits the plan
// (so no run can start halfway), refuses with exit 3 while a run holds it, checks every task
// first and refuses with exit 2, naming each task whose state does not allow the change, when one
// does not (nothing written), else writes the plan once, atomically, and prints what changed.
// Run events are the run's: none is journaled here.

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  acquireLock,
  awaitingRef,
  commitOf,
  currentLockInfo,
  dropParked,
  integrationRef,
  lockHeldMessage,
  readRef,
  writePlanAtomic,
} from '../../adapters/index.ts';
import {
  approveTasks,
  type Change,
  DEFAULT_REVIEW_ROUNDS,
  describeChange,
  describeGitFailure,
  type EarlierWork,
  failureOf,
  type InterventionsResult,
  listIndices,
  type Plan,
  rejectTasks,
  retryTasks,
  reviewRoundsAllowed,
  reviseTasks,
  skipTasks,
  taskAt,
} from '../../core/index.ts';
import { describeIntegrationFailure, integrateParked, landTarget } from '../../run/index.ts';
import type { Command, Io, Numbers, OptionSpec, PositionalSpec } from '../command.ts';
import { RANGES } from '../numeric-flags.ts';
import { CliError, EXIT, type ExitCode, gitFailedError, usageError } from '../exit.ts';
import { existingPlanPath, loadPlan, planRepository } from '../load.ts';
import { describeLanding } from './land.ts';
import { planOption } from './options.ts';

const reasonOption: Record<string, OptionSpec> = {
  reason: { type: 'string', valueName: 'TEXT', description: "why (required; recorded in the task's result)" },
};

const taskPositional: PositionalSpec[] = [
  { name: 'N', description: 'the task index', required: true, range: RANGES.taskIndex, rest: true, several: 'task numbers' },
];

/** What a decision does in the repository, around writing the plan (under the same lock). */
interface Decision {
  /** The repository holding the plan, or null when it is in none (then nothing was parked). */
  repo: string | null;
  planPath: string;
  /** The plan as it will be written (may be changed before it is). */
  plan: Plan;
  /** The tasks decided on, each once, in the order given. */
  indices: number[];
  changes: Change[];
  values: Record<string, string | boolean | string[] | undefined>;
  io: Io;
  /** Set by approve when it integrated the tasks' parked work now: the commit, and the tasks whose work it holds. */
  integrated: { commit: string | null; tasks: number[] } | null;
}

/** What a decision may read besides the plan: its command's flags, and the repository holding the plan (null: none). */
interface Given {
  values: Record<string, string | boolean | string[] | undefined>;
  numbers: Numbers;
  repo: string | null;
  /** Where the command runs: relative paths of its flags are read from there. */
  cwd: string;
}

interface Spec {
  name: string;
  summary: string;
  needsReason: boolean;
  extraUsage?: string;
  options?: Record<string, OptionSpec>;
  /** Reads the repository (`needsRepository`) before the pure decision, under the lock. */
  needsRepository?: boolean;
  /** Checks its flags before the lock is taken (throws a usage error). */
  flags?(values: Given['values']): Promise<void>;
  apply(plan: Plan, indices: readonly number[], reason: string, now: string, given: Given): InterventionsResult | Promise<InterventionsResult>;
  /** Before the plan is written; throws CliError to leave everything as it was. */
  before?(decision: Decision): Promise<void>;
  /** After the plan is written (and its changes printed): the exit code. */
  after?(decision: Decision): Promise<ExitCode>;
}

/**
 * A decision refused, as the person is told: why, for each task that cannot be changed (one line
 * each); with several tasks given, that none of them was.
 */
function refusal(verb: string, indices: readonly number[], problems: readonly string[]): string[] {
  const lines = problems.map((problem) => `${verb}: ${problem}`);
  return indices.length > 1 ? [...lines, `${verb}: nothing was changed (tasks ${listIndices(indices)}: all of them or none)`] : lines;
}

function interventionCommand(spec: Spec): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: `N… [--plan FILE]${spec.needsReason ? ' --reason TEXT' : ''}${spec.extraUsage ?? ''}`,
    options: { ...planOption, ...(spec.needsReason ? reasonOption : {}), ...spec.options },
    positionals: taskPositional,
    async run({ values, positionals, numbers }, io) {
      // Each checked against the range already (the positional's).
      const indices = [...new Set(positionals.map(Number))];
      const reason = typeof values.reason === 'string' ? values.reason : '';
      if (spec.needsReason && reason.trim() === '') throw usageError('--reason "…" is required (say why; it is recorded in the plan)');
      await spec.flags?.(values);
      const path = await existingPlanPath(values, io.cwd);
      const lock = await acquireLock(path, currentLockInfo(`plan ${spec.name} ${indices.join(' ')}`));
      if (!lock.ok) throw new CliError(EXIT.cannotRun, [`${spec.name}: ${lockHeldMessage(lock.error.holder)}`]);
      try {
        const plan = await loadPlan(path);
        const repo = spec.before || spec.after || spec.needsRepository ? await planRepository(path) : null;
        const result = await spec.apply(plan, indices, reason, new Date().toISOString(), { values, numbers, repo, cwd: io.cwd });
        if (!result.ok) throw new CliError(EXIT.invalid, refusal(spec.name, indices, result.error));
        const decision: Decision = {
          repo,
          planPath: path,
          plan: result.value.plan,
          indices,
          changes: result.value.changes,
          values,
          io,
          integrated: null,
        };
        await spec.before?.(decision);
        await writePlanAtomic(path, decision.plan);
        for (const c of decision.changes) io.out(describeChange(c));
        return (await spec.after?.(decision)) ?? EXIT.ok;
      } finally {
        await lock.value.release();
      }
    },
  };
}

export const approve = interventionCommand({
  name: 'approve',
  summary:
    "Approve tasks awaiting approval: each becomes completed; their parked work is integrated on the plan's ref now (one commit) and landed on your branch (as `plan land` does), or, when the plan has a test command, tested by the next run's gate first.",
  needsReason: false,
  extraUsage: ' [--no-commit]',
  options: { 'no-commit': { type: 'boolean', description: 'land in your files as uncommitted changes, as `plan land --no-commit` does' } },
  apply: (plan, indices, _reason, now) => approveTasks(plan, indices, now),
  async before(decision) {
    if (decision.repo === null) return;
    // With a gate, approved work integrates only once the test command passed on it: the next run does that.
    const gate = decision.plan.context?.testCommand;
    if (typeof gate === 'string' && gate.trim() !== '') {
      const note = `approved; the next run tests its work with the gate (\`${gate}\`) and integrates it`;
      decision.changes = decision.changes.map((change) => ({ ...change, note }));
      return;
    }
    const integrated = await integrateParked(decision.repo, decision.plan, decision.indices);
    if (!integrated.ok) {
      const code = integrated.error.kind === 'conflict' ? EXIT.invalid : EXIT.gitFailed;
      const still = decision.indices.length === 1 ? `task ${decision.indices[0]} is` : `tasks ${listIndices(decision.indices)} are`;
      throw new CliError(code, [`approve: ${describeIntegrationFailure(integrated.error, decision.indices)}; ${still} still awaiting approval`]);
    }
    if (integrated.value === null) return; // nothing parked: an older run's approval, committed by the next run
    const { commit, tasks } = integrated.value;
    for (const index of tasks) if (commit !== null) taskAt(decision.plan.tasks, index).commit = commit;
    decision.integrated = integrated.value;
    const note = commit === null ? 'approved; its work changed nothing' : `approved; its work was integrated (${commit.slice(0, 12)})`;
    // Tasks with nothing parked (an older run's approval) keep the note that the next run commits their work.
    decision.changes = decision.changes.map((change) => (tasks.includes(change.task) ? { ...change, note } : change));
  },
  async after(decision) {
    if (decision.repo === null || decision.integrated === null) return EXIT.ok;
    const planId = decision.plan.planId as string;
    for (const index of decision.integrated.tasks) await dropParked(decision.repo, planId, index);
    const target = { planPath: decision.planPath, runPath: decision.planPath, plan: decision.plan, planId, ref: integrationRef(planId), archived: false };
    const outcome = await landTarget(decision.repo, target, { mode: decision.values['no-commit'] === true ? 'worktree' : 'commit', env: decision.io.env });
    return describeLanding(target, outcome, decision.io);
  },
});

const feedbackOptions: Record<string, OptionSpec> = {
  feedback: { type: 'string', valueName: 'TEXT', description: "the changes you want, in your words: the revision's prompt carries them verbatim" },
  'feedback-file': { type: 'string', valueName: 'FILE', description: 'read the words from FILE instead (`-`: standard input)' },
  'max-rounds': {
    type: 'string',
    valueName: 'N',
    description: `the most review rounds a task may have, this one included (default: the plan's context.maxReviewRounds, else ${DEFAULT_REVIEW_ROUNDS})`,
    range: RANGES.reviewRounds,
  },
};

/** The reviewer's words, from `--feedback` or `--feedback-file`. */
async function feedbackOf(values: Given['values'], cwd: string): Promise<string> {
  const file = values['feedback-file'];
  if (typeof file !== 'string') return typeof values.feedback === 'string' ? values.feedback : '';
  const path = file === '-' ? '/dev/stdin' : resolve(cwd, file);
  return readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw usageError(`--feedback-file: cannot read ${file === '-' ? 'standard input' : path} (${e.code ?? e.message})`);
  });
}

/** The work parked for each of `indices` (null: none), or why git could not say. */
async function parkedFor(repo: string, planId: string, indices: readonly number[]): Promise<Map<number, EarlierWork | null>> {
  const parked = new Map<number, EarlierWork | null>();
  for (const index of indices) {
    const ref = awaitingRef(planId, index);
    const commit = await readRef(repo, ref);
    if (!commit.ok) throw gitFailedError(`read task ${index}'s parked work (${ref})`, commit.error);
    if (commit.value === null) {
      parked.set(index, null);
      continue;
    }
    const base = await commitOf(repo, `${commit.value}^`);
    if (!base.ok) throw gitFailedError(`read where task ${index}'s parked work started (${ref}^)`, failureOf(base.error));
    parked.set(index, { commit: commit.value, base: base.value });
  }
  return parked;
}

export const revise = interventionCommand({
  name: 'revise',
  summary:
    "Send tasks awaiting approval back to a worker with your words: each is pending again, its next attempt starts from its parked work with your feedback in its prompt, and spends none of the task's attempts; the parked work stays until the revision awaits approval in its place.",
  needsReason: false,
  extraUsage: ' (--feedback TEXT | --feedback-file FILE) [--max-rounds N]',
  options: feedbackOptions,
  needsRepository: true,
  async flags(values) {
    const given = [values.feedback, values['feedback-file']].filter((v) => typeof v === 'string').length;
    if (given === 0) throw usageError('--feedback "…" or --feedback-file FILE is required (the changes you want; the revision\'s prompt carries them)');
    if (given > 1) throw usageError('give --feedback or --feedback-file, not both');
  },
  async apply(plan, indices, _reason, now, given) {
    const feedback = await feedbackOf(given.values, given.cwd);
    const planId = plan.planId;
    const parked =
      given.repo === null || typeof planId !== 'string' || planId === ''
        ? new Map<number, EarlierWork | null>(indices.map((index) => [index, null]))
        : await parkedFor(given.repo, planId, indices);
    return reviseTasks(plan, indices, { feedback, at: now, parked, maxRounds: given.numbers['max-rounds'] ?? reviewRoundsAllowed(plan) });
  },
});

export const reject = interventionCommand({
  name: 'reject',
  summary: 'Reject tasks awaiting approval: each fails with the reason, its parked work is dropped, and the tasks depending on it are skipped.',
  needsReason: true,
  apply: (plan, indices, reason, now) => rejectTasks(plan, indices, reason, now),
  async after(decision) {
    const planId = decision.plan.planId;
    if (decision.repo === null || typeof planId !== 'string' || planId === '') return EXIT.ok;
    for (const index of decision.indices) {
      const ref = awaitingRef(planId, index);
      const parked = await readRef(decision.repo, ref);
      if (!parked.ok)
        throw new CliError(EXIT.gitFailed, [
          `reject: the plan records the rejection, but git could not say whether task ${index} has parked work: ${describeGitFailure(parked.error)}; if \`git rev-parse ${ref}\` names a commit, drop it with \`git update-ref -d ${ref}\``,
        ]);
      if (parked.value === null) continue;
      const dropped = await dropParked(decision.repo, planId, index);
      if (!dropped.ok)
        throw new CliError(EXIT.gitFailed, [
          `reject: the plan records the rejection, but task ${index}'s parked work could not be dropped: ${describeGitFailure(dropped.error)}; drop it with \`git update-ref -d ${ref}\``,
        ]);
      decision.io.out(`dropped ${decision.indices.length === 1 ? 'its' : `task ${index}'s`} parked work (${ref})`);
    }
    return EXIT.ok;
  },
});

export const retry = interventionCommand({
  name: 'retry',
  summary: 'Retry failed or blocked tasks: back to pending with attempts reset, with the tasks skipped because of them.',
  needsReason: false,
  apply: (plan, indices) => retryTasks(plan, indices),
});

export const skip = interventionCommand({
  name: 'skip',
  summary: 'Skip pending, failed or blocked tasks with a reason; the tasks depending on them are skipped too.',
  needsReason: true,
  apply: (plan, indices, reason) => skipTasks(plan, indices, reason),
});
