// The plan model: tasks, their graph, overlaps, scope, the schedule policy, usage figures, validation and the lint.
// What the rest of foreman uses from this folder; its other files are its own.

export { applyCascade, type CascadeOutcome } from './cascade-skips.ts';
export { type BreakerDecision, countByStatus, depsOf, depths, longestRemainingPath, readySet, type Skip, stall } from './graph.ts';
export { describeJsonError, isRecord } from './json-text.ts';
export * from './lint/index.ts';
export { mermaidGraph } from './mermaid.ts';
export { computeOverlaps, overlapSets } from './overlap.ts';
export { planOverview } from './overview.ts';
export { coveredBy, isDirPath, pathsIntersect } from './paths.ts';
export {
  attemptsOf,
  clonePlan,
  DEFAULT_REVIEW_ROUNDS,
  ensurePlanId,
  modelOf,
  type Plan,
  type PlanContext,
  readsOf,
  statusOf,
  type Task,
  taskAt,
  type TaskReview,
  type TaskSetAside,
  type TaskStatus,
  writesOf,
} from './plan.ts';
export { describeReviews, type EarlierWork, openReview, reviewRoundsAllowed, revisionStart } from './review.ts';
export { byPriority, parallelGroups, pickStarts, projectedRounds, SCHEDULE_POLICIES, type SchedulePolicy } from './schedule.ts';
export {
  AUTH_SETTING_KEYS,
  escapeRulePath,
  explicitPermissions,
  planPermissions,
  workerPermissions,
  type WorkerPermissions,
  type WorkerSandbox,
  workerSettings,
} from './scope.ts';
export { closestName } from './spelling.ts';
export {
  addUsage,
  emptyTally,
  emptyUsage,
  formatCostFigure,
  formatCostTally,
  mergeTallies,
  tallyAdd,
  tallyCostUsd,
  tallyOf,
  UNKNOWN,
  type Usage,
  type UsageFigure,
  type UsageTally,
} from './usage.ts';
export { parsePlan, type ValidateOptions, validatePlan, withDefaults } from './validate.ts';
