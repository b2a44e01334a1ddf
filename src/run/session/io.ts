// What the in-session steps (run/session.ts) do to the world beyond the files beside the plan: the
// adapters every run is given (run/adapters.ts: the clock, git, processes, commands, workspaces,
// plan.json, the journal), and what only a session has: the repository as a step sees it (setting
// a run up, the plan's integration ref and worktrees, HEAD), Claude Code's worktrees of the
// subagents, the gate process in the background, the worker hook's hand-out and the sandbox.
// `realSessionIo` is what the plan tool uses; a test gives its own (test/support/engine-rig.ts's
// SessionRig), as a headless run is given its adapters. The session file, the plan and the worker
// prompts are files beside the plan, which a test puts in a scratch directory.

import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { agentWorktree, describeAgentWorktreeProblem, removeAgentWorktree } from '../../adapters/git/agent-worktrees.ts';
import type { Git } from '../../adapters/git/repository.ts';
import { parkedChange, workDiff } from '../../adapters/git/parked-change.ts';
import { integrationRef, isAncestor, readRef, resolveCommit } from '../../adapters/git/refs.ts';
import { WORKTREE_INCLUDE, symlinkDirectoriesOf } from '../../adapters/git/worktree-pool.ts';
import { autoSandbox } from '../../adapters/sandbox.ts';
import type { RecordRequest } from '../../core/engine/effects.ts';
import { type Result, err, ok } from '../../core/failure.ts';
import type { Verification } from '../../core/finalize.ts';
import type { GitFailure } from '../../core/git-text.ts';
import type { ParkedChange } from '../../core/parked-change.ts';
import { type Plan, statusOf } from '../../core/plan.ts';
import type { Isolation } from '../isolation.ts';
import { type RunAdapters, realRunAdapters } from '../adapters.ts';
import { type GateLaunch, type GateState, endGateProcess, gateAlive, launchGate, readGateState } from './gate-process.ts';
import { type HandOutSource, attemptBoundIn, deniedWritesOf, publishHandOut, removeStaleHandOuts, withdrawHandOut } from './hand-out.ts';
import type { LandingIsolation } from '../lifecycle.ts';
import type { GateRunRecord, SessionSandbox } from './file.ts';
import { type SetupOptions, type SetupProblem, type SetupReport, setupRun } from '../setup.ts';
import { type StageContext, verifyAttempt } from '../stages.ts';

