// The Mermaid Gantt chart of a run, a renderer: one row per task (a bar per attempt) and one for
// the gate.

import { clipHead, formatDuration } from '../format.ts';
import { type AttemptRecord, attemptRecordsOf, isFailure } from './attempts.ts';
import { gateRunName, gateRunsOf } from './gate-runs.ts';
import type { RunRecord } from './journal.ts';

// ---------------------------------------------------------------------------------------------
// Mermaid Gantt

/** Gantt text: `:` `#` `;` are syntax in a gantt chart, control characters end lines. */
export function ganttText(text: string, max = 60): string {
  const flat = text
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/:/g, '：')
    .replace(/#/g, '＃')
    .replace(/;/g, '；')
    .replace(/\s+/g, ' ')
    .trim();
  const cut = clipHead(flat, max);
  return cut === '' ? '(untitled)' : cut;
}

/** A Gantt section of a run with hosts: `build1 slot 2` (an attempt from before hosts, `this machine`). */
const placeName = (a: AttemptRecord): string => (a.host === null ? 'this machine' : `${a.host} slot ${a.slot}`);

export interface GanttOptions {
  title?: string;
  /** End of bars still running (default: the run's last event). */
  now?: number;
}

/**
 * The run's attempts as a Mermaid Gantt chart: one section per task (in order of first start) —
 * with hosts (`--host`), one per host and slot, each bar naming its task — one bar per attempt
 * from task-started to task-finished; `crit` marks failed attempts, `done`
 * completed ones, `active` the ones still running. Dates are millisecond timestamps (`dateFormat x`).
 */
export function ganttChart(run: RunRecord, options: GanttOptions = {}): string {
  const attempts = attemptRecordsOf(run);
  const lines = ['gantt', `  title ${ganttText(options.title ?? `Run ${run.runId}`, 100)}`, '  dateFormat x', '  axisFormat %H:%M:%S', '  todayMarker off'];
  const runEnd = options.now ?? run.lastMs;
  const bar = (a: AttemptRecord, label: string, id: string) => {
    const end = Math.max(a.endMs ?? runEnd, a.startMs + 1);
    const tags =
      a.outcome === null ? ['active'] : isFailure(a.outcome) ? ['crit'] : a.outcome === 'completed' || a.outcome === 'awaiting_approval' ? ['done'] : [];
    const how = `${a.outcome === null ? 'running' : a.outcome === 'retry' ? 'failed (retried)' : a.outcome.replace('_', ' ')}${a.durationMs !== null ? ` ${formatDuration(a.durationMs)}` : ''}`;
    lines.push(`  ${ganttText(`${label} ${how}`)} :${[...tags, id, String(Math.round(a.startMs)), String(Math.round(end))].join(', ')}`);
  };
  const byStart = [...attempts].sort((x, y) => x.startMs - y.startMs);
  if (attempts.some((a) => a.host !== null)) {
    // With hosts: one section per host and slot (in order of first use), a bar per attempt that worked there.
    const places: string[] = [];
    for (const a of byStart) if (!places.includes(placeName(a))) places.push(placeName(a));
    for (const place of places) {
      lines.push(`  section ${ganttText(place)}`);
      for (const a of byStart.filter((x) => placeName(x) === place)) {
        const k = attempts.filter((x) => x.task === a.task).indexOf(a) + 1;
        bar(a, `task ${a.task} attempt ${a.attempt}`, `t${a.task}a${k}`);
      }
    }
  } else {
    const order: number[] = [];
    for (const a of byStart) if (!order.includes(a.task)) order.push(a.task);
    for (const task of order) {
      const mine = attempts.filter((a) => a.task === task);
      lines.push(`  section ${task} ${ganttText(mine[mine.length - 1]!.subject)}`);
      mine.forEach((a, k) => {
        bar(a, `attempt ${a.attempt}`, `t${task}a${k + 1}`);
      });
    }
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
