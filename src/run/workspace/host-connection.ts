// What a host's workspaces (./host.ts) and its workers (./host-worker.ts) share: what they work
// with, the host's channel with the run's folder taken on it, a slot's worktree there, and how a
// command ran there.

import type { BoundedOutput, Git, HostChannel, HostFault, RequestError } from '../../adapters/index.ts';
import type { CommandExit, ObjectFormat, Plan, Result, SshHost } from '../../core/index.ts';
import type { LocalWorkspaces } from './local.ts';

/** What a host's workspaces work with. */
export interface HostContext {
  host: SshHost;
  /** The host's channel: the one the checks opened first, then a new one after a fault. */
  connect: () => Promise<Result<HostChannel, HostFault>>;
  /** The run's local workspaces: the settings, the log and the ref for set-aside work (`verifyWork`). */
  local: LocalWorkspaces;
  repo: string;
  git: Git;
  planId: string;
  plan: Plan;
  objectFormat: ObjectFormat;
  setupTimeoutMs: number;
  /** Workers sandboxed (`--sandbox on`): Claude Code's sandbox on the host (bubblewrap there). */
  sandbox: boolean;
  /** A failure of the host's own: the engine marks it down and loses its attempts. */
  onFault: (host: string, reason: string) => void;
}

/** The host's channel with the run's folder taken on it. */
export interface Connection {
  channel: HostChannel;
  /** The run's folder there, real path. */
  dir: string;
  /**
   * Commits sent into its repository, or being sent: attempts made at once from the same base
   * share one sending (two bundles of one commit at once would race on its ref there), and a later
   * bundle leaves out what they reach.
   */
  sent: Map<string, Promise<Result<void, string>>>;
}

/** How a command ran on the host: its exit and what it printed, or the channel's failure. */
export type HostRun = Result<{ exit: CommandExit; stdout: string; output: BoundedOutput; durationMs: number }, RequestError>;

/** A slot's worktree there: relative to the run's folder (`cwd`), its real path (`dir`). */
export interface HostSlot {
  cwd: string;
  dir: string;
  base: string;
  kept: string[];
}
