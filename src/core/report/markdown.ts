// The Markdown report of a run (`plan report`), a renderer over the projections, and its JSON
// form (`plan report --json`).

import { attemptsOf, countByStatus, describeReviews, formatCostFigure, formatCostTally, modelOf, type Plan, statusOf, tallyOf, taskAt } from '../plan/index.ts';
import { approvalHint, commandHint, type Layout } from '../command-hint.ts';
import type { RunEvent } from './events.ts';
import { clipHead, clipTail, formatCost, formatDuration, isoSeconds, listIndices, markdownCell, plural } from '../format.ts';
import { type AttemptRecord, attemptRecordsOf, counted, isFailure, speculationWaste } from './attempts.ts';
import { ganttChart } from './gantt.ts';
import { gateRunName, type GateSummary, gateSummaryOf } from './gate-runs.ts';
import { formatTokens, planTally } from './history.ts';
import { type EventOf, type RunRecord, timeOf } from './journal.ts';
import { type RunSummary, summarizeRun, type SummaryOptions, taskStatesIn } from './runs.ts';

// ---------------------------------------------------------------------------------------------
// Markdown report

export interface ReportInput {
  /** null: an archived plan no journal run matches (the report is from the plan alone). */
  run: RunRecord | null;
  /** The plan, for subjects, statuses and commits; null if there is none. */
  plan: Plan | null;
  /** True when `plan` is the state the run left (the latest run with the current plan, or its archive). */
  planIsOfRun: boolean;
  planPath?: string;
  /** The archived plan file the report is made from, if any. */
  archivedFrom?: string;
  /** pid of the process holding the plan lock, if any. */
  livePid?: number | null;
  now?: number;
  /** Where worker logs live, for plan-only reports (default `.design`). */
  logDir?: string;
  /** How the commands it names are spelled (default: a checkout's). */
  layout?: Layout;
}

/** A failure reason keeps this many of its first and last lines in the report (test output runs to dozens). */
const REASON_LINES = { head: 1, tail: 5 };
/** Longest line kept of a reason (a minified bundle in a stack trace is one line). */
const REASON_LINE_CHARS = 300;

/**
 * A failure reason as the report shows it: what failed (its first line) and the end of the output
 * (where the error is), with a line saying how much was cut and where all of it is.
 */
export function clipReason(reason: string, wholeIn: string): string {
  const lines = reason
    .trimEnd()
    .split('\n')
    .map((line) => clipHead(line, REASON_LINE_CHARS));
  const { head, tail } = REASON_LINES;
  if (lines.length <= head + tail + 1) return lines.join('\n');
  return [...lines.slice(0, head), `… ${plural(lines.length - head - tail, 'line')} cut: ${wholeIn} …`, ...lines.slice(-tail)].join('\n');
}

const fence = (text: string) => {
  const ticks = Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1));
  return `${'`'.repeat(ticks)}text\n${text.trimEnd()}\n${'`'.repeat(ticks)}`;
};

/** Where the whole of an attempt's clipped reason is: the JSON report, and (headless) its log, which has its failed checks' whole output. */
const reasonWholeIn = (attempt: AttemptRecord, runId: string, layout: Layout): string =>
  `the whole reason is in \`${commandHint('plan', `report --run ${runId} --json`, layout)}\`${attempt.logPath ? `, each failed check's whole output in the log` : ''}`;

function describeOutcome(summary: RunSummary): string {
  if (summary.outcome === 'running') return 'running (this run still holds the lock)';
  if (summary.outcome === 'unfinished') return 'unfinished (no run-finished event: the run crashed or was killed)';
  if (summary.outcome === 'in-session') return 'in a Claude Code session, not finished (its lead is between steps, or the session ended before the run did)';
  return `${summary.outcome} (${summary.reason})${summary.message ? `: ${markdownCell(summary.message)}` : ''}`;
}

/** What the report's sections read: its input, and what the run and the plan come to. */
interface ReportContext {
  input: ReportInput;
  plan: Plan | null;
  run: RunRecord;
  /** null: a report from the plan alone. */
  summary: RunSummary | null;
  attempts: AttemptRecord[];
  gate: GateSummary | null;
  layout: Layout;
}

