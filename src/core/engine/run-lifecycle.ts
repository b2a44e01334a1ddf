// A run's life in words and events, pure: its start and end as the journal tells them, the exit
// code a stop gives, how to go on, the refusal of a gate that fails on the starting commit, and
// what is said of a landing. The headless run (run/headless/headless.ts) and the in-session steps
// (run/session/session.ts) both use them; run/lifecycle.ts does the landing and the finishing itself.

import { approvalHint, commandHint, type Layout } from '../command-hint.ts';
import type { RunEventBody, RunOutcome } from '../report/index.ts';
import { EXIT, type ExitCode } from './exit-codes.ts';
import { assertNever, type Result } from '../result.ts';
import { clipMiddle, listIndices, listSome, plural } from '../format.ts';
import type { EngineStop } from './state.ts';
import { countByStatus, depsOf, longestRemainingPath, type Plan, statusOf, taskAt, type TaskStatus, type UsageFigure } from '../plan/index.ts';
import { describeLandingProblem, type Landed, type LandingProblem, landingProblemSentence } from '../integration/index.ts';
import { neededPaths } from '../attempt/index.ts';

// ---------------------------------------------------------------------------------------------
// A run's start and end

/** The `run-started` event of a run of `plan`. */
export function runStartedEvent(
  plan: Plan,
  options: { planPath: string; resumed: boolean; concurrency: number; schedule: string; mode: 'headless' | 'session' },
): RunEventBody {
  return {
    type: 'run-started',
    goal: plan.goal,
    planPath: options.planPath,
    taskCount: plan.tasks.length,
    maxDepth: longestRemainingPath(depsOf(plan.tasks)).reduce((m, n) => Math.max(m, n), 0),
    resumed: options.resumed,
    concurrency: options.concurrency,
    schedule: options.schedule,
    pid: process.pid,
    ...(options.mode === 'session' ? { mode: 'session' as const } : {}),
  };
}

/** The exit code a run that stopped as `stop` says ends with: a run the gate refused on the starting commit had invalid input. */
export function exitCodeFor(stop: Pick<EngineStop, 'reason' | 'baselineFailure'>): ExitCode {
  if (stop.baselineFailure !== undefined) return EXIT.invalid;
  const reason = stop.reason;
  switch (reason) {
    case 'all-done':
      return EXIT.ok;
    case 'interrupted':
      return EXIT.interrupted;
    case 'agent-unavailable':
    case 'setup-failed':
      return EXIT.cannotRun;
    case 'git-failed':
      return EXIT.gitFailed;
    case 'breaker':
    case 'deadlock':
    case 'awaiting_approval':
    case 'budget':
    case 'failures':
    case 'drained':
      return EXIT.incomplete;
    case 'limited':
    case 'api-unreachable':
    case 'hosts-down':
      return EXIT.limited;
    default:
      return assertNever(reason, 'stop reason');
  }
}

const outcomeOfCode = (code: ExitCode): RunOutcome =>
  code === EXIT.ok ? 'completed' : code === EXIT.interrupted ? 'interrupted' : code === EXIT.cannotRun ? 'cannot-run' : 'incomplete';

/** The tasks of `plan` in one of `states`, by index. */
const tasksWith = (plan: Plan, ...states: TaskStatus[]): number[] => plan.tasks.flatMap((t, i) => (states.includes(statusOf(t)) ? [i] : []));

/** Failed and blocked tasks: what running again does not retry. */
const stuckTasks = (plan: Plan): number[] => tasksWith(plan, 'failed', 'blocked');

/** A command that puts failed or blocked tasks back to pending, as the person types it; `needs`: the files a `declare` adds. */
export interface PutBack {
  command: string;
  tasks: number[];
  needs?: string[];
}

/**
 * How the failed and blocked tasks go back to pending: one `plan retry` with every number, and
 * `plan declare N --needed` for each task that wanted files it does not declare (it retries the
 * task too).
 */
export function putBackCommands(plan: Plan, layout: Layout): PutBack[] {
  const stuck = stuckTasks(plan).map((task) => ({ task, needs: neededPaths(taskAt(plan.tasks, task)) }));
  const retried = stuck.filter((s) => s.needs.length === 0).map((s) => s.task);
  return [
    ...(retried.length > 0 ? [{ command: commandHint('plan', `retry ${retried.join(' ')}`, layout), tasks: retried }] : []),
    ...stuck
      .filter((s) => s.needs.length > 0)
      .map((s) => ({ command: commandHint('plan', `declare ${s.task} --needed`, layout), tasks: [s.task], needs: s.needs })),
  ];
}

