// Run reports, pure: group journal events into runs, summarise them, pair task-started with
// task-finished into attempts, and render a Markdown report with a Mermaid Gantt chart of the
// attempts (`plan.ts report`) and the rows of `plan.ts history`.

import { type Layout, approvalHint } from './command-hint.ts';
import type { RunEvent, RunOutcome, StopReason, TaskOutcome } from './events.ts';
import { clipHead, clipTail, formatCost, formatCostFigure, formatCostTally, formatCount, formatDuration, isoSeconds, listIndices, markdownCell, plural } from './format.ts';
import { countByStatus } from './graph.ts';
import {
  type Plan,
  type TaskStatus,
  UNKNOWN,
  type UsageFigure,
  type UsageTally,
  attemptsOf as planAttempts,
  modelOf,
  statusOf,
  tallyCostUsd,
  tallyOf,
} from './plan.ts';

type EventOf<T extends RunEvent['type']> = Extract<RunEvent, { type: T }>;

// ---------------------------------------------------------------------------------------------
// Runs

export interface RunRecord {
  runId: string;
  /** The run's events in journal order. */
  events: RunEvent[];
  started: EventOf<'run-started'> | null;
  finished: EventOf<'run-finished'> | null;
  /** Time of the first and last event (ms since the epoch). */
  firstMs: number;
  lastMs: number;
}

export const timeOf = (at: string): number => {
  const t = Date.parse(at);
  return Number.isFinite(t) ? t : 0;
};

/** Events grouped by runId, runs ordered by their first event. */
export function groupRuns(events: readonly RunEvent[]): RunRecord[] {
  const byId = new Map<string, RunRecord>();
  for (const e of events) {
    let run = byId.get(e.runId);
    const t = timeOf(e.at);
    if (!run) {
      run = { runId: e.runId, events: [], started: null, finished: null, firstMs: t, lastMs: t };
      byId.set(e.runId, run);
    }
    run.events.push(e);
    run.firstMs = Math.min(run.firstMs, t);
    run.lastMs = Math.max(run.lastMs, t);
    if (e.type === 'run-started' && !run.started) run.started = e;
    if (e.type === 'run-finished') run.finished = e;
  }
  return [...byId.values()].sort((a, b) => startOf(a) - startOf(b));
}

const startOf = (run: RunRecord): number => (run.started ? timeOf(run.started.at) : run.firstMs);

/**
 * `running` when the run has no run-finished event and its process still holds the lock;
 * `unfinished` when a headless run died; `in-session` for an in-session run (`/foreman:execute`)
 * no step has finished: its lead may be between steps, or its session ended.
 */
export type RunState = RunOutcome | 'running' | 'unfinished' | 'in-session';

export interface RunSummary {
  runId: string;
  startedAt: string;
  finishedAt: string | null;
  goal: string | null;
  outcome: RunState;
  reason: StopReason | null;
  message: string | null;
  durationMs: number;
  /** The run's attempts: measured figures, and how many attempts nothing measured. */
  usage: UsageTally;
  /** The measured cost (a lower bound when `usage.unknown > 0`), or `unknown` when nothing was measured. */
  costUsd: number | typeof UNKNOWN;
  /** True for an in-session run (`plan.ts setup|next|finalize|commit`). */
  inSession: boolean;
  /** Task counts by status at the end of the run (from run-finished), else tallied from the events. */
  counts: Record<string, number>;
  pid: number | null;
  resumed: boolean;
  planPath: string | null;
}

export interface SummaryOptions {
  /** pid of the process holding the plan lock, if any: an unfinished run with that pid is `running`. */
  livePid?: number | null;
  /** Clock for the duration of an unfinished run that is still running. */
  now?: number;
}

export function summarizeRun(run: RunRecord, options: SummaryOptions = {}): RunSummary {
  const start = startOf(run);
  const f = run.finished;
  const live = !f && run.started !== null && options.livePid != null && run.started.pid === options.livePid;
  const inSession = run.started?.mode === 'session';
  const usage = runTally(run);
  const end = f ? timeOf(f.at) : live && options.now !== undefined ? options.now : run.lastMs;
  return {
    runId: run.runId,
    startedAt: isoSeconds(start),
    finishedAt: f ? f.at : null,
    goal: run.started?.goal ?? null,
    outcome: f ? f.outcome : live ? 'running' : inSession ? 'in-session' : 'unfinished',
    reason: f?.reason ?? null,
    message: f?.message ?? null,
    durationMs: f ? f.durationMs : Math.max(0, end - start),
    usage,
    costUsd: tallyCostUsd(usage),
    inSession,
    counts: f ? f.counts : tallyOutcomes(run),
    pid: run.started?.pid ?? null,
    resumed: run.started?.resumed ?? false,
    planPath: run.started?.planPath ?? null,
  };
}

