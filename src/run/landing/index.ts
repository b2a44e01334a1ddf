// What the plan commands do with a run's work: land it, keep approved work, clean a plan's refs and worktrees, and say where they stand.
// What the rest of foreman uses from this folder; its other files are its own.

export { describeIntegrationFailure, integrateParked } from './approved-work.ts';
export { cleanPlans, planIdsToClean } from './plan-clean.ts';
export {
  archivedPlans,
  describeTargetProblem,
  findLandTarget,
  type LandBlocked,
  type LandReport,
  landTarget,
  type LandTarget,
  repositoryOf,
  runPathOf,
} from './plan-landing.ts';
export { isolationStatus, type IsolationStatus } from './plan-worktrees-status.ts';
