// The plan model (schemaVersion 3). Pure data types and defaults; no I/O.
// A task's id is its index in `tasks`. Unknown fields are carried through untouched,
// because plans are written by models and by people and we must not drop their notes.

export const SCHEMA_VERSION = 3;

export const TASK_STATUSES = [
  'pending',
  'in_progress',
  'completed',
  'failed',
  'blocked',
  'skipped',
  'awaiting_approval',
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** States a task never leaves on its own (only a person, via retry/approve/reject, moves it). */
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'blocked', 'skipped']);

export const TASK_TYPES = ['research', 'implementation', 'testing', 'configuration'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export const DEFAULT_MODEL = 'sonnet';

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
}

export interface TaskMetadata {
  type?: TaskType;
  files: TaskFiles;
  reads?: string[];
  [extra: string]: unknown;
}

/** What a finished worker cost; summed over attempts. */
export interface Usage {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

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
  usage?: Usage;
  /** For a task skipped by cascade: the failed or blocked task at the root of it. */
  skippedBy?: number;
  /** Commit that holds the task's files, once committed. */
  commit?: string;
  [extra: string]: unknown;
}

export interface PlanContext {
  stack?: string;
  conventions?: string;
  testCommand?: string;
  buildCommand?: string;
  lsp?: unknown;
  [extra: string]: unknown;
}

export interface PlanProgress {
  completedTasks?: number[];
  surprises?: string[];
  decisions?: string[];
  [extra: string]: unknown;
}

export interface Plan {
  schemaVersion: 3;
  goal: string;
  context?: PlanContext;
  progress?: PlanProgress;
  tasks: Task[];
  [extra: string]: unknown;
}

export const statusOf = (task: Task): TaskStatus => task.status ?? 'pending';
export const attemptsOf = (task: Task): number => task.attempts ?? 0;
export const modelOf = (task: Task): string => task.agent?.model ?? DEFAULT_MODEL;

/** Every path the task writes (creates or modifies). */
export const writesOf = (task: Task): string[] => [...task.metadata.files.create, ...task.metadata.files.modify];
export const readsOf = (task: Task): string[] => task.metadata.reads ?? [];

export const emptyUsage = (): Usage => ({
  costUsd: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
});

export const addUsage = (a: Usage, b: Usage): Usage => ({
  costUsd: a.costUsd + b.costUsd,
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
  cacheCreationTokens: a.cacheCreationTokens + b.cacheCreationTokens,
});

/** Deep copy; plans are plain JSON. */
export const clonePlan = (plan: Plan): Plan => structuredClone(plan);
