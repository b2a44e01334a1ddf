// Renderers for run events (src/core/events.ts):
// - createLiveView: a terminal block redrawn in place (at most ~5 times a second) with one row per
//   running task and a footer of counts, cost and elapsed time; finished tasks and notices scroll
//   above it as permanent lines;
// - createPlainView: one timestamped line per event, for logs and CI (no control codes);
// - jsonView: one JSON object per line, the event as it is (the `--json` stream).
// None of them starts a timer: the caller calls `tick()` (say every 250 ms) to advance clocks.

import type { RunEvent, TaskOutcome } from '../core/events.ts';
import { clipHead, formatCost, formatCostFigure, formatCostTally, formatElapsed, isoSeconds, listIndices, oneLine, plural } from '../core/format.ts';
import { type TaskStatus, emptyTally, tallyAdd } from '../core/plan.ts';

export interface RunView {
  update(event: RunEvent): void;
  /** Advance clocks; redraws if something visible changed (live view only). */
  tick(): void;
  /** Stop; the live view leaves its final state on screen. Later calls do nothing. */
  close(): void;
}

// ---------------------------------------------------------------------------------------------
// Text of one event (shared by the plain log and the live view's permanent lines)

/** Control characters (escape sequences, newlines, tabs) from workers or plans never reach the terminal. */
export const sanitize = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');

const clean = (s: string, max = 400) => oneLine(sanitize(s), max);

const finishedVerb: Record<TaskOutcome, string> = {
  completed: 'completed',
  awaiting_approval: 'awaits approval',
  retry: 'failed, will retry',
  failed: 'failed',
  blocked: 'blocked',
  requeued: 'requeued',
  interrupted: 'interrupted',
};

