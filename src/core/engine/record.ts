// The lane's records: verified work handed over as one round (integrated, parked for approval, or
// held as candidates for the merge queue), and what the plan says once the lane recorded it, or
// could not.

import { assertNever } from '../result.ts';
import { enqueue } from './gate.ts';
import { applyApproved, applyDecision, type CapturedWork } from '../attempt/index.ts';
import { type RecordingAttempt, tasksIn } from './attempt.ts';
import { attemptIn, emit, runOf, spentBy, type StepDraft, stopWith } from './draft.ts';
import type { RecordFailure } from './effects.ts';
import { applyReviewed } from './review.ts';
import { cancelBuiltOn } from './speculation.ts';
import { taskAt } from '../plan/index.ts';

/**
 * Hand every verified attempt to the lane, as one round: integrated at once without a gate; with
 * one, held as candidates for the merge queue. Work awaiting approval is parked either way.
 */
export function record(building: StepDraft): void {
  const verifiedTasks = tasksIn(building, new Set(['verified']));
  if (verifiedTasks.length === 0) return;
  const draft = building.draft;
  const gated = draft.config.gate !== null;
  const integrate: Array<{ task: number; work: CapturedWork }> = [];
  const park: Array<{ task: number; work: CapturedWork }> = [];
  const hold: Array<{ task: number; work: CapturedWork; stack?: number[] }> = [];
  const drop: number[] = [];
  for (const task of verifiedTasks) {
    const attempt = attemptIn(building, task, 'verified');
    // The results go into the commit's trailers, so the plan carries them before the commit.
    draft.plan.tasks[task] = { ...taskAt(draft.plan.tasks, task), result: attempt.decision.result };
    // Work awaiting approval is parked; with a gate, completed work is held as a candidate.
    const recording: RecordingAttempt =
      attempt.decision.kind === 'awaiting_approval'
        ? { ...attempt, stage: 'recording', purpose: 'park', decision: attempt.decision }
        : { ...attempt, stage: 'recording', purpose: gated ? 'hold' : 'integrate', decision: attempt.decision };
    building.attempts.set(task, recording);
    switch (recording.purpose) {
      case 'hold':
        hold.push({ task, work: attempt.work, ...(attempt.stack !== undefined ? { stack: [...attempt.stack] } : {}) });
        break;
      case 'park':
        park.push({ task, work: attempt.work });
        break;
      case 'integrate':
        integrate.push({ task, work: attempt.work });
        // A candidate an earlier run held, integrated now without a gate, leaves its ref too.
        if (attempt.verifiedBy.kind === 'earlier-run' && attempt.verifiedBy.held) drop.push(task);
        break;
      default:
        assertNever(recording, 'recording');
    }
  }
  draft.recordingSince = draft.now;
  // Rounds count integrations: holding candidates for the gate, or parking work awaiting approval, is none.
  if (integrate.length > 0) draft.round++;
  // Saved first: a candidate held on its ref resumes with the result its attempt reported.
  if (hold.length > 0) building.effects.push({ type: 'save' });
  building.effects.push({ type: 'record', tasks: verifiedTasks, round: draft.round, integrate, park, hold, drop });
}

export function recorded(building: StepDraft, tasks: readonly number[], commit: string | null, failure: RecordFailure | null): void {
  const draft = building.draft;
  if (draft.recordingSince !== null) {
    draft.timing = { ...draft.timing, records: draft.timing.records + 1, recordMs: draft.timing.recordMs + (draft.now - draft.recordingSince) };
    draft.recordingSince = null;
  }
  if (failure !== null) {
    const dropped = tasks.map((task) => building.attempts.get(task));
    for (const task of tasks) building.attempts.delete(task);
    const why = `could not integrate the verified work of tasks ${tasks.join(', ')}: ${failure.message}`;
    // Work built on these candidates cannot stand either (a candidate ref of one queued goes at the next setup).
    cancelBuiltOn(building, tasks, `tasks ${tasks.join(', ')}, candidates it was built on, could not integrate`);
    if (failure.kind === 'conflict') {
      // The tip changed the same paths since these attempts started: their work can never
      // integrate. They run again from the tip as it is, with no attempt counted (what it cost counts).
      tasks.forEach((task, k) => {
        const attempt = dropped[k];
        applyDecision(draft.plan, task, { kind: 'interrupted' }, spentBy(attempt === undefined ? null : runOf(attempt)));
      });
      building.effects.push({ type: 'save' });
      emit(building, { type: 'notice', level: 'warning', message: `${why}; they run again from the work integrated since (no attempt counted)` });
      return;
    }
    // Nothing was integrated: the tasks are pending again, saying why, with no attempt counted;
    // the run stops (integrating anything else could meet the same failure).
    tasks.forEach((task, k) => {
      const attempt = dropped[k];
      applyDecision(
        draft.plan,
        task,
        { kind: 'interrupted', reason: `${why}; it runs again at the next run (no attempt counted)` },
        spentBy(attempt === undefined ? null : runOf(attempt)),
      );
    });
    building.effects.push({ type: 'save' });
    emit(building, { type: 'notice', level: 'warning', message: why });
    const named = tasks.length === 1 ? `task ${tasks[0]} is` : `tasks ${tasks.join(', ')} are`;
    stopWith(building, {
      reason: 'git-failed',
      message: `${why}. Nothing of yours was touched and no attempt was counted: ${named} pending again and run again when you run the same command`,
    });
    return;
  }
  const integrated: number[] = [];
  const held: number[] = [];
  for (const task of tasks) {
    const attempt = attemptIn(building, task, 'recording');
    switch (attempt.purpose) {
      case 'hold': {
        // Held on its ref: it waits in the merge queue, still in progress in the plan.
        const { purpose: _purpose, ...candidate } = attempt;
        building.attempts.set(task, { ...candidate, stage: 'queued' });
        held.push(task);
        break;
      }
      case 'integrate':
        if (attempt.verifiedBy.kind === 'earlier-run' && attempt.verifiedBy.approved === true) applyApproved(draft.plan, task, attempt.decision.result);
        else applyDecision(draft.plan, task, attempt.decision, spentBy(runOf(attempt)));
        integrated.push(task);
        if (commit !== null) draft.plan.tasks[task] = { ...taskAt(draft.plan.tasks, task), commit };
        building.attempts.delete(task);
        break;
      case 'park':
        applyReviewed(building, task, attempt.decision, spentBy(runOf(attempt)));
        building.attempts.delete(task);
        break;
      default:
        assertNever(attempt, 'recording attempt');
    }
  }
  if (held.length > 0) draft.gate = enqueue(draft.gate, held);
  // In a session, integrated work is not on the branch until the driver has landed it.
  if (draft.config.driver === 'session' && integrated.length > 0 && commit !== null) draft.unlanded = new Set([...draft.unlanded, ...integrated]);
  building.effects.push({ type: 'save' });
  if (integrated.length > 0) emit(building, { type: 'round-committed', round: draft.round, tasks: integrated, commit });
}
