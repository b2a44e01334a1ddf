import { journalPathFor, type LockStatus, ownLayout, readJournal, readLock } from '../../adapters/index.ts';
import {
  approvalHint,
  attemptsOf,
  commandHint,
  countByStatus,
  describeReviews,
  emptyTally,
  formatCostTally,
  formatElapsed,
  groupRuns,
  mergeTallies,
  neededPaths,
  oneLine,
  openReview,
  type Plan,
  planTally,
  type RunningTask,
  statusOf,
  stoppedRun,
  type StoppedRun,
  tallyCostUsd,
  taskAt,
  type TaskReview,
  timeOf,
  unfinishedRun,
  type UnfinishedRun,
  type UsageTally,
} from '../../core/index.ts';
import { table } from '../../ui/index.ts';
import type { Command } from '../command.ts';
import { EXIT, gitFailedError } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';
import { isolationStatus, type IsolationStatus } from '../../run/index.ts';
import { formatBytes } from './land.ts';

/** The longest reason the table shows (`--json` has it whole). */
const REASON_CHARS = 100;

/**
 * Why a task is where it is: a failed, blocked or skipped task's reason, or what left a pending or
 * running task behind (a failed attempt to retry, work that could not be integrated), or what a
 * completed task's last attempt set aside; one line, clipped.
 */
function reasonCell(task: { status: string; result: string | null; attempts: number }, setAside: readonly string[], review: TaskReview | null): string {
  // A review round not yet tried: its result is still the reviewed work's, not a reason.
  if (review !== null && task.attempts === 0) return oneLine(`revising, asked: ${review.feedback}`, REASON_CHARS);
  if (task.status === 'completed' || task.status === 'awaiting_approval')
    return setAside.length > 0 ? oneLine(`set aside (not integrated): ${setAside.join(', ')}`, REASON_CHARS) : '';
  const shown = ['failed', 'blocked', 'skipped', 'pending', 'in_progress'].includes(task.status) && task.result !== null;
  return shown ? oneLine(task.result!, REASON_CHARS) : '';
}

export const status: Command = {
  name: 'status',
  summary:
    "Show every task with its status, attempts and blockers, counts by status, cost so far, the run holding the lock with its running tasks (or what stopped the last run, and when to run it again), the plan's worktrees (disk use) and its integrated work not landed yet.",
  usage: '[--plan FILE] [--json]',
  options: { ...planOption, ...jsonOption },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const plan = await loadPlan(path);
    const found = await readStatus(path, plan, io.env);
    const rows = taskRows(plan);
    if (values.json) {
      io.out(JSON.stringify(statusJson(plan, found, rows)));
      return EXIT.ok;
    }
    for (const text of statusText(plan, found, rows, io.columns)) io.out(text);
    return EXIT.ok;
  },
};

/** What status tells beside the plan itself, read once: the lock, the journal's last run, the cost, the plan's worktrees. */
interface PlanStatus {
  /** When it was read: what elapsed counts up to it. */
  now: number;
  lockStatus: LockStatus;
  /** A run holds the lock: alive on this host, or on another one (where it cannot be checked). */
  held: boolean;
  unfinished: UnfinishedRun | null;
  /** The last run stopped to wait for a limit or the API (exit 75): what, and when to go on. */
  stopped: StoppedRun | null;
  /** The unfinished run when it is the one holding the lock: the running tasks are its. */
  live: UnfinishedRun | null;
  /** Per task from the plan (unknown for a task a Task subagent worked on), plus completed attempts the plan records only at their commit. */
  cost: UsageTally;
  isolation: IsolationStatus | null;
}

/** What status shows beside the plan, read once; plan refs git cannot read end it as a git failure (exit 4). */
async function readStatus(path: string, plan: Plan, env: NodeJS.ProcessEnv): Promise<PlanStatus> {
  const now = Date.now();
  const lockStatus = await readLock(path);
  const held = lockStatus.state === 'live' || lockStatus.state === 'foreign';
  const runs = groupRuns((await readJournal(journalPathFor(path))).events);
  const unfinished = unfinishedRun(runs, plan, now);
  const stopped = stoppedRun(runs, now);
  const live = unfinished && held && (unfinished.pid === null || unfinished.pid === holderOf(lockStatus)?.pid) ? unfinished : null;
  const cost = mergeTallies(planTally(plan), unfinished?.unrecordedCost ?? emptyTally());
  const found = await isolationStatus(path, plan, env);
  if (!found.ok) throw gitFailedError("read the plan's refs", found.error);
  return { now, lockStatus, held, unfinished, stopped, live, cost, isolation: found.value };
}

