// The plan's lint: what a plan may get wrong that validation lets through, checked against the repository.
// What the rest of foreman uses from this folder; its other files are its own.

export { HOW_TO_ACCEPT, lintPlan, type PlanLint, type PlanWarning, type PlanWarningKind, warningNotices } from './plan-lint.ts';