/**
 * What the run's attempts cost. A finished run's own measured total is used when it has one (it
 * is what the run counted against its budget); otherwise the attempts are tallied, the unknown
 * ones counted apart.
 */
export function runTally(run: RunRecord): UsageTally {
  const attempts = attemptsOf(run).filter((a) => a.usage !== null);
  const f = run.finished;
  if (f && f.usage !== UNKNOWN) return { measured: f.usage, measuredCount: Math.max(1, attempts.length), unknown: 0 };
  return tallyOf(attempts.map((a) => a.usage ?? undefined));
}

/** Last known state of each task the run touched. */
export function taskStatesIn(run: RunRecord): Map<number, TaskStatus> {
  const states = new Map<number, TaskStatus>();
  for (const e of run.events) {
    if (e.type === 'task-started') states.set(e.task, 'in_progress');
    else if (e.type === 'task-skipped') states.set(e.task, 'skipped');
    else if (e.type === 'task-finished') states.set(e.task, statusAfter(e.outcome));
  }
  return states;
}

const statusAfter = (outcome: TaskOutcome): TaskStatus =>
  outcome === 'completed' || outcome === 'awaiting_approval' || outcome === 'failed' || outcome === 'blocked' ? outcome : 'pending';

function tallyOutcomes(run: RunRecord): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of taskStatesIn(run).values()) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Attempts

export interface Attempt {
  task: number;
  subject: string;
  attempt: number;
  model: string | null;
  logPath: string;
  startMs: number;
  /** null while the attempt is still running (or the run died during it). */
  endMs: number | null;
  outcome: TaskOutcome | null;
  reason: string | null;
  durationMs: number | null;
  /** null while running; `unknown` when nothing measured the attempt (a Task subagent). */
  usage: UsageFigure | null;
  /** Permission denials the worker met; `unknown` for a Task subagent. */
  permissionDenials: number | typeof UNKNOWN | null;
  /** What its verification or clean-up found beside the outcome (undeclared changes…); empty when nothing. */
  warnings: string[];
}

/** Every attempt of the run: a task-started paired with the task's next task-finished. */
export function attemptsOf(run: RunRecord): Attempt[] {
  const open = new Map<number, Attempt>();
  const out: Attempt[] = [];
  for (const e of run.events) {
    if (e.type === 'task-started') {
      const a: Attempt = {
        task: e.task,
        subject: e.subject,
        attempt: e.attempt,
        model: e.model,
        logPath: e.logPath,
        startMs: timeOf(e.at),
        endMs: null,
        outcome: null,
        reason: null,
        durationMs: null,
        usage: null,
        permissionDenials: null,
        warnings: [],
      };
      open.set(e.task, a);
      out.push(a);
    } else if (e.type === 'task-finished') {
      const end = timeOf(e.at);
      let a = open.get(e.task);
      if (!a) {
        // The gate blamed a verified attempt (the culprit): the same attempt, now failed.
        const verified = out.findLast((x) => x.task === e.task && x.attempt === e.attempt && x.outcome === 'completed');
        if (verified !== undefined && e.outcome !== 'completed') {
          verified.outcome = e.outcome;
          verified.reason = e.reason ?? e.result ?? null;
          verified.warnings.push(...(e.warnings ?? []));
          continue;
        }
      }
      if (!a) {
        // The journal lost the start (or it came from an older version): reconstruct it.
        a = { task: e.task, subject: e.subject, attempt: e.attempt, model: null, logPath: e.logPath, startMs: end - e.durationMs, endMs: null, outcome: null, reason: null, durationMs: null, usage: null, permissionDenials: null, warnings: [] };
        out.push(a);
      }
      open.delete(e.task);
      a.endMs = end;
      a.outcome = e.outcome;
      a.reason = e.reason ?? (e.outcome === 'completed' || e.outcome === 'awaiting_approval' ? null : (e.result ?? null));
      a.durationMs = e.durationMs;
      a.usage = e.usage;
      a.permissionDenials = e.permissionDenials;
      a.logPath = e.logPath;
      a.warnings.push(...(e.warnings ?? []));
    }
  }
  return out;
}

