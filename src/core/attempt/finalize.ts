// The finalizer's decisions, pure: given what a worker reported and what verification found,
// decide the task's next state. The engine (and `plan.ts finalize` for the /execute skill) does
// the I/O and applies these decisions.

import { assertNever, type Result } from '../result.ts';
import { classifyWorkerFailure, describeWorkerFailure, type FailureClass, type PermissionDenial, type WorkerFailure, type WorkerRun } from './worker-run.ts';
import { attemptsOf, type Task } from '../plan/index.ts';
import { clipHead } from '../format.ts';
import type { CapturedWork } from './work.ts';
import { describeSetAside, type SetAside, setAsideWarning } from './set-aside-words.ts';
import { type AcceptanceResult, type AttemptFailure, describeAttemptFailure } from './attempt-failure.ts';
import { deniedPaths, describeDenials } from './denied-writes.ts';

/** What verification found of an attempt's work, once it was captured from its worktree. */
export interface CheckedWork {
  /** Declared created files that do not exist. */
  missingCreated: string[];
  /** Declared modified files with no change against the attempt's starting commit. */
  unchangedModified: string[];
  /** Paths the attempt changed that its task does not declare: set aside (never integrated); with `strictScope`, they fail the attempt. */
  outsideChanges: string[];
  /** Where `outsideChanges` were kept, when there were any. */
  setAside?: SetAside;
  /** Empty when the spot-check failed (acceptance is not run then). */
  acceptance: AcceptanceResult[];
  /** The declared files as the worker left them, captured before any check ran (what is integrated). */
  work: CapturedWork;
}

/** An attempt's verification: what it found, or why the attempt's work could not be read from its worktree (git failed there). */
export type Verification = Result<CheckedWork, string>;

/**
 * What an attempt's verification found that a person should see beside the decision: the files it
 * changed without its task declaring them (set aside), declared files it left unchanged while
 * changing others, and, for work that completed, a missing status line. One spelling for the
 * headless engine and the in-session `finalize`.
 */
export function verificationWarnings(verification: Verification | undefined, decision: Decision, judgement: Judgement): string[] {
  if (verification === undefined || !verification.ok) return [];
  const checked = verification.value;
  const warnings: string[] = [];
  if (checked.setAside !== undefined) warnings.push(setAsideWarning(checked.setAside));
  const passed = decision.kind === 'completed' || decision.kind === 'awaiting_approval';
  if (passed && checked.unchangedModified.length > 0) warnings.push(`left declared files unchanged: ${checked.unchangedModified.join(', ')}`);
  if (passed && judgement.kind === 'verify' && !judgement.claimed) {
    warnings.push('its reply had no COMPLETED/FAILED/BLOCKED line; it completed because it changed its declared files and passed every acceptance check');
  }
  return warnings;
}

export type Decision =
  | { kind: 'completed'; result: string }
  /** Verified work on a task that needs approval: it waits for `plan.ts approve`. */
  | { kind: 'awaiting_approval'; result: string }
  /** `advice`: what the next attempt is told to do about it (task.retryAdvice, in its prompt). */
  | { kind: 'retry'; failure: string; advice?: string }
  | { kind: 'failed'; failure: string }
  | { kind: 'blocked'; reason: string }
  /** Rate limit or overload: try again after a pause, no attempt counted. */
  | { kind: 'requeued'; reason: string; delayMs?: number }
  /** The agent cannot run at all (missing, not logged in): stop the whole run. */
  | { kind: 'abort-run'; failure: WorkerFailure }
  /** The user interrupted the run, or its verified work could not be integrated: back to pending, no attempt counted; `reason` says why on the task. */
  | { kind: 'interrupted'; reason?: string };

/** The decisions of verified work: it completed, or waits for approval. */
export type PassingDecision = Extract<Decision, { kind: 'completed' | 'awaiting_approval' }>;
/** Every other decision: the attempt ends without its work. */
export type EndingDecision = Exclude<Decision, PassingDecision>;

/** A decision, and with one that passes the work it passed (what the verification captured). */
export type Decided = { passed: true; decision: PassingDecision; work: CapturedWork } | { passed: false; decision: EndingDecision };

/**
 * What a worker's run means before verification. `verify` means: check files and acceptance next;
 * `claimed` is false for a run that succeeded with no status line (`tail`: its last line), which
 * completes only on the strength of its checks.
 */