export function renderReport(input: ReportInput): string {
  const { plan } = input;
  if (!input.run && !plan) throw new Error('renderReport: needs a run or a plan');
  const run: RunRecord = input.run ?? { runId: '(none)', events: [], started: null, finished: null, firstMs: 0, lastMs: 0 };
  const report: ReportContext = {
    input,
    plan,
    run,
    summary: input.run ? summarizeRun(input.run, { livePid: input.livePid, now: input.now }) : null,
    attempts: attemptRecordsOf(run),
    gate: input.run ? gateSummaryOf(input.run, input.now) : null,
    layout: input.layout ?? { kind: 'checkout' },
  };
  return [
    ...overview(report),
    ...tasksTable(report),
    ...planFailures(report),
    ...runFailures(report),
    ...warningsSection(run, report.attempts),
    ...(report.gate !== null ? gateSection(report.gate) : []),
    ...awaitingApproval(report),
    ...reviews(report),
    ...timeline(report),
  ].join('\n');
}

/** The title and the run at a glance: goal, outcome, times, cost, tokens, tasks, gate, speculation, plan file. */
function overview({ input, plan, run, summary, attempts, gate }: ReportContext): string[] {
  const out: string[] = [];
  out.push(summary ? `# foreman run ${summary.runId}` : '# foreman plan report', '');
  out.push(`- **Goal:** ${markdownCell(summary?.goal ?? plan?.goal ?? '(unknown)')}`);
  if (summary) {
    out.push(`- **Outcome:** ${describeOutcome(summary)}`);
    out.push(
      `- **Started:** ${summary.startedAt}${summary.finishedAt ? `, finished ${isoSeconds(timeOf(summary.finishedAt))}` : ''}${summary.inSession ? ` (in a Claude Code session${summary.resumed ? ', resumed' : ''})` : summary.pid !== null ? ` (pid ${summary.pid}${summary.resumed ? ', resumed' : ''})` : ''}`,
    );
    const workerMs = attempts.reduce((n, a) => n + (a.durationMs ?? Math.max(0, (input.now ?? run.lastMs) - a.startMs)), 0);
    out.push(
      `- **Duration:** ${formatDuration(summary.durationMs)}${workerMs > 0 ? ` (worker time ${formatDuration(workerMs)}${summary.durationMs > 0 && workerMs > summary.durationMs ? `, ${(workerMs / summary.durationMs).toFixed(1)}× parallel` : ''})` : ''}`,
    );
  } else {
    out.push('- **Outcome:** unknown: no run in the journal matches this plan; figures below are from the plan alone');
  }
  // A run's figures are per attempt; a plan alone records them per task.
  const unit = summary ? 'attempt' : 'task';
  const tally = summary?.usage ?? planTally(plan!);
  out.push(`- **Cost:** ${formatCostTally(tally, unit)}`);
  out.push(`- **Tokens:** ${formatTokens(tally, unit)}`);
  if (tally.unknown > 0) {
    out.push(
      `- **Not measured:** the cost, tokens and permission denials of ${plural(tally.unknown, unit)} run by Task subagents in a Claude Code session (/foreman:execute): Claude Code does not report them to foreman. ${summary ? 'Their durations run from the plan tool handing them out (`plan next`) to it judging them (`plan finalize`).' : ''}`.trimEnd(),
    );
  }
  const counts = (input.planIsOfRun || !summary) && plan ? (countByStatus(plan) as Record<string, number>) : summary!.counts;
  const countText = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  out.push(
    `- **Tasks:** ${countText || 'none'}${plan ? ` (of ${plan.tasks.length})` : ''}${summary ? `; ${plural(attempts.filter(counted).length, 'attempt')} in this run` : ''}`,
  );
  if (gate !== null) out.push(`- **Gate:** ${describeGate(gate)}`);
  const waste = speculationWaste(attempts);
  if (waste !== null) {
    out.push(
      `- **Speculation:** ${waste.cancelled} cancelled (work built on a candidate the gate then blamed): ${formatDuration(waste.workerMs)} of worker time, ${formatCostTally(waste.usage, 'attempt')} wasted`,
    );
  }
  if (input.archivedFrom) out.push(`- **Plan:** ${input.archivedFrom} (archived)`);
  else if (input.planPath ?? summary?.planPath) out.push(`- **Plan:** ${input.planPath ?? summary?.planPath}`);
  out.push('');
  return out;
}