/** Attempts that count against `maxAttempts` (a requeue or an interruption is not an attempt). */
const counted = (attempt: Attempt) => attempt.outcome !== 'requeued' && attempt.outcome !== 'interrupted' && attempt.outcome !== 'cancelled';

/** What cancelled speculation cost: how many, the worker time and the spend they took. */
export function speculationWaste(attempts: readonly Attempt[]): { cancelled: number; workerMs: number; usage: UsageTally } | null {
  const cancelled = attempts.filter((a) => a.outcome === 'cancelled');
  if (cancelled.length === 0) return null;
  return {
    cancelled: cancelled.length,
    workerMs: cancelled.reduce((n, a) => n + (a.durationMs ?? 0), 0),
    usage: tallyOf(cancelled.map((a) => a.usage ?? undefined)),
  };
}
const isFailure = (outcome: TaskOutcome | null) => outcome === 'retry' || outcome === 'failed' || outcome === 'blocked';

// ---------------------------------------------------------------------------------------------
// Gate runs (the merge queue)

/** One run of the gate: `gate-started` paired with the `gate-finished` after it (the baseline has no start). */
export interface GateRunRecord {
  /** The candidates stacked on the integration tip, in order; empty for the baseline (the starting commit alone). */
  tasks: number[];
  startMs: number;
  /** null while the gate is still running (or the run died during it). */
  endMs: number | null;
  /** null while running. */
  passed: boolean | null;
  durationMs: number | null;
  integrated: number[];
  culprit: number | null;
  flake: boolean;
  /** The end of the test command's output when it failed. */
  output: string | null;
}

export interface GateSummary {
  runs: GateRunRecord[];
  /** Time the gate ran, finished runs and the baseline included. */
  totalMs: number;
  passed: number;
  failed: number;
  /** Candidates that failed once and passed when tested again: failures that blamed no task. */
  flakes: number[];
  /** Candidates that failed on their own twice: their attempts failed. */
  culprits: number[];
  /** Tasks the gate let integrate. */
  integrated: number[];
  /** Whether the starting commit passed the gate (null when the run did not test it). */
  baseline: boolean | null;
}

/** The run's gate runs, in order. The gate has one lane, so each start pairs with the next finish. */
export function gateRunsOf(run: RunRecord): GateRunRecord[] {
  const out: GateRunRecord[] = [];
  let open: GateRunRecord | null = null;
  for (const e of run.events) {
    if (e.type === 'gate-started') {
      open = { tasks: [...e.tasks], startMs: timeOf(e.at), endMs: null, passed: null, durationMs: null, integrated: [], culprit: null, flake: false, output: null };
      out.push(open);
    } else if (e.type === 'gate-finished') {
      const end = timeOf(e.at);
      let record = open;
      if (record === null) {
        // The baseline (no gate-started), or a journal that lost the start.
        record = { tasks: [...e.tasks], startMs: end - e.durationMs, endMs: null, passed: null, durationMs: null, integrated: [], culprit: null, flake: false, output: null };
        out.push(record);
      }
      open = null;
      Object.assign(record, { endMs: end, passed: e.passed, durationMs: e.durationMs, integrated: [...e.integrated], culprit: e.culprit, flake: e.flake, output: e.output ?? null });
    } else if (e.type === 'run-finished' && open !== null) {
      // Stopped before a verdict (Ctrl-C): the run ends with it.
      open = null;
    }
  }
  return out;
}

/** What the gate did in the run; null when the run had no gate. */
export function gateSummaryOf(run: RunRecord, now?: number): GateSummary | null {
  const runs = gateRunsOf(run);
  if (runs.length === 0) return null;
  const unique = (xs: number[]) => [...new Set(xs)];
  const baseline = runs.find((r) => r.tasks.length === 0);
  return {
    runs,
    totalMs: runs.reduce((n, r) => n + (r.durationMs ?? Math.max(0, (now ?? run.lastMs) - r.startMs)), 0),
    passed: runs.filter((r) => r.passed === true).length,
    failed: runs.filter((r) => r.passed === false).length,
    flakes: runs.filter((r) => r.flake).flatMap((r) => r.tasks),
    culprits: unique(runs.flatMap((r) => (r.culprit === null ? [] : [r.culprit]))),
    integrated: unique(runs.flatMap((r) => r.integrated)),
    baseline: baseline === undefined ? null : baseline.passed,
  };
}

