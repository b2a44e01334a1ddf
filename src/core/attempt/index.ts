// An attempt of a task: its worker's run and report, the verification's decisions, failures, widening, transitions, prompts and interventions.
// What the rest of foreman uses from this folder; its other files are its own.

export { type AcceptanceResult, describeCheckEnd } from './attempt-failure.ts';
export { withDeniedPaths } from './denied-writes.ts';
export {
  type CheckedWork,
  decideAttempt,
  type Decided,
  type Decision,
  type EndingDecision,
  judgeRun,
  type PassingDecision,
  undeclaredWritesOf,
  type Verification,
  verificationWarnings,
} from './finalize.ts';
export {
  approveTasks,
  type Change,
  type Declared,
  declareFiles,
  describeChange,
  type InterventionsResult,
  rejectTasks,
  retryTasks,
  reviseTasks,
  skipTasks,
} from './interventions.ts';
export { parseStatusLine, resumePrompt, workerPrompt } from './prompt.ts';
export { type SetAside, setAsideSummary } from './set-aside-words.ts';
export {
  type Applied,
  applyApproved,
  applyCancelled,
  applyDecision,
  applySetupFindings,
  commitAfter,
  markStarted,
  noFindings,
  recordUndeclared,
  type SetupFindings,
  statusAfter,
  widenDeclared,
} from './transition.ts';
export { neededPaths, recheckable, type WantedPath, wantedPaths, widenRefusal } from './widen.ts';
export { type CapturedWork, pathsOf, type WorkEntry } from './work.ts';
export {
  type ApiRetryInfo,
  type AssistantErrorInfo,
  type Classification,
  classifyOutcome,
  type ExitInfo,
  type ResultInfo,
  type StreamFacts,
} from './worker-outcome.ts';
export { describeWorkerFailure, type PermissionDenial, recheckRun, type WorkerFailure, type WorkerRun } from './worker-run.ts';
