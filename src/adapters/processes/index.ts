// Processes: spawning with time limits, reading /proc, markers, signals, orphans and the groups a run tracks.
// What the rest of foreman uses from this folder; its other files are its own.

export { LineSplitter } from './line-splitter.ts';
export { describeOrphans, type KilledOrphan, killOrphans, ProcessRegistry, type ProcessRole, recorded, registryPathFor, type SpawnHooks } from './orphans.ts';
export {
  describeMarked,
  endMarked,
  type MarkedProcess,
  newProcessMarker,
  PROCESS_MARKER_VARIABLE,
  type ProcessMarker,
  RUN_MARKER_VARIABLE,
  runMarker,
} from './process-markers.ts';
export { groupAlive, processAlive, processStartTime, sameProcessAlive, signalGroup, terminateGroup } from './processes.ts';
export { endGroup, endInput, endStarter, forkProcess, holdOpen, type ProcessEnd, type ProcessRequest, runProcess } from './spawner.ts';
export { killTrackedGroups, trackGroup, untrackGroup } from './tracked-groups.ts';
