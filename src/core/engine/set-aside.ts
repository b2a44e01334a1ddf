// What an attempt did outside its declared files: recorded beside its decision, `--widen` adding
// what it wanted to its task's declared files, and the re-check of the work its last attempt set
// aside that a widened task gets before a worker is paid (core/attempt/widen.ts).

import {
  applyDecision,
  type Decided,
  type EndingDecision,
  undeclaredWritesOf,
  type Verification,
  type WantedPath,
  wantedPaths,
  widenDeclared,
  widenRefusal,
  type WorkerRun,
} from '../attempt/index.ts';
import { computeOverlaps, emptyUsage, overlapSets, taskAt, type TaskSetAside } from '../plan/index.ts';
import type { Attempt, RunningAttempt, VerifyingAttempt } from './attempt.ts';
import { emit, kept, type StepDraft } from './draft.ts';
import { finishedEvent } from './task-finished.ts';

/** Beside an attempt's decision: warnings for its `task-finished` event, and what it did outside its declared files. */
export interface Concluded {
  warnings?: string[];
  undeclared?: readonly string[];
  setAside?: TaskSetAside | null;
  /** The undeclared files it wanted, with what `--widen` needs to know of each. */
  wanted?: readonly WantedPath[];
}

/** What an attempt did outside its declared files, for the task's record (`recordUndeclared`). */
export function undeclaredOf(attempt: Attempt, run: WorkerRun, verification?: Verification): Concluded {
  const setAside = verification?.ok === true ? verification.value.setAside : undefined;
  return {
    wanted: wantedPaths(verification, run.permissionDenials),
    undeclared: undeclaredWritesOf(verification, run.permissionDenials),
    setAside:
      setAside === undefined ? null : { attempt: attempt.number, paths: setAside.paths, ...(setAside.kept !== null ? { commit: setAside.kept.commit } : {}) },
  };
}

/**
 * `--widen`: an attempt that failed (or ended blocked) wanting undeclared files the run may add
 * (core/attempt/widen.ts `widenRefusal`) has them added to its task's declared files, once per task per
 * run, and the task runs again with no attempt counted. Otherwise the decision stands, and a
 * failure or block says why the run did not add them.
 */
export function widened(building: StepDraft, task: number, decision: EndingDecision, wanted: readonly WantedPath[]): EndingDecision {
  const draft = building.draft;
  const patterns = draft.config.widen;
  if (patterns === undefined || patterns.length === 0 || wanted.length === 0) return decision;
  if (decision.kind !== 'retry' && decision.kind !== 'failed' && decision.kind !== 'blocked') return decision;
  const refusals = wanted.flatMap((path) => {
    const why = draft.widened.has(task) ? `${path.path}: the task was widened once in this run already` : widenRefusal(draft.plan, task, path, patterns);
    return why === null ? [] : [why];
  });
  if (refusals.length > 0) {
    const note = `; --widen did not add what it wanted: ${refusals.join('; ')}`;
    return decision.kind === 'blocked' ? { ...decision, reason: `${decision.reason}${note}` } : { ...decision, failure: `${decision.failure}${note}` };
  }
  const paths = wanted.map((path) => path.path);
  const recheck = widenDeclared(draft.plan, task, paths);
  draft.widened = new Set([...draft.widened, task]);
  draft.overlaps = overlapSets(computeOverlaps(draft.plan.tasks));
  emit(building, { type: 'task-widened', task, subject: taskAt(draft.plan.tasks, task).subject, paths, recheck });
  return {
    kind: 'interrupted',
    reason: `widened by --widen to declare ${paths.join(', ')}; it runs again with no attempt counted (the attempt before: ${decision.kind === 'blocked' ? decision.reason : decision.failure})`,
  };
}

/**
 * A re-check of the work a task's last attempt set aside (no worker ran): passing, it is the
 * task's work like any verified attempt's; else the task is pending again with no attempt
 * counted, and its next start pays a worker.
 */
export function concludeRecheck(building: StepDraft, attempt: RunningAttempt | VerifyingAttempt, run: WorkerRun, decided: Decided, warnings: string[]): void {
  const task = attempt.task;
  const base = { ...finishedEvent(building, attempt, run), ...(warnings.length > 0 ? { warnings } : {}) };
  building.effects.push({ type: 'release-workspace', task });
  if (decided.passed) {
    building.attempts.set(task, { ...kept(attempt), stage: 'verified', decision: decided.decision, work: decided.work, verifiedBy: { kind: 'this-run', run } });
    emit(building, { ...base, outcome: decided.decision.kind, result: decided.decision.result });
    return;
  }
  const decision = decided.decision;
  const why = decision.kind === 'retry' || decision.kind === 'failed' ? decision.failure : decision.kind === 'blocked' ? decision.reason : decision.kind;
  const reason = `the re-check of the work its last attempt set aside did not pass (${why}); a worker does the task next, with no attempt counted`;
  applyDecision(building.draft.plan, task, { kind: 'interrupted', reason }, emptyUsage());
  building.attempts.delete(task);
  building.effects.push({ type: 'save' });
  emit(building, { ...base, outcome: 'interrupted', reason });
}
