// Processes that outlive a killed orchestrator. Workers and shell checks lead their own process
// groups (so a timeout can kill everything they started), which also means `kill -9` of the
// orchestrator leaves them running: a worker still editing files, an acceptance check that writes
// after the run that follows has verified the work. Each run records the groups it starts in
// `.design/workers.json`, saying what each one is; the next run kills whatever is left of them
// before it restores files. A group id is only trusted together with the leader's start time, so
// a recycled pid is never hit. A process is recorded by its marker before it is spawned and by
// its group once it runs: a kill between the two still leaves a record the next run acts on.

import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { closeSync, openSync, writeSync } from 'node:fs';
import { clipHead } from '../../core/index.ts';
import { groupAlive, processStartTime, signalTree, waitForGroupsGone } from './processes.ts';
import { describeMarked, endMarked, type MarkedProcess, PROCESS_MARKER_VARIABLE } from './process-markers.ts';

/** What a recorded process group is. */
export type ProcessRole =
  | { kind: 'worker'; task: number }
  | { kind: 'acceptance-check'; task: number; command: string }
  | { kind: 'assumption-check'; task: number; command: string }
  /** The plan's setup command, preparing a worktree for an attempt of `task`. */
  | { kind: 'setup-command'; task: number; command: string }
  /** The merge queue's gate (the plan's test command) on a stack of candidates. */
  | { kind: 'gate'; task: number; command: string };

export type ProcessRecord = ProcessRole &
  (
    | {
        pgid: number;
        /** The `FOREMAN_PROCESS` marker it and its descendants carry (records of older versions have none). */
        marker?: string;
        /** The leader's start time as the OS reports it; guards against pid reuse. */
        started: string;
      }
    /** About to be spawned: only its marker is known yet. */
    | { pgid?: undefined; marker: string; started?: undefined }
  );

/**
 * What a start tells whoever records it: the marker its process will carry, just before the
 * spawn, and its process group with that marker, just after.
 */
export interface SpawnHooks {
  onMarker?: (marker: string) => void;
  onSpawn?: (pgid: number, marker: string) => void;
}

export const registryPathFor = (planPath: string): string => join(dirname(planPath), 'workers.json');

/** Commands are kept short in the registry: enough to recognise them in a notice. */
const COMMAND_CHARS = 200;

const shortened = (role: ProcessRole): ProcessRole => (role.kind === 'worker' ? role : { ...role, command: clipHead(role.command, COMMAND_CHARS) });

/** "the worker of task 2", "the acceptance check of task 1 (`make test`)". */
export function describeProcess(role: ProcessRole): string {
  switch (role.kind) {
    case 'worker':
      return `the worker of task ${role.task}`;
    case 'acceptance-check':
      return `the acceptance check of task ${role.task} (\`${role.command}\`)`;
    case 'assumption-check':
      return `the assumption check of task ${role.task} (\`${role.command}\`)`;
    case 'setup-command':
      return `the setup command (\`${role.command}\`) preparing a worktree for task ${role.task}`;
    case 'gate':
      return `the gate (\`${role.command}\`)`;
    default: {
      const unknown: never = role;
      return `a process (${JSON.stringify(unknown)})`;
    }
  }
}

/**
 * The live process groups of this run, mirrored to disk on every change. Written synchronously,
 * the moment a group is spawned: a run killed right after starting a check must find the check's
 * record, and an asynchronous write could still be pending when the kill comes.
 *
 * The file is opened once and rewritten in place, the whole list in one write at its start,
 * padded with spaces to the longest list written so far (JSON ignores them): no temporary file
 * and no rename per change (two a worker; a rename in a busy directory cost milliseconds). A
 * list fits in a page, and one write of it is never seen half done by a run that follows a kill.
 */
export class ProcessRegistry {
  /** By marker, or by group for a record that has none (a process that recorded itself). */
  private readonly records = new Map<string | number, ProcessRecord>();
  private file: { fd: number; length: number } | null = null;

  constructor(private readonly path: string) {}

  /** Records a process about to be spawned carrying `marker`, before it exists. */
  expect(role: ProcessRole, marker: string): void {
    this.records.set(marker, { ...shortened(role), marker });
    this.flush();
  }

  /** Records group `pgid` (carrying `marker`, when given), in place of what `expect` wrote for that marker. */
  add(role: ProcessRole, pgid: number, marker?: string): void {
    const started = processStartTime(pgid) ?? '';
    this.records.set(marker ?? pgid, { ...shortened(role), pgid, started, ...(marker === undefined ? {} : { marker }) });
    this.flush();
  }

  /** Forgets the record of `id`: the marker it was recorded with, or its group when it has none. */
  remove(id: string | number): void {
    this.records.delete(id);
    this.flush();
  }

  private flush(): void {
    const text = Buffer.from(`${JSON.stringify([...this.records.values()], null, 2)}\n`);
    try {
      this.file ??= { fd: openSync(this.path, 'w'), length: 0 };
      const padding = Math.max(0, this.file.length - text.length);
      writeSync(this.file.fd, padding === 0 ? text : Buffer.concat([text, Buffer.alloc(padding, 0x20)]), 0, text.length + padding, 0);
      this.file.length = Math.max(this.file.length, text.length);
    } catch {
      // A registry that cannot be written must not fail the run; only orphan cleanup is lost.
    }
  }

