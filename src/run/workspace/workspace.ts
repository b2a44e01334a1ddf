// Where an attempt works: made at a commit with its provisioning, where its worker runs, its work
// is captured and its checks run, then released. A workspace is an opaque handle: its methods take
// and return data (commits, captured work, check results, the worker's events), never a path, so
// nothing outside an implementation reads its files. The local implementation (local.ts) is a slot
// of the plan's worktree pool, or, in a session, the worktree Claude Code made for a subagent.

import type { ProcessRole, ShellResult, WorkerRequest } from '../../adapters/index.ts';
import type { Place, Plan, Result, Verification, WorkerRun } from '../../core/index.ts';

export interface WorkspaceRequest {
  /** The task whose attempt it is for (-1: none, setup's own or the gate's). */
  task: number;
  /** The commit the workspace holds when made. */
  commit: string;
  /** The commit the attempt starts from, when not `commit`: a re-check's work is what `commit` changed since it. */
  base?: string;
  signal?: AbortSignal;
  /** With hosts: the host and slot the attempt was placed on (core/engine/hosts.ts); absent: here. */
  place?: Place;
}

/**
 * A worker to run in a workspace: the request without what only the workspace knows (where it
 * runs, and so the permission rules anchored there, its environment and sandbox).
 */
export type WorkerJob = Omit<WorkerRequest, 'cwd' | 'allowedTools' | 'deniedTools' | 'env' | 'rulesOf' | 'sandbox' | 'onMarker' | 'onSpawn'> & {
  /** The plan whose task it works on: its rules come from the task's declared files and checks. */
  plan: Plan;
  /** `--allowed-tools`, in place of the task's own rules. */
  allowedTools: string[] | undefined;
};

/** A command run in a workspace as a check (an acceptance or assumption check, the gate). */
export interface CheckUse {
  role: ProcessRole;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** How a check ended; `sandboxRefusal`: it failed and its output shows the sandbox refused its network (what to tell the person). */
export type CheckRun = ShellResult & { sandboxRefusal: string | null };

/** Runs workers: one `claude -p` in its attempt's workspace (a session's workers are Task subagents the lead starts). */
export interface Workers {
  run(request: WorkerRequest): Promise<WorkerRun>;
}

export interface Workspace {
  /** The commit the attempt started from: its work is what changed since. */
  readonly base: string;
  runWorker(job: WorkerJob): Promise<WorkerRun>;
  /** Capture the attempt's work and verify it here: set aside what it changed outside its declared files, the spot-check, the acceptance checks. */
  verify(plan: Plan, task: number, signal?: AbortSignal): Promise<Verification>;
  /** Run `command` here as a check. */
  runCheck(command: string, use: CheckUse): Promise<CheckRun>;
  /** Done with it: it may be made again for another attempt. */
  release(): void;
}

export interface Workspaces {
  /** A workspace at `request.commit`, provisioned; or why it could not be made ready. */
  make(request: WorkspaceRequest): Promise<Result<Workspace, string>>;
  /** Remove every workspace of the plan (its tasks are all done). */
  remove(): Promise<void>;
  /** Tells `listener` of each failure of a host's own (its channel down, git failing there): absent where every workspace is here. */
  onHostFault?(listener: (host: string, reason: string) => void): void;
}
