// The plan's files: atomic writes, the plan file, the run lock, drain notes and the journal.
// What the rest of foreman uses from this folder; its other files are its own.

export { writeFileAtomic } from './atomic-file.ts';
export { askDrain, forgetDrainAsked } from './drain-note.ts';
export { type Journal, journalPathFor, newRunId, openJournal, readJournal } from './journal.ts';
export { describeKeptEdit, PlanKeeper, readPlanFile, writePlanAtomic } from './plan-file.ts';
export { acquireLock, currentLockInfo, lockHeldMessage, type LockInfo, type LockStatus, type LockTakeover, readLock } from './run-lock.ts';
