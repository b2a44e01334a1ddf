// What a person can do to a plan between runs, pure: approve, revise or reject tasks awaiting
// approval, retry failed or blocked tasks, skip tasks, widen a task's declared files. Each returns a new plan
// and the changes made, or why the tasks' states do not allow it: one line per task that cannot
// be changed (all or nothing: then nothing is). The input plan is not touched.

import { err, ok, type Result } from '../result.ts';
import { applyCascade, attemptsOf, clonePlan, type EarlierWork, type Plan, statusOf, type Task, taskAt, type TaskStatus } from '../plan/index.ts';
import { recheckable, withDeclared } from './widen.ts';

export interface Change {
  task: number;
  subject: string;
  from: TaskStatus;
  to: TaskStatus;
  /** Why, for tasks changed as a consequence (cascade skips, un-skips). */
  note?: string;
}

export interface Intervention {
  plan: Plan;
  /** The task acted on first, then its consequences in index order. */
  changes: Change[];
}

/** `declare`'s result: the new plan, or why the task's state does not allow it (one line). */
export type InterventionResult = Result<Intervention, string>;

/** The result of a decision on several tasks: the new plan, or one line per task that cannot be changed (then none is). */
export type InterventionsResult = Result<Intervention, string[]>;

export const describeChange = (change: Change): string =>
  `task ${change.task} (${change.subject}): ${change.from} → ${change.to}${change.note ? ` — ${change.note}` : ''}`;

type Verb = 'approve' | 'revise' | 'reject' | 'retry' | 'skip' | 'declare';
const PAST: Record<Verb, string> = { approve: 'approved', revise: 'revised', reject: 'rejected', retry: 'retried', skip: 'skipped', declare: 'widened' };

/** What to do instead of revising a task in `status` (it awaits no approval). */
const INSTEAD_OF_REVISING: Record<Exclude<TaskStatus, 'awaiting_approval'>, string> = {
  pending: 'it has no work to review yet: run the plan, and revise it once its work awaits approval',
  in_progress: 'it has no work to review yet: let the run finish it, and revise it once its work awaits approval',
  completed: 'its work was accepted; to change it further, add a task to the plan',
  failed: '`plan retry N` puts it back to pending (edit its prompt first to say what to do differently)',
  blocked: '`plan retry N` puts it back to pending (edit its prompt first to say what to do differently)',
  skipped: 'it was skipped; `plan retry` on the task it depends on puts it back',
};

function target(plan: Plan, index: number, verb: Verb, allowed: readonly TaskStatus[]): Result<TaskStatus, string> {
  if (!Number.isInteger(index) || index < 0 || index >= plan.tasks.length) {
    return err(`task ${index} does not exist (the plan has ${plan.tasks.length} task${plan.tasks.length === 1 ? '' : 's'}: 0–${plan.tasks.length - 1})`);
  }
  const status = statusOf(taskAt(plan.tasks, index));
  if (!allowed.includes(status)) {
    const what = allowed.length === 1 ? `a task that is ${allowed[0]}` : `a task that is ${allowed.slice(0, -1).join(', ')} or ${allowed[allowed.length - 1]}`;
    const instead = verb === 'revise' && status !== 'awaiting_approval' ? `: ${INSTEAD_OF_REVISING[status]}` : '';
    return err(`cannot ${verb} task ${index} (${taskAt(plan.tasks, index).subject}): it is ${status}; only ${what} can be ${PAST[verb]}${instead}`);
  }
  return ok(status);
}

/** A task a decision is about, and its status before. */
interface Target {
  index: number;
  from: TaskStatus;
}

/**
 * Every task of `indices` (each once, in the order given) with its status, when each exists and is
 * in a state `verb` allows; else one line per task that is not.
 */
function targets(plan: Plan, indices: readonly number[], verb: Verb, allowed: readonly TaskStatus[]): Result<Target[], string[]> {
  const found: Target[] = [];
  const problems: string[] = [];
  for (const index of new Set(indices)) {
    const status = target(plan, index, verb, allowed);
    if (status.ok) found.push({ index, from: status.value });
    else problems.push(status.error);
  }
  if (problems.length > 0) return err(problems);
  return found.length > 0 ? ok(found) : err([`name a task to ${verb}`]);
}

const needReason = (reason: string, verb: string): string | null => (reason.trim() === '' ? `${verb} needs a reason (--reason "…")` : null);

/** Cascade skips applied to `plan` (mutated), as changes. */
function cascadeChanges(plan: Plan): Change[] {
  return applyCascade(plan).skips.map((s) => ({
    task: s.index,
    subject: taskAt(plan.tasks, s.index).subject,
    from: 'pending' as const,
    to: 'skipped' as const,
    note: `depends on task ${s.rootCause}`,
  }));
}

