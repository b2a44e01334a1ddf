// Workers that outlive a killed orchestrator. Workers lead their own process groups (so a
// timeout can kill a worker's children too), which also means `kill -9` of the orchestrator
// leaves them running, still editing files. Each run records its workers' groups in
// `.design/workers.json`; the next run kills whatever is left of them before it restores files.
// A group id is only trusted together with the leader's start time, so a recycled pid is never hit.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from './plan-store.ts';
import { groupAlive } from './worker.ts';

export interface WorkerRecord {
  task: number;
  pgid: number;
  /** The leader's start time as the OS reports it; guards against pid reuse. */
  started: string;
}

export const registryPathFor = (planPath: string): string => join(dirname(planPath), 'workers.json');

/** The process's start time (Linux: /proc field 22, in clock ticks since boot; elsewhere `ps`). */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    // No /proc (macOS): ask ps.
  }
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return out || null;
  } catch {
    return null;
  }
}

/** The live workers of this run, mirrored to disk on every change. */
export class WorkerRegistry {
  private readonly records = new Map<number, WorkerRecord>();
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {}

  add(task: number, pgid: number): Promise<void> {
    this.records.set(pgid, { task, pgid, started: processStartTime(pgid) ?? '' });
    return this.flush();
  }

  remove(pgid: number): Promise<void> {
    this.records.delete(pgid);
    return this.flush();
  }

  private flush(): Promise<void> {
    const text = `${JSON.stringify([...this.records.values()], null, 2)}\n`;
    this.writing = this.writing.then(() => writeFileAtomic(this.path, text)).catch(() => undefined);
    return this.writing;
  }

  async clear(): Promise<void> {
    await this.writing;
    await rm(this.path, { force: true });
  }
}

/**
 * Kill the worker groups a previous run left behind (only those whose leader is the same
 * process that was recorded), wait for them to die, and forget them. Returns the killed records.
 */
export async function killOrphanedWorkers(path: string, waitMs = 5000): Promise<WorkerRecord[]> {
  let records: WorkerRecord[];
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    records = Array.isArray(parsed) ? (parsed as WorkerRecord[]).filter((r) => Number.isInteger(r?.pgid) && r.pgid > 1) : [];
  } catch {
    records = [];
  }
  const killed: WorkerRecord[] = [];
  for (const r of records) {
    if (!groupAlive(r.pgid)) continue;
    const started = processStartTime(r.pgid);
    // The leader may be gone while its children live on; then the group id cannot have been reused
    // by a new leader, so the group is still ours.
    if (started !== null && r.started !== '' && started !== r.started) continue;
    try {
      process.kill(-r.pgid, 'SIGKILL');
      killed.push(r);
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + waitMs;
  while (killed.some((r) => groupAlive(r.pgid)) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  await rm(path, { force: true });
  return killed;
}
