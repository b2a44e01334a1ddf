// The sandbox's and the worker hook's rules: what a worker may touch, denies carried over, the probe's findings.
// What the rest of foreman uses from this folder; its other files are its own.

export { carriedDenies } from './carried-denies.ts';
export {
  clipProbeOutput,
  judgeCheck,
  pendingWrites,
  type ProbeCheck,
  probedTasks,
  probeFindings,
  probeHeadline,
  probeKey,
  type ProbeReport,
  type ProbeSetup,
  type ProbeTask,
  summarize,
  taskVerdict,
} from './probe.ts';
export { type FileDenies, heldDenies, type HeldDenies, pathsToResolve, runtimeWritable } from './sandbox-denies.ts';
export { excludesFileEnv, isCliScratch, isPlaceholderPath, placeholderExcludes } from './sandbox-placeholders.ts';
export {
  describeSandboxUse,
  networkRefusalHint,
  type NetworkSetting,
  NO_DEFAULT_HOSTS,
  planNetwork,
  type SandboxedCommand,
  sandboxedCommands,
  type SandboxUse,
} from './sandbox-words.ts';
export {
  type Binding,
  type CallFacts,
  classifyTool,
  currentBinding,
  decideToolCall,
  type HandedOutTask,
  type HandOut,
  type HookVerdict,
  promptFileRead,
  ruleRootsOf,
  safeId,
  settingsFolders,
  type ToolCall,
  within,
  workerWorktree,
  workerWritable,
  writePath,
  type WriteTarget,
} from './worker-hook.ts';
