// The live view: a terminal block redrawn in place (at most ~5 times a second) with one row per
// running task and a footer of counts, cost and elapsed time; finished tasks and notices scroll
// above it as permanent lines. It starts no timer: the caller calls `tick()` to advance clocks.

import {
  clipHead,
  formatCost,
  formatCostFigure,
  formatElapsed,
  type Layout,
  listIndices,
  plural,
  type RunEvent,
  type TaskOutcome,
  type TaskStatus,
  wrapWords,
} from '../core/index.ts';
import { clean, describeEvent, finishedVerb, namesWhatToDo, sanitize } from './event-text.ts';
import { applyEvent, footerFigures, type FooterFigures, type LiveState, newLiveState } from './live-state.ts';
import { fitSegments, type Segment, type Style } from './segments.ts';
import type { RunView } from './render.ts';

const CSI = '\x1b[';

export interface LiveViewOptions {
  write: (text: string) => void;
  /** Terminal width; every line is cut to fit (one column is kept free so no line wraps). */
  columns: number;
  /** false (NO_COLOR, or not wanted): no SGR codes at all. Cursor movement is still used. */
  color: boolean;
  /** How the commands the lines name are spelled. */
  layout: Layout;
  now?: () => number;
  /** Minimum time between redraws of the block (default 200 ms: at most 5 redraws a second). */
  minIntervalMs?: number;
  /**
   * The plan's tasks by status when the run starts (`countByStatus(plan)`): the footer counts
   * them from its first frame, before `run-started` says how many there are, and the finished
   * ones of a resumed plan stay counted so `pending` is right.
   */
  baseline?: Partial<Record<TaskStatus, number>>;
}

/** Compact form below this width. */
export const COMPACT_BELOW = 40;

export interface LiveView extends RunView {
  /** The terminal was resized. */
  setColumns(columns: number): void;
}

/** How lines are drawn: `width` visible characters at most, coloured or not, commands spelled for `layout`. */
interface Drawing {
  width: number;
  color: boolean;
  layout: Layout;
}

const FINISHED_MARKS: Record<TaskOutcome, [string, Style | undefined]> = {
  completed: ['✓', 'green'],
  awaiting_approval: ['?', 'yellow'],
  retry: ['↻', 'yellow'],
  failed: ['✗', 'red'],
  blocked: ['✗', 'red'],
  requeued: ['↻', 'dim'],
  interrupted: ['-', 'dim'],
  cancelled: ['-', 'dim'],
};

/** The mark and style of an event's permanent line; null for a change of limit that only changes the footer. */
function markOf(event: RunEvent): { mark: string; style: Style | undefined } | null {
  let mark = '•';
  let style: Style | undefined;
  if (event.type === 'task-finished') [mark, style] = FINISHED_MARKS[event.outcome];
  else if (event.type === 'task-skipped') [mark, style] = ['-', 'yellow'];
  else if (event.type === 'notice') style = event.level === 'warning' ? 'yellow' : 'dim';
  else if (event.type === 'assumption-checked') [mark, style] = ['!', event.severity === 'blocking' ? 'red' : 'yellow'];
  else if (event.type === 'round-committed') [mark, style] = ['●', 'cyan'];
  else if (event.type === 'gate-started') [mark, style] = ['◌', 'dim'];
  else if (event.type === 'gate-finished') [mark, style] = event.passed ? ['◉', 'cyan'] : ['!', 'yellow'];
  else if (event.type === 'run-started' || event.type === 'run-finished') style = 'bold';
  else if (event.type === 'breaker' || event.type === 'budget-reached' || event.type === 'stalled' || event.type === 'interrupted' || event.type === 'draining')
    [mark, style] = ['!', 'yellow'];
  else if (event.type === 'limit') {
    // A new hold and the API serving again scroll above; the rest only changes the footer.
    if (event.change !== 'hold' && event.change !== 'serving') return null;
    [mark, style] = event.change === 'hold' ? ['!', 'yellow'] : ['•', 'dim'];
  } else if (event.type === 'task-paused' || event.type === 'task-resumed') [mark, style] = ['↻', 'dim'];
  return { mark, style };
}

/** The lines an event leaves above the block, for good: none for live-only activity. */
function permanentLines(event: RunEvent, drawing: Drawing): string[] {
  const { width, color } = drawing;
  const text = describeEvent(event, drawing.layout);
  if (text === null || event.type === 'task-started') return [];
  if (event.type === 'assumption-checked' && event.passed) return [];
  const marked = markOf(event);
  if (marked === null) return [];
  const { mark, style } = marked;
  if (event.type === 'task-finished' && (event.outcome === 'retry' || event.outcome === 'failed' || event.outcome === 'blocked')) {
    // On a terminal the reason gets a line of its own (cut to the width) and so does the log.
    const head = `task ${event.task} ${finishedVerb[event.outcome]} (attempt ${event.attempt}, ${formatElapsed(event.durationMs)}, ${formatCostFigure(event.usage)}): ${clean(event.subject, 200)}`;
    const lines = [
      fitSegments([{ text: `${mark} `, style }, { text: head }], width, color),
      fitSegments([{ text: `    ${clean(event.reason ?? event.result ?? 'no reason given')}`, style: 'dim' }], width, color),
    ];
    if (event.outcome !== 'retry') lines.push(fitSegments([{ text: `    log: ${event.logPath}`, style: 'dim' }], width, color));
    return lines;
  }
  if (namesWhatToDo(event)) {
    // What to do next ends these lines (how to resume, what blocks landing, the commands that
    // decide or read back set-aside work): they wrap, never cut.
    return wrapWords(sanitize(text), width - 2).map((line, k) =>
      fitSegments(
        [
          { text: k === 0 ? `${mark} ` : '  ', style },
          { text: line, style: style === 'bold' ? 'bold' : undefined },
        ],
        width,
        color,
      ),
    );
  }
  return [
    fitSegments(
      [
        { text: `${mark} `, style },
        { text, style: style === 'bold' ? 'bold' : undefined },
      ],
      width,
      color,
    ),
  ];
}