/** `task 3`, `tasks 0, 1, 2`, or `the starting commit` (the baseline). */
export const gateRunName = (tasks: readonly number[]): string => (tasks.length === 0 ? 'baseline' : `${tasks.length === 1 ? 'task' : 'tasks'} ${listIndices([...tasks])}`);

// ---------------------------------------------------------------------------------------------
// Mermaid Gantt

/** Gantt text: `:` `#` `;` are syntax in a gantt chart, control characters end lines. */
export function ganttText(text: string, max = 60): string {
  const flat = text
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/:/g, '：')
    .replace(/#/g, '＃')
    .replace(/;/g, '；')
    .replace(/\s+/g, ' ')
    .trim();
  const cut = clipHead(flat, max);
  return cut === '' ? '(untitled)' : cut;
}

export interface GanttOptions {
  title?: string;
  /** End of bars still running (default: the run's last event). */
  now?: number;
}

/**
 * The run's attempts as a Mermaid Gantt chart: one section per task (in order of first start),
 * one bar per attempt from task-started to task-finished; `crit` marks failed attempts, `done`
 * completed ones, `active` the ones still running. Dates are millisecond timestamps (`dateFormat x`).
 */
export function ganttChart(run: RunRecord, options: GanttOptions = {}): string {
  const attempts = attemptsOf(run);
  const lines = ['gantt', `  title ${ganttText(options.title ?? `Run ${run.runId}`, 100)}`, '  dateFormat x', '  axisFormat %H:%M:%S', '  todayMarker off'];
  const order: number[] = [];
  for (const a of [...attempts].sort((x, y) => x.startMs - y.startMs)) if (!order.includes(a.task)) order.push(a.task);
  const runEnd = options.now ?? run.lastMs;
  for (const task of order) {
    const mine = attempts.filter((a) => a.task === task);
    lines.push(`  section ${task} ${ganttText(mine[mine.length - 1]!.subject)}`);
    mine.forEach((a, k) => {
      const end = Math.max(a.endMs ?? runEnd, a.startMs + 1);
      const tags = a.outcome === null ? ['active'] : isFailure(a.outcome) ? ['crit'] : a.outcome === 'completed' || a.outcome === 'awaiting_approval' ? ['done'] : [];
      const label = `attempt ${a.attempt} ${a.outcome === null ? 'running' : a.outcome === 'retry' ? 'failed (retried)' : a.outcome.replace('_', ' ')}${a.durationMs !== null ? ` ${formatDuration(a.durationMs)}` : ''}`;
      lines.push(`  ${ganttText(label)} :${[...tags, `t${task}a${k + 1}`, String(Math.round(a.startMs)), String(Math.round(end))].join(', ')}`);
    });
  }
  // The gate: one row, a bar per run named by its candidates, red when the stack failed.
  const gateRuns = gateRunsOf(run);
  if (gateRuns.length > 0) {
    lines.push('  section gate');
    gateRuns.forEach((g, k) => {
      const end = Math.max(g.endMs ?? runEnd, g.startMs + 1);
      const tags = g.passed === null ? ['active'] : g.passed ? ['done'] : ['crit'];
      const found = g.culprit !== null ? ` culprit ${g.culprit}` : g.flake ? ' flake' : '';
      const label = `${gateRunName(g.tasks)} ${g.passed === null ? 'running' : g.passed ? 'passed' : 'failed'}${found}${g.durationMs !== null ? ` ${formatDuration(g.durationMs)}` : ''}`;
      lines.push(`  ${ganttText(label)} :${[...tags, `gate${k + 1}`, String(Math.round(g.startMs)), String(Math.round(end))].join(', ')}`);
    });
  }
  return lines.join('\n');
}

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

const fence = (text: string) => {
  const ticks = Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1));
  return `${'`'.repeat(ticks)}text\n${text.trimEnd()}\n${'`'.repeat(ticks)}`;
};

function describeOutcome(summary: RunSummary): string {
  if (summary.outcome === 'running') return 'running (this run still holds the lock)';
  if (summary.outcome === 'unfinished') return 'unfinished (no run-finished event: the run crashed or was killed)';
  if (summary.outcome === 'in-session') return 'in a Claude Code session, not finished (its lead is between steps, or the session ended before the run did)';
  return `${summary.outcome} (${summary.reason})${summary.message ? `: ${markdownCell(summary.message)}` : ''}`;
}

