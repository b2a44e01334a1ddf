// The finalizer's decisions, pure: given what a worker reported and what verification found,
// decide the task's next state. The engine (and `plan.ts finalize` for the /execute skill) does
// the I/O and applies these decisions.

import { type FailureClass, type PermissionDenial, type WorkerFailure, type WorkerRun, assertNever, classifyWorkerFailure, describeWorkerFailure } from './failure.ts';
import { cascade, breaker, type BreakerDecision, type Skip } from './graph.ts';
import { type Plan, type Task, attemptsOf, statusOf } from './plan.ts';
import { clipHead, clipTail } from './format.ts';
import { type TimeLimit, describeTimeLimitHit } from './time-limit.ts';
import type { CapturedWork } from './work.ts';

export interface AcceptanceResult {
  criterion: string;
  check: string;
  passed: boolean;
  exitCode: number | null;
  timedOut: boolean;
  /** The limit it ran under, named when it was hit. */
  timeLimit: TimeLimit;
  output: string;
}

export interface Verification {
  /** Declared created files that do not exist. */
  missingCreated: string[];
  /** Declared modified files with no change against HEAD. */
  unchangedModified: string[];
  /** Paths the attempt changed that its task does not declare: the attempt fails with them. */
  outsideChanges: string[];
  /** Empty when the spot-check failed (acceptance is not run then). */
  acceptance: AcceptanceResult[];
  /** The declared files as the worker left them, captured before any check ran (what is integrated). */
  work?: CapturedWork;
  /** Why the attempt's work could not be read from its worktree (git failed there). */
  captureFailure?: string;
}

/**
 * What an attempt's verification found that a person should see beside the decision: files the
 * worker changed without its task declaring them (the attempt fails with them, and they are not
 * kept). One spelling for the headless engine and the in-session `finalize`.
 */
export function verificationWarnings(verification: Verification | undefined): string[] {
  if (verification === undefined || verification.outsideChanges.length === 0) return [];
  return [`changed files it did not declare (the attempt failed; they were not kept): ${verification.outsideChanges.join(', ')}`];
}

/** Why one attempt of a task did not pass. */
export type AttemptFailure =
  | { reason: 'reported-failed'; text: string }
  | { reason: 'no-status-line'; tail: string }
  | { reason: 'worker'; failure: WorkerFailure }
  | { reason: 'spot-check'; missingCreated: string[]; unchangedModified: string[] }
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
      return `the worker changed files its task does not declare (only the declared files may change; these were not kept): ${failure.paths.join(', ')}`;
    case 'acceptance':
      return failure.failures
        .map((a) => {
          const how = a.timedOut ? describeTimeLimitHit(a.check, a.timeLimit) : `\`${a.check}\` exited ${a.exitCode ?? 'without a code'}`;
          return `acceptance check failed (${a.criterion}): ${how}${a.output.trim() ? `:\n${clipTail(a.output.trim(), 2000)}` : ''}`;
        })
        .join('\n');
    default:
      return assertNever(failure, 'attempt failure');
  }
}

export function describeDenials(denials: readonly PermissionDenial[]): string {
  if (denials.length === 0) return '';
  const tools = denials.map((d) => {
    const input = d.input as { command?: string; file_path?: string } | undefined;
    // A path keeps its end (the file's name: a worktree's directory makes the head long), a command its start.
    const what = input?.command !== undefined ? clipHead(input.command, 80) : input?.file_path !== undefined ? clipTail(input.file_path, 80) : undefined;
    return what ? `${d.tool}(${what})` : d.tool;
  });
  return `permission denied for: ${[...new Set(tools)].join(', ')}`;
}

export type Decision =
  | { kind: 'completed'; result: string }
  /** Verified work on a gated task: it waits for `plan.ts approve`. */
  | { kind: 'awaiting_approval'; result: string }
  | { kind: 'retry'; failure: string }
  | { kind: 'failed'; failure: string }
  | { kind: 'blocked'; reason: string }
  /** Rate limit or overload: try again after a pause, no attempt counted. */
  | { kind: 'requeued'; reason: string; delayMs?: number }
  /** The agent cannot run at all (missing, not logged in): stop the whole run. */
  | { kind: 'abort-run'; failure: WorkerFailure }
  /** The user interrupted the run, or its verified work could not be integrated: back to pending, no attempt counted; `reason` says why on the task. */
  | { kind: 'interrupted'; reason?: string };

/** What a worker's run means before verification. `verify` means: check files and acceptance next. */
export type Judgement =
  | { kind: 'verify'; summary: string }
  | { kind: 'blocked'; reason: string }
  | { kind: 'attempt-failed'; failure: AttemptFailure }
  | { kind: 'not-an-attempt'; failure: WorkerFailure; class: Exclude<FailureClass, 'attempt'> };

