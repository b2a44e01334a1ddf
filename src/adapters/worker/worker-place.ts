// Where a worker's process runs, as `runWorker` sees it (the seam a host's slot plugs into), and the
// place on this machine: its own process group, tracked, and marked so that what it detached is
// found when it ends.

import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { readLoginSettings } from './claude-settings.ts';
import {
  describeMarked,
  endMarked,
  groupAlive,
  newProcessMarker,
  PROCESS_MARKER_VARIABLE,
  type SpawnHooks,
  terminateGroup,
  trackGroup,
  untrackGroup,
} from '../processes/index.ts';

/** How a worker's process ended, as the place that ran it tells it. */
export interface WorkerProcessEnd {
  exitCode?: number;
  signal?: string;
  /** It never ran. */
  spawnError?: { message: string; code?: string };
}

/** A worker's process as `runWorker` drives it, wherever it runs: its output, its end, and how it is stopped. */
export interface WorkerProcess {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** SIGTERM to it and its process group, SIGKILL after `graceMs`; resolves once they are gone. */
  terminate(graceMs: number): Promise<unknown>;
  /** Once it exited: whether something of its process group still runs. */
  groupLeft(): boolean;
  onExit(listener: () => void): void;
  /** Resolves when it has ended and its output is closed. */
  readonly ended: Promise<WorkerProcessEnd>;
  /** Ends what it left running outside its group; what was ended, in words (empty: nothing). */
  endLeftovers(graceMs: number): Promise<string>;
}

/** What a worker's process is started with. */
/** With the hooks orphan cleanup records it by (`SpawnHooks`), told its marker and group when it runs here. */
export interface WorkerSpawn extends SpawnHooks {
  file: string;
  args: string[];
  cwd: string;
  /** Its stdin. */
  input: string;
  /** The run's environment (a place on this machine starts from it; a host never receives it). */
  env: NodeJS.ProcessEnv;
  /** Variables of the attempt's own (its TMPDIR), set wherever it runs. */
  own: Record<string, string>;
}

/** A temporary folder of an attempt's own where its worker runs. */
export interface OwnTmp {
  path: string;
  /** `path` with its symbolic links resolved (the sandbox lets the worker write there). */
  realPath: string;
  remove(): Promise<void>;
}

/**
 * Where a worker's process runs. The stream-json parsing, the log (always here), the time limits
 * and the limiter's signals are `runWorker`'s, the same for every place.
 */
export interface WorkerPlace {
  /** `cwd` with its symbolic links resolved, as the CLI matches rules and sandboxes writes. */
  realCwd(cwd: string): Promise<string>;
  /** A temporary folder of the attempt's own there (a sandboxed worker's TMPDIR), and its removal. */
  ownTmp(task: number): Promise<OwnTmp>;
  /** The person's login settings carried over to the worker (`readLoginSettings`); a host gets none of them. */
  loginSettings(env: NodeJS.ProcessEnv): Promise<Record<string, unknown>>;
  start(spawn: WorkerSpawn): WorkerProcess;
}

/** A worker's process on this machine: its own process group, tracked so a Ctrl-C or a crash of foreman ends it, marked so what it detached is found. */
export const localWorkerPlace: WorkerPlace = {
  realCwd: (cwd) => realpath(cwd),
  async ownTmp(task) {
    const path = await mkdtemp(join(tmpdir(), `foreman-task-${task}-`));
    return { path, realPath: await realpath(path), remove: () => rm(path, { recursive: true, force: true }) };
  },
  loginSettings: (env) => readLoginSettings(env),
  start(spawn) {
    const marker = newProcessMarker();
    spawn.onMarker?.(marker.marker);
    const subprocess = execa(spawn.file, spawn.args, {
      cwd: spawn.cwd,
      env: { ...spawn.env, ...spawn.own, ...marker.env },
      extendEnv: false,
      input: spawn.input,
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      detached: true,
      stripFinalNewline: false,
    });
    const pid = subprocess.pid;
    if (pid !== undefined) {
      trackGroup(pid);
      spawn.onSpawn?.(pid, marker.marker);
    }
    const ended = subprocess.then((result): WorkerProcessEnd => {
      const end: WorkerProcessEnd = {
        ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
        ...(result.signal !== undefined ? { signal: result.signal } : {}),
      };
      if (pid === undefined || (result.code && result.exitCode === undefined && result.signal === undefined))
        end.spawnError = { message: result.shortMessage ?? result.message ?? 'spawn failed', ...(result.code ? { code: result.code } : {}) };
      return end;
    });
    return {
      stdout: subprocess.stdout,
      stderr: subprocess.stderr,
      terminate: (graceMs) => (pid === undefined ? Promise.resolve(true) : terminateGroup(pid, graceMs)),
      groupLeft: () => pid !== undefined && groupAlive(pid),
      onExit: (listener) => void subprocess.on('exit', listener),
      ended,
      endLeftovers: async (graceMs) => {
        const leftBehind = await endMarked(PROCESS_MARKER_VARIABLE, marker.marker, graceMs, marker.since);
        if (pid !== undefined) untrackGroup(pid);
        return describeMarked(leftBehind);
      },
    };
  },
};
