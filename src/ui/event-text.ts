// The text of one event, one line without a timestamp: the plain log's lines (render.ts) and the
// live view's permanent lines (live-view.ts).

import {
  approvalHint,
  formatCost,
  formatCostFigure,
  formatElapsed,
  type Layout,
  listIndices,
  oneLine,
  plural,
  type RunEvent,
  setAsideSummary,
  type TaskOutcome,
} from '../core/index.ts';

/** Control characters (escape sequences, newlines, tabs) from workers or plans never reach the terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
export const sanitize = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');

export const clean = (text: string, max = 400) => oneLine(sanitize(text), max);

/** One line, never cut: for words that name what to do next. */
const whole = (text: string) => oneLine(sanitize(text), Number.POSITIVE_INFINITY);

export const finishedVerb: Record<TaskOutcome, string> = {
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
    case 'task-started': {
      const from =
        event.review !== undefined
          ? `, review round ${event.review.round}: from its parked work, asked ${clean(JSON.stringify(event.review.feedback), 200)}`
          : event.fromCandidate === true
            ? ', from its own candidate work the gate blamed'
            : '';
      return `task ${event.task} started (attempt ${event.attempt}, ${event.model}${event.stack !== undefined ? `, on candidates ${listIndices(event.stack)}` : ''}${whereText(event)}${from}): ${clean(event.subject, 200)}`;
    }
    case 'review-ended':
      return event.outcome === 'parked'
        ? `task ${event.task}'s review round ${event.round} revised its work (${plural(event.attempts, 'attempt')}): it awaits approval — run ${approvalHint(event.task, layout)}`
        : `task ${event.task}'s review round ${event.round} failed (${plural(event.attempts, 'attempt')}): ${clean(event.failure ?? 'its attempts ran out')}; its earlier work awaits approval again — run ${approvalHint(event.task, layout)}`;
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
export function namesWhatToDo(event: RunEvent): boolean {
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