export function renderReport(input: ReportInput): string {
  const { plan } = input;
  if (!input.run && !plan) throw new Error('renderReport: needs a run or a plan');
  const run: RunRecord = input.run ?? { runId: '(none)', events: [], started: null, finished: null, firstMs: 0, lastMs: 0 };
  const summary = input.run ? summarizeRun(input.run, { livePid: input.livePid, now: input.now }) : null;
  const attempts = attemptsOf(run);
  const states = taskStatesIn(run);
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
  out.push(`- **Tasks:** ${countText || 'none'}${plan ? ` (of ${plan.tasks.length})` : ''}${summary ? `; ${plural(attempts.filter(counted).length, 'attempt')} in this run` : ''}`);
  const gate = input.run ? gateSummaryOf(input.run, input.now) : null;
  if (gate !== null) out.push(`- **Gate:** ${describeGate(gate)}`);
  const waste = speculationWaste(attempts);
  if (waste !== null) {
    out.push(`- **Speculation:** ${waste.cancelled} cancelled (work built on a candidate the gate then blamed): ${formatDuration(waste.workerMs)} of worker time, ${formatCostTally(waste.usage, 'attempt')} wasted`);
  }
  if (input.archivedFrom) out.push(`- **Plan:** ${input.archivedFrom} (archived)`);
  else if (input.planPath ?? summary?.planPath) out.push(`- **Plan:** ${input.planPath ?? summary?.planPath}`);
  out.push('');

  // Per-task table.
  const taskIndices = plan ? plan.tasks.map((_, i) => i) : [...new Set([...states.keys()])].sort((a, b) => a - b);
  const commits = new Map<number, string>();
  for (const e of run.events) if (e.type === 'round-committed' && e.commit) for (const t of e.tasks) commits.set(t, e.commit);
  out.push('## Tasks', '');
  out.push(`| # | Subject | Status | Attempts | Duration | Cost | Model | Commit |`);
  out.push(`|---:|---|---|---:|---:|---:|---|---|`);
  for (const i of taskIndices) {
    const task = plan?.tasks[i];
    const mine = attempts.filter((a) => a.task === i);
    const subject = task?.subject ?? mine[mine.length - 1]?.subject ?? run.events.find((e): e is EventOf<'task-skipped'> => e.type === 'task-skipped' && e.task === i)?.subject ?? '';
    const status = (input.planIsOfRun || !summary) && task ? statusOf(task) : (states.get(i) ?? (task ? `${statusOf(task)} (now)` : '—'));
    const n = mine.filter(counted).length + mine.filter((a) => a.outcome === null).length;
    const ms = mine.reduce((s, a) => s + (a.durationMs ?? 0), 0);
    const cost = formatCostTally(tallyOf(mine.map((a) => a.usage ?? undefined)));
    const model = mine[mine.length - 1]?.model ?? (task ? modelOf(task) : '—');
    const commit = (input.planIsOfRun || !summary ? task?.commit : undefined) ?? commits.get(i);
    out.push(
      summary
        ? `| ${i} | ${markdownCell(subject)} | ${status} | ${mine.length ? n : '—'} | ${mine.length ? formatDuration(ms) : '—'} | ${mine.length ? cost : '—'} | ${markdownCell(model)} | ${commit ? `\`${commit.slice(0, 10)}\`` : '—'} |`
        : `| ${i} | ${markdownCell(subject)} | ${status} | ${task ? planAttempts(task) : '—'} | — | ${task?.usage ? formatCostFigure(task.usage) : '—'} | ${markdownCell(model)} | ${commit ? `\`${commit.slice(0, 10)}\`` : '—'} |`,
    );
  }
  out.push('');

  // Failures, skips, stops.
  if (!summary && plan) {
    const failed = plan.tasks.flatMap((t, i) => (statusOf(t) === 'failed' || statusOf(t) === 'blocked' ? [i] : []));
    if (failed.length) out.push('## Failures', '');
    for (const i of failed) {
      const t = plan.tasks[i]!;
      out.push(`### Task ${i}: ${markdownCell(t.subject)}`, '', `- ${statusOf(t)} after ${plural(planAttempts(t), 'attempt')} — log \`${input.logDir ?? '.design'}/worker-${i}.log\``);
      if (t.result) out.push('', fence(t.result));
      out.push('');
    }
  }
  const failedTasks = [...new Set(attempts.filter((a) => isFailure(a.outcome)).map((a) => a.task))];
  const skips = run.events.filter((e): e is EventOf<'task-skipped'> => e.type === 'task-skipped');
  const stops = run.events.filter((e) => e.type === 'breaker' || e.type === 'budget-reached' || e.type === 'stalled' || e.type === 'interrupted');
  const failedChecks = run.events.filter((e): e is EventOf<'assumption-checked'> => e.type === 'assumption-checked' && !e.passed);
  if (failedTasks.length || skips.length || stops.length || failedChecks.length) {
    out.push('## Failures', '');
    for (const stop of stops) out.push(`- ${describeStop(stop)}`);
    if (stops.length) out.push('');
    for (const c of failedChecks) out.push(`- Task ${c.task}: ${c.severity} assumption failed: ${markdownCell(c.claim)}${c.output.trim() ? ` — ${markdownCell(c.output).slice(0, 300)}` : ''}`);
    if (failedChecks.length) out.push('');
    for (const t of failedTasks) {
      const mine = attempts.filter((a) => a.task === t);
      const last = mine[mine.length - 1]!;
      out.push(`### Task ${t}: ${markdownCell(last.subject)}`, '');
      for (const a of mine.filter((x) => isFailure(x.outcome) || x === last)) {
        const how = a.outcome === null ? 'still running' : a.outcome === 'retry' ? 'failed, retried' : a.outcome.replace('_', ' ');
        out.push(`- Attempt ${a.attempt}${a.model ? ` (${a.model})` : ''}: ${how}${a.durationMs !== null ? ` after ${formatDuration(a.durationMs)}` : ''} — ${a.logPath ? `log \`${a.logPath}\`` : 'no log (a Task subagent in a Claude Code session)'}`);
        if (a.reason) out.push('', fence(a.reason), '');
      }
      if (out[out.length - 1] !== '') out.push('');
    }
    if (skips.length) {
      out.push('### Skipped', '');
      for (const s of skips) out.push(`- Task ${s.task} (${markdownCell(s.subject)}): ${markdownCell(s.reason)}`);
      out.push('');
    }
  }

  out.push(...warningsSection(run, attempts));
  if (gate !== null) out.push(...gateSection(gate));

  const awaiting = plan && (input.planIsOfRun || !summary) ? plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [i] : [])) : [];
  if (awaiting.length) {
    out.push('## Awaiting approval', '');
    for (const i of awaiting) out.push(`- Task ${i} (${markdownCell(plan!.tasks[i]!.subject)}): ${approvalHint(i, input.layout ?? { kind: 'checkout' })}`);
    out.push('');
  }

  if (attempts.length || gate !== null) {
    out.push('## Timeline', '', '```mermaid', ganttChart(run, { title: `Run ${run.runId}`, now: input.now }), '```', '');
  }
  return out.join('\n');
}

/**
 * Everything the run warned about, beside the reasons: each attempt's warnings (files changed
 * without being declared, a worktree not removed) and the run's own warnings (work that could not
 * land, an edit to the plan kept aside, processes a killed run left, the sandbox missing…).
 */
function warningsSection(run: RunRecord, attempts: readonly Attempt[]): string[] {
  const ofAttempts = attempts.flatMap((a) => a.warnings.map((w) => `- Task ${a.task}, attempt ${a.attempt}: ${markdownCell(w)}`));
  const ofRun = run.events.flatMap((e) => (e.type === 'notice' && e.level === 'warning' ? [`- ${markdownCell(e.message)}`] : []));
  if (ofAttempts.length === 0 && ofRun.length === 0) return [];
  return ['## Warnings', '', ...ofAttempts, ...ofRun, ''];
}

/** `5 runs (2 failed), 1 min 3 s in the gate; 1 flake; culprit: task 3`. */
function describeGate(gate: GateSummary): string {
  const parts = [`${plural(gate.runs.length, 'run')}${gate.failed > 0 ? ` (${gate.failed} failed)` : ''}, ${formatDuration(gate.totalMs)} in the gate`];
  if (gate.baseline === false) parts.push('the starting commit already failed it');
  if (gate.flakes.length > 0) parts.push(`${plural(gate.flakes.length, 'flake')} (blamed no task)`);
  if (gate.culprits.length > 0) parts.push(`${gate.culprits.length === 1 ? 'culprit' : 'culprits'}: ${gate.culprits.length === 1 ? 'task' : 'tasks'} ${listIndices(gate.culprits)}`);
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
    out.push(`${k + 1}. ${what}: ${verdict}${g.durationMs !== null ? ` in ${formatDuration(g.durationMs)}` : ''}${found.length > 0 ? ` — ${found.join('; ')}` : ''}`);
    if (g.passed === false && g.output) out.push('', fence(clipTail(g.output.trim(), 1200)).replace(/^/gm, '   '), '');
  });
  out.push('');
  return out;
}

/** The report as data (`plan.ts report --json`): the run's summary, its attempts and its gate runs. */
export function reportData(run: RunRecord, options: SummaryOptions = {}): { summary: RunSummary; attempts: Attempt[]; gate: GateSummary | null } {
  return { summary: summarizeRun(run, options), attempts: attemptsOf(run), gate: gateSummaryOf(run, options.now) };
}

function describeStop(event: RunEvent): string {
  switch (event.type) {
    case 'breaker':
      return `Circuit breaker: ${event.wouldBeSkipped} of ${event.pendingCount} pending tasks would have been skipped; the run stopped.`;
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

// ---------------------------------------------------------------------------------------------
// Archives and history

/**
 * The time in an archive name `<timestamp>-plan.json`: epoch seconds or milliseconds, ISO
 * (`2026-11-22T01:02:03Z`, or with `-` for `:` as file names need), or compact
 * (`20261122T010203Z`, `20261122-010203`). null when the name holds no recognisable time.
 */
export function parseArchiveStamp(fileName: string): number | null {
  const base = fileName.replace(/^.*[\\/]/, '').replace(/-?plan\.json$/, '');
  if (/^\d{13}$/.test(base)) return Number(base);
  if (/^\d{10}$/.test(base)) return Number(base) * 1000;
  let m = /^(\d{4}-\d{2}-\d{2})[T_ ](\d{2})[-:](\d{2})[-:](\d{2})(?:[.,-](\d{1,3}))?(Z|[+-]\d{2}:?\d{2})?$/.exec(base);
  if (m) {
    const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${(m[5] ?? '0').padEnd(3, '0')}${m[6] ?? 'Z'}`);
    return Number.isFinite(t) ? t : null;
  }
  m = /^(\d{4})(\d{2})(\d{2})[T_-]?(\d{2})(\d{2})(\d{2})(\d{3})?Z?$/.exec(base);
  if (m) {
    const t = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7] ?? '000'}Z`);
    return Number.isFinite(t) ? t : null;
  }
  return null;
}

export interface Archive {
  path: string;
  plan: Plan;
  /** From the file name, else the file's modification time. */
  archivedMs: number;
}

/**
 * The run an archived plan records: the run whose run-finished message names the archive file,
 * else, among runs that started before it was archived (names hold whole seconds), the latest
 * with the same goal (or, failing that, the latest whose goal is unknown); else null.
 */
export function runForArchive(archive: Archive, runs: readonly RunRecord[]): RunRecord | null {
  const name = archive.path.replace(/^.*[\\/]/, '');
  const named = runs.filter((r) => r.finished?.message.includes(name));
  if (named.length) return named[named.length - 1]!;
  const before = runs.filter((r) => startOf(r) <= archive.archivedMs + 999);
  const sameGoal = before.filter((r) => r.started?.goal === archive.plan.goal);
  const pool = sameGoal.length ? sameGoal : before.filter((r) => r.started?.goal === undefined);
  return pool.length ? pool.reduce((a, b) => (startOf(b) >= startOf(a) ? b : a)) : null;
}

export interface HistoryEntry {
  /** null for an archive with no matching run in the journal. */
  runId: string | null;
  startedAt: string;
  goal: string | null;
  outcome: RunState | 'archived';
  reason: StopReason | null;
  durationMs: number | null;
  /** The measured cost (a lower bound when `costUnknownFor > 0`), or `unknown` when nothing was measured. */
  costUsd: number | typeof UNKNOWN;
  /** How many attempts (for an archive no run accounts for: tasks) have an unknown cost. */
  costUnknownFor: number;
  /** The figures behind `costUsd`. */
  usage: UsageTally;
  archive: string | null;
}

/** What the plan's tasks cost, each task's usage summed over its attempts (unknown if any attempt was). */
export const planTally = (plan: Plan): UsageTally => tallyOf(plan.tasks.map((t) => t.usage));

/** `12,345 input, … cache write`, `unknown`, or `at least …` when some figures are unknown. */
export function formatTokens(tally: UsageTally, unit = 'attempt'): string {
  if (tally.unknown > 0 && tally.measuredCount === 0) return UNKNOWN;
  const u = tally.measured;
  const figures = `${formatCount(u.inputTokens)} input, ${formatCount(u.outputTokens)} output, ${formatCount(u.cacheReadTokens)} cache read, ${formatCount(u.cacheCreationTokens)} cache write`;
  return tally.unknown > 0 ? `at least ${figures} (${plural(tally.unknown, unit)} unknown)` : figures;
}

/** Past runs, oldest first: every run in the journal, plus archives no journal run accounts for. */
export function historyEntries(runs: readonly RunRecord[], archives: readonly Archive[], options: SummaryOptions = {}): HistoryEntry[] {
  const archiveOf = new Map<string, string>();
  const loose: Archive[] = [];
  for (const a of archives) {
    const run = runForArchive(a, runs);
    if (run && !archiveOf.has(run.runId)) archiveOf.set(run.runId, a.path);
    else loose.push(a);
  }
  const entries: Array<HistoryEntry & { sortMs: number }> = runs.map((r) => {
    const s = summarizeRun(r, options);
    return {
      runId: r.runId,
      startedAt: s.startedAt,
      goal: s.goal,
      outcome: s.outcome,
      reason: s.reason,
      durationMs: s.durationMs,
      costUsd: s.costUsd,
      costUnknownFor: s.usage.unknown,
      usage: s.usage,
      archive: archiveOf.get(r.runId) ?? null,
      sortMs: startOf(r),
    };
  });
  for (const a of loose) {
    const usage = planTally(a.plan);
    entries.push({
      runId: null,
      startedAt: isoSeconds(a.archivedMs),
      goal: a.plan.goal,
      outcome: 'archived',
      reason: null,
      durationMs: null,
      costUsd: tallyCostUsd(usage),
      costUnknownFor: usage.unknown,
      usage,
      archive: a.path,
      sortMs: a.archivedMs,
    });
  }
  return entries.sort((a, b) => a.sortMs - b.sortMs).map(({ sortMs: _, ...e }) => e);
}

// ---------------------------------------------------------------------------------------------
// The run in progress (for `plan.ts status`)

export interface RunningTask {
  index: number;
  subject: string;
  attempt: number;
  model: string | null;
  startedAt: string;
  elapsedMs: number;
}

export interface UnfinishedRun {
  runId: string;
  startedAt: string;
  pid: number | null;
  /** task-started without a task-finished yet. */
  running: RunningTask[];
  /** True for an in-session run: its lead works between the plan tool's steps, holding no lock. */
  inSession: boolean;
  /** What this run's finished attempts cost, from the journal. */
  runCost: UsageTally;
  /**
   * Cost the plan does not show yet: attempts that completed but wait for their round's commit
   * (the plan records a completed task's usage when the commit lands; other outcomes at once).
   */
  unrecordedCost: UsageTally;
}

/** The latest run, when it has no run-finished event (still running, or it died). */
export function unfinishedRun(runs: readonly RunRecord[], plan: Plan | null, now: number): UnfinishedRun | null {
  const run = runs[runs.length - 1];
  if (!run || run.finished) return null;
  const attempts = attemptsOf(run);
  const waitsForCommit = (i: number) => {
    const task = plan?.tasks[i];
    return task === undefined || statusOf(task) === 'in_progress';
  };
  const unrecorded = attempts.filter((a) => a.outcome === 'completed' && waitsForCommit(a.task));
  return {
    runId: run.runId,
    startedAt: isoSeconds(startOf(run)),
    pid: run.started?.pid ?? null,
    inSession: run.started?.mode === 'session',
    running: attempts
      .filter((a) => a.outcome === null)
      .map((a) => ({ index: a.task, subject: a.subject, attempt: a.attempt, model: a.model, startedAt: isoSeconds(a.startMs), elapsedMs: Math.max(0, now - a.startMs) })),
    runCost: tallyOf(attempts.map((a) => a.usage ?? undefined)),
    unrecordedCost: tallyOf(unrecorded.map((a) => a.usage ?? undefined)),
  };
}
