// The journal's events and what is read from them: runs, attempts, gate runs, history, the Gantt chart and the report.
// What the rest of foreman uses from this folder; its other files are its own.

export {
  type DryRunEventBody,
  isJournaled,
  type PlannedCommand,
  type RunEvent,
  type RunEventBody,
  type RunEventType,
  type RunOutcome,
  skippedEvents,
  type StopReason,
  type TaskOutcome,
} from './events.ts';
export { type Archive, historyEntries, parseArchiveStamp, planTally, runForArchive } from './history.ts';
export { describeHosts, hostEvents } from './host-listing.ts';
export { groupRuns, type RunRecord, timeOf } from './journal.ts';
export { renderReport, reportData } from './markdown.ts';
export { type RunningTask, stoppedRun, type StoppedRun, unfinishedRun, type UnfinishedRun } from './runs.ts';
