// What the in-session steps (run/session/session.ts) do to the world beyond the files beside the plan: the
// adapters every run is given (run/adapters.ts: the clock, git, processes, commands, workspaces,
// plan.json, the journal), and what only a session has: the repository as a step sees it (setting
// a run up, the plan's integration ref and workspaces, HEAD), Claude Code's worktrees of the
// subagents, the gate process in the background, the worker hook's hand-out and the sandbox.
// `realSessionIo` is what the plan tool uses; a test gives its own (test/support/engine-rig.ts's
// SessionRig), as a headless run is given its adapters. The session file, the plan and the worker
// prompts are files beside the plan, which a test puts in a scratch directory.

import {
  agentWorktree,
  autoSandbox,
  describeAgentWorktreeProblem,
  type Git,
  integrationRef,
  isAncestor,
  parkedChange,
  readRef,
  removeAgentWorktree,
  workDiff,
} from '../../adapters/index.ts';
import { err, type GitFailure, ok, type ParkedChange, type Plan, type Result, statusOf } from '../../core/index.ts';
import { realRunAdapters, type RunAdapters } from '../adapters.ts';
import { endGateProcess, gateAlive, type GateLaunch, type GateState, launchGate, readGateState } from './gate-process.ts';
import { attemptBoundIn, deniedWritesOf, type HandOutSource, publishHandOut, removeStaleHandOuts, withdrawHandOut } from './hand-out.ts';
import type { GateRunRecord, SessionSandbox } from './session-state.ts';
import { type RunPlaces, type SetupOptions, type SetupReport, setupRun } from '../setup.ts';
import type { SetupProblem } from '../refusals.ts';
import { subagentWorkspaces, type Workspace } from '../workspace/index.ts';

/**
 * The plan's integration ref and workspaces as a step uses them: foreman's own workspaces (a
 * re-check; a check of a task that changes nothing), and the subagents' worktrees.
 */
export interface SessionPlaces extends RunPlaces {
  /**
   * The worktree `dir` Claude Code made for a subagent, handed out at `base`: its work is what
   * changed since `base` when its HEAD descends from it (else, a lost session, since its HEAD).
   */
  subagent(dir: string, base: string | undefined): Promise<Result<Workspace, string>>;
}

/** How a step opens them: its checks' sandbox and time limit. */
export interface WorkspaceChoice {
  sandbox: boolean;
  checkTimeoutMs: number;
  /** A change outside a task's declared files fails its attempt (`setup --strict-scope`). */
  strictScope?: boolean;
}

export interface SessionIo extends RunAdapters {
  repository: {
    /** Set a run up (run/setup.ts): what can refuse it, the plan's integration ref and workspaces, what setup found. */
    setUp(
      plan: Plan,
      options: Omit<SetupOptions, 'repo' | 'planPath' | 'git' | 'open' | 'commands'> & WorkspaceChoice,
    ): Promise<Result<SetupReport<SessionPlaces>, SetupProblem>>;
    open(plan: Plan, use: WorkspaceChoice): Promise<Result<SessionPlaces, GitFailure>>;
    /** HEAD's commit, or null before the first. */
    head(): Promise<string | null>;
    /** The branch checked out, or null on a detached HEAD. */
    branch(): Promise<string | null>;
    /** Integrated tasks whose commit `head` does not contain (none when it holds the whole integration ref). */
    unlanded(plan: Plan, head: string | null): Promise<number[]>;
    /** The work parked for `task` awaiting approval and what it changes, or null when none is. */
    parked(plan: Plan, task: number): Promise<Result<ParkedChange | null, GitFailure>>;
    /** The diff from `base` to `commit`: the work so far a revision's prompt shows. */
    diff(base: string, commit: string): Promise<Result<string, GitFailure>>;
  };
  /** Claude Code's worktrees of the subagents. */
  subagents: {
    /** The worktree a Task result named, if it is a subagent's of this repository: its directory, or why not. */
    find(worktree: string): Promise<Result<string, string>>;
    /** Remove a subagent's worktree and its branch: null when done, else why not. */
    remove(dir: string): Promise<string | null>;
  };
  /** The merge queue's gate process (run/session/gate-process.ts). */
  gate: {
    launch(launch: GateLaunch, run: GateRunRecord): Promise<Result<void, string>>;
    read(): Promise<GateState | null>;
    alive(state: GateState): boolean;
    /** End a gate process left running; what was ended. */
    end(): Promise<string[]>;
  };
  /** What the worker hook is told (run/session/hand-out.ts). */
  handOut: {
    publish(plan: Plan, source: Pick<HandOutSource, 'running' | 'sandbox' | 'promptFile' | 'parked'>): Promise<void>;
    withdraw(): Promise<void>;
    removeStale(): Promise<void>;
    /** The undeclared paths the worker hook refused the worker of `task`'s attempt `attempt`. */
    deniedWrites(task: number, attempt: number): Promise<string[]>;
    /** Whether the worker hook bound a subagent to `task`'s attempt `attempt` (and made its worktree ready). */
    bound(task: number, attempt: number): Promise<boolean>;
  };
  /** The sandbox `auto` finds, for a setup given no decision (and a session file of an earlier version). */
  sandbox(): Promise<SessionSandbox>;
}