/** The plan's integration ref and worktrees, as a step uses them. */
export interface SessionIsolation extends LandingIsolation {
  readonly repo: string;
  /** The integration tip. */
  readonly tip: string;
  /** Work the person committed on top of everything integrated becomes the new starting point. */
  followHead(): Promise<void>;
  /** Integrate verified work (park, hold, drop candidates): the integration commit, or null when nothing changed. */
  record(plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>>;
  /**
   * Capture and verify `task`'s attempt where its subagent worked: its `worktree` (none: it changed
   * nothing, Claude Code removed it), from `base`, the commit `next` handed it out at.
   */
  verify(plan: Plan, task: number, work: { worktree?: string; base?: string }): Promise<Verification>;
  /** A worktree of foreman's for re-checking the work `task`'s last attempt set aside, at `commit` (core/widen.ts). */
  prepareRecheck(task: number, commit: string): Promise<Result<string, string>>;
  /** Verify the re-check in the worktree `prepareRecheck` made. */
  verifyRecheck(plan: Plan, task: number): Promise<Verification>;
  /** Done with that worktree. */
  release(task: number): void;
}

/** How a step opens the plan's isolation: its checks' sandbox and time limit. */
export interface IsolationUse {
  sandbox: boolean;
  checkTimeoutMs: number;
  /** A change outside a task's declared files fails its attempt (`setup --strict-scope`). */
  strictScope?: boolean;
}

/** What setup found, with the isolation a step uses. */
export type SessionSetupReport = Omit<SetupReport, 'isolation'> & { isolation: SessionIsolation };

export interface SessionIo extends RunAdapters {
  repository: {
    /** Set a run up (run/setup.ts): what can refuse it, the plan's isolation, what setup found. */
    setUp(
      plan: Plan,
      options: Omit<SetupOptions, 'repo' | 'planPath' | 'git' | 'openIsolation' | 'commands'> & IsolationUse,
    ): Promise<Result<SessionSetupReport, SetupProblem>>;
    open(plan: Plan, use: IsolationUse): Promise<Result<SessionIsolation, GitFailure>>;
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
  const open = (plan: Plan, use: IsolationUse) => adapters.workspaces.open(plan, { sandbox: use.sandbox, setupTimeoutMs: use.checkTimeoutMs });
  const forStep = (isolation: Isolation, use: IsolationUse) =>
    sessionIsolation(
      isolation,
      {
        isolation,
        checkTimeoutMs: use.checkTimeoutMs,
        commands: adapters.commands,
        sandbox: use.sandbox,
        ...(use.strictScope ? { strictScope: true } : {}),
      },
      place,
    );
  return {
    ...adapters,
    repository: {
      async setUp(plan, options) {
        const set = await setupRun(plan, {
          ...options,
          repo: place.repo,
          planPath: place.planPath,
          git: place.git,
          commands: adapters.commands,
          openIsolation: () => open(plan, options),
        });
        return set.ok ? ok({ ...set.value, isolation: forStep(set.value.isolation, options) }) : set;
      },
      async open(plan, use) {
        const opened = await open(plan, use);
        return opened.ok ? ok(forStep(opened.value, use)) : opened;
      },
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

/** The isolation a step uses: run/isolation.ts's, verifying a subagent's work with the headless engine's verify stage. */
function sessionIsolation(isolation: Isolation, stages: StageContext, place: SessionPlace): SessionIsolation {
  // What Claude Code provisioned in a subagent's worktree, read once, when a verification needs it.
  let provisioned: Promise<string[]> | null = null;
  return {
    repo: isolation.repo,
    planId: isolation.planId,
    ref: isolation.ref,
    get tip() {
      return isolation.tip;
    },
    followHead: () => isolation.followHead(),
    record: (plan, request) => isolation.record(plan, request),
    land: (options) => isolation.land(options),
    removeWorktrees: () => isolation.removeWorktrees(),
    removeRefs: () => isolation.removeRefs(),
    async verify(plan, task, work) {
      provisioned ??= claudeProvisioned(place);
      return verifySubagent(stages, plan, task, { ...work, kept: await provisioned, repo: place.repo });
    },
    prepareRecheck: (task, commit) => isolation.prepareRecheck(task, commit),
    async verifyRecheck(plan, task) {
      const workspace = isolation.workspaceOf(task);
      if (workspace === null) return err(`task ${task} has no re-check worktree`);
      return verifyAttempt(stages, plan, task, { dir: workspace.dir });
    },
    release: (task) => isolation.release(task),
  };
}

/**
 * Verify a COMPLETED report in the subagent's worktree, from the commit `next` handed it out at.
 * A subagent that changed nothing has no worktree (Claude Code removed it): its work is empty,
 * so the spot-check fails for every declared file; a task that declares none is checked in a
 * worktree of the integration tip.
 */
async function verifySubagent(
  stages: StageContext,
  plan: Plan,
  index: number,
  input: { worktree?: string; base?: string; kept: string[]; repo: string },
): Promise<Verification> {
  if (input.worktree !== undefined) {
    // The base must be where the worktree started: else (a lost session) its HEAD is.
    const head = await resolveCommit(input.worktree);
    const base = input.base !== undefined && head !== null && (await isAncestor(input.repo, input.base, head)) ? input.base : undefined;
    return verifyAttempt(stages, plan, index, { dir: input.worktree, kept: input.kept, ...(base !== undefined ? { base } : {}) });
  }
  const task = plan.tasks[index]!;
  const { create, modify } = task.metadata.files;
  if (create.length > 0 || modify.length > 0) {
    return ok({
      missingCreated: [...create],
      unchangedModified: [...modify],
      outsideChanges: [],
      acceptance: [],
      work: { base: input.base ?? stages.isolation.tip, entries: [] },
    });
  }
  const prepared = await stages.isolation.prepare(index);
  if (!prepared.ok) return err(prepared.error);
  try {
    return await verifyAttempt(stages, plan, index, { dir: prepared.value });
  } finally {
    stages.isolation.release(index);
  }
}

/**
 * What provisioning put in a subagent's worktree, never the worker's change: Claude Code links
 * the `worktree.symlinkDirectories` folders and copies the ignored files `.worktreeinclude` lists.
 */
async function claudeProvisioned(place: SessionPlace): Promise<string[]> {
  const linked = await symlinkDirectoriesOf(place.repo);
  const includeFile = join(place.repo, WORKTREE_INCLUDE);
  const included = (await lstat(includeFile).catch(() => null))?.isFile() ? await place.git.ignoredFilesListedIn(includeFile) : [];
  return [...new Set([...linked, ...included])].sort();
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
