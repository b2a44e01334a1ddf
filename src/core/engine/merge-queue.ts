// The merge queue's transitions (the queue itself: core/gate.ts): the gate on the starting commit
// before anything starts, the gate on the next segment of candidates whenever the lane is free, and
// its verdict: integrate what passed, blame a culprit and cancel what was built on it.

import { afterGateRun, culpritDecision, flakeNotice, gateFinishedEvent, nextSegment } from '../gate.ts';
import { attemptsOf, statusOf } from '../plan.ts';
import { applyDecision } from '../transition.ts';
import { WAITING_TO_LAND, tasksIn } from './attempt.ts';
import { type Work, attemptIn, emit, runOf, spentBy, stopWith } from './draft.ts';
import { gateOpen } from './queries.ts';
import { cancelBuiltOn } from './speculation.ts';
import { interrupt, reportCascade } from './stop.ts';
import { finishedEvent } from './task-finished.ts';

/** With a gate, the starting commit is checked when there is anything to test: a pending task, or verified work to integrate. */
export function baselineDue(work: Work): boolean {
  return work.draft.config.gate !== null && (work.draft.plan.tasks.some((t) => statusOf(t) === 'pending') || tasksIn(work, WAITING_TO_LAND).length > 0);
}

/**
 * The gate's verdict on the starting commit. Passed: candidates may be tested and tasks start.
 * Failed: it would blame every task, so the run is refused (outranking a drain); candidates an
 * earlier run held stay on their refs. Stopped before a verdict: only Ctrl-C does that.
 */
function baselineGated(work: Work, passed: boolean | null, output: string, durationMs: number): void {
  const draft = work.draft;
  if (passed === null) {
    draft.baseline = 'due';
    interrupt(work);
    return;
  }
  emit(work, gateFinishedEvent([], { passed, output, durationMs }, null));
  draft.baseline = passed ? 'passed' : 'failed';
  if (passed) return;
  if (draft.stop?.reason === 'drained') draft.stop = null;
  const command = draft.config.gate?.command;
  stopWith(work, {
    reason: 'failures',
    message: `the gate ${command === undefined ? '' : `\`${command}\` `}already fails on the starting commit, before any task ran, so it would blame every task; nothing was started`,
    baselineFailure: { output },
  });
}

/** Start the gate on the next segment of the merge queue, when the lane is free. */
export function startGate(work: Work): void {
  const draft = work.draft;
  const gate = draft.config.gate;
  if (gate === null || laneBusy(work) || draft.stop?.reason === 'interrupted') return;
  if (draft.baseline === 'due') {
    // Before any candidate: the starting commit, on its own (no gate-started: the journal has its verdict).
    draft.baseline = 'testing';
    work.effects.push({ type: 'gate', tasks: [], works: [] });
    return;
  }
  if (!gateOpen(draft)) return;
  // With the rounds policy a round's verified work is one batch.
  const next = nextSegment(draft.gate, draft.config.schedule === 'rounds' ? Number.MAX_SAFE_INTEGER : gate.batchSize);
  if (next === null) return;
  draft.gate = next.queue;
  const works = next.segment.map((task) => {
    const attempt = attemptIn(work, task, 'queued');
    work.attempts.set(task, { ...attempt, stage: 'gating' });
    return { task, work: attempt.work };
  });
  emit(work, { type: 'gate-started', tasks: [...next.segment], waiting: next.queue.waiting.length });
  work.effects.push({ type: 'gate', tasks: [...next.segment], works });
}

/** The lane is busy: a record or a gate run (the baseline's too) is in it. */
export const laneBusy = (work: Work): boolean => work.draft.baseline === 'testing' || tasksIn(work, new Set(['recording', 'gating'])).length > 0;

export function gated(work: Work, tasks: readonly number[], passed: boolean | null, output: string, durationMs: number): void {
  if (tasks.length === 0) {
    baselineGated(work, passed, output, durationMs);
    return;
  }
  const draft = work.draft;
  // Back in the queue first: work built on a culprit and tested with it is cancelled as queued.
  for (const task of tasks) work.attempts.set(task, { ...attemptIn(work, task, 'gating'), stage: 'queued' });
  // Stopped before a verdict: only Ctrl-C does that. The candidates stay held on their refs for the next run.
  if (passed === null) {
    interrupt(work);
    return;
  }
  const after = afterGateRun(draft.gate, passed);
  draft.gate = after.queue;
  const { integrate, culprit, flake } = after.verdict;
  emit(work, gateFinishedEvent(tasks, { passed, output, durationMs }, after.verdict));
  if (flake) emit(work, flakeNotice(tasks[0]!));
  const cancelled = culprit !== null ? blame(work, culprit, output) : [];
  if (integrate.length === 0 && culprit === null) return;
  if (integrate.length > 0) draft.round++;
  const items = integrate.map((task) => {
    const attempt = attemptIn(work, task, 'queued');
    work.attempts.set(task, { ...attempt, stage: 'recording', purpose: 'integrate' });
    return { task, work: attempt.work };
  });
  draft.recordingSince = draft.now;
  work.effects.push({
    type: 'record',
    tasks: [...integrate],
    round: draft.round,
    integrate: items,
    park: [],
    hold: [],
    drop: [...integrate, ...(culprit !== null ? [culprit] : []), ...cancelled],
  });
}

/**
 * `task`'s work broke the test command on its own, twice: its attempt fails like a failed
 * acceptance check, and every attempt built on it is cancelled. Returns the cancelled candidates,
 * whose refs go with the culprit's.
 */
function blame(work: Work, task: number, output: string): number[] {
  const draft = work.draft;
  const attempt = attemptIn(work, task, 'queued');
  const decision = culpritDecision(output, attemptsOf(draft.plan.tasks[task]!), draft.config.maxAttempts);
  work.attempts.delete(task);
  const cancelled = cancelBuiltOn(work, [task], `task ${task}, a candidate it was built on, broke the test command`);
  const applied = applyDecision(draft.plan, task, decision, spentBy(runOf(attempt)));
  work.effects.push({ type: 'save' });
  emit(work, { ...finishedEvent(work, attempt, runOf(attempt)), outcome: decision.kind, reason: decision.failure });
  reportCascade(work, applied);
  return cancelled;
}

/**
 * Candidates in the merge queue keep the run going, unless Ctrl-C stopped it or the gate failed on
 * the starting commit: then they stay held on their refs for the next run.
 */
export const candidatesWait = (work: Work): boolean =>
  tasksIn(work, new Set(['queued'])).length > 0 && work.draft.stop?.reason !== 'interrupted' && work.draft.baseline !== 'failed';