export function judgeRun(run: Pick<WorkerRun, 'outcome'>): Judgement {
  const outcome = run.outcome;
  if (outcome.kind === 'failed') {
    const cls = classifyWorkerFailure(outcome.failure);
    if (cls === 'attempt') return { kind: 'attempt-failed', failure: { reason: 'worker', failure: outcome.failure } };
    return { kind: 'not-an-attempt', failure: outcome.failure, class: cls };
  }
  const line = outcome.statusLine;
  if (line === null) {
    const lines = outcome.resultText.trim().split('\n');
    return { kind: 'attempt-failed', failure: { reason: 'no-status-line', tail: lines[lines.length - 1] ?? '' } };
  }
  switch (line.status) {
    case 'COMPLETED':
      return { kind: 'verify', summary: line.text };
    case 'BLOCKED':
      return { kind: 'blocked', reason: line.text };
    case 'FAILED':
      return { kind: 'attempt-failed', failure: { reason: 'reported-failed', text: line.text } };
    default:
      return assertNever(line.status, 'status line');
  }
}

/** The failure verification found, if any. */
export function verificationFailure(verification: Verification): AttemptFailure | null {
  if (verification.captureFailure !== undefined) return { reason: 'capture', message: verification.captureFailure };
  if (verification.outsideChanges.length > 0) return { reason: 'outside-changes', paths: verification.outsideChanges };
  if (verification.missingCreated.length > 0 || verification.unchangedModified.length > 0) {
    return { reason: 'spot-check', missingCreated: verification.missingCreated, unchangedModified: verification.unchangedModified };
  }
  const failures = verification.acceptance.filter((a) => !a.passed);
  return failures.length > 0 ? { reason: 'acceptance', failures } : null;
}

export interface DecideInput {
  task: Task;
  judgement: Judgement;
  /** Present when the judgement was `verify`. */
  verification?: Verification;
  permissionDenials: readonly PermissionDenial[];
  maxAttempts: number;
  /** Back-off before re-queuing a rate-limited task. */
  backoffMs?: number;
}

/**
 * The task's next state. `attempts` in the task is the number of attempts finished before this
 * one; an attempt that fails is retried while the total stays below `maxAttempts`.
 */
export function decide(input: DecideInput): Decision {
  const { task, judgement } = input;
  const denials = describeDenials(input.permissionDenials);
  const withDenials = (text: string) => (denials ? `${text} (${denials})` : text);
  const attemptFailed = (attemptFailure: AttemptFailure): Decision => {
    const failure = withDenials(describeAttemptFailure(attemptFailure));
    return attemptsOf(task) + 1 < input.maxAttempts ? { kind: 'retry', failure } : { kind: 'failed', failure };
  };
  switch (judgement.kind) {
    case 'not-an-attempt':
      switch (judgement.class) {
        case 'infrastructure':
          return { kind: 'abort-run', failure: judgement.failure };
        case 'transient':
          return {
            kind: 'requeued',
            reason: describeWorkerFailure(judgement.failure),
            delayMs: (judgement.failure as { retryAfterMs?: number }).retryAfterMs ?? input.backoffMs,
          };
        case 'interrupted':
          return { kind: 'interrupted' };
        default:
          return assertNever(judgement.class, 'failure class');
      }
    case 'blocked':
      return { kind: 'blocked', reason: withDenials(judgement.reason) };
    case 'attempt-failed':
      return attemptFailed(judgement.failure);
    case 'verify': {
      if (!input.verification) throw new Error('decide: a COMPLETED report needs a verification');
      const failure = verificationFailure(input.verification);
      if (failure) return attemptFailed(failure);
      return task.gate === 'human-approval'
        ? { kind: 'awaiting_approval', result: judgement.summary }
        : { kind: 'completed', result: judgement.summary };
    }
    default:
      return assertNever(judgement, 'judgement');
  }
}

/** What a completed task keeps in plan.json: what later steps, resume and reports need. */
export function trimCompleted(task: Task): Task {
  const kept: Task = {
    subject: task.subject,
    status: task.status,
    result: task.result,
    attempts: task.attempts,
    blockedBy: task.blockedBy,
    metadata: task.metadata,
  };
  if (task.agent?.role !== undefined || task.agent?.model !== undefined) {
    kept.agent = {};
    if (task.agent.role !== undefined) kept.agent.role = task.agent.role;
    if (task.agent.model !== undefined) kept.agent.model = task.agent.model;
  }
  if (task.usage) kept.usage = task.usage;
  if (task.commit) kept.commit = task.commit;
  if (task.gate) kept.gate = task.gate;
  return kept;
}

export interface CascadeOutcome {
  skips: Skip[];
  breaker: BreakerDecision;
}

/** Skip what can no longer run, and decide whether the circuit breaker trips. Mutates `plan` (its `tasks` array). */
export function applyCascade(plan: Plan): CascadeOutcome {
  const pendingBefore = plan.tasks.filter((t) => statusOf(t) === 'pending').length;
  const skips = cascade(plan.tasks);
  for (const s of skips) {
    // A new task object (see `applyDecision`): an earlier copy of the plan keeps the old one.
    const task = { ...plan.tasks[s.index]! };
    plan.tasks[s.index] = task;
    const root = plan.tasks[s.rootCause]!;
    task.status = 'skipped';
    task.skippedBy = s.rootCause;
    task.result = `skipped: depends on task ${s.rootCause} (${root.subject}), which ${statusOf(root) === 'skipped' ? 'was skipped' : `is ${statusOf(root)}`}${s.via !== s.rootCause ? ` (through task ${s.via})` : ''}`;
  }
  return { skips, breaker: breaker(plan.tasks.length, pendingBefore, skips.length) };
}
