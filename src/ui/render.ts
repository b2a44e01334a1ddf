// Renderers for run events (src/core/events.ts):
// - createLiveView: a terminal block redrawn in place (at most ~5 times a second) with one row per
//   running task and a footer of counts, cost and elapsed time; finished tasks and notices scroll
//   above it as permanent lines;
// - createPlainView: one timestamped line per event, for logs and CI (no control codes);
// - jsonView: one JSON object per line, the event as it is (the `--json` stream).
// None of them starts a timer: the caller calls `tick()` (say every 250 ms) to advance clocks.

import { type Layout, approvalHint } from '../core/command-hint.ts';
import type { RunEvent, TaskOutcome } from '../core/events.ts';
import { setAsideSummary } from '../core/finalize.ts';
import { clipHead, formatCost, formatCostFigure, formatCostTally, formatElapsed, isoSeconds, listIndices, oneLine, plural, wrapWords } from '../core/format.ts';
import { type TaskStatus, emptyTally, tallyAdd } from '../core/plan.ts';
import { type LimitState, waitWords } from '../core/limit-words.ts';

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
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
export const sanitize = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');

const clean = (text: string, max = 400) => oneLine(sanitize(text), max);

/** One line, never cut: for words that name what to do next. */
const whole = (text: string) => oneLine(sanitize(text), Number.POSITIVE_INFINITY);

const finishedVerb: Record<TaskOutcome, string> = {
  completed: 'completed',
  awaiting_approval: 'awaits approval',
  retry: 'failed, will retry',
  failed: 'failed',
  blocked: 'blocked',
  requeued: 'requeued',
  interrupted: 'interrupted',
  cancelled: 'cancelled',
};

/** Where an attempt works, with hosts: `, on build1 slot 2`; nothing without. */
const whereText = (event: { host?: string; slot?: number }): string => (event.host === undefined ? '' : `, on ${sanitize(event.host)} slot ${event.slot}`);

