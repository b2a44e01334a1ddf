// The finalizer's decisions, pure: given what a worker reported and what verification found,
// decide the task's next state. The engine (and `plan.ts finalize` for the /execute skill) does
// the I/O and applies these decisions.

import {
  type FailureClass,
  type PermissionDenial,
  type Result,
  type WorkerFailure,
  type WorkerRun,
  assertNever,
  classifyWorkerFailure,
  describeWorkerFailure,
} from './failure.ts';
import { cascade, breaker, type BreakerDecision, type Skip } from './graph.ts';
import { type Plan, type Task, attemptsOf, statusOf } from './plan.ts';
import { gitHint } from './command-hint.ts';
import { clipHead, clipTail, listSome } from './format.ts';
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
  /** It ran in the sandbox, and its output shows the sandbox refused its network: what to tell the person (core/sandbox-words.ts). */
  sandboxRefusal?: string;
}

/** How a failed acceptance check ended (its time limit, or its exit code), and the sandbox's refusal when its output shows one. */
export function describeCheckEnd(a: AcceptanceResult): string {
  const how = a.timedOut ? describeTimeLimitHit(a.check, a.timeLimit) : `\`${a.check}\` exited ${a.exitCode ?? 'without a code'}`;
  return a.sandboxRefusal === undefined ? how : `${how} (${a.sandboxRefusal})`;
}

/** What an attempt changed outside its task's declared files, set aside before its checks ran. */
export interface SetAside {
  /** The paths (each restored in the worktree to the attempt's starting commit before the checks). */
  paths: string[];
  /** Those the attempt's starting commit holds as regular files (the repository has them). */
  tracked: string[];
  /** A commit holding the attempt's whole work (declared and set aside) on its starting commit, and the ref of foreman's it is on; null when it could not be kept (`keepFailure` says why). */
  kept: { commit: string; ref: string } | null;
  keepFailure?: string;
}

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

/** How a warning and a failure name what was set aside. */
export const describeSetAside = (setAside: SetAside): string => {
  const where =
    setAside.kept !== null ? `kept in ${setAside.kept.ref}, commit ${setAside.kept.commit.slice(0, 12)}` : `not kept: ${setAside.keepFailure ?? 'unknown'}`;
  return `changed files its task does not declare: ${setAside.paths.join(', ')} (set aside, not integrated; ${where})`;
};

/**
 * The warning that names what was set aside, for a person (the run's journal, `finalize`'s
 * results): with the commands that read it back. Never in a failure, which a retry's prompt
 * quotes: a worker is not to bring those files back.
 */
const setAsideWarning = (setAside: SetAside): string =>
  `${describeSetAside(setAside)}${setAside.kept !== null ? `: ${setAsideCommands(setAside.kept.commit)}` : ''}`;

/**
 * What a task's line and the run's Summary say of what an attempt set aside: a few of its paths,
 * how many more, and the commands that read them back (`repo`: the repository they name, when the
 * person may not be at its top, where the paths, relative to the top, would not be found).
 */
export function setAsideSummary(setAside: { paths: readonly string[]; commit?: string }, repo?: string): string {
  const which = listSome(setAside.paths);
  return setAside.commit === undefined
    ? `set aside, not integrated (and not kept): ${which}`
    : `set aside, not integrated: ${which} (${setAsideCommands(setAside.commit, repo)})`;
}

/**
 * The git commands that show what an attempt set aside and bring a file of it back, from the
 * commit that keeps the attempt's whole work (its parent is the attempt's start). The commit
 * outlives its ref (`refs/foreman-aside/…`, removed once the plan finishes) until git prunes
 * unreachable objects (two weeks by default), so the commands name the commit.
 */
export function setAsideCommands(commit: string, repo?: string): string {
  const id = commit.slice(0, 12);
  return `\`${gitHint(`show --stat ${id}`, repo)}\` lists them with the attempt's other files, \`${gitHint(`restore --source=${id} -- <path>`, repo)}\` brings one back into your files`;
}

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

/** The file tools whose denial names a path the worker wanted to write. */
const WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

/**
 * `denials` with the repository path of each denied write inside the worktree (`roots`: its
 * paths as the worker may have named them, e.g. as given and resolved), posix separators.
 */
export function withDeniedPaths(denials: readonly PermissionDenial[], roots: readonly string[]): PermissionDenial[] {
  return denials.map((denial) => {
    const input = denial.input as { file_path?: unknown; notebook_path?: unknown } | undefined;
    const named = typeof input?.file_path === 'string' ? input.file_path : typeof input?.notebook_path === 'string' ? input.notebook_path : undefined;
    if (!WRITE_TOOLS.has(denial.tool) || named === undefined) return denial;
    const root = roots.find((dir) => named.startsWith(`${dir}/`));
    return root === undefined ? denial : { ...denial, path: named.slice(root.length + 1) };
  });
}

/** The undeclared paths a run's denied writes named (the worker adapter or the worker hook gave each its repository path). */
export const deniedPaths = (denials: readonly PermissionDenial[]): string[] => denials.flatMap((denial) => (denial.path !== undefined ? [denial.path] : []));

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