/** awaiting_approval → completed, each of `indices`. The work was verified; the next run commits it. */
export function approveTasks(plan: Plan, indices: readonly number[], at: string): InterventionsResult {
  const found = targets(plan, indices, 'approve', ['awaiting_approval']);
  if (!found.ok) return found;
  const next = clonePlan(plan);
  const changes = found.value.map(({ index, from }): Change => {
    const task = taskAt(next.tasks, index);
    task.status = 'completed';
    task.approvedAt = at;
    // As for any completed task (see applyDecision); `approvedAt` without `commit` tells the next run to commit it.
    next.progress ??= {};
    const done = next.progress.completedTasks ?? [];
    if (!done.includes(index)) next.progress.completedTasks = [...done, index];
    return { task: index, subject: task.subject, from, to: 'completed', note: 'approved; the next run commits its work' };
  });
  return ok({ plan: next, changes });
}

/** What `revise` is given beside the tasks: the person's words and what the repository holds. */
export interface Revision {
  /** The reviewer's words, verbatim. */
  feedback: string;
  at: string;
  /** The work parked for each task (null: none is). */
  parked: ReadonlyMap<number, EarlierWork | null>;
  /** How many review rounds a task may have. */
  maxRounds: number;
}

/**
 * awaiting_approval → pending, each of `indices`, in a new review round (`reviews`): its next
 * attempt starts from its parked work (kept on its ref until the revision parks again) with the
 * reviewer's words, and the round spends none of its attempts (they count from 0 in the round, and
 * are the task's again when it ends). Tasks depending on it keep waiting: nothing integrates until
 * a person approves.
 */
export function reviseTasks(plan: Plan, indices: readonly number[], revision: Revision): InterventionsResult {
  if (revision.feedback.trim() === '') return err(['revise needs the reviewer\'s words (--feedback "…" or --feedback-file FILE)']);
  // Every task that cannot be revised is named, whatever makes it so.
  const found = targets(plan, indices, 'revise', ['awaiting_approval']);
  const problems = found.ok ? [] : [...found.error];
  for (const index of new Set(indices)) {
    if (!target(plan, index, 'revise', ['awaiting_approval']).ok) continue;
    const task = taskAt(plan.tasks, index);
    const rounds = task.reviews?.length ?? 0;
    if (rounds >= revision.maxRounds)
      problems.push(
        `cannot revise task ${index} (${task.subject}): it had ${rounds} review round${rounds === 1 ? '' : 's'}, the most a task may have (context.maxReviewRounds in the plan, or --max-rounds): approve or reject it`,
      );
    else if ((revision.parked.get(index) ?? null) === null)
      problems.push(
        `cannot revise task ${index} (${task.subject}): none of its work is parked (an older run's approval), so there is nothing to revise: approve or reject it`,
      );
  }
  if (!found.ok || problems.length > 0) return err(problems);
  const next = clonePlan(plan);
  const changes = found.value.map(({ index, from }): Change => {
    const task = taskAt(next.tasks, index);
    const parked = revision.parked.get(index)!;
    task.reviews = [
      ...(task.reviews ?? []),
      {
        at: revision.at,
        feedback: revision.feedback.trim(),
        commit: parked.commit,
        base: parked.base,
        ...(task.result !== undefined ? { result: task.result } : {}),
        outcome: 'open',
        attemptsBefore: attemptsOf(task),
      },
    ];
    task.status = 'pending';
    task.attempts = 0;
    delete task.retryAdvice;
    return {
      task: index,
      subject: task.subject,
      from,
      to: 'pending',
      note: `review round ${task.reviews.length}: its next attempt starts from its parked work, with your words; that work stays parked until the revision is parked again`,
    };
  });
  return ok({ plan: next, changes });
}

/** awaiting_approval → failed with the reason, each of `indices`; tasks depending on them are skipped. */
export function rejectTasks(plan: Plan, indices: readonly number[], reason: string, at?: string): InterventionsResult {
  const missing = needReason(reason, 'reject');
  if (missing) return err([missing]);
  const found = targets(plan, indices, 'reject', ['awaiting_approval']);
  if (!found.ok) return found;
  const next = clonePlan(plan);
  const changes = found.value.map(({ index, from }): Change => {
    const task = taskAt(next.tasks, index);
    task.status = 'failed';
    task.result = `rejected: ${reason.trim()}`;
    if (at !== undefined) task.rejectedAt = at;
    return { task: index, subject: task.subject, from, to: 'failed', note: `rejected: ${reason.trim()}` };
  });
  return ok({ plan: next, changes: [...changes, ...cascadeChanges(next)] });
}

/**
 * failed or blocked → pending with attempts reset to 0 (and the undeclared writes its attempts
 * made forgotten), each of `indices`; every task skipped because of one of them (`skippedBy`,
 * transitively) goes back to pending with its result cleared. Tasks that still cannot run for
 * another reason are skipped again (cascade).
 */