/** One row per running task, by task: its subject, time, cost and what it does now (compact: its time and subject). */
function runningRows(state: LiveState, t: number, drawing: Drawing, compact: boolean): string[] {
  const { width: w, color } = drawing;
  const rows = [...state.running.entries()].sort((a, b) => a[0] - b[0]);
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
          ...(r.place !== undefined ? [{ text: `${r.place} `, style: 'cyan' as const }] : []),
          ...(r.stack !== undefined ? [{ text: `on ${listIndices(r.stack)} `, style: 'yellow' as const }] : []),
          { text: clean(r.activity, 500), style: 'dim' },
        ],
        w,
        color,
      ),
    );
  }
  return lines;
}

/** The footer: counts, the gate, a drain or a limit, rounds, cost and elapsed time, on one line or two (compact: two short ones). */
function footerLines(figures: FooterFigures, drawing: Drawing, compact: boolean): string[] {
  const { width: w, color } = drawing;
  const { cost, elapsed, done, failed, skipped, awaiting, pending, lastRound, gate, waiting } = figures;
  if (compact)
    return [
      fitSegments([{ text: `${cost} ${elapsed}`, style: 'bold' }, { text: ` r${lastRound}` }], w, color),
      fitSegments(
        [
          { text: `${done} done`, style: done ? 'green' : undefined },
          { text: ' ' },
          { text: `${failed} fail`, style: failed ? 'red' : undefined },
          { text: ` ${skipped} skip ${pending} left` },
        ],
        w,
        color,
      ),
    ];
  const countSegs: Segment[] = [
    { text: `${figures.running} running · ` },
    { text: `${done} completed`, style: done ? 'green' : undefined },
    { text: ' · ' },
    { text: `${failed} failed`, style: failed ? 'red' : undefined },
    { text: ' · ' },
    { text: `${skipped} skipped`, style: skipped ? 'yellow' : undefined },
    ...(awaiting ? [{ text: ' · ' }, { text: `${awaiting} awaiting approval`, style: 'yellow' as const }] : []),
    { text: ` · ${pending} pending` },
    ...(gate.testing.length > 0
      ? [{ text: ' · ' }, { text: `gate: ${listIndices(gate.testing)}${gate.waiting > 0 ? ` (+${gate.waiting} queued)` : ''}`, style: 'cyan' as const }]
      : []),
    ...(figures.draining ? [{ text: ' · ' }, { text: 'draining', style: 'yellow' as const }] : []),
    ...(waiting !== null ? [{ text: ' · ' }, { text: waiting, style: 'yellow' as const }] : []),
  ];
  const moneySegs: Segment[] = [{ text: `${plural(lastRound, 'round')} committed · ` }, { text: `${cost} · ${elapsed}`, style: 'bold' }];
  const len = (segs: Segment[]) => segs.reduce((n, s) => n + [...s.text].length, 0);
  if (len(countSegs) + 3 + len(moneySegs) <= w) return [fitSegments([...countSegs, { text: ' · ' }, ...moneySegs], w, color)];
  return [fitSegments(moneySegs, w, color), fitSegments(countSegs, w, color)];
}

/** The block redrawn in place at time `t`: the running tasks' rows, then the footer. */
function block(state: LiveState, t: number, drawing: Drawing, columns: number): string[] {
  const compact = columns < COMPACT_BELOW;
  return [...runningRows(state, t, drawing, compact), ...footerLines(footerFigures(state, t), drawing, compact)];
}

export function createLiveView(options: LiveViewOptions): LiveView {
  const now = options.now ?? Date.now;
  const interval = options.minIntervalMs ?? 200;
  let columns = options.columns;
  const state = newLiveState(options.baseline);

  let drawnLines = 0;
  let lastBlock: string[] = [];
  let lastDrawAt = -Infinity;
  let dirty = false;
  let closed = false;

  const timeOf = (at: string) => {
    const t = Date.parse(at);
    return Number.isFinite(t) ? t : now();
  };
  const drawing = (): Drawing => ({ width: Math.max(1, columns - 1), color: options.color, layout: options.layout });

  /** Write one frame: permanent lines (if any), then the block, over the previous block. */
  function frame(permanent: string[], force: boolean): void {
    const lines = block(state, state.runEnd ?? now(), drawing(), columns);
    if (!force && permanent.length === 0 && lines.length === lastBlock.length && lines.every((l, k) => l === lastBlock[k])) {
      lastDrawAt = now();
      dirty = false;
      return;
    }
    let out = drawnLines > 0 ? `${CSI}${drawnLines}A\r` : '';
    for (const l of [...permanent, ...lines]) out += `${CSI}2K${l}\n`;
    out += `${CSI}J`;
    options.write(out);
    drawnLines = lines.length;
    lastBlock = lines;
    lastDrawAt = now();
    dirty = false;
  }

  return {
    update(event) {
      if (closed) return;
      applyEvent(state, event, timeOf);
      const lines = permanentLines(event, drawing());
      if (lines.length > 0) frame(lines, true);
      else if (now() - lastDrawAt >= interval) frame([], false);
      else dirty = true;
    },
    tick() {
      if (closed) return;
      if (now() - lastDrawAt >= interval) frame([], false);
      else if (state.running.size > 0) dirty = true;
    },
    setColumns(columnCount) {
      columns = columnCount;
      dirty = true;
    },
    close() {
      if (closed) return;
      frame([], dirty || drawnLines === 0);
      closed = true;
    },
  };
}