/** Where a step works: the repository, the plan, the environment of its commands. */
export interface SessionPlace {
  repo: string;
  planPath: string;
  git: Git;
  env?: NodeJS.ProcessEnv;
}

/** The in-session steps' I/O in the repository, its files and its processes. */
export function realSessionIo(place: SessionPlace): SessionIo {
  const env = place.env ?? process.env;
  const adapters = realRunAdapters({ ...place, env });
  const open = async (plan: Plan, use: WorkspaceChoice): Promise<Result<SessionPlaces, GitFailure>> => {
    const integration = await adapters.integration.open(plan);
    if (!integration.ok) return integration;
    const local = await adapters.workspaces.open(
      plan,
      integration.value,
      {
        sandbox: use.sandbox,
        setupTimeoutMs: use.checkTimeoutMs,
        checkTimeoutMs: use.checkTimeoutMs,
        strictScope: use.strictScope === true,
        // A session's workers are the lead's subagents: no worker log, no --widen.
        logDir: null,
        markTracked: false,
      },
      adapters.workers,
    );
    return ok({ integration: integration.value, workspaces: local, subagent: subagentWorkspaces(local, integration.value.repo, place.git) });
  };
  return {
    ...adapters,
    repository: {
      setUp: (plan, options) =>
        setupRun(plan, {
          ...options,
          repo: place.repo,
          planPath: place.planPath,
          git: place.git,
          commands: adapters.commands,
          open: () => open(plan, options),
        }),
      open,
      head: () => place.git.headCommit(),
      branch: () => place.git.currentBranch(),
      unlanded: (plan, head) => unlandedTasks(plan, place.repo, head),
      parked: async (plan, task) => (typeof plan.planId === 'string' ? parkedChange(place.repo, plan.planId, task) : ok(null)),
      diff: (base, commit) => workDiff(place.repo, base, commit),
    },
    subagents: {
      async find(worktree) {
        const found = await agentWorktree(place.repo, worktree);
        return found.ok ? ok(found.value.dir) : err(describeAgentWorktreeProblem(found.error));
      },
      async remove(dir) {
        const removed = await removeAgentWorktree(place.repo, dir);
        return removed.ok ? null : describeAgentWorktreeProblem(removed.error);
      },
    },
    gate: {
      launch: launchGate,
      read: () => readGateState(place.planPath),
      alive: gateAlive,
      end: () => endGateProcess(place.planPath),
    },
    handOut: {
      publish: (plan, source) => publishHandOut(plan, { ...source, repo: place.repo, planPath: place.planPath, env }),
      withdraw: () => withdrawHandOut(env),
      removeStale: () => removeStaleHandOuts(place.planPath, env),
      deniedWrites: (task, attempt) => deniedWritesOf(env, task, attempt),
      bound: (task, attempt) => attemptBoundIn(env, task, attempt),
    },
    sandbox: autoSandbox,
  };
}

/**
 * Integrated tasks whose commit HEAD does not contain: landing was blocked, or has not happened
 * yet. None when HEAD holds the whole integration ref.
 */
async function unlandedTasks(plan: Plan, repo: string, head: string | null): Promise<number[]> {
  const tip = typeof plan.planId === 'string' ? await readRef(repo, integrationRef(plan.planId)) : ok(null);
  if (head === null || (tip.ok && (tip.value === null || (await isAncestor(repo, tip.value, head))))) return [];
  // The tip only spares the look at each task (HEAD holds it all): unread, each integrated task is looked at.
  const known = new Map<string, boolean>();
  const out: number[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusOf(task) !== 'completed' || !task.commit) continue;
    if (!known.has(task.commit)) known.set(task.commit, await isAncestor(repo, task.commit, head));
    if (!known.get(task.commit)) out.push(i);
  }
  return out;
}
