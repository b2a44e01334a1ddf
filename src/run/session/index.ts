// The in-session run: `/foreman:execute`'s steps (setup, next, finalize, commit) over the session file, and its gate process.
// What the rest of foreman uses from this folder; its other files are its own.

export { readSession } from './file.ts';
export type { WorkerResult } from './finalize-step.ts';
export { DEFAULT_GATE_WAIT_MS } from './gate-driver.ts';
export { endGateProcess, serveGate } from './gate-process.ts';
export type { NextOutput } from './next-step.ts';
export type { SessionSandbox } from './session-state.ts';
export { sessionCommit, sessionFinalize, sessionNext, sessionSetup } from './session.ts';
export type { SessionContext } from './skeleton.ts';