/** One row per task: subject, status, attempts, duration, cost, model, commit. */
function tasksTable({ input, plan, run, summary, attempts }: ReportContext): string[] {
  const states = taskStatesIn(run);
  const taskIndices = plan ? plan.tasks.map((_, i) => i) : [...new Set([...states.keys()])].sort((a, b) => a - b);
  const commits = new Map<number, string>();
  for (const e of run.events) if (e.type === 'round-committed' && e.commit) for (const t of e.tasks) commits.set(t, e.commit);
  const out: string[] = [];
  out.push('## Tasks', '');
  out.push(`| # | Subject | Status | Attempts | Duration | Cost | Model | Commit |`);
  out.push(`|---:|---|---|---:|---:|---:|---|---|`);
  for (const i of taskIndices) {
    const task = plan?.tasks[i];
    const mine = attempts.filter((a) => a.task === i);
    const subject =
      task?.subject ??
      mine[mine.length - 1]?.subject ??
      run.events.find((e): e is EventOf<'task-skipped'> => e.type === 'task-skipped' && e.task === i)?.subject ??
      '';
    const status = (input.planIsOfRun || !summary) && task ? statusOf(task) : (states.get(i) ?? (task ? `${statusOf(task)} (now)` : '—'));
    // An attempt still running counts (it has no outcome yet, and `counted` keeps it).
    const n = mine.filter(counted).length;
    const ms = mine.reduce((s, a) => s + (a.durationMs ?? 0), 0);
    const cost = formatCostTally(tallyOf(mine.map((a) => a.usage ?? undefined)));
    const model = mine[mine.length - 1]?.model ?? (task ? modelOf(task) : '—');
    const commit = (input.planIsOfRun || !summary ? task?.commit : undefined) ?? commits.get(i);
    out.push(
      summary
        ? `| ${i} | ${markdownCell(subject)} | ${status} | ${mine.length ? n : '—'} | ${mine.length ? formatDuration(ms) : '—'} | ${mine.length ? cost : '—'} | ${markdownCell(model)} | ${commit ? `\`${commit.slice(0, 10)}\`` : '—'} |`
        : `| ${i} | ${markdownCell(subject)} | ${status} | ${task ? attemptsOf(task) : '—'} | — | ${task?.usage ? formatCostFigure(task.usage) : '—'} | ${markdownCell(model)} | ${commit ? `\`${commit.slice(0, 10)}\`` : '—'} |`,
    );
  }
  out.push('');
  return out;
}

/** A report from the plan alone: its failed and blocked tasks, with the reason each records. */
function planFailures({ input, plan, summary }: ReportContext): string[] {
  if (summary || !plan) return [];
  const out: string[] = [];
  const failed = plan.tasks.flatMap((t, i) => (statusOf(t) === 'failed' || statusOf(t) === 'blocked' ? [i] : []));
  if (failed.length) out.push('## Failures', '');
  for (const i of failed) {
    const t = taskAt(plan.tasks, i);
    const log = `${input.logDir ?? '.design'}/worker-${i}.log`;
    out.push(`### Task ${i}: ${markdownCell(t.subject)}`, '', `- ${statusOf(t)} after ${plural(attemptsOf(t), 'attempt')} — log \`${log}\``);
    if (t.result)
      out.push('', fence(clipReason(t.result, `the whole reason is the task's \`result\` in the plan, each failed check's whole output in the log`)));
    out.push('');
  }
  return out;
}