/** One line describing an event, without timestamp; null for live-only activity. */
export function describeEvent(e: RunEvent): string | null {
  switch (e.type) {
    case 'run-started':
      return `run ${e.runId} ${e.resumed ? 'resumed' : 'started'}: ${clean(e.goal, 200)} (${plural(e.taskCount, 'task')}, concurrency ${e.concurrency}, ${e.schedule} schedule, pid ${e.pid})`;
    case 'notice':
      return `${e.level}: ${clean(e.message)}`;
    case 'assumption-checked':
      return `task ${e.task} assumption ${e.passed ? 'holds' : 'failed'} (${e.severity}): ${clean(e.claim, 200)}${!e.passed && e.output.trim() ? ` — ${clean(e.output, 200)}` : ''}`;
    case 'task-started':
      return `task ${e.task} started (attempt ${e.attempt}, ${e.model}): ${clean(e.subject, 200)}`;
    case 'task-activity':
      return null;
    case 'task-finished': {
      const stats = `attempt ${e.attempt}, ${formatElapsed(e.durationMs)}, ${formatCostFigure(e.usage)}`;
      const head = `task ${e.task} ${finishedVerb[e.outcome]} (${stats})`;
      switch (e.outcome) {
        case 'completed':
          return `${head}: ${clean(e.subject, 200)}`;
        case 'awaiting_approval':
          return `${head}: ${clean(e.subject, 200)} — run \`plan.ts approve ${e.task}\` or \`plan.ts reject ${e.task} --reason …\``;
        case 'retry':
        case 'failed':
        case 'blocked':
          return `${head}: ${clean(e.reason ?? e.result ?? 'no reason given')} (log: ${e.logPath})`;
        case 'requeued':
        case 'interrupted':
          return `${head}${e.reason ? `: ${clean(e.reason)}` : ''}`;
      }
      return head;
    }
    case 'task-skipped':
      return `task ${e.task} skipped: ${clean(e.reason.replace(/^skipped:\s*/i, ''))}`;
    case 'round-committed':
      return e.commit
        ? `round ${e.round} committed (${e.commit.slice(0, 10)}): ${e.tasks.length ? `tasks ${listIndices(e.tasks)}` : 'no tasks'}`
        : `round ${e.round}: nothing to commit${e.tasks.length ? ` (tasks ${listIndices(e.tasks)})` : ''}`;
    case 'breaker':
      return `circuit breaker: ${e.wouldBeSkipped} of ${e.pendingCount} pending tasks would be skipped; stopping`;
    case 'budget-reached':
      return `budget reached: spent ${formatCost(e.costUsd)} of ${formatCost(e.limitUsd)}; no new task starts`;
    case 'stalled':
      return e.kind === 'deadlock'
        ? `stalled: ${e.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(e.tasks)} pending but none can start`
        : `waiting for approval of ${e.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(e.tasks)} (plan.ts approve N / reject N --reason …)`;
    case 'interrupted':
      return `interrupted by ${e.signal}; stopping workers`;
    case 'run-finished': {
      const counts = Object.entries(e.counts)
        .filter(([, n]) => n > 0)
        .map(([s, n]) => `${n} ${s}`)
        .join(', ');
      return `run ${e.runId} finished: ${e.outcome} (${e.reason}) in ${formatElapsed(e.durationMs)}, ${formatCostFigure(e.usage)}${counts ? `; ${counts}` : ''}${e.message ? ` — ${clean(e.message)}` : ''}`;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Plain and JSON views

export function createPlainView(opts: { write: (text: string) => void; now?: () => number }): RunView {
  const now = opts.now ?? Date.now;
  let closed = false;
  return {
    update(e) {
      if (closed) return;
      const line = describeEvent(e);
      if (line !== null) opts.write(`${isoSeconds(now())} ${line}\n`);
    },
    tick() {},
    close() {
      closed = true;
    },
  };
}

export function jsonView(opts: { write: (text: string) => void }): RunView {
  let closed = false;
  return {
    update(e) {
      if (!closed) opts.write(`${JSON.stringify(e)}\n`);
    },
    tick() {},
    close() {
      closed = true;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Live view

type Style = 'bold' | 'dim' | 'green' | 'red' | 'yellow' | 'cyan';
const SGR: Record<Style, [string, string]> = {
  bold: ['\x1b[1m', '\x1b[22m'],
  dim: ['\x1b[2m', '\x1b[22m'],
  green: ['\x1b[32m', '\x1b[39m'],
  red: ['\x1b[31m', '\x1b[39m'],
  yellow: ['\x1b[33m', '\x1b[39m'],
  cyan: ['\x1b[36m', '\x1b[39m'],
};
interface Segment {
  text: string;
  style?: Style;
}

/** Join segments, cut to `width` visible characters (with `…`), then colour them. */
export function fitSegments(segments: readonly Segment[], width: number, color: boolean): string {
  let room = Math.max(0, width);
  let out = '';
  const total = segments.reduce((n, s) => n + [...s.text].length, 0);
  const cut = total > room;
  if (cut) room = Math.max(0, room - 1);
  for (const seg of segments) {
    if (room <= 0) break;
    const chars = [...seg.text];
    const text = chars.length > room ? chars.slice(0, room).join('') : seg.text;
    room -= Math.min(chars.length, room);
    out += color && seg.style && text ? `${SGR[seg.style][0]}${text}${SGR[seg.style][1]}` : text;
  }
  if (cut && width > 0) out += '…';
  return out;
}

const CSI = '\x1b[';

export interface LiveViewOptions {
  write: (text: string) => void;
  /** Terminal width; every line is cut to fit (one column is kept free so no line wraps). */
  columns: number;
  /** false (NO_COLOR, or not wanted): no SGR codes at all. Cursor movement is still used. */
  color: boolean;
  now?: () => number;
  /** Minimum time between redraws of the block (default 200 ms: at most 5 redraws a second). */
  minIntervalMs?: number;
  /**
   * Tasks already in a final state when the run starts (e.g. `countByStatus(plan)` of a resumed
   * plan): counted in the footer so `pending` is right. Only the finished states are used.
   */
  baseline?: Partial<Record<TaskStatus, number>>;
}

interface Running {
  subject: string;
  attempt: number;
  model: string;
  startedAt: number;
  activity: string;
  costUsd: number;
}

/** Compact form below this width. */
export const COMPACT_BELOW = 40;

export interface LiveView extends RunView {
  /** The terminal was resized. */
  setColumns(columns: number): void;
}

export function createLiveView(opts: LiveViewOptions): LiveView {
  const now = opts.now ?? Date.now;
  const interval = opts.minIntervalMs ?? 200;
  const color = opts.color;
  let columns = opts.columns;

  const running = new Map<number, Running>();
  const base = opts.baseline ?? {};
  const counts = {
    completed: base.completed ?? 0,
    awaiting: base.awaiting_approval ?? 0,
    failed: base.failed ?? 0,
    blocked: base.blocked ?? 0,
    skipped: base.skipped ?? 0,
  };
  let taskCount = 0;
  let runStart: number | null = null;
  let runEnd: number | null = null;
  let lastRound = 0;
  let finishedCost = emptyTally();

  let drawnLines = 0;
  let lastBlock: string[] = [];
  let lastDrawAt = -Infinity;
  let dirty = false;
  let closed = false;

  const timeOf = (at: string) => {
    const t = Date.parse(at);
    return Number.isFinite(t) ? t : now();
  };
  const width = () => Math.max(1, columns - 1);

  function apply(e: RunEvent): void {
    switch (e.type) {
      case 'run-started':
        taskCount = e.taskCount;
        runStart = timeOf(e.at);
        runEnd = null;
        break;
      case 'task-started':
        running.set(e.task, { subject: e.subject, attempt: e.attempt, model: e.model, startedAt: timeOf(e.at), activity: 'starting', costUsd: 0 });
        break;
      case 'task-activity': {
        const r = running.get(e.task);
        if (r) {
          r.activity = e.text;
          r.costUsd = e.costUsd;
        }
        break;
      }
      case 'task-finished':
        running.delete(e.task);
        finishedCost = tallyAdd(finishedCost, e.usage);
        if (e.outcome === 'completed') counts.completed++;
        else if (e.outcome === 'awaiting_approval') counts.awaiting++;
        else if (e.outcome === 'failed') counts.failed++;
        else if (e.outcome === 'blocked') counts.blocked++;
        break;
      case 'task-skipped':
        counts.skipped++;
        break;
      case 'round-committed':
        lastRound = Math.max(lastRound, e.round);
        break;
      case 'run-finished':
        runEnd = timeOf(e.at);
        running.clear();
        break;
      default:
        break;
    }
  }

  function permanentLines(e: RunEvent): string[] {
    const text = describeEvent(e);
    if (text === null || e.type === 'task-started') return [];
    if (e.type === 'assumption-checked' && e.passed) return [];
    let mark = '•';
    let style: Style | undefined;
    if (e.type === 'task-finished') {
      const marks: Record<TaskOutcome, [string, Style | undefined]> = {
        completed: ['✓', 'green'],
        awaiting_approval: ['?', 'yellow'],
        retry: ['↻', 'yellow'],
        failed: ['✗', 'red'],
        blocked: ['✗', 'red'],
        requeued: ['↻', 'dim'],
        interrupted: ['-', 'dim'],
      };
      [mark, style] = marks[e.outcome];
    } else if (e.type === 'task-skipped') [mark, style] = ['-', 'yellow'];
    else if (e.type === 'notice') style = e.level === 'warning' ? 'yellow' : 'dim';
    else if (e.type === 'assumption-checked') [mark, style] = ['!', e.severity === 'blocking' ? 'red' : 'yellow'];
    else if (e.type === 'round-committed') [mark, style] = ['●', 'cyan'];
    else if (e.type === 'run-started' || e.type === 'run-finished') style = 'bold';
    else if (e.type === 'breaker' || e.type === 'budget-reached' || e.type === 'stalled' || e.type === 'interrupted') [mark, style] = ['!', 'yellow'];
    if (e.type === 'task-finished' && (e.outcome === 'retry' || e.outcome === 'failed' || e.outcome === 'blocked')) {
      // On a terminal the reason gets a line of its own (cut to the width) and so does the log.
      const head = `task ${e.task} ${finishedVerb[e.outcome]} (attempt ${e.attempt}, ${formatElapsed(e.durationMs)}, ${formatCostFigure(e.usage)}): ${clean(e.subject, 200)}`;
      const lines = [
        fitSegments([{ text: `${mark} `, style }, { text: head }], width(), color),
        fitSegments([{ text: `    ${clean(e.reason ?? e.result ?? 'no reason given')}`, style: 'dim' }], width(), color),
      ];
      if (e.outcome !== 'retry') lines.push(fitSegments([{ text: `    log: ${e.logPath}`, style: 'dim' }], width(), color));
      return lines;
    }
    return [fitSegments([{ text: `${mark} `, style }, { text, style: style === 'bold' ? 'bold' : undefined }], width(), color)];
  }

  function block(): string[] {
    const t = runEnd ?? now();
    const w = width();
    const compact = columns < COMPACT_BELOW;
    const rows = [...running.entries()].sort((a, b) => a[0] - b[0]);
    const lines: string[] = [];
    const idxWidth = Math.max(1, ...rows.map(([i]) => String(i).length));
    const subjectWidth = Math.max(8, Math.min(Math.max(0, ...rows.map(([, r]) => sanitize(r.subject).length)), Math.floor((w - idxWidth - 20) * 0.5), 40));
    for (const [i, r] of rows) {
      const elapsed = formatElapsed(t - r.startedAt);
      const subject = sanitize(r.subject);
      if (compact) {
        lines.push(fitSegments([{ text: String(i).padStart(idxWidth), style: 'bold' }, { text: ` ${elapsed} ` }, { text: subject }], w, color));
        continue;
      }
      const cutSubject = clipHead(subject, subjectWidth).padEnd(subjectWidth);
      lines.push(
        fitSegments(
          [
            { text: '▸ ', style: 'cyan' },
            { text: String(i).padStart(idxWidth), style: 'bold' },
            { text: `  ${cutSubject}  ${elapsed.padStart(6)}  ${formatCost(r.costUsd).padStart(6)}  ` },
            { text: clean(r.activity, 500), style: 'dim' },
          ],
          w,
          color,
        ),
      );
    }
    const runningCost = [...running.values()].reduce((s, r) => s + r.costUsd, 0);
    // Running workers' costs are measured as they stream; finished attempts may be unknown (never in a headless run).
    const cost = formatCostTally({ ...finishedCost, measured: { ...finishedCost.measured, costUsd: finishedCost.measured.costUsd + runningCost } });
    const elapsed = runStart === null ? '0s' : formatElapsed(t - runStart);
    const failed = counts.failed + counts.blocked;
    const done = counts.completed;
    const pending = Math.max(0, taskCount - done - counts.awaiting - failed - counts.skipped - running.size);
    const round = runEnd === null ? lastRound + 1 : Math.max(1, lastRound);
    if (compact) {
      lines.push(fitSegments([{ text: `${cost} ${elapsed}`, style: 'bold' }, { text: ` r${round}` }], w, color));
      lines.push(
        fitSegments(
          [
            { text: `${done} done`, style: done ? 'green' : undefined },
            { text: ' ' },
            { text: `${failed} fail`, style: failed ? 'red' : undefined },
            { text: ` ${counts.skipped} skip ${pending} left` },
          ],
          w,
          color,
        ),
      );
      return lines;
    }
    const countSegs: Segment[] = [
      { text: `${running.size} running · ` },
      { text: `${done} completed`, style: done ? 'green' : undefined },
      { text: ' · ' },
      { text: `${failed} failed`, style: failed ? 'red' : undefined },
      { text: ' · ' },
      { text: `${counts.skipped} skipped`, style: counts.skipped ? 'yellow' : undefined },
      ...(counts.awaiting ? [{ text: ' · ' }, { text: `${counts.awaiting} awaiting approval`, style: 'yellow' as const }] : []),
      { text: ` · ${pending} pending` },
    ];
    const moneySegs: Segment[] = [{ text: `round ${round} · ` }, { text: `${cost} · ${elapsed}`, style: 'bold' }];
    const len = (segs: Segment[]) => segs.reduce((n, s) => n + [...s.text].length, 0);
    if (len(countSegs) + 3 + len(moneySegs) <= w) {
      lines.push(fitSegments([...countSegs, { text: ' · ' }, ...moneySegs], w, color));
    } else {
      lines.push(fitSegments(moneySegs, w, color));
      lines.push(fitSegments(countSegs, w, color));
    }
    return lines;
  }

  /** Write one frame: permanent lines (if any), then the block, over the previous block. */
  function frame(permanent: string[], force: boolean): void {
    const lines = block();
    if (!force && permanent.length === 0 && lines.length === lastBlock.length && lines.every((l, k) => l === lastBlock[k])) {
      lastDrawAt = now();
      dirty = false;
      return;
    }
    let out = drawnLines > 0 ? `${CSI}${drawnLines}A\r` : '';
    for (const l of [...permanent, ...lines]) out += `${CSI}2K${l}\n`;
    out += `${CSI}J`;
    opts.write(out);
    drawnLines = lines.length;
    lastBlock = lines;
    lastDrawAt = now();
    dirty = false;
  }

  return {
    update(e) {
      if (closed) return;
      apply(e);
      const lines = permanentLines(e);
      if (lines.length > 0) frame(lines, true);
      else if (now() - lastDrawAt >= interval) frame([], false);
      else dirty = true;
    },
    tick() {
      if (closed) return;
      if (now() - lastDrawAt >= interval) frame([], false);
      else if (running.size > 0) dirty = true;
    },
    setColumns(c) {
      columns = c;
      dirty = true;
    },
    close() {
      if (closed) return;
      frame([], dirty || drawnLines === 0);
      closed = true;
    },
  };
}