/** One line describing an event, without timestamp; null for live-only activity. Commands are spelled for `layout`. */
export function describeEvent(event: RunEvent, layout: Layout): string | null {
  switch (event.type) {
    case 'run-started':
      return `run ${event.runId} ${event.resumed ? 'resumed' : 'started'}: ${clean(event.goal, 200)} (${plural(event.taskCount, 'task')}, concurrency ${event.concurrency}, ${event.schedule} schedule, pid ${event.pid})`;
    case 'notice':
      // foreman's own words, which may end in what to do (a command): whole.
      return `${event.level}: ${whole(event.message)}`;
    case 'assumption-checked':
      return `task ${event.task} assumption ${event.passed ? 'holds' : 'failed'} (${event.severity}): ${clean(event.claim, 200)}${!event.passed && event.output.trim() ? ` — ${clean(event.output, 200)}` : ''}`;
    case 'task-started':
      return `task ${event.task} started (attempt ${event.attempt}, ${event.model}${event.stack !== undefined ? `, on candidates ${listIndices(event.stack)}` : ''}${whereText(event)}): ${clean(event.subject, 200)}`;
    case 'speculation-cancelled':
      return `task ${event.task}: speculation cancelled while ${event.stage}: ${clean(event.reason)}`;
    case 'task-activity':
      return null;
    case 'limit': {
      if (event.task === null || (event.change !== 'hold' && event.change !== 'lowered')) return clean(event.message);
      // A request the API never answered was not refused.
      return `${clean(event.message)} (${event.limit === 'api-unreachable' ? `task ${event.task}'s request got no answer` : `task ${event.task} refused; ${plural(event.refusals, 'refusal')} so far`})`;
    }
    case 'task-paused':
      return `task ${event.task} paused (attempt ${event.attempt}): ${clean(event.reason)}; it goes on where it stopped once the limit lets it`;
    case 'task-resumed':
      return `task ${event.task} resumed (attempt ${event.attempt}${whereText(event)}): its worker goes on with its conversation: ${clean(event.subject, 200)}`;
    case 'host-down':
    case 'host-up':
      return clean(event.message);
    case 'task-finished': {
      const stats = `attempt ${event.attempt}, ${formatElapsed(event.durationMs)}, ${formatCostFigure(event.usage)}`;
      const head = `task ${event.task} ${finishedVerb[event.outcome]} (${stats})`;
      // What its attempt changed outside its declared files, named with the commands that read it back: never cut.
      const setAside = event.setAside !== undefined ? ` — ${sanitize(setAsideSummary(event.setAside, layout.repo))}` : '';
      switch (event.outcome) {
        case 'completed':
          return `${head}: ${clean(event.subject, 200)}${setAside}`;
        case 'awaiting_approval':
          return `${head}: ${clean(event.subject, 200)}${setAside} — run ${approvalHint(event.task, layout)}`;
        case 'retry':
        case 'failed':
        case 'blocked':
          return `${head}: ${clean(event.reason ?? event.result ?? 'no reason given')} (log: ${event.logPath})`;
        case 'requeued':
        case 'interrupted':
        case 'cancelled':
          return `${head}${event.reason ? `: ${clean(event.reason)}` : ''}`;
      }
      return head;
    }
    case 'task-skipped':
      return `task ${event.task} skipped: ${clean(event.reason.replace(/^skipped:\s*/i, ''))}`;
    case 'task-widened':
      return `task ${event.task} widened (--widen): it now declares ${event.paths.join(', ')}, and runs again${event.recheck ? ', first re-checking the work it set aside' : ''} with no attempt counted`;
    case 'round-committed':
      return event.commit
        ? `round ${event.round} committed (${event.commit.slice(0, 10)}): ${event.tasks.length ? `tasks ${listIndices(event.tasks)}` : 'no tasks'}`
        : `round ${event.round}: nothing to commit${event.tasks.length ? ` (tasks ${listIndices(event.tasks)})` : ''}`;
    case 'gate-started':
      return `gate: testing ${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)} on the integration tip${event.waiting > 0 ? ` (${event.waiting} waiting)` : ''}`;
    case 'gate-finished': {
      const what = event.tasks.length === 0 ? 'the starting commit' : `${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)}`;
      const found = [
        event.integrated.length > 0 ? `integrating ${listIndices(event.integrated)}` : '',
        event.culprit !== null ? `task ${event.culprit} breaks the test command` : '',
        event.flake ? 'an earlier failure did not repeat (flaky)' : '',
      ].filter(Boolean);
      return `gate ${event.passed ? 'passed' : 'failed'} on ${what} in ${formatElapsed(event.durationMs)}${found.length > 0 ? `: ${found.join('; ')}` : ''}${!event.passed && event.output ? ` — ${clean(event.output, 200)}` : ''}`;
    }
    case 'breaker':
      return `circuit breaker: ${event.wouldBeSkipped} of ${plural(event.pendingCount, 'pending task')} would be skipped; stopping`;
    case 'budget-reached':
      return `budget reached: spent ${formatCost(event.costUsd)} of ${formatCost(event.limitUsd)}; no new task starts`;
    case 'stalled':
      return event.kind === 'deadlock'
        ? `stalled: ${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)} pending but none can start`
        : `waiting for approval of ${event.tasks.length === 1 ? 'task' : 'tasks'} ${listIndices(event.tasks)} (${approvalHint(event.tasks.join(' '), layout)})`;
    case 'interrupted':
      return `interrupted by ${event.signal}; stopping workers`;
    case 'draining':
      return event.running.length === 0
        ? 'draining: nothing is running; nothing new starts, and the run stops once queued work is integrated and landed'
        : `draining: ${event.running.length === 1 ? 'task' : 'tasks'} ${listIndices(event.running)} finish${event.running.length === 1 ? 'es' : ''}; nothing new starts, and the run stops once their work is integrated and landed (Ctrl-C stops it now)`;
    case 'run-finished': {
      const counts = Object.entries(event.counts)
        .filter(([, n]) => n > 0)
        .map(([s, n]) => `${n} ${s}`)
        .join(', ');
      // The closing message ends with the way to go on: whole, however long.
      return `run ${event.runId} finished: ${event.outcome} (${event.reason}) in ${formatElapsed(event.durationMs)}, ${formatCostFigure(event.usage)}${counts ? `; ${counts}` : ''}${event.message ? ` — ${whole(event.message)}` : ''}`;
    }
  }
}

