// Commands and checks run in the OS sandbox: its settings, the person's permission rules and denies, its support on this machine.
// What the rest of foreman uses from this folder; its other files are its own.

export { BoundedOutput, DEFAULT_MAX_OUTPUT_BYTES, type ShellResult, withForemanLine } from './checks.ts';
export { type Commands, shellCommands } from './commands.ts';
export { findExecutable } from './executables.ts';
export { workerPersonDenies } from './person-denies.ts';
export { personRules } from './person-rules.ts';
export { realTarget, realTargets } from './real-paths.ts';
export { SANDBOX_TOOLS } from './sandbox-support.ts';
export { type CommandSandbox, type SandboxedSpawn, sandboxedSpawn, type SpawnPlace } from './sandbox-spawn.ts';
export {
  autoSandbox,
  checkSandbox,
  decideSandbox,
  installAdvice,
  ownSandboxNotice,
  type SandboxDecision,
  type SandboxMode,
  sandboxModeOf,
  sandboxRefusal,
  sandboxUse,
  setupCommandSandbox,
} from './sandbox.ts';
