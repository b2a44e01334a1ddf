// The commands foreman runs itself — acceptance and assumption checks, the plan's setup command,
// the gate — in one adapter: each a shell in a process group of its own (checks.ts), in the
// operating-system sandbox when it is given one, and recorded while it runs (orphans.ts) so a run
// after a crash ends it. The run's environment and its registry are bound once, where the run is
// set up; the stages that run commands are given this, and tests give their own.

import { runShell, type ShellResult } from './checks.ts';
import { type ProcessRegistry, type ProcessRole, recorded, type SpawnHooks } from '../processes/index.ts';
import type { CommandSandbox } from './sandbox-spawn.ts';

/** One command to run. */
export interface CommandRun {
  cwd: string;
  timeoutMs: number;
  /** What it is, as the registry records it while it runs; null: not recorded (a probe's setup command, in a checkout removed after it). */
  role: ProcessRole | null;
  signal?: AbortSignal;
  /** Run it in the operating-system sandbox with these limits; absent: unsandboxed. */
  sandbox?: CommandSandbox;
}

export interface Commands {
  run(command: string, run: CommandRun): Promise<ShellResult>;
}

/** Commands run by a shell with `env`, each recorded in `registry` (when given) while it runs. */
export function shellCommands(env: NodeJS.ProcessEnv | undefined, registry?: ProcessRegistry): Commands {
  return {
    run: (command, run) => {
      const start = (hooks: SpawnHooks = {}) =>
        runShell(command, {
          cwd: run.cwd,
          timeoutMs: run.timeoutMs,
          env,
          signal: run.signal,
          ...hooks,
          ...(run.sandbox ? { sandbox: run.sandbox } : {}),
        });
      return run.role === null ? start() : recorded(registry, run.role, start);
    },
  };
}
