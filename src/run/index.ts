// Running a plan: what the headless run and the in-session steps share (setup, the integration, settings, refusals, the run's life).
// What the rest of foreman uses from this folder; its other files are its own.

export { type EventJournal, realRunAdapters } from './adapters.ts';
export { archivePlan } from './archive.ts';
export * from './headless/index.ts';
export { type CheckedHost, checkHosts, cleanOnHosts, type HostCheckNeedsOfRun, type HostCleaning, HostLink } from './hosts.ts';
export * from './landing/index.ts';
export { describeEditBetweenSteps, editedSinceLastStep, rememberPlanFile } from './plan-edits.ts';
export { describeProbeProblem, runProbe, saveProbe, storedProbe } from './probe.ts';
export { describeIgnored, ignoredDeclaredPaths, planRepositoryProblem, planWarningNotices, refusalBeforeWork, type SetupProblem } from './refusals.ts';
export * from './session/index.ts';
export { DEFAULTS, LAND_POLICIES, type LandPolicy, LIMIT_FLAGS, type RunSettings } from './settings.ts';
export * from './workspace/index.ts';
