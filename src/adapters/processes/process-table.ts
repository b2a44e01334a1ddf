// What the OS says of its processes, read without signalling any: on Linux from /proc (a process's
// state, parent, group and start time; its environment and command line), elsewhere from `ps`.
// Reads only: whether a process runs, and signals, are processes.ts's.

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readProcFile } from './proc-files.ts';

/** Whether /proc describes processes here (Linux). Checked once. */
let procfs: boolean | undefined;
export function hasProcfs(): boolean {
  if (procfs === undefined) {
    try {
      readFileSync('/proc/self/stat', 'utf8');
      procfs = true;
    } catch {
      procfs = false;
    }
  }
  return procfs;
}

interface ProcStat {
  /** One letter: R, S, D, Z (zombie), X (dead), T, I, … */
  state: string;
  ppid: number;
  pgrp: number;
  /** Field 22: clock ticks since boot. */
  startTime: string;
  /** Field 9: the kernel's flags of the task (PF_KTHREAD marks a kernel thread, PF_EXITING one in exit). */
  flags: number;
  /**
   * Field 26: where the program's code starts in its memory. 0 while the process is between
   * programs: execve sets it once the new program's arguments and environment are laid out.
   */
  codeStart: number;
  /**
   * Fields 50 and 51 (Linux 3.5 and later; 0 when not ours to read): where the environment starts
   * and ends in the process's memory. The end is 0 while the process is between programs (execve
   * has replaced its memory and not yet laid out the new program's environment), and equals the
   * start while it lays the environment out, and after, when the environment is empty. Undefined
   * on kernels that lack the fields.
   */
  environmentStart: number | undefined;
  environmentEnd: number | undefined;
}

/** /proc/<pid>/stat, or null when there is no such process. */
export function procStat(pid: number): ProcStat | null {
  // Read as latin1: the fields used come after the command's name, and are ASCII.
  const text = readProcFile(`/proc/${pid}/stat`)?.toString('latin1');
  if (text === undefined) return null;
  // pid (comm) state ppid pgrp …; comm may contain spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const environmentStart = fields[47];
  const environmentEnd = fields[48];
  return {
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    startTime: fields[19] ?? '',
    flags: Number(fields[6]),
    codeStart: Number(fields[23]),
    environmentStart: environmentStart === undefined ? undefined : Number(environmentStart),
    environmentEnd: environmentEnd === undefined ? undefined : Number(environmentEnd),
  };
}

export const isGone = (state: string): boolean => state.startsWith('Z') || state.startsWith('X');

/** The pids /proc lists, or null when it cannot be read. */
export function procPids(): number[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  return entries.flatMap((entry) => {
    const code = entry.charCodeAt(0);
    return code >= 48 && code <= 57 ? [Number(entry)] : [];
  });
}

/**
 * How long `ps` may take: a fixed bound. It answers in milliseconds; one that hangs (a process
 * table it cannot read) must not hang the run, which is blocked while it waits. When it is hit,
 * ps is ended (it starts nothing of its own) and the caller goes on as without ps.
 */
const PS_LIMIT_MS = 5_000;

/** `ps` output, or null when ps is missing, failed (it exits 1 when no process matches) or did not answer in time. */
export function ps(args: string[]): string | null {
  try {
    return execFileSync('ps', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: PS_LIMIT_MS, killSignal: 'SIGKILL' });
  } catch {
    return null;
  }
}

/** Every process: pid, parent and group (Linux: /proc; elsewhere `ps`), or null when neither answers. */
export function processTable(): Array<{ pid: number; ppid: number; pgrp: number }> | null {
  if (hasProcfs()) {
    const pids = procPids();
    if (pids === null) return null;
    return pids.flatMap((pid) => {
      const st = procStat(pid);
      return st !== null && !isGone(st.state) ? [{ pid, ppid: st.ppid, pgrp: st.pgrp }] : [];
    });
  }
  const out = ps(['-A', '-o', 'pid=', '-o', 'ppid=', '-o', 'pgid=', '-o', 'stat=']);
  if (out === null) return null;
  return out.split('\n').flatMap((line) => {
    const [pid, ppid, pgrp, state] = line.trim().split(/\s+/);
    return pid && state && !isGone(state) ? [{ pid: Number(pid), ppid: Number(ppid), pgrp: Number(pgrp) }] : [];
  });
}

/** What one read of `/proc/<pid>/environ` found. */
type EnvironRead =
  | { kind: 'holds'; environ: string }
  | { kind: 'lacks' }
  /** Nothing to read: a kernel thread, a process in exit, an empty environment, or a process between programs. */
  | { kind: 'empty' };

