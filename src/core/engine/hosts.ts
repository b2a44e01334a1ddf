// Hosts (`--host`, headless): each starting attempt is placed on a host and slot
// (core/hosts/placement.ts); a host fault marks its host down and its attempts lost — each goes
// back to pending with no attempt spent, as a killed run's in-progress task does — and the run
// goes on on the hosts that remain. With every host down it waits for one to be tried again, and
// past `--limit-wait` it drains and stops (`hosts-down`, exit 75), as with the API out of reach.
// Without hosts nothing here acts: the state has no `hosts`.

import { plural } from '../format.ts';
import { allDownSince, DEFAULT_HOST_BACKOFF_MS, freePlaces, hostFault, hostTried, hostWorks, nextRetry, place, type Place } from '../hosts/index.ts';
import { applyDecision } from '../attempt/index.ts';
import { type Attempt, IN_FLIGHT, tasksIn } from './attempt.ts';
import { emit, runOf, spentBy, type StepDraft, stopWith } from './draft.ts';
import type { EngineState } from './state.ts';
import { checkBudget, reportCascade } from './stop.ts';
import { finishedEvent } from './task-finished.ts';

/** The stages in which an attempt holds its place: it has a worktree on its host. */
const HOLDS_PLACE: ReadonlySet<Attempt['stage']> = new Set(['running', 'verifying', 'paused']);

/** The places attempts hold now. */
export const takenPlaces = (state: Pick<EngineState, 'attempts'>): Place[] =>
  [...state.attempts.values()].flatMap((attempt) => (attempt.place !== undefined && HOLDS_PLACE.has(attempt.stage) ? [attempt.place] : []));

/** How many more attempts may start on the hosts now (unbounded without hosts). */
export const hostRoom = (state: Pick<EngineState, 'attempts' | 'hosts' | 'now'>): number =>
  state.hosts === undefined ? Number.POSITIVE_INFINITY : freePlaces(state.hosts, takenPlaces(state), state.now);

/**
 * Where a starting attempt works: with hosts, a free slot on a host `open` lets it go to (the
 * schedule started no more than there are); without, nowhere in particular.
 */
export function placeFor(building: StepDraft, task: number, open: (host: string) => boolean = () => true): Place | undefined {
  const hosts = building.draft.hosts;
  if (hosts === undefined) return undefined;
  const chosen = place(
    hosts.filter((host) => open(host.name)),
    takenPlaces(building),
    building.draft.now,
  );
  if (chosen === null) throw new Error(`engine: task ${task} was started with no free slot on any host`);
  building.draft.hosts = hostTried(hosts, chosen.host);
  return chosen;
}

/**
 * A host fault: the host is down until its back-off ends. Each attempt on it is lost: a worker or
 * its checks are stopped and the attempt ends when they have (their event says so); a paused one,
 * whose worktree was there, ends now. No attempt is spent; what its workers cost counts.
 */
export function hostFaulted(building: StepDraft, name: string, reason: string): void {
  const draft = building.draft;
  const before = draft.hosts?.find((host) => host.name === name);
  if (draft.hosts === undefined || before === undefined) throw new Error(`engine: a fault on ${name}, which is not a host of the run`);
  draft.hosts = hostFault(draft.hosts, name, reason, draft.now, draft.config.hostBackoffMs ?? DEFAULT_HOST_BACKOFF_MS);
  const after = draft.hosts.find((host) => host.name === name)!;
  // What the host held and was not lost already (another slot's channel may tell the same fault).
  const held = (attempt: Attempt) =>
    attempt.stage === 'paused' || ((attempt.stage === 'running' || attempt.stage === 'verifying') && attempt.lost === undefined);
  const lost = [...building.attempts.values()].filter((attempt) => attempt.place?.host === name && held(attempt));
  const why = `its host ${name} went down (${reason})`;
  for (const attempt of lost) {
    switch (attempt.stage) {
      case 'running':
      case 'verifying':
        building.attempts.set(attempt.task, { ...attempt, lost: why });
        building.effects.push({ type: 'cancel-worker', task: attempt.task });
        break;
      case 'paused':
        endLost(building, attempt, why);
        break;
    }
  }
  // The same fault told again (another slot's channel) is news only when it lost something.
  if (after === before && lost.length === 0) return;
  const until = after.down!.until;
  emit(building, {
    type: 'host-down',
    host: name,
    reason,
    until: new Date(until).toISOString(),
    faults: after.faults,
    lost: lost.map((attempt) => attempt.task).sort((a, b) => a - b),
    message: `host ${name} is down (${reason}): ${lost.length === 0 ? 'nothing of the run was on it' : `${plural(lost.length, 'task')} ${lost.map((a) => a.task).join(', ')} back to pending, no attempt spent`}; tried again after ${new Date(until).toISOString()}`,
  });
}

/** A lost attempt ends: its task is pending again, no attempt spent (what it cost counts); its worktree went with its host. */
export function endLost(building: StepDraft, attempt: Attempt, why: string): void {
  const task = attempt.task;
  const run = runOf(attempt);
  building.attempts.delete(task);
  building.effects.push({ type: 'release-workspace', task });
  const applied = applyDecision(building.draft.plan, task, { kind: 'interrupted', reason: `lost: ${why}; no attempt spent` }, spentBy(run));
  building.effects.push({ type: 'save' });
  emit(building, { ...finishedEvent(building, attempt, run), outcome: 'interrupted', reason: `lost: ${why}` });
  reportCascade(building, applied);
  checkBudget(building);
}

/** An attempt's worker finished on its host: the host works (a host marked down is up again). */
export function hostServed(building: StepDraft, attempt: Attempt): void {
  const draft = building.draft;
  const name = attempt.place?.host;
  if (draft.hosts === undefined || name === undefined) return;
  const before = draft.hosts.find((host) => host.name === name);
  draft.hosts = hostWorks(draft.hosts, name);
  if (before?.down !== null && before?.down !== undefined)
    emit(building, { type: 'host-up', host: name, message: `host ${name} works again (task ${attempt.task}'s worker finished there)` });
}

/**
 * Tasks wait for a host only: ask for a tick when the next host down is tried again. With every
 * host down for longer than `--limit-wait`, the run drains and stops (`hosts-down`), resumable.
 * Whether it asked for a tick.
 */
export function wakeForHosts(building: StepDraft, waiting: boolean): boolean {
  const draft = building.draft;
  if (draft.hosts === undefined || draft.stop !== null || !waiting) return false;
  const since = allDownSince(draft.hosts, draft.now);
  const limit = draft.config.limitWaitMs;
  if (since !== null && draft.now - since >= limit) {
    const names = draft.hosts.map((host) => `${host.name} (${host.down!.reason})`).join(', ');
    stopWith(building, {
      reason: 'hosts-down',
      message: `every host was down for longer than --limit-wait (${Math.round(limit / 1000)} s): ${names}; run the same command again once one is back`,
    });
    emit(building, { type: 'draining', running: tasksIn(building, IN_FLIGHT) });
    return false;
  }
  const retry = nextRetry(draft.hosts, draft.now);
  const at = since === null ? retry : Math.min(retry ?? Number.POSITIVE_INFINITY, since + limit);
  if (at === null) return false;
  building.effects.push({ type: 'wake', at });
  return true;
}