/** Whether an event's line names what to do next (a command): the live view wraps it rather than cut it to the terminal's width. */
function namesWhatToDo(event: RunEvent): boolean {
  switch (event.type) {
    case 'run-finished':
    case 'notice':
    case 'stalled':
      return true;
    case 'task-finished':
      return event.outcome === 'awaiting_approval' || (event.outcome === 'completed' && event.setAside !== undefined);
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Plain and JSON views

export function createPlainView(options: { write: (text: string) => void; layout: Layout; now?: () => number }): RunView {
  const now = options.now ?? Date.now;
  let closed = false;
  return {
    update(event) {
      if (closed) return;
      const line = describeEvent(event, options.layout);
      if (line !== null) options.write(`${isoSeconds(now())} ${line}\n`);
    },
    tick() {},
    close() {
      closed = true;
    },
  };
}

export function jsonView(options: { write: (text: string) => void }): RunView {
  let closed = false;
  return {
    update(event) {
      if (!closed) options.write(`${JSON.stringify(event)}\n`);
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

interface Running {
  subject: string;
  attempt: number;
  model: string;
  startedAt: number;
  activity: string;
  costUsd: number;
  /** Speculative: the candidates it was built on. */
  stack?: number[];
  /** With hosts: where it works (`build1:2`, the host and its slot). */
  place?: string;
}

/** A running row's place, with hosts: `build1:2`. */
const placeOf = (event: { host?: string; slot?: number }): Pick<Running, 'place'> =>
  event.host === undefined ? {} : { place: `${sanitize(event.host)}:${event.slot}` };

/** Compact form below this width. */
export const COMPACT_BELOW = 40;

export interface LiveView extends RunView {
  /** The terminal was resized. */
  setColumns(columns: number): void;
}

export function createLiveView(options: LiveViewOptions): LiveView {
  const now = options.now ?? Date.now;
  const interval = options.minIntervalMs ?? 200;
  const color = options.color;
  let columns = options.columns;

  const running = new Map<number, Running>();
  const base = options.baseline ?? {};
  const counts = {
    completed: base.completed ?? 0,
    awaiting: base.awaiting_approval ?? 0,
    failed: base.failed ?? 0,
    blocked: base.blocked ?? 0,
    skipped: base.skipped ?? 0,
  };
  let taskCount = Object.values(base).reduce((sum, n) => sum + (n ?? 0), 0);
  let runStart: number | null = null;
  let runEnd: number | null = null;
  /** The last round committed (what the footer shows: never one the lines above have not said). */
  let lastRound = 0;
  /** The merge queue: the candidates under test and how many wait behind them. */
  let gate: { testing: number[]; waiting: number } = { testing: [], waiting: 0 };
  let finishedCost = emptyTally();
  /** Asked to drain: nothing new starts. */
  let draining = false;
  /** What the run's limiter last said (a rate or usage limit holding it back), or null. */
  let limit: LimitState | null = null;

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

  function apply(event: RunEvent): void {
    switch (event.type) {
      case 'run-started':
        taskCount = event.taskCount;
        runStart = timeOf(event.at);
        runEnd = null;
        break;
      case 'task-started':
        running.set(event.task, {
          subject: event.subject,
          attempt: event.attempt,
          model: event.model,
          startedAt: timeOf(event.at),
          activity: 'starting',
          costUsd: 0,
          ...(event.stack !== undefined ? { stack: event.stack } : {}),
          ...placeOf(event),
        });
        break;
      case 'task-resumed':
        running.set(event.task, {
          subject: event.subject,
          attempt: event.attempt,
          model: running.get(event.task)?.model ?? '',
          startedAt: timeOf(event.at),
          activity: 'resuming',
          costUsd: 0,
          ...placeOf(event),
        });
        break;
      case 'task-paused':
        running.delete(event.task);
        break;
      case 'limit':
        limit = event;
        break;
      case 'task-activity': {
        const r = running.get(event.task);
        if (r) {
          r.activity = event.text;
          r.costUsd = event.costUsd;
        }
        break;
      }
      case 'task-finished':
        running.delete(event.task);
        finishedCost = tallyAdd(finishedCost, event.usage);
        if (event.outcome === 'completed') counts.completed++;
        else if (event.outcome === 'awaiting_approval') counts.awaiting++;
        else if (event.outcome === 'failed') counts.failed++;
        else if (event.outcome === 'blocked') counts.blocked++;
        break;
      case 'task-skipped':
        counts.skipped++;
        break;
      case 'round-committed':
        lastRound = Math.max(lastRound, event.round);
        break;
      case 'gate-started':
        gate = { testing: event.tasks, waiting: event.waiting };
        break;
      case 'gate-finished':
        gate = { testing: [], waiting: gate.waiting };
        break;
      case 'draining':
        draining = true;
        // A run that drains waits for no limit: nothing new starts.
        limit = null;
        break;
      case 'run-finished':
        runEnd = timeOf(event.at);
        running.clear();
        break;
      default:
        break;
    }
  }

  function permanentLines(event: RunEvent): string[] {
    const text = describeEvent(event, options.layout);
    if (text === null || event.type === 'task-started') return [];
    if (event.type === 'assumption-checked' && event.passed) return [];
    let mark = '•';
    let style: Style | undefined;
    if (event.type === 'task-finished') {
      const marks: Record<TaskOutcome, [string, Style | undefined]> = {
        completed: ['✓', 'green'],
        awaiting_approval: ['?', 'yellow'],
        retry: ['↻', 'yellow'],
        failed: ['✗', 'red'],
        blocked: ['✗', 'red'],
        requeued: ['↻', 'dim'],
        interrupted: ['-', 'dim'],
        cancelled: ['-', 'dim'],
      };
      [mark, style] = marks[event.outcome];
    } else if (event.type === 'task-skipped') [mark, style] = ['-', 'yellow'];
    else if (event.type === 'notice') style = event.level === 'warning' ? 'yellow' : 'dim';
    else if (event.type === 'assumption-checked') [mark, style] = ['!', event.severity === 'blocking' ? 'red' : 'yellow'];
    else if (event.type === 'round-committed') [mark, style] = ['●', 'cyan'];
    else if (event.type === 'gate-started') [mark, style] = ['◌', 'dim'];
    else if (event.type === 'gate-finished') [mark, style] = event.passed ? ['◉', 'cyan'] : ['!', 'yellow'];
    else if (event.type === 'run-started' || event.type === 'run-finished') style = 'bold';
    else if (
      event.type === 'breaker' ||
      event.type === 'budget-reached' ||
      event.type === 'stalled' ||
      event.type === 'interrupted' ||
      event.type === 'draining'
    )
      [mark, style] = ['!', 'yellow'];
    else if (event.type === 'limit') {
      // A new hold and the API serving again scroll above; the rest only changes the footer.
      if (event.change !== 'hold' && event.change !== 'serving') return [];
      [mark, style] = event.change === 'hold' ? ['!', 'yellow'] : ['•', 'dim'];
    } else if (event.type === 'task-paused' || event.type === 'task-resumed') [mark, style] = ['↻', 'dim'];
    if (event.type === 'task-finished' && (event.outcome === 'retry' || event.outcome === 'failed' || event.outcome === 'blocked')) {
      // On a terminal the reason gets a line of its own (cut to the width) and so does the log.
      const head = `task ${event.task} ${finishedVerb[event.outcome]} (attempt ${event.attempt}, ${formatElapsed(event.durationMs)}, ${formatCostFigure(event.usage)}): ${clean(event.subject, 200)}`;
      const lines = [
        fitSegments([{ text: `${mark} `, style }, { text: head }], width(), color),
        fitSegments([{ text: `    ${clean(event.reason ?? event.result ?? 'no reason given')}`, style: 'dim' }], width(), color),
      ];
      if (event.outcome !== 'retry') lines.push(fitSegments([{ text: `    log: ${event.logPath}`, style: 'dim' }], width(), color));
      return lines;
    }
    if (namesWhatToDo(event)) {
      // What to do next ends these lines (how to resume, what blocks landing, the commands that
      // decide or read back set-aside work): they wrap, never cut.
      return wrapWords(sanitize(text), width() - 2).map((line, k) =>
        fitSegments(
          [
            { text: k === 0 ? `${mark} ` : '  ', style },
            { text: line, style: style === 'bold' ? 'bold' : undefined },
          ],
          width(),
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
        width(),
        color,
      ),
    ];
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
            ...(r.place !== undefined ? [{ text: `${r.place} `, style: 'cyan' as const }] : []),
            ...(r.stack !== undefined ? [{ text: `on ${listIndices(r.stack)} `, style: 'yellow' as const }] : []),
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
    const waiting = limit !== null && runEnd === null ? waitWords(limit, t) : null;
    if (compact) {
      lines.push(fitSegments([{ text: `${cost} ${elapsed}`, style: 'bold' }, { text: ` r${lastRound}` }], w, color));
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
      ...(gate.testing.length > 0
        ? [{ text: ' · ' }, { text: `gate: ${listIndices(gate.testing)}${gate.waiting > 0 ? ` (+${gate.waiting} queued)` : ''}`, style: 'cyan' as const }]
        : []),
      ...(draining && runEnd === null ? [{ text: ' · ' }, { text: 'draining', style: 'yellow' as const }] : []),
      ...(waiting !== null ? [{ text: ' · ' }, { text: waiting, style: 'yellow' as const }] : []),
    ];
    const moneySegs: Segment[] = [{ text: `${plural(lastRound, 'round')} committed · ` }, { text: `${cost} · ${elapsed}`, style: 'bold' }];
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
    options.write(out);
    drawnLines = lines.length;
    lastBlock = lines;
    lastDrawAt = now();
    dirty = false;
  }

  return {
    update(event) {
      if (closed) return;
      apply(event);
      const lines = permanentLines(event);
      if (lines.length > 0) frame(lines, true);
      else if (now() - lastDrawAt >= interval) frame([], false);
      else dirty = true;
    },
    tick() {
      if (closed) return;
      if (now() - lastDrawAt >= interval) frame([], false);
      else if (running.size > 0) dirty = true;
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
