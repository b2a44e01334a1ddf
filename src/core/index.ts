// The pure core: the plan, attempts, limits, the sandbox's rules, hosts, integration, the engine and the reports; no I/O.
// What the rest of foreman uses from this folder; its other files are its own.

export * from './attempt/index.ts';
export { approvalHint, commandHint, type Layout, shellWord } from './command-hint.ts';
export * from './engine/index.ts';
export {
  clipHead,
  clipMiddle,
  clipTail,
  compactTimestamp,
  formatClock,
  formatCost,
  formatCostExact,
  formatDuration,
  formatElapsed,
  formatSeconds,
  isoSeconds,
  listIndices,
  namedTasks,
  oneLine,
  plural,
  wrapWords,
} from './format.ts';
export * from './hosts/index.ts';
export * from './integration/index.ts';
export * from './limits/index.ts';
export * from './plan/index.ts';
export * from './report/index.ts';
export { assertNever, err, ok, type Result } from './result.ts';
export * from './sandbox/index.ts';