/** The run's failures: what stopped it, failed assumptions, each failed task's attempts with their reasons, and the skips. */
function runFailures({ run, attempts, layout }: ReportContext): string[] {
  const failedTasks = [...new Set(attempts.filter((a) => isFailure(a.outcome)).map((a) => a.task))];
  const skips = run.events.filter((e): e is EventOf<'task-skipped'> => e.type === 'task-skipped');
  const stops = run.events.filter((e) => e.type === 'breaker' || e.type === 'budget-reached' || e.type === 'stalled' || e.type === 'interrupted');
  const failedChecks = run.events.filter((e): e is EventOf<'assumption-checked'> => e.type === 'assumption-checked' && !e.passed);
  if (!(failedTasks.length || skips.length || stops.length || failedChecks.length)) return [];
  const out: string[] = [];
  out.push('## Failures', '');
  for (const stop of stops) out.push(`- ${describeStop(stop)}`);
  if (stops.length) out.push('');
  for (const c of failedChecks)
    out.push(
      `- Task ${c.task}: ${c.severity} assumption failed: ${markdownCell(c.claim)}${c.output.trim() ? ` — ${markdownCell(c.output).slice(0, 300)}` : ''}`,
    );
  if (failedChecks.length) out.push('');
  for (const t of failedTasks) {
    const mine = attempts.filter((a) => a.task === t);
    const last = mine[mine.length - 1]!;
    out.push(`### Task ${t}: ${markdownCell(last.subject)}`, '');
    for (const a of mine.filter((x) => isFailure(x.outcome) || x === last)) {
      const how = a.outcome === null ? 'still running' : a.outcome === 'retry' ? 'failed, retried' : a.outcome.replace('_', ' ');
      out.push(
        `- Attempt ${a.attempt}${a.model ? ` (${a.model})` : ''}${a.host !== null ? ` on ${markdownCell(a.host)} slot ${a.slot}` : ''}: ${how}${a.durationMs !== null ? ` after ${formatDuration(a.durationMs)}` : ''} — ${a.logPath ? `log \`${a.logPath}\`` : 'no log (a Task subagent in a Claude Code session)'}`,
      );
      if (a.reason) out.push('', fence(clipReason(a.reason, reasonWholeIn(a, run.runId, layout))), '');
    }
    if (out[out.length - 1] !== '') out.push('');
  }
  if (skips.length) {
    out.push('### Skipped', '');
    for (const s of skips) out.push(`- Task ${s.task} (${markdownCell(s.subject)}): ${markdownCell(s.reason)}`);
    out.push('');
  }
  return out;
}

/** The tasks waiting for approval, when the plan is the state the run left, with the command that approves each. */
function awaitingApproval({ input, plan, summary, layout }: ReportContext): string[] {
  const awaiting = plan && (input.planIsOfRun || !summary) ? plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [i] : [])) : [];
  if (!awaiting.length) return [];
  return ['## Awaiting approval', '', ...awaiting.map((i) => `- Task ${i} (${markdownCell(taskAt(plan!.tasks, i).subject)}): ${approvalHint(i, layout)}`), ''];
}

/** The rounds of a person's review (plan revise), as the plan records them. */
function reviews({ plan }: ReportContext): string[] {
  const reviewed = plan
    ? plan.tasks.flatMap((t, i) => describeReviews(t).map((line) => `- Task ${i} (${markdownCell(t.subject)}), ${markdownCell(line)}`))
    : [];
  return reviewed.length ? ['## Reviews', '', ...reviewed, ''] : [];
}

/** The run's attempts and gate runs on a time line (a Mermaid Gantt chart). */
function timeline({ input, run, attempts, gate }: ReportContext): string[] {
  if (!(attempts.length || gate !== null)) return [];
  return ['## Timeline', '', '```mermaid', ganttChart(run, { title: `Run ${run.runId}`, now: input.now }), '```', ''];
}

/**
 * Everything the run warned about, beside the reasons: each attempt's warnings (files changed
 * without being declared, a worktree not removed) and the run's own warnings (work that could not
 * land, an edit to the plan kept aside, processes a killed run left, the sandbox missing…).
 */
function warningsSection(run: RunRecord, attempts: readonly AttemptRecord[]): string[] {
  const ofAttempts = attempts.flatMap((a) => a.warnings.map((w) => `- Task ${a.task}, attempt ${a.attempt}: ${markdownCell(w)}`));
  const ofRun = runWarnings(run).map((warning) => `- ${markdownCell(warning)}`);
  if (ofAttempts.length === 0 && ofRun.length === 0) return [];
  return ['## Warnings', '', ...ofAttempts, ...ofRun, ''];
}

/** `5 runs (2 failed), 1 min 3 s in the gate; 1 flake; culprit: task 3`. */
function describeGate(gate: GateSummary): string {
  const parts = [`${plural(gate.runs.length, 'run')}${gate.failed > 0 ? ` (${gate.failed} failed)` : ''}, ${formatDuration(gate.totalMs)} in the gate`];
  if (gate.baseline === false) parts.push('the starting commit already failed it');
  if (gate.flakes.length > 0) parts.push(`${plural(gate.flakes.length, 'flake')} (blamed no task)`);
  if (gate.culprits.length > 0)
    parts.push(`${gate.culprits.length === 1 ? 'culprit' : 'culprits'}: ${gate.culprits.length === 1 ? 'task' : 'tasks'} ${listIndices(gate.culprits)}`);
  return parts.join('; ');
}

/** The gate's runs, one line each, with the tail of the output of the ones that failed. */
function gateSection(gate: GateSummary): string[] {
  const out = ['## Gate (merge queue)', ''];
  out.push(
    `The plan's test command ran ${plural(gate.runs.length, 'time')}, ${formatDuration(gate.totalMs)} in all: ${gate.passed} passed, ${gate.failed} failed${gate.runs.length - gate.passed - gate.failed > 0 ? `, ${gate.runs.length - gate.passed - gate.failed} stopped or still running` : ''}. ${gate.integrated.length > 0 ? `${plural(gate.integrated.length, 'task')} integrated through it (commits of one batch were tested together, not alone).` : 'No task integrated through it.'}`,
    '',
  );
  gate.runs.forEach((g, k) => {
    const what = g.tasks.length === 0 ? 'the starting commit (baseline)' : `${gateRunName(g.tasks)} on the integration tip`;
    const verdict = g.passed === null ? 'no verdict (stopped, or still running)' : g.passed ? 'passed' : 'failed';
    const found = [
      ...(g.integrated.length > 0 ? [`integrated ${listIndices(g.integrated)}`] : []),
      ...(g.culprit !== null ? [`culprit: task ${g.culprit} (failed on its own twice)`] : []),
      ...(g.flake ? [`flake: task ${g.tasks[0]} failed once and passed again, no task blamed`] : []),
    ];
    out.push(
      `${k + 1}. ${what}: ${verdict}${g.durationMs !== null ? ` in ${formatDuration(g.durationMs)}` : ''}${found.length > 0 ? ` — ${found.join('; ')}` : ''}`,
    );
    if (g.passed === false && g.output) out.push('', fence(clipTail(g.output.trim(), 1200)).replace(/^/gm, '   '), '');
  });
  out.push('');
  return out;
}

/** The run's own warnings, in order (each attempt's are on the attempt): its warning notices, and each task `--widen` widened. */
const runWarnings = (run: RunRecord): string[] =>
  run.events.flatMap((e) => {
    if (e.type === 'notice' && e.level === 'warning') return [e.message];
    if (e.type === 'task-widened') return [`task ${e.task} (${e.subject}) was widened by --widen: it now declares ${e.paths.join(', ')}`];
    return [];
  });

/**
 * The report as data (`plan.ts report --json`): the run's summary, its attempts (each with its
 * warnings), its own warnings, what cancelled speculation cost (null when none was), and its gate runs.
 */
export function reportData(
  run: RunRecord,
  options: SummaryOptions = {},
): {
  summary: RunSummary;
  attempts: Array<Omit<AttemptRecord, 'host' | 'slot'> & Partial<Pick<AttemptRecord, 'host' | 'slot'>>>;
  warnings: string[];
  speculation: ReturnType<typeof speculationWaste>;
  gate: GateSummary | null;
} {
  const attempts = attemptRecordsOf(run);
  return {
    summary: summarizeRun(run, options),
    // Where each attempt worked only with hosts: a run without them reads as it always did.
    attempts: attempts.map(({ host, slot, ...attempt }) => (host === null ? attempt : { ...attempt, host, slot })),
    warnings: runWarnings(run),
    speculation: speculationWaste(attempts),
    gate: gateSummaryOf(run, options.now),
  };
}

function describeStop(event: RunEvent): string {
  switch (event.type) {
    case 'breaker':
      return `Circuit breaker: ${event.wouldBeSkipped} of ${plural(event.pendingCount, 'pending task')} would have been skipped; the run stopped.`;
    case 'budget-reached':
      return `Budget reached: ${formatCost(event.costUsd)} spent of ${formatCost(event.limitUsd)}.`;
    case 'stalled':
      return event.kind === 'deadlock'
        ? `Stalled: ${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)} could not start.`
        : `Waiting for approval of ${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)}.`;
    case 'interrupted':
      return `Interrupted by ${event.signal}.`;
    default:
      return event.type;
  }
}
