// Why one attempt of a task did not pass (the finalizer's decisions, finalize.ts), in the words its
// failure and the next attempt's prompt quote: a failed acceptance check's end among them.

import { assertNever } from '../result.ts';
import { describeWorkerFailure, type WorkerFailure } from './worker-run.ts';
import { clipTail } from '../format.ts';
import { describeTimeLimitHit, type TimeLimit } from '../limits/index.ts';

export interface AcceptanceResult {
  criterion: string;
  check: string;
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  /** The limit it ran under, named when it was hit. */
  timeLimit: TimeLimit;
  output: string;
  /** It ran in the sandbox, and its output shows the sandbox refused its network: what to tell the person (core/sandbox/sandbox-words.ts). */
  sandboxRefusal?: string;
}

/** How a failed acceptance check ended (its time limit, or its exit code), and the sandbox's refusal when its output shows one. */
export function describeCheckEnd(a: AcceptanceResult): string {
  const how = a.timedOut ? describeTimeLimitHit(a.check, a.timeLimit) : `\`${a.check}\` exited ${a.exitCode ?? 'without a code'}`;
  return a.sandboxRefusal === undefined ? how : `${how} (${a.sandboxRefusal})`;
}

/** Why one attempt of a task did not pass. */
export type AttemptFailure =
  | { reason: 'reported-failed'; text: string }
  | { reason: 'no-status-line'; tail: string }
  | { reason: 'worker'; failure: WorkerFailure }
  | { reason: 'spot-check'; missingCreated: string[]; unchangedModified: string[] }
  /** With `strictScope`: changes outside the declared files fail the attempt. */
  | { reason: 'outside-changes'; paths: string[] }
  | { reason: 'capture'; message: string }
  | { reason: 'acceptance'; failures: AcceptanceResult[] };

export function describeAttemptFailure(failure: AttemptFailure): string {
  switch (failure.reason) {
    case 'reported-failed':
      return `the worker reported FAILED: ${failure.text}`;
    case 'no-status-line':
      return `the worker ended without a COMPLETED/FAILED/BLOCKED line${failure.tail ? ` (its last words: ${JSON.stringify(clipTail(failure.tail, 300))})` : ''}`;
    case 'worker':
      return describeWorkerFailure(failure.failure);
    case 'spot-check': {
      const parts: string[] = [];
      if (failure.missingCreated.length) parts.push(`declared files were not created: ${failure.missingCreated.join(', ')}`);
      if (failure.unchangedModified.length) parts.push(`declared files were not modified: ${failure.unchangedModified.join(', ')}`);
      return `the worker reported COMPLETED but ${parts.join('; ')}`;
    }
    case 'capture':
      return `the attempt's work could not be read from its worktree: ${failure.message}`;
    case 'outside-changes':
      return `the worker changed files its task does not declare (only the declared files may change; these were set aside, not kept): ${failure.paths.join(', ')}`;
    case 'acceptance':
      return failure.failures
        .map((a) => `acceptance check failed (${a.criterion}): ${describeCheckEnd(a)}${a.output.trim() ? `:\n${clipTail(a.output.trim(), 2000)}` : ''}`)
        .join('\n');
    default:
      return assertNever(failure, 'attempt failure');
  }
}