export function retryTasks(plan: Plan, indices: readonly number[]): InterventionsResult {
  const found = targets(plan, indices, 'retry', ['failed', 'blocked']);
  if (!found.ok) return found;
  const next = clonePlan(plan);
  const reset = (task: Task) => {
    task.status = 'pending';
    delete task.result;
    delete task.skippedBy;
  };
  const retried = found.value.map(({ index, from }): Change => {
    const task = taskAt(next.tasks, index);
    reset(task);
    task.attempts = 0;
    // A fresh start: no earlier attempt's undeclared writes count against it, nor its advice. What
    // an attempt set aside stays recorded (and on its ref) until a later attempt replaces it.
    delete task.undeclaredWrites;
    delete task.retryAdvice;
    return { task: index, subject: task.subject, from, to: 'pending', note: 'attempts reset to 0' };
  });
  // Each task skipped because of a retried one, with the retried task it goes back to.
  const cause = new Map<number, number>(found.value.map(({ index }) => [index, index]));
  for (let grew = true; grew; ) {
    grew = false;
    plan.tasks.forEach((other, i) => {
      const root = other.skippedBy === undefined ? undefined : cause.get(other.skippedBy);
      if (statusOf(other) === 'skipped' && root !== undefined && !cause.has(i)) {
        cause.set(i, root);
        grew = true;
      }
    });
  }
  const unskipped = [...cause.keys()].filter((i) => cause.get(i) !== i).sort((a, b) => a - b);
  for (const i of unskipped) reset(taskAt(next.tasks, i));
  const reskipped = cascadeChanges(next);
  const again = new Map(reskipped.map((c) => [c.task, c]));
  const changes: Change[] = [];
  for (const i of unskipped) {
    const c = again.get(i);
    if (c) again.delete(i); // still skipped, now because of another task: no net change of status
    changes.push(
      c
        ? { task: i, subject: taskAt(next.tasks, i).subject, from: 'skipped', to: 'skipped', note: `still skipped: ${c.note}` }
        : { task: i, subject: taskAt(next.tasks, i).subject, from: 'skipped', to: 'pending', note: `was skipped because of task ${cause.get(i)}` },
    );
  }
  changes.push(...again.values());
  return ok({ plan: next, changes: [...retried, ...changes.sort((a, b) => a.task - b.task)] });
}

/** pending, failed or blocked → skipped with the reason, each of `indices`; tasks depending on them are skipped. */
export function skipTasks(plan: Plan, indices: readonly number[], reason: string): InterventionsResult {
  const missing = needReason(reason, 'skip');
  if (missing) return err([missing]);
  const found = targets(plan, indices, 'skip', ['pending', 'failed', 'blocked']);
  if (!found.ok) return found;
  const next = clonePlan(plan);
  const changes = found.value.map(({ index, from }): Change => {
    const task = taskAt(next.tasks, index);
    task.status = 'skipped';
    task.result = `skipped by hand: ${reason.trim()}`;
    delete task.skippedBy; // a task skipped by a person is its own root cause
    return { task: index, subject: task.subject, from, to: 'skipped', note: reason.trim() };
  });
  return ok({ plan: next, changes: [...changes, ...cascadeChanges(next)] });
}

/** Paths to add to a task's declared files, by list. */
export interface Declared {
  create: readonly string[];
  modify: readonly string[];
  mayChange: readonly string[];
}

/**
 * `plan declare`: `declared` join task `index`'s declared files; a blocked or failed task is put
 * back as `retry` puts it (attempts reset, what was skipped because of it back to pending). When
 * that declares everything its last attempt set aside (kept on its ref), its next start
 * re-checks that work before a worker is paid (`recheck`). Allowed while the task is pending,
 * blocked or failed. The caller validates the plan this makes.
 */
export function declareFiles(plan: Plan, index: number, declared: Declared): InterventionResult {
  const t = target(plan, index, 'declare', ['pending', 'blocked', 'failed']);
  if (!t.ok) return t;
  const all = [...declared.create, ...declared.modify, ...declared.mayChange];
  if (all.length === 0) return err(`nothing to declare for task ${index}: name the files (or --needed, for those its attempts wanted)`);
  const widened = clonePlan(plan);
  let task = taskAt(widened.tasks, index);
  task = withDeclared(task, declared.create, 'create');
  task = withDeclared(task, declared.modify, 'modify');
  task = withDeclared(task, declared.mayChange, 'mayChange');
  widened.tasks[index] = task;
  const note = `declares ${all.join(', ')} now`;
  const back =
    t.value === 'pending'
      ? ok<Intervention>({ plan: widened, changes: [{ task: index, subject: task.subject, from: 'pending', to: 'pending', note }] })
      : retryTasks(widened, [index]);
  if (!back.ok) return err(back.error.join('; '));
  const result = back.value;
  const declaredTask = taskAt(result.plan.tasks, index);
  // What its attempts wanted is declared now: it no longer counts against the task.
  delete declaredTask.undeclaredWrites;
  if (recheckable(declaredTask)) declaredTask.recheck = true;
  const [first, ...rest] = result.changes;
  return ok({
    plan: result.plan,
    changes: [
      {
        ...first!,
        note: `${note}${first!.note ? `; ${first!.note}` : ''}${declaredTask.recheck ? '; its next start re-checks the work its last attempt set aside before a worker runs' : ''}`,
      },
      ...rest,
    ],
  });
}
