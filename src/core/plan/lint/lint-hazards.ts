// What the plan lint (plan-lint.ts) finds, before it is worded: one hazard per task and path,
// naming the tasks and paths it is between.

import { statusOf, type Task } from '../plan.ts';

/** A path a task declares and the task declaring it. */
export interface Use {
  task: number;
  path: string;
}

export type Hazard =
  /** `task` modifies `path`, which `creators` create, and no dependency orders them. */
  | { kind: 'unordered-create'; task: number; path: string; creators: Use[] }
  /** `task` modifies `path`, which `creators` create, though they depend on `task`. */
  | { kind: 'create-after-modify'; task: number; path: string; creators: Use[] }
  /** `task` creates `path`, which `first` creates (or created) before it. */
  | { kind: 'duplicate-create'; task: number; path: string; first: number; firstDone: boolean; unordered: boolean }
  /** `task` modifies `path`, which the last commit does not have and no task creates. */
  | { kind: 'missing-file'; task: number; path: string }
  /** `task`'s prompt names the tracked file `path`, which it does not declare. */
  | { kind: 'undeclared-prompt-path'; task: number; path: string }
  /** `task` reads `path`, which `writers` change, and no dependency orders them. */
  | { kind: 'unordered-read'; task: number; path: string; writers: Use[] }
  /** `task` modifies the manifest `path` and declares none of `lockfiles`. */
  | { kind: 'lockfile'; task: number; path: string; lockfiles: string[] }
  /** The acceptance check `criterion` of `task` needs `path`, which the last commit does not have and no task writes. */
  | { kind: 'missing-check-file'; task: number; criterion: number; path: string }
  /** The plan schema defines no field `key` in the object at `parent` (in `task`, or outside the tasks). */
  | { kind: 'unknown-field'; task: number | null; parent: string; key: string }
  /** `task`'s `agent.model` is neither an alias the Claude Code CLI accepts nor a Claude model name; `meant`: the aliases it nearly spells. */
  | { kind: 'unknown-model'; task: number; model: string; meant: string[] }
  /** `acceptedWarnings[index]` accepts a warning the plan does not have. */
  | { kind: 'stale-acceptance'; index: number; warning: string };

export const isDone = (task: Task): boolean => statusOf(task) === 'completed';