/**
 * What running again will do. Failed and blocked tasks stay so (and what was skipped because of
 * them stays skipped) until `plan retry N…` puts them back to pending: say so, naming them.
 */
export function resumeAdvice(plan: Plan, layout: Layout): string {
  const stuck = stuckTasks(plan);
  const pending = plan.tasks.some((t) => statusOf(t) === 'pending' || statusOf(t) === 'in_progress');
  if (stuck.length === 0) return 'run the same command again to resume';
  const states = new Set(stuck.map((i) => statusOf(taskAt(plan.tasks, i))));
  const which =
    stuck.length === 1
      ? `task ${stuck[0]} is ${[...states][0]}`
      : `tasks ${listIndices(stuck)} are ${states.size === 1 ? [...states][0] : 'failed or blocked'}`;
  const them = stuck.length === 1 ? 'it' : 'them';
  // A task that wanted files it does not declare is put back by declaring them (which retries it).
  const backs = putBackCommands(plan, layout);
  const commands = backs.map((b) => `\`${b.command}\`${b.needs ? ` (${stuck.length === 1 ? 'it' : `task ${b.tasks[0]}`} needs ${b.needs.join(', ')})` : ''}`);
  return `${which}, and running the same command again will not retry ${them}${pending ? ' (it only resumes the pending tasks)' : ''}. Fix the cause, then put ${them} back with ${listSome(commands, commands.length)} (tasks skipped because of ${them} come back too) and run the same command again`;
}

/** How a run ended, as what to do next needs it. */
export interface EndedRun {
  /** How to land what could not land; null when everything landed. */
  landingAdvice: string | null;
  /** The gate failed on the starting commit: the run was refused. */
  refused: boolean;
  /** A limit stopped the run: when running it again goes on (ISO). */
  resumeAfter?: string;
}

/**
 * The way to go on after a run, one step a line, each naming its command: land what could not
 * land, put failed and blocked tasks back, decide on tasks awaiting approval, run again. Empty
 * when nothing is left to do. For the run's Summary, which repeats what the closing message says.
 */
export function nextSteps(plan: Plan, layout: Layout, end: EndedRun): string[] {
  const steps: string[] = [];
  if (end.landingAdvice !== null) steps.push(end.landingAdvice);
  if (end.refused) steps.push('fix what fails the gate on the starting commit (below), or run with --no-gate or --gate CMD');
  for (const back of putBackCommands(plan, layout)) {
    steps.push(
      back.needs !== undefined
        ? `\`${back.command}\` declares what task ${back.tasks[0]} needs (${back.needs.join(', ')}) and puts it back`
        : `\`${back.command}\` puts ${back.tasks.length === 1 ? `task ${back.tasks[0]}` : `tasks ${listIndices(back.tasks)}`} back to pending, with the tasks skipped because of ${back.tasks.length === 1 ? 'it' : 'them'}`,
    );
  }
  // Each task awaiting approval with its own three commands: approving one, revising another is the usual review.
  for (const task of tasksWith(plan, 'awaiting_approval')) steps.push(`${approvalHint(task, layout)} decides on task ${task}, which awaits approval`);
  // Tasks that a run would still do (once put back or decided on): running again goes on.
  if (plan.tasks.some((t) => statusOf(t) !== 'completed' && statusOf(t) !== 'skipped')) {
    const again = end.resumeAfter !== undefined ? `run the same command again after ${end.resumeAfter}` : 'run the same command again';
    steps.push(steps.length > 0 ? `then ${again}` : again);
  }
  return steps;
}

/**
 * The `run-finished` event of a run that stopped for `reason` (the step function's words in
 * `message`): its exit code (1 when work could not land, whatever else), and what to do next —
 * the approval commands, how to land by hand, where the plan went, or how to resume.
 */
