// The worker: a real `claude -p` process, its stream-json read live, its log, its settings and login, and the prompts handed out to subagents.
// What the rest of foreman uses from this folder; its other files are its own.

export { authStatus } from './claude-auth.ts';
export {
  attemptBound,
  bindWorker,
  deniedWrites,
  handOutRoot,
  readBinding,
  readHandOut,
  recordDeniedWrite,
  removeHandOut,
  sessionsOfPlan,
  workerFiles,
  writeHandOut,
  writeSandboxSettings,
} from './hand-out.ts';
export { logFailedChecks } from './worker-log.ts';
export type { WorkerPlace, WorkerProcess, WorkerProcessEnd } from './worker-place.ts';
export type { WorkerRequest } from './worker-request.ts';
export { killAllWorkers, runWorker } from './worker.ts';