/** Each task as status shows it. */
const taskRows = (plan: Plan) =>
  plan.tasks.map((t, i) => ({
    index: i,
    subject: t.subject,
    status: statusOf(t),
    attempts: attemptsOf(t),
    blockedBy: t.blockedBy,
    result: t.result ?? null,
    // The rounds of a person's review (plan revise), oldest first.
    reviews: t.reviews ?? [],
  }));

type TaskRow = ReturnType<typeof taskRows>[number];

/** `--json`: everything the text says, whole. */
function statusJson(plan: Plan, status: PlanStatus, tasks: TaskRow[]) {
  const { lockStatus, unfinished, live, cost } = status;
  const lock =
    lockStatus.state === 'free' ? null : lockStatus.state === 'unparseable' ? { state: lockStatus.state } : { state: lockStatus.state, ...lockStatus.holder };
  return {
    goal: plan.goal,
    counts: countByStatus(plan),
    tasks,
    lock,
    running: live?.running ?? [],
    costUsd: tallyCostUsd(cost),
    costUnknownFor: cost.unknown,
    run: unfinished
      ? {
          runId: unfinished.runId,
          startedAt: unfinished.startedAt,
          pid: unfinished.pid,
          live: live !== null,
          inSession: unfinished.inSession,
          waiting: live !== null ? unfinished.waiting : null,
          costUsd: tallyCostUsd(unfinished.runCost),
          costUnknownFor: unfinished.runCost.unknown,
        }
      : null,
    stopped: status.stopped,
    isolation: status.isolation,
  };
}

/** The text: one entry per printed block (a table is one). */
function statusText(plan: Plan, status: PlanStatus, tasks: TaskRow[], columns: number): string[] {
  return [
    `Goal: ${plan.goal}`,
    taskTable(plan, tasks, columns),
    ...tasks.flatMap((t) => describeReviews(taskAt(plan.tasks, t.index)).map((line) => `task ${t.index}: ${line}`)),
    Object.entries(countByStatus(plan))
      .filter(([, n]) => n > 0)
      .map(([s, n]) => `${n} ${s}`)
      .join(', '),
    ...lockLines(status),
    ...lastRunLines(status),
    ...runningLines(status.live?.running ?? [], columns),
    ...neededPathLines(plan),
    ...isolationLines(status.isolation),
    ...costLines(status),
  ];
}

function taskTable(plan: Plan, tasks: TaskRow[], columns: number): string {
  return table(
    ['#', 'subject', 'status', 'attempts', 'blocked by', 'reason'],
    tasks.map((t) => [
      String(t.index),
      t.subject,
      t.status,
      String(t.attempts),
      t.blockedBy.join(', ') || '—',
      reasonCell(t, taskAt(plan.tasks, t.index).setAside?.paths ?? [], openReview(taskAt(plan.tasks, t.index))),
    ]),
    { maxWidth: columns, shrink: [{ column: 5, min: 24 }, { column: 1 }] },
  );
}

/** Who holds the lock and since when, or what is wrong with it. */
function lockLines({ lockStatus, held, now }: PlanStatus): string[] {
  const holder = holderOf(lockStatus);
  if (holder && held) {
    const since = formatElapsed(now - timeOf(holder.startedAt));
    return [
      `Run in progress: pid ${holder.pid} on host ${holder.host} holds the lock since ${holder.startedAt} (${since})${holder.command ? `: ${holder.command}` : ''}${lockStatus.state === 'foreign' ? ' (another host: cannot check that it is alive)' : ''}`,
    ];
  }
  if (holder && lockStatus.state === 'stale') {
    const gone = lockStatus.why === 'pid-reused' ? 'is gone (its pid now belongs to another process)' : 'is gone';
    return [`Stale lock: pid ${holder.pid} on host ${holder.host} (started ${holder.startedAt}) ${gone}; the next run takes the lock over.`];
  }
  if (lockStatus.state === 'unparseable') return ['The lock file is not a lock (empty or damaged); the next run takes it over.'];
  return [];
}