export function runFinishedEvent(
  plan: Plan,
  end: Pick<EngineStop, 'reason' | 'message' | 'baselineFailure' | 'resumeAfter'> & { usage: UsageFigure; durationMs: number },
  context: { layout: Layout; planPath: string; landing: { landed: boolean; advice: string }; archived: string | null; resumeHint?: string },
): Extract<RunEventBody, { type: 'run-finished' }> {
  let code = exitCodeFor(end);
  let message = end.message;
  const awaiting = tasksWith(plan, 'awaiting_approval');
  if (end.reason === 'awaiting_approval')
    message += ` (${awaiting.length > 0 ? awaiting.map((task) => `for task ${task}: ${approvalHint(task, context.layout)}`).join('; ') : approvalHint('N', context.layout)}; then ${context.resumeHint ?? 'run again'})`;
  if (!context.landing.landed) {
    message += `. ${context.landing.advice}`;
    if (code === EXIT.ok) code = EXIT.incomplete;
  }
  if (context.archived !== null) message += `; the plan was moved to ${context.archived}`;
  // Refused: running again is refused again until the gate passes on the starting commit.
  else if (end.baselineFailure !== undefined)
    message += `. Fix the failure (or run with --no-gate, or --gate CMD for a command that passes), then ${context.resumeHint ?? 'run the same command again'}`;
  // A limit's stop (and every host down) says when to run again already.
  else if (end.reason === 'limited' || end.reason === 'api-unreachable' || end.reason === 'hosts-down')
    message += `. The plan keeps its state in ${context.planPath}`;
  else if (end.reason !== 'all-done') message += `. The plan keeps its state in ${context.planPath}: ${resumeAdvice(plan, context.layout)}`;
  const resumeAfter = end.reason === 'limited' && end.resumeAfter !== undefined ? { resumeAfter: new Date(end.resumeAfter).toISOString() } : {};
  return {
    type: 'run-finished',
    outcome: outcomeOfCode(code),
    reason: end.reason,
    exitCode: code,
    counts: countByStatus(plan),
    usage: end.usage,
    durationMs: Math.max(0, end.durationMs),
    message,
    ...resumeAfter,
  };
}

// ---------------------------------------------------------------------------------------------
// The gate on the starting commit

/** What a run says when it has no gate: `--no-gate`, or a plan without a test command. */
export const noGateNotice = (noGate: boolean): string =>
  noGate
    ? 'no gate (--no-gate): verified work integrates as soon as it is verified, untested together'
    : 'no gate: the plan has no context.testCommand, so verified work integrates untested together (--gate CMD sets one)';

/** The starting commit the gate tested: the integration ref's tip then, and HEAD as the person has it (null: no commit). */
export interface BaselineTested {
  tip: string;
  ref: string;
  head: string | null;
}

/**
 * Why a run is refused when the gate fails on the starting commit (headless and in-session alike).
 * It names the commit the gate ran on, the integration tip, and says so when that is not HEAD
 * (integrated work that has not landed), or the person would look for the failure in the wrong place.
 */
export function baselineRefusal(command: string, tested: BaselineTested, output: string): string[] {
  const where =
    tested.head === tested.tip
      ? tested.tip.slice(0, 12)
      : `${tested.tip.slice(0, 12)}, the tip of the plan's integration ref ${tested.ref} (not your HEAD, ${tested.head === null ? 'which has no commit' : `at ${tested.head.slice(0, 12)}`})`;
  return [
    `the gate \`${command}\` already fails on ${where}, before any task ran, so it would blame every task; nothing was started. Fix the failure first, or run with --no-gate (or --gate CMD for another command):`,
    clipMiddle(output.trim(), 2000),
  ];
}

// ---------------------------------------------------------------------------------------------
// Landing, and finishing the plan

/** Landing the integration tip, as the last call found it. */
export interface LandingState {
  /** Everything integrated so far is on the person's branch (or in their files). */
  landed: boolean;
  /** What blocks it and how to land by hand; empty when it landed. */
  problem: string[];
  /** Files the last landing updated (0 when up to date or blocked). */
  files: number;
  /** The integration commit the branch is at after landing, or null when it could not land. */
  commit: string | null;
}

/** A notice of the run's, as the journal keeps it. */
export type RunNotice = Extract<RunEventBody, { type: 'notice' }>;

/**
 * A landing as a run tells it: the files it updated and where (`where`, when known), or what
 * blocks it and how to land by hand; null when there was nothing to land. `resumed`: a landing an
 * earlier run started and a crash cut short, which setup completes first.
 */
export function landingNotice(
  landed: Result<Landed, LandingProblem>,
  context: { ref: string; layout: Layout; where: string | null; resumed?: boolean },
): RunNotice | null {
  if (!landed.ok) {
    return {
      type: 'notice',
      level: 'warning',
      message: `${context.resumed ? 'a landing an earlier run started' : 'the integrated work'} could not land: ${landingProblemSentence(describeLandingProblem(landed.error, context.ref, context.layout))}`,
    };
  }
  const files = landed.value.upToDate ? 0 : landed.value.paths.length;
  if (files === 0) return null;
  const what = `landed ${plural(files, 'file')}${context.where === null ? '' : ` on ${context.where}`} (${landed.value.to.slice(0, 12)})`;
  return { type: 'notice', level: 'info', message: context.resumed ? `completed a landing an earlier run started: ${what}` : what };
}
