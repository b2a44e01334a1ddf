// The live view's state, apart from its drawing (live-view.ts): what the run's events so far say
// of it (the tasks running and what each does, the tasks counted by how they ended, the last round
// committed, the merge queue, a drain, a limit holding the run back), and the footer's figures it
// comes to at a moment.

import {
  accountsWaitWords,
  emptyTally,
  formatCostTally,
  formatElapsed,
  lastLimits,
  type LimitState,
  type RunEvent,
  tallyAdd,
  type TaskStatus,
  type UsageTally,
} from '../core/index.ts';
import { sanitize } from './event-text.ts';

/** A task whose worker runs, as its row shows it. */
export interface Running {
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

export interface LiveState {
  readonly running: Map<number, Running>;
  /** Tasks by how they ended (a resumed plan's finished ones from the start). */
  readonly counts: { completed: number; awaiting: number; failed: number; blocked: number; skipped: number };
  taskCount: number;
  runStart: number | null;
  runEnd: number | null;
  /** The last round committed (what the footer shows: never one the lines above have not said). */
  lastRound: number;
  /** The merge queue: the candidates under test and how many wait behind them. */
  gate: { testing: number[]; waiting: number };
  finishedCost: UsageTally;
  /** Asked to drain: nothing new starts. */
  draining: boolean;
  /**
   * What each of the run's limiters last said (a rate or usage limit holding it back), by the hosts
   * of its account (`''`: the run's one limiter, without hosts of more than one account).
   */
  limits: Map<string, LimitState>;
}

/**
 * The state before any event: `baseline`, the plan's tasks by status when the run starts, counts
 * them from the first frame, and keeps a resumed plan's finished ones counted so `pending` is right.
 */
export function newLiveState(baseline: Partial<Record<TaskStatus, number>> = {}): LiveState {
  return {
    running: new Map(),
    counts: {
      completed: baseline.completed ?? 0,
      awaiting: baseline.awaiting_approval ?? 0,
      failed: baseline.failed ?? 0,
      blocked: baseline.blocked ?? 0,
      skipped: baseline.skipped ?? 0,
    },
    taskCount: Object.values(baseline).reduce((sum, n) => sum + (n ?? 0), 0),
    runStart: null,
    runEnd: null,
    lastRound: 0,
    gate: { testing: [], waiting: 0 },
    finishedCost: emptyTally(),
    draining: false,
    limits: new Map(),
  };
}

/** Takes `event` into `state`; `timeOf` reads the time an event names. */
export function applyEvent(state: LiveState, event: RunEvent, timeOf: (at: string) => number): void {
  const { running, counts } = state;
  switch (event.type) {
    case 'run-started':
      state.taskCount = event.taskCount;
      state.runStart = timeOf(event.at);
      state.runEnd = null;
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
      lastLimits(state.limits, event);
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
      state.finishedCost = tallyAdd(state.finishedCost, event.usage);
      if (event.outcome === 'completed') counts.completed++;
      else if (event.outcome === 'awaiting_approval') counts.awaiting++;
      else if (event.outcome === 'failed') counts.failed++;
      else if (event.outcome === 'blocked') counts.blocked++;
      break;
    case 'task-skipped':
      counts.skipped++;
      break;
    case 'round-committed':
      state.lastRound = Math.max(state.lastRound, event.round);
      break;
    case 'gate-started':
      state.gate = { testing: event.tasks, waiting: event.waiting };
      break;
    case 'gate-finished':
      state.gate = { testing: [], waiting: state.gate.waiting };
      break;
    case 'draining':
      state.draining = true;
      // A run that drains waits for no limit: nothing new starts.
      state.limits.clear();
      break;
    case 'run-finished':
      state.runEnd = timeOf(event.at);
      running.clear();
      break;
    default:
      break;
  }
}

/** What the footer says at time `t`. */
export interface FooterFigures {
  /** The run's cost so far, running workers' included. */
  cost: string;
  elapsed: string;
  running: number;
  done: number;
  /** Failed and blocked. */
  failed: number;
  skipped: number;
  awaiting: number;
  pending: number;
  lastRound: number;
  gate: { testing: number[]; waiting: number };
  /** Draining, while the run goes on. */
  draining: boolean;
  /** How long a limit holds the run back, while it goes on; null when none does. */
  waiting: string | null;
}

export function footerFigures(state: LiveState, t: number): FooterFigures {
  const { running, counts, finishedCost } = state;
  const runningCost = [...running.values()].reduce((s, r) => s + r.costUsd, 0);
  // Running workers' costs are measured as they stream; finished attempts may be unknown (never in a headless run).
  const cost = formatCostTally({ ...finishedCost, measured: { ...finishedCost.measured, costUsd: finishedCost.measured.costUsd + runningCost } });
  const failed = counts.failed + counts.blocked;
  const done = counts.completed;
  return {
    cost,
    elapsed: state.runStart === null ? '0s' : formatElapsed(t - state.runStart),
    running: running.size,
    done,
    failed,
    skipped: counts.skipped,
    awaiting: counts.awaiting,
    pending: Math.max(0, state.taskCount - done - counts.awaiting - failed - counts.skipped - running.size),
    lastRound: state.lastRound,
    gate: state.gate,
    draining: state.draining && state.runEnd === null,
    waiting: state.runEnd === null ? accountsWaitWords(state.limits, t) : null,
  };
}