/** What became of the last run: unfinished with no one holding the lock, waiting for a limit, or stopped (and when to go on). */
function lastRunLines({ unfinished, live, stopped }: PlanStatus): string[] {
  const lines: string[] = [];
  if (unfinished && !live) {
    lines.push(
      unfinished.inSession
        ? `The last run (${unfinished.runId}, started ${unfinished.startedAt}) runs in a Claude Code session (/foreman:execute) and has not finished: its lead is between steps, or the session ended.`
        : `The last run (${unfinished.runId}, started ${unfinished.startedAt}) did not finish: it crashed or was killed.`,
    );
  }
  // What a rate or usage limit, or the API out of reach, holds the run back for.
  if (live?.waiting) lines.push(`Waiting: ${live.waiting}`);
  if (stopped !== null) {
    const why =
      stopped.reason === 'api-unreachable' ? 'the API was out of reach' : stopped.reason === 'hosts-down' ? 'every host was down' : 'of a rate or usage limit';
    lines.push(`The last run (${stopped.runId}) stopped at ${stopped.finishedAt} (exit 75) because ${why}: ${stopped.message}`);
    lines.push(`Run the same command again ${stopped.runAgain} to go on.`);
  }
  return lines;
}

/** The live run's running tasks; with hosts, where each works (host:slot). */
function runningLines(running: RunningTask[], columns: number): string[] {
  if (running.length === 0) return [];
  const placed = running.some((r) => r.place !== null);
  return [
    `Running (${running.length}):`,
    table(
      ['#', 'subject', 'attempt', 'model', ...(placed ? ['host'] : []), 'elapsed'],
      running.map((r) => [String(r.index), r.subject, String(r.attempt), r.model ?? '—', ...(placed ? [r.place ?? '—'] : []), formatElapsed(r.elapsedMs)]),
      { maxWidth: columns, shrink: [{ column: 1 }] },
    ),
  ];
}

/** What a stuck task needed that it does not declare, and the command that puts it back. */
function neededPathLines(plan: Plan): string[] {
  return [...plan.tasks.entries()].flatMap(([i, t]) => {
    const needs = statusOf(t) === 'blocked' || statusOf(t) === 'failed' ? neededPaths(t) : [];
    return needs.length > 0
      ? [
          `Task ${i} needs ${needs.join(', ')}, which it does not declare: \`${commandHint('plan', `declare ${i} --needed`, ownLayout())}\` declares ${needs.length === 1 ? 'it' : 'them'} and puts the task back`,
        ]
      : [];
  });
}

/** Tasks count in the plan's figure (a task's cost is unknown once a Task subagent worked on it); the run's figure counts attempts. */
function costLines({ cost, unfinished, live }: PlanStatus): string[] {
  const shown = tallyCostUsd(cost) !== 0 || cost.unknown > 0 || live !== null;
  if (!shown) return [];
  return [`Cost so far: ${formatCostTally(cost, 'task')}${unfinished ? ` (${formatCostTally(unfinished.runCost)} in run ${unfinished.runId})` : ''}`];
}

/** The worktrees line and the integration ref line (none for a plan that never ran or is in no repository). */
function isolationLines(isolation: IsolationStatus | null): string[] {
  if (isolation === null) return [];
  const { worktrees, ref, parked } = isolation;
  const layout = ownLayout();
  const lines = [
    worktrees.count === 0
      ? 'Worktrees: none'
      : `Worktrees: ${worktrees.count} (${formatBytes(worktrees.bytes)}) in ${worktrees.dir}; \`${commandHint('plan', 'clean', layout)}\` removes them`,
  ];
  if (ref === null) lines.push('Integrated work: none (no integration ref yet)');
  else if (ref.notLanded === 0) lines.push(`Integrated work: all on your branch (${ref.name} at ${ref.commit.slice(0, 12)})`);
  else {
    const commits = ref.notLanded === null ? 'commits' : `${ref.notLanded} commit${ref.notLanded === 1 ? '' : 's'}`;
    lines.push(
      `Integrated work: ${commits} on ${ref.name} not on your branch yet; \`${commandHint('plan', 'land', layout)}\` lands ${ref.notLanded === 1 ? 'it' : 'them'}`,
    );
  }
  if (parked.length > 0) lines.push(`Awaiting approval, parked: task${parked.length === 1 ? '' : 's'} ${parked.join(', ')} (${approvalHint('N', layout)})`);
  return lines;
}

const holderOf = (status: LockStatus) => ('holder' in status ? status.holder : null);