export type Judgement =
  | { kind: 'verify'; summary: string; claimed: true }
  | { kind: 'verify'; summary: string; claimed: false; tail: string }
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
    const tail = lines[lines.length - 1] ?? '';
    return { kind: 'verify', summary: tail.trim() === '' ? 'completed (no status line)' : clipHead(tail.trim(), 300), claimed: false, tail };
  }
  switch (line.status) {
    case 'COMPLETED':
      return { kind: 'verify', summary: line.text, claimed: true };
    case 'BLOCKED':
      return { kind: 'blocked', reason: line.text };
    case 'FAILED':
      return { kind: 'attempt-failed', failure: { reason: 'reported-failed', text: line.text } };
    default:
      return assertNever(line.status, 'status line');
  }
}

/**
 * The failure verification found, if any. Changes outside the declared files were set aside and
 * fail the attempt only with `strictScope`. A declared file left unchanged fails it only when the
 * attempt changed none of its declared files (a tool may well leave a declared lockfile as it was).
 */
export function verificationFailure(verification: Verification, strictScope: boolean): AttemptFailure | null {
  if (!verification.ok) return { reason: 'capture', message: verification.error };
  const checked = verification.value;
  if (strictScope && checked.outsideChanges.length > 0) return { reason: 'outside-changes', paths: checked.outsideChanges };
  const changedNone = checked.work.entries.length === 0;
  if (checked.missingCreated.length > 0 || (changedNone && checked.unchangedModified.length > 0)) {
    return { reason: 'spot-check', missingCreated: checked.missingCreated, unchangedModified: changedNone ? checked.unchangedModified : [] };
  }
  const failures = checked.acceptance.filter((a) => !a.passed);
  return failures.length > 0 ? { reason: 'acceptance', failures } : null;
}

/** What the next attempt is told to do about what failed this one (beside the failure itself). */
function retryAdvice(failure: AttemptFailure | null, judgement: Judgement, undeclared: readonly string[]): string | undefined {
  const advice: string[] = [];
  if (judgement.kind === 'verify' && !judgement.claimed) {
    const tail = judgement.tail.trim();
    advice.push(
      `Your previous reply did not end with a status line${tail !== '' ? ` (its last line was: ${JSON.stringify(clipHead(tail, 200))})` : ''}. End your reply with exactly one plain status line and nothing after it, without bold or backticks, for example: COMPLETED: <what you did>`,
    );
  }
  if (undeclared.length > 0) {
    const named = undeclared.join(', ');
    advice.push(
      `The previous attempt changed or tried to change ${named}, which this task does not declare: such changes are set aside and never kept. Leave ${undeclared.length === 1 ? 'it' : 'them'} as ${undeclared.length === 1 ? 'it is' : 'they are'}. If the task cannot be done without changing one of them, stop and end your reply with: BLOCKED: needs to change <path>, which the task does not declare`,
    );
  }
  if (failure?.reason === 'spot-check' && failure.missingCreated.length > 0)
    advice.push(
      `Create ${failure.missingCreated.join(', ')}: the task declares ${failure.missingCreated.length === 1 ? 'it' : 'them'}, and the previous attempt did not create ${failure.missingCreated.length === 1 ? 'it' : 'them'}.`,
    );
  return advice.length > 0 ? advice.join('\n\n') : undefined;
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
  /** A change outside the declared files fails the attempt (`--strict-scope`); else it is set aside. */
  strictScope?: boolean;
}

/** The undeclared paths this attempt changed (set aside) or was refused writing, sorted. */
export const undeclaredWritesOf = (verification: Verification | undefined, denials: readonly PermissionDenial[]): string[] =>
  [...new Set([...(verification?.ok === true ? verification.value.outsideChanges : []), ...deniedPaths(denials)])].sort();

/**
 * The task's next state. `attempts` in the task is the number of attempts finished before this
 * one; an attempt that fails is retried while the total stays below `maxAttempts`.
 */
export const decide = (input: DecideInput): Decision => decideAttempt(input).decision;

