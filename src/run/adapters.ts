// What a run does to the world, one adapter per concern, in one record (`RunAdapters`): time, the
// person's repository, the processes a run starts (a killed run's leftovers ended first), the
// commands foreman runs itself, the workers, the plan's integration ref and workspaces, plan.json
// and the run's journal. A headless run (run/headless/headless.ts) and the in-session steps (run/session/,
// whose I/O adds what only a session has: run/session/io.ts) are given the same record;
// `realRunAdapters` builds the real one, a test gives fakes. A headless run's events reach the
// journal through the CLI's reporter, which shows each as it journals it.

import {
  type Commands,
  type Git,
  type Journal,
  journalPathFor,
  type KilledOrphan,
  killOrphans,
  openJournal,
  PlanKeeper,
  ProcessRegistry,
  readJournal,
  recorded,
  registryPathFor,
  shellCommands,
  type WorkerRequest,
} from '../adapters/index.ts';
import type { GitFailure, Plan, Result, RunEvent, WorkerRun } from '../core/index.ts';
import { GitIntegration, type Integration, type IntegrationOptions } from './integration.ts';
import type { HostLink } from './hosts.ts';
import { type LocalWorkspaces, openLocalWorkspaces, openPlacedWorkspaces, type Workers, type Workspaces, type WorkspaceUse } from './workspace/index.ts';

/** Time: the real clock, or a test's. */
export interface Clock {
  now(): number;
  /** Call `wake` at `at` (ms); returns a function that cancels it. */
  wakeAt(at: number, wake: () => void): () => void;
  /** Wait `ms` (a step waiting for the gate process). */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  wakeAt: (at, wake) => {
    const timer = setTimeout(wake, Math.max(0, at - Date.now()));
    return () => clearTimeout(timer);
  },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** The processes a run starts: workers and commands, recorded while they run so the run after a crash ends them. */
export interface Processes {
  /** End what a killed run (or step) left running; what was ended. Called before anything starts. */
  endLeftovers(): Promise<KilledOrphan[]>;
  /** Nothing of this run's runs any more: its record goes. */
  forget(): Promise<void>;
}

/** The plan's integration ref (run/integration.ts): `plan` gets its planId if it has none. */
export interface Integrations {
  open(plan: Plan, role?: IntegrationOptions['role']): Promise<Result<Integration, GitFailure>>;
}

/** Where the plan's attempts work (run/workspace/): its worktree pool here, work set aside through `integration`, workers run by `workers`. */
export interface WorkspacePlaces {
  open(plan: Plan, integration: Integration, use: WorkspaceUse, workers: Workers): Promise<LocalWorkspaces>;
  /** With ssh hosts (a headless run's): the run's workspaces by placement, the local pool's and each host's (run/workspace/placed.ts). */
  placed?(local: LocalWorkspaces, plan: Plan, integration: Integration, use: WorkspaceUse): Promise<Workspaces>;
}

/** plan.json, written atomically. */
export interface PlanStore {
  /** The plan's writes for a run (or step) that read the file as `text`. */
  open(text: string): PlanWriter;
}

export interface PlanWriter {
  /** Write `plan`: where a person's edit made since the file was read went (kept aside, never written over), or null. */
  save(plan: Plan): Promise<string | null>;
}

/** The run's journal (`events.jsonl` beside the plan). */
export interface EventJournal {
  /** Append events (journaled ones: `task-activity` is not); in the file when it returns. */
  append(events: readonly RunEvent[]): void;
  /** When the run's last event was (ms), or null when it has none. */
  lastSeen(runId: string): Promise<number | null>;
  /** Flush what was appended to the disk, and close the file (a later append opens it again). */
  close(): Promise<void>;
}

export interface RunAdapters {
  clock: Clock;
  /** The person's repository. */
  git: Git;
  processes: Processes;
  commands: Commands;
  workers: Workers;
  integration: Integrations;
  workspaces: WorkspacePlaces;
  planStore: PlanStore;
  journal: EventJournal;
}

/** Where a run works: the repository, its plan, and the environment of what it starts. */
export interface RunPlace {
  repo: string;
  planPath: string;
  git: Git;
  env: NodeJS.ProcessEnv;
}

/** Where no worker runs: a session's workers are the Task subagents its lead starts. */
export const noWorkers: Workers = {
  run: () => Promise.reject(new Error('no worker runs here: a session’s workers are the Task subagents its lead starts')),
};

/**
 * The real adapters for a run of the plan at `place`: one registry of its processes, shared by
 * its commands and workers. `startWorker` runs a worker process (adapters/worker/worker.ts's
 * `runWorker`), given by a headless run only: the plan tool's bundle, which starts none, does not
 * load the worker runner (a fifth of its code) for every step and `plan status`.
 */
export function realRunAdapters(place: RunPlace, startWorker?: (request: WorkerRequest) => Promise<WorkerRun>, hosts: readonly HostLink[] = []): RunAdapters {
  const registryPath = registryPathFor(place.planPath);
  const registry = new ProcessRegistry(registryPath);
  const commands = shellCommands(place.env, registry);
  const workers: Workers =
    startWorker === undefined
      ? noWorkers
      : { run: (request) => recorded(registry, { kind: 'worker', task: request.taskIndex }, (hooks) => startWorker({ ...request, ...hooks })) };
  return {
    clock: systemClock,
    git: place.git,
    processes: { endLeftovers: () => killOrphans(registryPath), forget: () => registry.clear() },
    commands,
    workers,
    integration: { open: (plan, role) => GitIntegration.open(plan, { repo: place.repo, planPath: place.planPath, ...(role ? { role } : {}) }) },
    workspaces: {
      open: (plan, integration, use, runner) =>
        openLocalWorkspaces(
          plan,
          {
            repo: integration.repo,
            planId: integration.planId,
            env: place.env,
            commands,
            workers: runner,
            keepAside: (current, task, work) => integration.keepAside(current, task, work),
            knows: (commit) => integration.knows(commit),
          },
          use,
        ),
      ...(hosts.length > 0
        ? {
            placed: (local: LocalWorkspaces, plan: Plan, integration: Integration, use: WorkspaceUse) =>
              openPlacedWorkspaces(local, hosts, { repo: integration.repo, git: place.git, plan, planId: integration.planId, use }),
          }
        : {}),
    },
    planStore: { open: (text) => new PlanKeeper(place.planPath, text) },
    journal: fileJournal(place.planPath),
  };
}

/** The journal beside the plan at `planPath`: opened at the first append, kept open until `close`. */
function fileJournal(planPath: string): EventJournal {
  let open: Journal | null = null;
  return {
    append(events) {
      if (events.length === 0) return;
      open ??= openJournal(planPath);
      for (const event of events) open.append(event);
    },
    async lastSeen(runId) {
      const last = (await readJournal(journalPathFor(planPath))).events
        .filter((event) => event.runId === runId)
        .reduce((latest, event) => Math.max(latest, Date.parse(event.at)), 0);
      return last > 0 ? last : null;
    },
    async close() {
      const closing = open;
      open = null;
      await closing?.close();
    },
  };
}
