// The plan model (schemaVersion 3). Pure data types and defaults; no I/O.
// A task's id is its index in `tasks`. Unknown fields are carried through untouched,
// because plans are written by models and by people and we must not drop their notes (the lint
// warns of them, core/plan/plan-fields.ts, but for `x-` keys: the person's own).

import { randomUUID } from 'node:crypto';
import type { UsageFigure } from './usage.ts';

export const SCHEMA_VERSION = 3;

export const TASK_STATUSES = ['pending', 'in_progress', 'completed', 'failed', 'blocked', 'skipped', 'awaiting_approval'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TASK_TYPES = ['research', 'implementation', 'testing', 'configuration'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export const DEFAULT_MODEL = 'sonnet';

/** How many rounds of review (`plan revise`) a task may have unless the plan says (`context.maxReviewRounds`). */
export const DEFAULT_REVIEW_ROUNDS = 3;

/** The model aliases the Claude Code CLI accepts for `--model` (its own list, 2.1.330); a full name (`claude-…`) is passed on as it is. */
export const MODEL_ALIASES = ['sonnet', 'opus', 'haiku', 'fable', 'best', 'sonnet[1m]', 'opus[1m]', 'fable[1m]', 'opusplan'] as const;

/** Whether the CLI knows `model`: one of its aliases (in any case, as it reads them), or a full Claude model name, also behind a provider's prefix (`us.anthropic.claude-…`). */
export const isKnownModel = (model: string): boolean => {
  const name = model.trim().toLowerCase();
  return (MODEL_ALIASES as readonly string[]).includes(name) || /(?:^|[./])claude-[a-z0-9]/.test(name);
};

export interface ContextFile {
  path: string;
  reason?: string;
  lines?: string;
  [extra: string]: unknown;
}

export interface Assumption {
  claim: string;
  verify: string;
  severity: 'blocking' | 'warning';
  [extra: string]: unknown;
}

export interface AcceptanceCriterion {
  criterion: string;
  check: string;
  [extra: string]: unknown;
}

export interface Agent {
  role?: string;
  model?: string;
  approach?: string;
  contextFiles?: ContextFile[];
  assumptions?: Assumption[];
  acceptanceCriteria?: AcceptanceCriterion[];
  rollbackTriggers?: string[];
  constraints?: string[];
  fallback?: string;
  expertise?: string;
  priorArt?: string;
  /** Spend cap handed to the worker as `--max-budget-usd`. */
  maxBudgetUsd?: number;
  [extra: string]: unknown;
}

export interface TaskFiles {
  create: string[];
  modify: string[];
  /** Paths the task may change but need not (a lockfile an install rewrites, snapshots a test run updates, generated files): integrated when changed, never required. */
  mayChange?: string[];
}

export interface TaskMetadata {
  type?: TaskType;
  files: TaskFiles;
  reads?: string[];
  [extra: string]: unknown;
}

/** A task's record of what an attempt set aside (core/attempt/set-aside-words.ts `SetAside`, as kept in the plan). */
export interface TaskSetAside {
  attempt: number;
  paths: string[];
  /** The commit holding the attempt's whole work on its starting commit (`refs/foreman-aside/<planId>/<task>`); absent when it could not be kept. */
  commit?: string;
}

/**
 * One round of a person's review (`plan revise`): the task's parked work goes back to a worker
 * with their words, and its next attempts start from that work (core/plan/review.ts).
 */
export interface TaskReview {
  /** When the person asked for the changes (ISO). */
  at: string;
  /** Their words, verbatim: the revision's prompt carries them. */
  feedback: string;
  /** The parked work the round revises: the commit holding it (its awaiting ref's) and the commit that work started from (its parent). */
  commit: string;
  base: string;
  /** What the parked work's worker reported: the task's result again when the round fails. */
  result?: string;
  /** `open` while the round runs; `parked`: its revision was verified and awaits approval; `failed`: its attempts ran out, and the earlier work awaits approval again. */
  outcome: ReviewOutcome;
  /** The task's attempts before the round: a round spends none of them (its own count from 0, as a task's, up to the retry limit). */
  attemptsBefore: number;
  /** The attempts the round took, once it ended. */
  attempts?: number;
  /** Why a failed round failed (its last attempt's failure). */
  failure?: string;
  [extra: string]: unknown;
}

export const REVIEW_OUTCOMES = ['open', 'parked', 'failed'] as const;
export type ReviewOutcome = (typeof REVIEW_OUTCOMES)[number];

export interface Task {
  subject: string;
  description?: string;
  activeForm?: string;
  status?: TaskStatus;
  result?: string;
  attempts?: number;
  blockedBy: number[];
  metadata: TaskMetadata;
  agent?: Agent;
  /** Optional for tasks that are already completed: trimming removes it. */
  prompt?: string;
  fileOverlaps?: number[];
  /** `human-approval`: the task stops as `awaiting_approval` after its work is verified. */
  gate?: 'human-approval';
  usage?: UsageFigure;
  /** For a task skipped by cascade: the failed or blocked task at the root of it. */
  skippedBy?: number;
  /** Commit that holds the task's files, once committed. */
  commit?: string;
  /** Paths outside its declared files that the task's attempts changed (set aside) or were refused writing: an attempt that does so again ends the task blocked. */
  undeclaredWrites?: string[];
  /** What its last attempt changed outside its declared files, set aside before its checks, and where it was kept. */
  setAside?: TaskSetAside;
  /** What the next attempt's prompt tells the worker to do about the last failure (beside `result`). */
  retryAdvice?: string;
  /** Set when the task was widened to declare what its last attempt set aside: its next start re-checks that work before any worker runs. */
  recheck?: boolean;
  /** The rounds of a person's review (`plan revise`), oldest first; the last is `open` while its revision runs. */
  reviews?: TaskReview[];
  [extra: string]: unknown;
}

export interface PlanContext {
  stack?: string;
  conventions?: string;
  testCommand?: string;
  buildCommand?: string;
  /** The command that prepares a fresh checkout (e.g. `npm ci`): run in every new worktree, and in the probe's checkout. */
  setupCommand?: string;
  /** Files whose change makes a reused worktree run the setup command again (default: the usual lock and manifest files). */
  setupInputs?: string[];
  /** Hosts sandboxed checks and workers' Bash commands may reach; none without it. */
  checkNetwork?: string[];
  /**
   * Hosts the sandboxed setup command may reach besides the package registries foreman allows by
   * default; with the entry `no-defaults`, instead of them.
   */
  setupNetwork?: string[];
  /** How many rounds of review (`plan revise`) a task may have (default `DEFAULT_REVIEW_ROUNDS`). */
  maxReviewRounds?: number;
  lsp?: unknown;
  [extra: string]: unknown;
}

export interface PlanProgress {
  completedTasks?: number[];
  surprises?: string[];
  decisions?: string[];
  [extra: string]: unknown;
}

/** A warning of the plan lint its author accepts: the warning's line, as `plan check` prints it, and why. */
export interface AcceptedWarning {
  warning: string;
  reason: string;
  [extra: string]: unknown;
}

export interface Plan {
  schemaVersion: 3;
  goal: string;
  context?: PlanContext;
  progress?: PlanProgress;
  tasks: Task[];
  /** Warnings of the plan lint (core/plan/lint/plan-lint.ts) the plan's author accepts: no longer reported. */
  acceptedWarnings?: AcceptedWarning[];
  [extra: string]: unknown;
}

/**
 * The task at `index` of `tasks` (a plan's tasks, or a group's task indices). Every index this
 * code reads a task by comes from the plan itself (a blocker, an attempt's task, a validated
 * plan's own lists), so one out of range is a bug here, and it throws naming the index and the
 * count. An index a person or a file names is checked by its reader, which says what is wrong
 * in its own words (core/attempt/interventions.ts `target`, the session file's attempts).
 */
export function taskAt<T>(tasks: readonly T[], index: number): T {
  const task = tasks[index];
  if (task === undefined) throw new Error(`task index ${index} is out of range: there are ${tasks.length} tasks`);
  return task;
}

export const statusOf = (task: Task): TaskStatus => task.status ?? 'pending';
export const attemptsOf = (task: Task): number => task.attempts ?? 0;
export const modelOf = (task: Task): string => task.agent?.model ?? DEFAULT_MODEL;

/** Every path the task writes (creates, modifies, or may change). */
export const writesOf = (task: Task): string[] => [...task.metadata.files.create, ...task.metadata.files.modify, ...(task.metadata.files.mayChange ?? [])];
export const readsOf = (task: Task): string[] => task.metadata.reads ?? [];

/** Deep copy; plans are plain JSON. */
export const clonePlan = (plan: Plan): Plan => structuredClone(plan);

/** The plan's identity in commit trailers; written into the plan on its first run. */
export function ensurePlanId(plan: Plan): string {
  if (typeof plan.planId !== 'string' || plan.planId === '') plan.planId = randomUUID();
  return plan.planId as string;
}