/** The task's next state (`decide`), with the work that passed when it passed. */
export function decideAttempt(input: DecideInput): Decided {
  const { task, judgement } = input;
  const denials = describeDenials(input.permissionDenials);
  const withDenials = (text: string) => (denials ? `${text} (${denials})` : text);
  const undeclared = undeclaredWritesOf(input.verification, input.permissionDenials);
  const setAside = input.verification?.ok === true ? input.verification.value.setAside : undefined;
  const ending = (decision: EndingDecision): Decided => ({ passed: false, decision });
  const attemptFailed = (attemptFailure: AttemptFailure): EndingDecision => {
    const noted =
      setAside !== undefined && attemptFailure.reason !== 'outside-changes'
        ? `${describeAttemptFailure(attemptFailure)}; ${describeSetAside(setAside)}`
        : describeAttemptFailure(attemptFailure);
    const failure = withDenials(noted);
    // An earlier attempt changed (or was refused) the same undeclared file: the task needs it.
    const again = undeclared.filter((path) => (task.undeclaredWrites ?? []).includes(path));
    if (again.length > 0) return { kind: 'blocked', reason: needsUndeclared(again, failure) };
    if (attemptsOf(task) + 1 >= input.maxAttempts) return { kind: 'failed', failure };
    const advice = retryAdvice(attemptFailure, judgement, undeclared);
    return advice !== undefined ? { kind: 'retry', failure, advice } : { kind: 'retry', failure };
  };
  switch (judgement.kind) {
    case 'not-an-attempt':
      switch (judgement.class) {
        case 'infrastructure':
          return ending({ kind: 'abort-run', failure: judgement.failure });
        case 'transient':
          return ending({
            kind: 'requeued',
            reason: describeWorkerFailure(judgement.failure),
            delayMs: (judgement.failure as { retryAfterMs?: number }).retryAfterMs ?? input.backoffMs,
          });
        case 'interrupted':
          return ending({ kind: 'interrupted' });
        default:
          return assertNever(judgement.class, 'failure class');
      }
    case 'blocked':
      // What it was refused or changed outside its files, foreman names itself (not only the worker's words).
      return ending({
        kind: 'blocked',
        reason:
          undeclared.length > 0
            ? `${withDenials(judgement.reason)}; it needs ${undeclared.join(', ')}, which the task does not declare`
            : withDenials(judgement.reason),
      });
    case 'attempt-failed':
      return ending(attemptFailed(judgement.failure));
    case 'verify': {
      const verification = input.verification;
      if (!verification) throw new Error('decide: a COMPLETED report needs a verification');
      const failure = verificationFailure(verification, input.strictScope ?? false);
      if (!judgement.claimed) {
        // No status line: complete only on changed declared files and every check passing.
        const proven = failure === null && verification.ok && verification.value.work.entries.length > 0 && verification.value.acceptance.length > 0;
        if (!proven) {
          const missing: AttemptFailure = { reason: 'no-status-line', tail: judgement.tail };
          return ending(failure === null ? attemptFailed(missing) : withMissingLine(attemptFailed(failure), missing));
        }
      }
      if (!verification.ok) return ending(attemptFailed({ reason: 'capture', message: verification.error }));
      if (failure) return ending(attemptFailed(failure));
      const decision: PassingDecision =
        task.gate === 'human-approval' ? { kind: 'awaiting_approval', result: judgement.summary } : { kind: 'completed', result: judgement.summary };
      return { passed: true, decision, work: verification.value.work };
    }
    default:
      return assertNever(judgement, 'judgement');
  }
}

/** The reason of a task blocked because its attempts keep changing undeclared files. */
function needsUndeclared(paths: readonly string[], failure: string): string {
  const named = paths.join(', ');
  return `the task needs ${named}, which it does not declare: its attempts changed or tried to change ${paths.length === 1 ? 'it' : 'them'} more than once. Declare ${paths.length === 1 ? 'it' : 'them'} in the task's metadata.files, then put the task back (the last attempt: ${failure})`;
}

/** A failed attempt's decision whose failure also says the status line was missing. */
function withMissingLine(decision: EndingDecision, missing: AttemptFailure): EndingDecision {
  const line = describeAttemptFailure(missing);
  switch (decision.kind) {
    case 'retry':
    case 'failed':
      return { ...decision, failure: `${line}; and ${decision.failure}` };
    default:
      return decision;
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
  if (task.setAside) kept.setAside = task.setAside;
  if (task.gate) kept.gate = task.gate;
  if (task.reviews) kept.reviews = task.reviews;
  return kept;
}
