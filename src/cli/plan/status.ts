import { journalPathFor, readJournal } from '../../adapters/journal.ts';
import { ownLayout } from '../../adapters/layout.ts';
import { type LockStatus, readLock } from '../../adapters/run-lock.ts';
import { approvalHint, commandHint } from '../../core/command-hint.ts';
import { formatElapsed, oneLine } from '../../core/format.ts';
import { formatCostTally } from '../../core/usage.ts';
import { countByStatus } from '../../core/graph.ts';
import { type TaskReview, attemptsOf, statusOf, taskAt } from '../../core/plan.ts';
import { emptyTally, mergeTallies, tallyCostUsd } from '../../core/usage.ts';
import { neededPaths } from '../../core/widen.ts';
import { groupRuns, planTally, stoppedRun, timeOf, unfinishedRun } from '../../core/report.ts';
import { table } from '../../ui/table.ts';
import type { Command } from '../command.ts';
import { EXIT, gitFailedError } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';
import { describeReviews, openReview } from '../../core/review.ts';
import { type IsolationStatus, isolationStatus } from '../../run/plan-worktrees-status.ts';
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
    const now = Date.now();
    const lockStatus = await readLock(path);
    const held = lockStatus.state === 'live' || lockStatus.state === 'foreign';
    const lock =
      lockStatus.state === 'free' ? null : lockStatus.state === 'unparseable' ? { state: lockStatus.state } : { state: lockStatus.state, ...lockStatus.holder };
    const runs = groupRuns((await readJournal(journalPathFor(path))).events);
    const unfinished = unfinishedRun(runs, plan, now);
    // The last run stopped to wait for a limit or the API (exit 75): what, and when to go on.
    const stopped = stoppedRun(runs, now);
    // The running tasks are the unfinished run's, when that run is the one holding the lock.
    const live = unfinished && held && (unfinished.pid === null || unfinished.pid === holderOf(lockStatus)?.pid) ? unfinished : null;
    const running = live?.running ?? [];
    // Per task from the plan (unknown for a task a Task subagent worked on), plus completed attempts the plan records only at their commit.
    const cost = mergeTallies(planTally(plan), unfinished?.unrecordedCost ?? emptyTally());
    const costUsd = tallyCostUsd(cost);
    const counts = countByStatus(plan);
    const found = await isolationStatus(path, plan, io.env);
    if (!found.ok) throw gitFailedError("read the plan's refs", found.error);
    const isolation = found.value;
    const tasks = plan.tasks.map((t, i) => ({
      index: i,
      subject: t.subject,
      status: statusOf(t),
      attempts: attemptsOf(t),
      blockedBy: t.blockedBy,
      result: t.result ?? null,
      // The rounds of a person's review (plan revise), oldest first.
      reviews: t.reviews ?? [],
    }));
    if (values.json) {
      io.out(
        JSON.stringify({
          goal: plan.goal,
          counts,
          tasks,
          lock,
          running,
          costUsd,
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
          stopped,
          isolation,
        }),
      );
      return EXIT.ok;
    }
    io.out(`Goal: ${plan.goal}`);
    io.out(
      table(
        ['#', 'subject', 'status', 'attempts', 'blocked by', 'reason'],
        tasks.map((t) => [
          String(t.index),
          t.subject,
          t.status,
          String(t.attempts),
          t.blockedBy.join(', ') || '—',
          reasonCell(t, taskAt(plan.tasks, t.index).setAside?.paths ?? [], openReview(taskAt(plan.tasks, t.index))),
        ]),
        { maxWidth: io.columns, shrink: [{ column: 5, min: 24 }, { column: 1 }] },
      ),
    );
    for (const t of tasks) for (const line of describeReviews(taskAt(plan.tasks, t.index))) io.out(`task ${t.index}: ${line}`);
    io.out(
      Object.entries(counts)
        .filter(([, n]) => n > 0)
        .map(([s, n]) => `${n} ${s}`)
        .join(', '),
    );
    const holder = holderOf(lockStatus);
    if (holder && held) {
      const since = formatElapsed(now - timeOf(holder.startedAt));
      io.out(
        `Run in progress: pid ${holder.pid} on host ${holder.host} holds the lock since ${holder.startedAt} (${since})${holder.command ? `: ${holder.command}` : ''}${lockStatus.state === 'foreign' ? ' (another host: cannot check that it is alive)' : ''}`,
      );
    } else if (holder && lockStatus.state === 'stale') {
      const gone = lockStatus.why === 'pid-reused' ? 'is gone (its pid now belongs to another process)' : 'is gone';
      io.out(`Stale lock: pid ${holder.pid} on host ${holder.host} (started ${holder.startedAt}) ${gone}; the next run takes the lock over.`);
    } else if (lockStatus.state === 'unparseable') {
      io.out('The lock file is not a lock (empty or damaged); the next run takes it over.');
    }
    if (unfinished && !live) {
      io.out(
        unfinished.inSession
          ? `The last run (${unfinished.runId}, started ${unfinished.startedAt}) runs in a Claude Code session (/foreman:execute) and has not finished: its lead is between steps, or the session ended.`
          : `The last run (${unfinished.runId}, started ${unfinished.startedAt}) did not finish: it crashed or was killed.`,
      );
    }
    // What a rate or usage limit, or the API out of reach, holds the run back for.
    if (live?.waiting) io.out(`Waiting: ${live.waiting}`);
    if (stopped !== null) {
      const why =
        stopped.reason === 'api-unreachable'
          ? 'the API was out of reach'
          : stopped.reason === 'hosts-down'
            ? 'every host was down'
            : 'of a rate or usage limit';
      io.out(`The last run (${stopped.runId}) stopped at ${stopped.finishedAt} (exit 75) because ${why}: ${stopped.message}`);
      io.out(`Run the same command again ${stopped.runAgain} to go on.`);
    }
    if (running.length > 0) {
      io.out(`Running (${running.length}):`);
      // With hosts, where each works (host:slot).
      const placed = running.some((r) => r.place !== null);
      io.out(
        table(
          ['#', 'subject', 'attempt', 'model', ...(placed ? ['host'] : []), 'elapsed'],
          running.map((r) => [String(r.index), r.subject, String(r.attempt), r.model ?? '—', ...(placed ? [r.place ?? '—'] : []), formatElapsed(r.elapsedMs)]),
          { maxWidth: io.columns, shrink: [{ column: 1 }] },
        ),
      );
    }
    // What a stuck task needed that it does not declare, and the command that puts it back.
    for (const [i, t] of plan.tasks.entries()) {
      const needs = statusOf(t) === 'blocked' || statusOf(t) === 'failed' ? neededPaths(t) : [];
      if (needs.length > 0)
        io.out(
          `Task ${i} needs ${needs.join(', ')}, which it does not declare: \`${commandHint('plan', `declare ${i} --needed`, ownLayout())}\` declares ${needs.length === 1 ? 'it' : 'them'} and puts the task back`,
        );
    }
    for (const line of isolationLines(isolation)) io.out(line);
    // Tasks count in the plan's figure (a task's cost is unknown once a Task subagent worked on it); the run's figure counts attempts.
    if (costUsd !== 0 || cost.unknown > 0 || live) {
      io.out(`Cost so far: ${formatCostTally(cost, 'task')}${unfinished ? ` (${formatCostTally(unfinished.runCost)} in run ${unfinished.runId})` : ''}`);
    }
    return EXIT.ok;
  },
};

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
