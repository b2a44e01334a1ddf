// After each event: start (or resume) what may start, hand verified work to the lane, run the gate,
// wake when a limit's hold ends, or finish. Headless as soon as it may; in a session only when the
// lead asks (`hand-out` starts work, `integrate` records it).

import { attemptsOf, modelOf, readySet, statusOf, taskAt } from '../plan/index.ts';
import { markStarted, recheckable } from '../attempt/index.ts';
import { accountOfAttempt, accountOfHost, anyHold, givenUp, roomOn } from './accounts.ts';
import { IN_FLIGHT, PAUSED, tasksIn } from './attempt.ts';
import { endPaused } from './conclude.ts';
import { emit, type StepDraft } from './draft.ts';
import { resumePaused, wakeForHold } from './limits.ts';
import { candidatesWait, laneBusy, startGate } from './merge-queue.ts';
import { placeFor, wakeForHosts } from './hosts.ts';
import { startable, unheld, unplaced, waitingToLand } from './queries.ts';
import { record } from './record.ts';
import { takeStart } from './review.ts';
import { speculativeStack } from './speculation.ts';
import { finish } from './stop.ts';

/** Where a headless worker's log is: `<logDir>/worker-<task>.log`, every attempt of the task in turn. */
export const workerLogPath = (logDir: string, task: number): string => `${logDir}/worker-${task}.log`;

/** Start (or resume) what may, hand verified work to the lane, wake when a limit's hold ends, or finish. */
export function schedule(building: StepDraft): void {
  if (building.draft.config.driver === 'session') {
    scheduleSession(building);
    return;
  }
  const draft = building.draft;
  const policy = draft.config.schedule;
  for (;;) {
    // Continuous: record what is verified whenever the lane is free; what is verified meanwhile goes into the next record.
    if (policy === 'continuous' && !laneBusy(building)) record(building);
    startGate(building);
    const recording = laneBusy(building);
    if (draft.stop === null) {
      if (policy === 'rounds' && draft.admitted === null && !recording) {
        const ready = readySet(draft.plan.tasks);
        if (ready.length > 0) draft.admitted = new Set(ready);
      }
      // Paused on hosts whose account would wait past --limit-wait while another's would not: their tasks go elsewhere.
      endPaused(building, (paused) => givenUp(draft, accountOfAttempt(draft, paused)), 'its hosts’ account is held longer than --limit-wait lets the run wait');
      resumePaused(building);
      for (const task of startable(draft)) start(building, task);
    } else endPaused(building);
    const queued = candidatesWait(building);
    const busy = tasksIn(building, IN_FLIGHT).length > 0 || recording || queued;
    if (!busy && draft.admitted !== null) {
      // The round is over when none of its tasks runs or can still start (a limit holds some of them back).
      const waiting =
        tasksIn(building, PAUSED).length > 0 || (anyHold(draft) && [...draft.admitted].some((i) => statusOf(taskAt(draft.plan.tasks, i)) === 'pending'));
      if (!waiting || draft.stop !== null) {
        draft.admitted = null;
        record(building);
        continue;
      }
    }
    const forHosts = draft.stop === null && draft.hosts !== undefined && startable(unplaced(draft)).length > 0;
    if (busy) {
      wakeForHold(building);
      wakeForHosts(building, forHosts);
      return;
    }
    if (draft.stop !== null) {
      // Verified work is recorded even when the run stops.
      if (tasksIn(building, new Set(['verified'])).length > 0) {
        record(building);
        return;
      }
      finish(building);
      return;
    }
    // Nothing runs and what could start has started: wait for a limit's hold to end, or for a host, or the run is over.
    if (wakeForHold(building) || wakeForHosts(building, forHosts)) return;
    // Every host down past --limit-wait: the run stops draining, and nothing runs.
    if (draft.stop !== null) continue;
    finish(building);
    return;
  }
}

/**
 * The session's schedule: the lead's `commit` (`integrate`) hands verified work to the lane, its
 * `next` (`hand-out`) starts what may start; the gate runs whenever the lane is free, as
 * headless. The run is over once nothing is under way, nothing verified waits for `commit`, and
 * nothing could start even if asked (nor waits for its blockers' work to land).
 */
function scheduleSession(building: StepDraft): void {
  const draft = building.draft;
  if (building.event.type === 'integrate' && !laneBusy(building)) record(building);
  startGate(building);
  if (draft.stop === null && building.event.type === 'hand-out') {
    for (const task of startable(draft, building.event.concurrency)) start(building, task);
  }
  const queued = candidatesWait(building);
  const underWay = tasksIn(building, IN_FLIGHT).length > 0 || laneBusy(building) || queued || tasksIn(building, new Set(['verified'])).length > 0;
  if (underWay) return;
  // A usage limit holds the hand-outs until it resets: the run waits for the lead to come back.
  if (draft.stop === null && (startable(unheld(draft)).length > 0 || waitingToLand(draft).length > 0)) return;
  finish(building);
}

function start(building: StepDraft, task: number): void {
  const draft = building.draft;
  const number = attemptsOf(taskAt(draft.plan.tasks, task)) + 1;
  // Ready, or startable only on its blockers' candidates.
  const blockersDone = taskAt(draft.plan.tasks, task).blockedBy.every((b) => statusOf(taskAt(draft.plan.tasks, b)) === 'completed');
  const speculation = blockersDone ? null : speculativeStack(draft, task);
  // Widened to declare what its last attempt set aside: that work is re-checked before a worker is paid.
  const planned = taskAt(draft.plan.tasks, task);
  const recheck = speculation === null && planned.recheck === true && recheckable(planned) ? planned.setAside!.commit! : null;
  // A review round's attempt starts from its parked work; a blamed candidate's retry from its own
  // (taken now whatever this start is: a later retry starts afresh).
  const taken = takeStart(building, task);
  const earlier = speculation === null && recheck === null ? taken : null;
  // With more than one account, only on the hosts of an account whose limiter lets one more start.
  const place = placeFor(building, task, (host) => draft.limiters === undefined || roomOn(draft, accountOfHost(draft, host)) > 0);
  markStarted(draft.plan, task);
  building.attempts.set(task, {
    task,
    number,
    stage: 'running',
    ...(speculation !== null ? { stack: speculation.stack } : {}),
    ...(recheck !== null ? { recheck: true } : {}),
    ...(place !== undefined ? { place } : {}),
  });
  // A Task subagent of a session keeps no log foreman can point to.
  const logPath = draft.config.driver === 'session' ? '' : workerLogPath(draft.config.logDir, task);
  const started = taskAt(draft.plan.tasks, task);
  // Saved first: a crash after the worker started leaves the task in progress, and resume restores its files.
  building.effects.push({ type: 'save' });
  emit(building, {
    type: 'task-started',
    task,
    subject: started.subject,
    attempt: number,
    model: modelOf(started),
    logPath,
    ...(speculation !== null ? { stack: speculation.stack } : {}),
    ...(earlier !== null ? earlier.event : {}),
    ...(place !== undefined ? { host: place.host, slot: place.slot } : {}),
  });
  building.effects.push({
    type: 'start-worker',
    task,
    attempt: number,
    logPath,
    ...(speculation !== null ? { stack: speculation.works } : {}),
    ...(recheck !== null ? { recheck } : {}),
    ...(earlier !== null ? { from: earlier.from } : {}),
    ...(place !== undefined ? { place } : {}),
  });
}
