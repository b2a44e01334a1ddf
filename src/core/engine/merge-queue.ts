// The merge queue's transitions (the queue itself: core/engine/gate.ts): the gate on the starting commit
// before anything starts, the gate on the next segment of candidates whenever the lane is free, and
// its verdict: integrate what passed, blame a culprit and cancel what was built on it.

import { afterGateRun, culpritDecision, flakeNotice, gateFinishedEvent, nextSegment } from './gate.ts';
import { attemptsOf, statusOf, taskAt } from '../plan/index.ts';
import { applyDecision } from '../attempt/index.ts';
import { tasksIn, WAITING_TO_LAND } from './attempt.ts';
import { attemptIn, emit, runOf, spentBy, type StepDraft, stopWith } from './draft.ts';
import { gateOpen } from './queries.ts';
import { retryFromCandidate } from './review.ts';
import { cancelBuiltOn } from './speculation.ts';
import { interrupt, reportCascade } from './stop.ts';
import { finishedEvent } from './task-finished.ts';

/** With a gate, the starting commit is checked when there is anything to test: a pending task, or verified work to integrate. */
export function baselineDue(building: StepDraft): boolean {
  return (
    building.draft.config.gate !== null && (building.draft.plan.tasks.some((t) => statusOf(t) === 'pending') || tasksIn(building, WAITING_TO_LAND).length > 0)
  );
}

/**
 * The gate's verdict on the starting commit. Passed: candidates may be tested and tasks start.
 * Failed: it would blame every task, so the run is refused (outranking a drain); candidates an
 * earlier run held stay on their refs. Stopped before a verdict: only Ctrl-C does that.
 */
function baselineGated(building: StepDraft, passed: boolean | null, output: string, durationMs: number): void {
  const draft = building.draft;
  if (passed === null) {
    draft.baseline = 'due';
    interrupt(building);
    return;
  }
  emit(building, gateFinishedEvent([], { passed, output, durationMs }, null));
  draft.baseline = passed ? 'passed' : 'failed';
  if (passed) return;
  if (draft.stop?.reason === 'drained') draft.stop = null;
  const command = draft.config.gate?.command;
  stopWith(building, {
    reason: 'failures',
    message: `the gate ${command === undefined ? '' : `\`${command}\` `}already fails on the starting commit, before any task ran, so it would blame every task; nothing was started`,
    baselineFailure: { output },
  });
}

/** Start the gate on the next segment of the merge queue, when the lane is free. */
export function startGate(building: StepDraft): void {
  const draft = building.draft;
  const gate = draft.config.gate;
  if (gate === null || laneBusy(building) || draft.stop?.reason === 'interrupted') return;
  if (draft.baseline === 'due') {
    // Before any candidate: the starting commit, on its own (no gate-started: the journal has its verdict).
    draft.baseline = 'testing';
    building.effects.push({ type: 'gate', tasks: [], works: [] });
    return;
  }
  if (!gateOpen(draft)) return;
  // With the rounds policy a round's verified work is one batch.
  const next = nextSegment(draft.gate, draft.config.schedule === 'rounds' ? Number.MAX_SAFE_INTEGER : gate.batchSize);
  if (next === null) return;
  draft.gate = next.queue;
  const works = next.segment.map((task) => {
    const attempt = attemptIn(building, task, 'queued');
    building.attempts.set(task, { ...attempt, stage: 'gating' });
    return { task, work: attempt.work };
  });
  emit(building, { type: 'gate-started', tasks: [...next.segment], waiting: next.queue.waiting.length });
  building.effects.push({ type: 'gate', tasks: [...next.segment], works });
}

/** The lane is busy: a record or a gate run (the baseline's too) is in it. */
export const laneBusy = (building: StepDraft): boolean =>
  building.draft.baseline === 'testing' || tasksIn(building, new Set(['recording', 'gating'])).length > 0;

export function gated(building: StepDraft, tasks: readonly number[], passed: boolean | null, output: string, durationMs: number): void {
  if (tasks.length === 0) {
    baselineGated(building, passed, output, durationMs);
    return;
  }
  const draft = building.draft;
  // Back in the queue first: work built on a culprit and tested with it is cancelled as queued.
  for (const task of tasks) building.attempts.set(task, { ...attemptIn(building, task, 'gating'), stage: 'queued' });
  // Stopped before a verdict: only Ctrl-C does that. The candidates stay held on their refs for the next run.
  if (passed === null) {
    interrupt(building);
    return;
  }
  const after = afterGateRun(draft.gate, passed);
  draft.gate = after.queue;
  const { integrate, culprit, flake } = after.verdict;
  emit(building, gateFinishedEvent(tasks, { passed, output, durationMs }, after.verdict));
  if (flake) emit(building, flakeNotice(taskAt(tasks, 0)));
  const cancelled = culprit !== null ? blame(building, culprit, output) : [];
  if (integrate.length === 0 && culprit === null) return;
  if (integrate.length > 0) draft.round++;
  const items = integrate.map((task) => {
    const attempt = attemptIn(building, task, 'queued');
    building.attempts.set(task, { ...attempt, stage: 'recording', purpose: 'integrate' });
    return { task, work: attempt.work };
  });
  draft.recordingSince = draft.now;
  building.effects.push({
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
function blame(building: StepDraft, task: number, output: string): number[] {
  const draft = building.draft;
  const attempt = attemptIn(building, task, 'queued');
  const decision = culpritDecision(output, attemptsOf(taskAt(draft.plan.tasks, task)), draft.config.maxAttempts);
  building.attempts.delete(task);
  const cancelled = cancelBuiltOn(building, [task], `task ${task}, a candidate it was built on, broke the test command`);
  const applied = applyDecision(draft.plan, task, decision, spentBy(runOf(attempt)));
  // Its retry starts from its own work, which the gate's output is about (headless).
  if (decision.kind === 'retry') retryFromCandidate(building, task, attempt.work);
  building.effects.push({ type: 'save' });
  emit(building, { ...finishedEvent(building, attempt, runOf(attempt)), outcome: decision.kind, reason: decision.failure });
  reportCascade(building, applied);
  return cancelled;
}

/**
 * Candidates in the merge queue keep the run going, unless Ctrl-C stopped it or the gate failed on
 * the starting commit: then they stay held on their refs for the next run.
 */
export const candidatesWait = (building: StepDraft): boolean =>
  tasksIn(building, new Set(['queued'])).length > 0 && building.draft.stop?.reason !== 'interrupted' && building.draft.baseline !== 'failed';
