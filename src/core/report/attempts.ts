// Attempts, a projection of a run: each task-started paired with the task's next task-finished
// (a culprit's later verdict folded into its attempt), and what cancelled speculation cost.

import type { TaskOutcome } from './events.ts';
import { tallyOf, type UNKNOWN, type UsageFigure, type UsageTally } from '../plan/index.ts';
import { type RunRecord, timeOf } from './journal.ts';

// ---------------------------------------------------------------------------------------------
// Attempts

export interface AttemptRecord {
  task: number;
  subject: string;
  attempt: number;
  model: string | null;
  logPath: string;
  startMs: number;
  /** null while the attempt is still running (or the run died during it). */
  endMs: number | null;
  outcome: TaskOutcome | null;
  reason: string | null;
  durationMs: number | null;
  /** null while running; `unknown` when nothing measured the attempt (a Task subagent). */
  usage: UsageFigure | null;
  /** Permission denials the worker met; `unknown` for a Task subagent. */
  permissionDenials: number | typeof UNKNOWN | null;
  /** What its verification or clean-up found beside the outcome (undeclared changes…); empty when nothing. */
  warnings: string[];
  /** With hosts (`--host`): the host and slot it worked on; null without. */
  host: string | null;
  slot: number | null;
}

/** An attempt as its start says it: nothing known yet of how it ends. */
const started = (
  start: Pick<AttemptRecord, 'task' | 'subject' | 'attempt' | 'model' | 'logPath' | 'startMs'> & Partial<Pick<AttemptRecord, 'host' | 'slot'>>,
): AttemptRecord => ({
  host: null,
  slot: null,
  ...start,
  endMs: null,
  outcome: null,
  reason: null,
  durationMs: null,
  usage: null,
  permissionDenials: null,
  warnings: [],
});

/** Every attempt of the run: a task-started paired with the task's next task-finished. */
export function attemptRecordsOf(run: RunRecord): AttemptRecord[] {
  const open = new Map<number, AttemptRecord>();
  const out: AttemptRecord[] = [];
  for (const e of run.events) {
    if (e.type === 'task-started') {
      const a = started({
        task: e.task,
        subject: e.subject,
        attempt: e.attempt,
        model: e.model,
        logPath: e.logPath,
        startMs: timeOf(e.at),
        ...(e.host !== undefined ? { host: e.host, slot: e.slot ?? null } : {}),
      });
      open.set(e.task, a);
      out.push(a);
    } else if (e.type === 'task-finished') {
      const end = timeOf(e.at);
      let a = open.get(e.task);
      if (!a) {
        // The gate blamed a verified attempt (the culprit): the same attempt, now failed.
        const verified = out.findLast((x) => x.task === e.task && x.attempt === e.attempt && x.outcome === 'completed');
        if (verified !== undefined && e.outcome !== 'completed') {
          verified.outcome = e.outcome;
          verified.reason = e.reason ?? e.result ?? null;
          verified.warnings.push(...(e.warnings ?? []));
          continue;
        }
      }
      if (!a) {
        // The journal lost the start (or it came from an older version): reconstruct it.
        a = started({ task: e.task, subject: e.subject, attempt: e.attempt, model: null, logPath: e.logPath, startMs: end - e.durationMs });
        out.push(a);
      }
      open.delete(e.task);
      a.endMs = end;
      a.outcome = e.outcome;
      a.reason = e.reason ?? (e.outcome === 'completed' || e.outcome === 'awaiting_approval' ? null : (e.result ?? null));
      a.durationMs = e.durationMs;
      a.usage = e.usage;
      a.permissionDenials = e.permissionDenials;
      a.logPath = e.logPath;
      a.warnings.push(...(e.warnings ?? []));
    }
  }
  return out;
}

/** Attempts that count against `maxAttempts` (a requeue or an interruption is not an attempt). */
export const counted = (attempt: AttemptRecord) => attempt.outcome !== 'requeued' && attempt.outcome !== 'interrupted' && attempt.outcome !== 'cancelled';

/** What cancelled speculation cost: how many, the worker time and the spend they took. */
export function speculationWaste(attempts: readonly AttemptRecord[]): { cancelled: number; workerMs: number; usage: UsageTally } | null {
  const cancelled = attempts.filter((a) => a.outcome === 'cancelled');
  if (cancelled.length === 0) return null;
  return {
    cancelled: cancelled.length,
    workerMs: cancelled.reduce((n, a) => n + (a.durationMs ?? 0), 0),
    usage: tallyOf(cancelled.map((a) => a.usage ?? undefined)),
  };
}
export const isFailure = (outcome: TaskOutcome | null) => outcome === 'retry' || outcome === 'failed' || outcome === 'blocked';
