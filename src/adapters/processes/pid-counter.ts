// Where Linux's pid counter stands, so that a scan for the processes a command or worker started
// reads only the pids handed out since it started, not every process of the machine.
//
// A pid namespace hands pids out in a cycle: each new process (or thread) gets the next free
// number after the last one given (`/proc/sys/kernel/ns_last_pid`), skipping numbers in use, and
// after `pid_max` it starts again at 300. So every process that got its pid after a moment lies on
// the arc of the cycle from the counter then to the counter now, as long as the counter has not
// gone all the way round. That is ruled out from counts: to come round, the counter passes every
// number of the cycle, handing it out (a fork: `/proc/stat`'s `processes`, counted over the whole
// machine) or skipping it because it was in use (a process, thread, process group or session
// alive then: at most three numbers a task, and a number first used after the moment was handed
// out after it, a fork again). Where that bound cannot rule it out, or any of these files cannot
// be read, or /proc is not this process's pid namespace, the caller reads every process.

import { readlinkSync } from 'node:fs';
import { readProcFile } from './proc-files.ts';

/** The counter at one moment: read before a process is started, every pid it and its descendants get lies after it. */
export interface PidCounter {
  /** The last pid handed out in this pid namespace. */
  lastPid: number;
  /** Processes and threads created on the machine since boot. */
  forks: number;
  /** Tasks (processes and threads) alive on the machine. */
  tasks: number;
}

/** Where Linux starts again once the counter passed pid_max (RESERVED_PIDS). */
export const FIRST_PID_AFTER_WRAP = 300;

/** A /proc file's text, or null. */
const readProc = (path: string): string | null => readProcFile(path)?.toString('latin1') ?? null;

/** Whether /proc shows this process's own pid namespace (it may be another's, mounted in). */
let ownProcfs: boolean | undefined;
function procfsIsOwn(): boolean {
  if (ownProcfs === undefined) {
    try {
      ownProcfs = readlinkSync('/proc/self') === String(process.pid);
    } catch {
      ownProcfs = false;
    }
  }
  return ownProcfs;
}

/** The number after `label ` on its own line of `text` (`processes 12345`), or NaN. */
function lineValue(text: string, label: string): number {
  const at = text.indexOf(`\n${label} `);
  return at === -1 ? Number.NaN : Number.parseInt(text.slice(at + label.length + 2), 10);
}

/** The counter now, or null where Linux's files do not say (another system, an old kernel, a foreign /proc). */
export function readPidCounter(): PidCounter | null {
  if (!procfsIsOwn()) return null;
  const lastPid = Number.parseInt(readProc('/proc/sys/kernel/ns_last_pid') ?? '', 10);
  const forks = lineValue(readProc('/proc/stat') ?? '', 'processes');
  // `/proc/loadavg`: "0.52 0.58 0.59 2/345 12345": running/tasks.
  const tasks = Number.parseInt((readProc('/proc/loadavg') ?? '').split(' ')[3]?.split('/')[1] ?? '', 10);
  return Number.isSafeInteger(lastPid) && Number.isSafeInteger(forks) && Number.isSafeInteger(tasks) ? { lastPid, forks, tasks } : null;
}

/** The largest pid plus one (`/proc/sys/kernel/pid_max`), or null. */
export function readPidMax(): number | null {
  const pidMax = Number.parseInt(readProc('/proc/sys/kernel/pid_max') ?? '', 10);
  return Number.isSafeInteger(pidMax) ? pidMax : null;
}

/**
 * Whether a pid may have been handed out between the counters `since` and `now` (read after the
 * pids being tested were listed): true on the arc of the cycle from one to the other. Null when
 * the counter may have come all the way round in between, or a figure is unknown: then any pid
 * may be new.
 */
export function allocatedSince(since: PidCounter, now: PidCounter | null, pidMax: number | null): ((pid: number) => boolean) | null {
  if (now === null || pidMax === null) return null;
  const forks = now.forks - since.forks;
  // Numbers the counter could have passed: each fork hands one out, and each number it skipped
  // was in use then: used already at `since` (at most three a task) or handed out after (a fork).
  if (forks < 0 || 2 * forks + 3 * since.tasks >= pidMax - FIRST_PID_AFTER_WRAP) return null;
  const from = since.lastPid;
  const to = now.lastPid;
  return to >= from ? (pid) => pid > from && pid <= to : (pid) => pid > from || pid <= to;
}