/**
 * `/proc/<pid>/environ` (NUL-separated `NAME=value`), and whether it holds `needle`; a process
 * that is gone or not ours to read lacks it. Searched as bytes: most processes carry no marker,
 * and a scan reads every process of the machine, so one that is ruled out costs no allocation.
 */
export function readEnviron(pid: number, needle: Buffer): EnvironRead {
  const environ = readProcFile(`/proc/${pid}/environ`);
  if (environ === null) return { kind: 'lacks' };
  if (environ.length === 0) return { kind: 'empty' };
  return environ.indexOf(needle) === -1 ? { kind: 'lacks' } : { kind: 'holds', environ: environ.toString('latin1') };
}

const PF_EXITING = 0x00000004;
const PF_KTHREAD = 0x00200000;

/**
 * The kernel's threads: kthreadd (pid 2) and its children, from one read, so that a scan asks
 * nothing more of each (a desktop has hundreds, and every one reads empty). Undefined where /proc
 * cannot list them (pid 2 is not kthreadd in a container's pid namespace; a kernel built without
 * CONFIG_PROC_CHILDREN): then each empty one's flags say.
 */
export function kernelThreads(): ReadonlySet<number> | undefined {
  const kthreadd = procStat(2);
  if (kthreadd === null || (kthreadd.flags & PF_KTHREAD) === 0) return undefined;
  const children = readProcFile('/proc/2/task/2/children')?.toString('latin1').trim();
  if (children === undefined) return undefined;
  return new Set([2, ...(children === '' ? [] : children.split(' ').map(Number))]);
}

/**
 * How long a scan looks again, in all, at processes whose environment it cannot read yet: 2 s.
 * Only a process inside execve is waited for (see readSettled). Its window is kernel work of
 * about 0.2 ms that stretches while the process waits for a CPU: on 2 cores with the test suite
 * running (load average near 20) windows of up to 45 ms were measured, up to 120 ms with 4 busy
 * processes beside the one that execs, and 280 ms with 16. The scheduler runs every runnable
 * process in turn, so 2 s is reached only by a process stuck in the kernel (reading its program
 * from a hung file system); then the scan has to end, and counts it as not marked. The wait
 * pauses the caller (scans are synchronous), and only while a process is between programs.
 */
export const BETWEEN_PROGRAMS_WAIT_MS = 2_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * The environment of a process whose read was empty, looked at again until it can be decided.
 * The scan decides, not its callers: each of them (a command's or a worker's end, the run after
 * a crash, their settle and kill loops) takes a scan that finds nothing as the answer.
 *
 * An empty read is a kernel thread, a process in exit (it runs no more of its program), an empty
 * environment (`env -i`), or a process between two programs: execve empties it from when the old
 * program's memory goes until the new one's environment is laid out, and a read whose file was
 * opened before an execve, or inside one, stays empty. /proc/<pid>/stat, read after the empty
 * read, tells them apart. While execve lays the environment out, its start and end are equal, as
 * for an empty one (caught in up to 15 of 400 execs); the code start, set after it, tells an
 * empty environment from one being laid out. Anything not decided is read again, 1 ms apart,
 * until the read shows it or the scan's bound passes. Taking an empty read as the answer, or
 * giving up after 50 ms (which a loaded machine outlasts), let a process in a chain of `exec`s
 * (`sh -c 'exec setsid sh -c …'`) outlive its task.
 */
export function readSettled(pid: number, needle: Buffer, deadline: number): EnvironRead {
  for (;;) {
    const st = procStat(pid);
    if (st === null || isGone(st.state) || (st.flags & (PF_KTHREAD | PF_EXITING)) !== 0) return { kind: 'lacks' };
    // A kernel without the fields (before 3.5) cannot say more: the read stands, as it did.
    if (st.environmentStart === undefined || st.environmentEnd === undefined) return { kind: 'empty' };
    if (st.environmentEnd !== 0 && st.codeStart !== 0 && st.environmentStart === st.environmentEnd) return { kind: 'empty' };
    // Between programs, laying the environment out, or laid out with variables the read missed
    // (an execve began during it).
    if (performance.now() >= deadline) return { kind: 'empty' };
    // A synchronous pause: scans are synchronous, and this is reached only while a process of
    // the machine is between programs.
    Atomics.wait(pause, 0, 0, 1);
    const read = readEnviron(pid, needle);
    if (read.kind !== 'empty') return read;
  }
}

export function procCommand(pid: number): string {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    return text === '' ? `[${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}]` : text;
  } catch {
    return '?';
  }
}
