// What the schedule asks of a state, answered without changing it: which tasks claim their files,
// which may start now (within the limiter, once the gate passed the starting commit), whether a
// free slot may wait for a record, and, in a session, which tasks wait for work to land.

import { byPriority, pickStarts, readySet, statusOf, taskAt } from '../plan/index.ts';
import { allowed, holding } from '../limits/index.ts';
import { accountsOf, roomOn } from './accounts.ts';
import { IN_FLIGHT, PAUSED, tasksIn, WAITING_TO_LAND } from './attempt.ts';
import { hostRoom } from './hosts.ts';
import { speculativeReady } from './speculation.ts';
import type { EngineState, Timing } from './state.ts';

/**
 * Tasks that claim their files without a worker: verified attempts waiting to be recorded or being
 * recorded, and work awaiting approval. A task overlapping them must wait: its edits would mix
 * into that work.
 */
export function claimingFiles(state: Pick<EngineState, 'attempts' | 'plan'>): Set<number> {
  const claiming = new Set([...tasksIn(state, WAITING_TO_LAND), ...tasksIn(state, PAUSED)]);
  state.plan.tasks.forEach((t, i) => {
    if (statusOf(t) === 'awaiting_approval') claiming.add(i);
  });
  return claiming;
}

/**
 * Pending tasks that become ready the moment the verified work waiting to be recorded is: every
 * blocker is completed or waiting to be recorded, and one at least is waiting.
 */
export function readyOnRecord(state: Pick<EngineState, 'attempts' | 'plan'>): number[] {
  const waiting = new Set(tasksIn(state, WAITING_TO_LAND));
  if (waiting.size === 0) return [];
  const tasks = state.plan.tasks;
  const done = (blocker: number) => statusOf(taskAt(tasks, blocker)) === 'completed' || waiting.has(blocker);
  return tasks.flatMap((t, i) => (statusOf(t) === 'pending' && t.blockedBy.some((b) => waiting.has(b)) && t.blockedBy.every(done) ? [i] : []));
}

/**
 * Whether a free slot may wait for a record: only while recording is quick next to the work (a
 * record takes at most a tenth of a worker's run, on average). Real workers run for minutes and a
 * commit takes a fraction of a second; when work is as quick as a commit, an idle slot costs more
 * than the order it buys. Until something is measured, records count as quick.
 */
export function waitingPays(timing: Timing): boolean {
  if (timing.records === 0 || timing.workers === 0) return true;
  return (timing.recordMs / timing.records) * 10 <= timing.workerMs / timing.workers;
}

/**
 * The tasks the policy lets start now, within what the limiter allows (none while it holds).
 * With the continuous policy a free slot is not given to a ready task that a task about to become
 * ready (its blockers' work is being recorded) outranks: that slot waits for the record, so the
 * longer path is not held up by whatever happened to be ready first.
 */
export function startable(state: EngineState, asked: number = state.config.concurrency): number[] {
  // Nothing starts before the gate has passed the starting commit: it would blame every task.
  if (!gateOpen(state)) return [];
  const running = new Set(tasksIn(state, IN_FLIGHT));
  let concurrency: number;
  if (state.limiters === undefined) {
    if (holding(state.limiter, state.now)) return [];
    // With hosts, no more than their free slots take new attempts.
    concurrency = Math.min(allowed(state.limiter, asked), running.size + hostRoom(state));
  } else {
    // More than one account: each takes what its limiter lets start on its hosts' free slots.
    const room = accountsOf(state).reduce((sum, account) => sum + roomOn(state, account), 0);
    concurrency = Math.min(asked, running.size + room);
  }
  const session = state.config.driver === 'session';
  const speculative = speculativeReady(state);
  const ready = pickStarts({
    tasks: state.plan.tasks,
    ...(speculative.length > 0 ? { alsoReady: speculative } : {}),
    running,
    overlaps: state.overlaps,
    concurrency,
    priority: state.priority,
    admitted: session ? new Set(landedReady(state)) : (state.admitted ?? undefined),
    claimingFiles: claimingFiles(state),
  });
  // In a session a slot is not kept for work about to be recorded: the lead asks when it asks.
  if (session || state.config.schedule !== 'continuous' || !waitingPays(state.timing)) return ready;
  // A task that may start now on its blockers' candidates needs no slot kept for it.
  const soon = byPriority(
    readyOnRecord(state).filter((task) => !speculative.includes(task)),
    state.priority,
  );
  if (soon.length === 0) return ready;
  // Fill the free slots by priority from both lists; the ready tasks win ties.
  const capacity = concurrency - running.size;
  let fromReady = 0;
  let fromSoon = 0;
  while (fromReady + fromSoon < capacity && (fromReady < ready.length || fromSoon < soon.length)) {
    const nextReady = ready[fromReady];
    const nextSoon = soon[fromSoon];
    if (nextSoon !== undefined && (nextReady === undefined || state.priority[nextSoon]! > state.priority[nextReady]!)) fromSoon++;
    else fromReady++;
  }
  return ready.slice(0, fromReady);
}

/** In a session: the ready tasks whose blockers' work is on the person's branch (a subagent starts from it). */
export function landedReady(state: Pick<EngineState, 'plan' | 'unlanded'>): number[] {
  return readySet(state.plan.tasks).filter((i) => !taskAt(state.plan.tasks, i).blockedBy.some((b) => state.unlanded.has(b)));
}

/** In a session: ready tasks that wait only because a blocker's integrated work has not landed on the branch. */
export function waitingToLand(state: Pick<EngineState, 'plan' | 'unlanded'>): number[] {
  return readySet(state.plan.tasks).filter((i) => taskAt(state.plan.tasks, i).blockedBy.some((b) => state.unlanded.has(b)));
}

/** The gate may test candidates, and tasks may start: its check of the starting commit passed, or none was needed. */
export const gateOpen = (state: Pick<EngineState, 'baseline'>): boolean => state.baseline === 'none' || state.baseline === 'passed';

/** The state as if its hosts had every slot it wants: what would start but for them. */
export const unplaced = (state: EngineState): EngineState => {
  const { hosts: _hosts, ...rest } = state;
  return rest;
};

/** The state as if no limit held it: what would start but for the hold (every account's). */
export const unheld = (state: EngineState): EngineState => ({
  ...state,
  limiter: { ...state.limiter, holdUntil: 0 },
  ...(state.limiters !== undefined ? { limiters: new Map([...state.limiters].map(([account, limiter]) => [account, { ...limiter, holdUntil: 0 }])) } : {}),
});