  async clear(): Promise<void> {
    if (this.file !== null) {
      closeSync(this.file.fd);
      this.file = null;
    }
    await rm(this.path, { force: true });
  }
}

/**
 * Runs `start` with hooks that record the process it starts under `role` (by its marker before the
 * spawn, by its group after), and forgets it once `start` settles. Without a registry it just runs `start`.
 */
export async function recorded<T>(registry: ProcessRegistry | undefined, role: ProcessRole, start: (hooks: SpawnHooks) => Promise<T>): Promise<T> {
  if (registry === undefined) return start({});
  let id: string | number | undefined;
  try {
    return await start({
      onMarker: (marker) => {
        id = marker;
        registry.expect(role, marker);
      },
      onSpawn: (group, marker) => {
        id = marker;
        registry.add(role, group, marker);
      },
    });
  } finally {
    if (id !== undefined) registry.remove(id);
  }
}

/** A record from the file, or null when it is not one. Records of older versions name only a worker's task. */
function parseRecord(value: unknown): ProcessRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const o = value as Record<string, unknown>;
  const task = o.task;
  if (typeof task !== 'number' || !Number.isInteger(task)) return null;
  const role = parseRole(o.kind, task, typeof o.command === 'string' ? o.command : '');
  if (role === null) return null;
  // A marker is only ever searched for as a whole `FOREMAN_PROCESS=<marker>` entry; keep it plain.
  const marker = typeof o.marker === 'string' && /^[\w.-]+$/.test(o.marker) ? o.marker : undefined;
  const pgid = o.pgid;
  if (typeof pgid === 'number' && Number.isSafeInteger(pgid) && pgid > 1) {
    const started = typeof o.started === 'string' ? o.started : '';
    return { ...role, pgid, started, ...(marker === undefined ? {} : { marker }) };
  }
  // Killed between writing it and spawning: the marker alone names what may have started.
  return pgid === undefined && marker !== undefined ? { ...role, marker } : null;
}

function parseRole(kind: unknown, task: number, command: string): ProcessRole | null {
  switch (kind) {
    case undefined:
    case 'worker':
      return { kind: 'worker', task };
    case 'acceptance-check':
    case 'assumption-check':
    case 'setup-command':
    case 'gate':
      return { kind, task, command };
    default:
      return null;
  }
}

/** Whether group `pgid` runs and is the one recorded as started at `started` (a recycled id is not). */
function ownGroupAlive(pgid: number, started: string): boolean {
  if (!groupAlive(pgid)) return false;
  const now = processStartTime(pgid);
  // The leader may be gone while its children live on; then the group id cannot have been reused
  // by a new leader (the OS hands out no pid that is still a group's id), so the group is ours.
  return now === null || started === '' || now === started;
}

/** A record whose processes were ended, with those found by its marker outside its group (detached ones). */
export type KilledOrphan = ProcessRecord & { leftRunning?: MarkedProcess[] };

/**
 * Kill the process groups a previous run left behind (only those whose leader is the same
 * process that was recorded) and what carries their markers, wait for them to die, and forget
 * them. Returns the killed records.
 */
export async function killOrphans(path: string, waitMs = 5000): Promise<KilledOrphan[]> {
  let records: ProcessRecord[];
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    records = Array.isArray(parsed) ? parsed.map(parseRecord).filter((r): r is ProcessRecord => r !== null) : [];
  } catch {
    records = [];
  }
  const killed = new Map<ProcessRecord, KilledOrphan>();
  // Every live group judged before any is killed: one recorded group may run inside another's
  // tree (a session's gate process and the test command it started), and ending the first would
  // leave the second looking gone, though it was running until then.
  const live = records.filter((r): r is ProcessRecord & { pgid: number } => r.pgid !== undefined && ownGroupAlive(r.pgid, r.started));
  const ended = new Set<number>();
  for (const r of live) {
    // With what it started in groups of its own (a worker's Bash commands run in new sessions).
    const hit = ended.has(r.pgid) ? [r.pgid] : signalTree(r.pgid, 'SIGKILL');
    if (hit.length === 0) continue;
    killed.set(r, { ...r });
    for (const group of hit) ended.add(group);
  }
  await waitForGroupsGone([...ended], waitMs);
  // What left the groups (`setsid`, `nohup … &`) and lost its parent still carries the marker; a
  // marker names this one recorded process of that run alone, so a live run is never hit.
  for (const r of records) {
    if (r.marker === undefined) continue;
    const marked = await endMarked(PROCESS_MARKER_VARIABLE, r.marker, 0);
    if (marked.length === 0) continue;
    killed.set(r, { ...(killed.get(r) ?? r), leftRunning: marked });
  }
  await rm(path, { force: true });
  return [...killed.values()];
}

/** One line naming what `killOrphans` ended, for a notice. */
export function describeOrphans(killed: readonly KilledOrphan[]): string {
  const named = killed.map((k) => {
    if (k.leftRunning === undefined) return describeProcess(k);
    // Without a group, the run was killed as it spawned it: what carries its marker is the process itself.
    const how = k.pgid === undefined ? 'found by its marker' : 'with what it left running';
    return `${describeProcess(k)}, ${how}: ${describeMarked(k.leftRunning)}`;
  });
  return `stopped ${killed.length} process group(s) left running by an earlier run: ${named.join('; ')}`;
}
