// The one module that asks the OS about processes and signals them: workers, shell checks, the
// orphan registry and the run lock all go through it.
//
// - "Alive" means running: a zombie (exited, not yet reaped by its parent) or a dead process counts
//   as gone. `kill(pid, 0)` alone counts zombies, and in a container whose init never reaps orphans
//   a killed process stays a zombie forever, so on Linux the state comes from /proc, elsewhere from
//   `ps`.
// - A process's start time tells a pid from a later process that reused it.
// - Killing a group also kills what its members started in groups of their own: Claude Code runs
//   each Bash tool command in a new session (seen on 2.1.330, test/support/CLI-NOTES.md), so a
//   SIGKILL to the worker's group alone would leave those commands running. They are found
//   through the parent links while the worker still lives.
// - Groups foreman started are tracked while they run, so they are killed even when the
//   orchestrator exits without cleaning up (`process.exit`, an uncaught error).

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { clipHead } from '../core/format.ts';
import { type PidCounter, allocatedSince, readPidCounter, readPidMax } from './pid-counter.ts';
import { readProcFile } from './proc-files.ts';

/** Whether /proc describes processes here (Linux). Checked once. */
let procfs: boolean | undefined;
function hasProcfs(): boolean {
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
function procStat(pid: number): ProcStat | null {
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

const isGone = (state: string): boolean => state.startsWith('Z') || state.startsWith('X');

/** The pids /proc lists, or null when it cannot be read. */
function procPids(): number[] | null {
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
function ps(args: string[]): string | null {
  try {
    return execFileSync('ps', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: PS_LIMIT_MS, killSignal: 'SIGKILL' });
  } catch {
    return null;
  }
}

const validPid = (pid: number): boolean => Number.isSafeInteger(pid) && pid > 0;

/** `kill(target, signal)`; false when nothing received it (ESRCH) or it was not ours to signal (EPERM). */
function send(target: number, signal: NodeJS.Signals | 0): { delivered: boolean; exists: boolean } {
  try {
    process.kill(target, signal);
    return { delivered: true, exists: true };
  } catch (e) {
    return { delivered: false, exists: (e as NodeJS.ErrnoException).code === 'EPERM' };
  }
}

/** Sends `signal` to every process of group `pgid`. Whether any process received it. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  if (!validPid(pgid) || pgid === 1) return false;
  return send(-pgid, signal).delivered;
}

/** Whether process `pid` runs (a zombie or a process that is gone does not). */
export function processAlive(pid: number): boolean {
  if (!validPid(pid)) return false;
  if (!send(pid, 0).exists) return false;
  if (hasProcfs()) {
    const st = procStat(pid);
    return st !== null && !isGone(st.state);
  }
  const out = ps(['-o', 'stat=', '-p', String(pid)]);
  if (out === null) return true; // no ps to ask: trust kill(0)
  const state = out.trim();
  return state !== '' && !isGone(state);
}

/** Whether any process of group `pgid` runs (zombies do not count). */
export function groupAlive(pgid: number): boolean {
  if (!validPid(pgid)) return false;
  if (!send(-pgid, 0).exists) return false;
  if (hasProcfs()) {
    // The leader, when it still leads the group and runs, settles it without a scan.
    const leader = procStat(pgid);
    if (leader !== null && leader.pgrp === pgid && !isGone(leader.state)) return true;
    const pids = procPids();
    if (pids === null) return true;
    return pids.some((pid) => {
      const st = procStat(pid);
      return st !== null && st.pgrp === pgid && !isGone(st.state);
    });
  }
  const out = ps(['-A', '-o', 'pgid=', '-o', 'stat=']);
  if (out === null) return true; // no ps to ask: trust kill(0)
  return out.split('\n').some((line) => {
    const [group, state] = line.trim().split(/\s+/);
    return Number(group) === pgid && state !== undefined && !isGone(state);
  });
}

/** Every process: pid, parent and group (Linux: /proc; elsewhere `ps`), or null when neither answers. */
function processTable(): Array<{ pid: number; ppid: number; pgrp: number }> | null {
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

/**
 * The other process groups holding descendants of group `pgid`'s members: what they started in
 * groups or sessions of their own. Only found while the parent links still lead there (a child
 * whose parent died is adopted by init).
 */
export function descendantGroups(pgid: number): number[] {
  if (!validPid(pgid)) return [];
  const table = processTable();
  if (table === null) return [];
  const children = new Map<number, number[]>();
  for (const p of table) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const groupOf = new Map(table.map((p) => [p.pid, p.pgrp]));
  const queue = table.filter((p) => p.pgrp === pgid).map((p) => p.pid);
  const seen = new Set(queue);
  const groups = new Set<number>();
  const own = groupOf.get(process.pid);
  while (queue.length > 0) {
    for (const child of children.get(queue.pop()!) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      queue.push(child);
      const g = groupOf.get(child);
      if (g !== undefined && g !== pgid && g > 1 && g !== own) groups.add(g);
    }
  }
  return [...groups];
}

/** Sends `signal` to group `pgid` and to the groups of its descendants. Returns the groups signalled. */
export function signalTree(pgid: number, signal: NodeJS.Signals): number[] {
  return [pgid, ...descendantGroups(pgid)].filter((group) => signalGroup(group, signal));
}

/**
 * The process's start time as the OS reports it (Linux: /proc field 22, clock ticks since boot;
 * elsewhere `ps -o lstart`), or null when there is no such process. A zombie still has one.
 */
export function processStartTime(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (hasProcfs()) {
    const st = procStat(pid);
    return st === null || st.startTime === '' ? null : st.startTime;
  }
  const out = ps(['-o', 'lstart=', '-p', String(pid)])?.trim();
  return out ? out : null;
}

/**
 * Whether `pid` is still the process that was recorded with `startTime`: it runs, and (when a
 * start time was recorded) it started then. A zombie, a dead pid and a reused pid all answer no.
 */
export function sameProcessAlive(pid: number, startTime: string | undefined): 'alive' | 'gone' | 'reused' {
  if (!processAlive(pid)) return 'gone';
  if (startTime === undefined || startTime === '') return 'alive';
  const now = processStartTime(pid);
  return now !== null && now !== startTime ? 'reused' : 'alive';
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const POLL_MS = 50;
/** After SIGKILL, how long to wait for the group to disappear before giving up on it. */
const AFTER_KILL_WAIT_MS = 2000;

/** Waits until every group in `groups` is gone or `ms` passed. Whether they are all gone. */
export async function waitForGroupsGone(groups: readonly number[], ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (!groups.some(groupAlive)) return true;
    if (performance.now() >= deadline) return false;
    await sleep(Math.min(POLL_MS, Math.max(1, deadline - performance.now())));
  }
}

/** Waits until group `pgid` is gone or `ms` passed. Whether it is gone. */
export const waitForGroupGone = (pgid: number, ms: number): Promise<boolean> => waitForGroupsGone([pgid], ms);

/**
 * Ends group `pgid` and what its members started in groups of their own: SIGTERM, then SIGKILL
 * to whatever is left after `graceMs`, then a short wait for it to disappear. Resolves whether
 * they are all gone.
 */
export async function terminateGroup(pgid: number, graceMs: number): Promise<boolean> {
  const groups = new Set(signalTree(pgid, 'SIGTERM'));
  if (groups.size === 0) return !groupAlive(pgid);
  if (await waitForGroupsGone([...groups], graceMs)) return true;
  for (const g of signalTree(pgid, 'SIGKILL')) groups.add(g);
  for (const g of groups) signalGroup(g, 'SIGKILL');
  return waitForGroupsGone([...groups], AFTER_KILL_WAIT_MS);
}

// ---------------------------------------------------------------------------------------------
// Groups started by this process

// Detached groups are outside the terminal's process group, and execa's `cleanup` skips detached
// children, so the orchestrator's exit has to end them itself.
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Remembers a group this process started, until `untrackGroup`; it is killed if we exit first. */
export function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const g of liveGroups) signalTree(g, 'SIGKILL');
  });
}

export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

/** SIGTERM every tracked group now, and SIGKILL them after `graceMs` (0: SIGKILL at once). */
export function killTrackedGroups(graceMs: number): void {
  const groups = [...liveGroups];
  if (graceMs <= 0) {
    for (const g of groups) signalTree(g, 'SIGKILL');
    return;
  }
  const hit = groups.flatMap((g) => signalTree(g, 'SIGTERM'));
  if (hit.length > 0)
    setTimeout(() => {
      for (const group of hit) signalGroup(group, 'SIGKILL');
    }, graceMs).unref();
}

// ---------------------------------------------------------------------------------------------
// Markers: what a process carries in its environment so it can be found after it left its group

/**
 * The variables that mark every process foreman starts and, through inheritance, everything
 * those start, even what detaches (`setsid`, `nohup … &`) or changes directory. `FOREMAN_RUN`
 * names the run (this orchestrator process); `FOREMAN_PROCESS` names one worker or command.
 */
export const RUN_MARKER_VARIABLE = 'FOREMAN_RUN';
export const PROCESS_MARKER_VARIABLE = 'FOREMAN_PROCESS';

/** This run's marker: unique per orchestrator process (pid, a random part). */
export const runMarker = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
let markerCount = 0;

/** A marker for one worker or command of this run. */
export interface ProcessMarker {
  marker: string;
  /** The variables that carry it. */
  env: Record<string, string>;
  /** The pid counter before anything carried it (null where Linux does not say): what carries it got a pid after. */
  since: PidCounter | null;
}

/** A new marker for one worker or command of this run: make it just before starting what carries it. */
export function newProcessMarker(): ProcessMarker {
  markerCount++;
  const marker = `${runMarker}.${markerCount}`;
  return { marker, env: { [RUN_MARKER_VARIABLE]: runMarker, [PROCESS_MARKER_VARIABLE]: marker }, since: readPidCounter() };
}

/** A process found carrying a marker: its pid and its command line, to name it in a log. */
export interface MarkedProcess {
  pid: number;
  command: string;
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
function readEnviron(pid: number, needle: Buffer): EnvironRead {
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
function kernelThreads(): ReadonlySet<number> | undefined {
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
const BETWEEN_PROGRAMS_WAIT_MS = 2_000;
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
function readSettled(pid: number, needle: Buffer, deadline: number): EnvironRead {
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

function procCommand(pid: number): string {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replace(/\0/g, ' ');
    return text === '' ? `[${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}]` : text;
  } catch {
    return '?';
  }
}

/**
 * The running processes whose environment holds `variable`, by its value. Linux reads
 * /proc/<pid>/environ (the environment the process started with; processes of other users cannot
 * be read). macOS has no /proc: `ps -E` prints the environment after the command, for the user's
 * own processes only, and newer macOS versions may hide it; there, only the process groups are
 * ended.
 */
function markedProcesses(variable: string, since: PidCounter | null = null): Map<string, MarkedProcess[]> {
  const prefix = `${variable}=`;
  const found = new Map<string, MarkedProcess[]>();
  const add = (value: string, marked: MarkedProcess) => found.set(value, [...(found.get(value) ?? []), marked]);
  const valuesIn = (entries: readonly string[]): string[] => [...new Set(entries.filter((e) => e.startsWith(prefix)).map((e) => e.slice(prefix.length)))];
  if (hasProcfs()) {
    const needle = Buffer.from(prefix, 'latin1');
    const holding = new Map<number, string>();
    const empty: number[] = [];
    const pids = procPids() ?? [];
    // Read after the listing: every pid listed was handed out before the counter was read.
    const isNew = since === null ? null : allocatedSince(since, readPidCounter(), readPidMax());
    for (const pid of pids) {
      if (pid === process.pid || (isNew !== null && !isNew(pid))) continue;
      // Most processes carry no marker: one search of the bytes rules them out before anything is split.
      const read = readEnviron(pid, needle);
      if (read.kind === 'holds') holding.set(pid, read.environ);
      else if (read.kind === 'empty') empty.push(pid);
    }
    const deadline = performance.now() + BETWEEN_PROGRAMS_WAIT_MS;
    const kernel = empty.length > 0 ? kernelThreads() : undefined;
    for (const pid of empty) {
      if (kernel?.has(pid)) continue;
      const read = readSettled(pid, needle, deadline);
      if (read.kind === 'holds') holding.set(pid, read.environ);
    }
    for (const [pid, environ] of holding) {
      const values = valuesIn(environ.split('\0'));
      if (values.length === 0) continue;
      const st = procStat(pid);
      if (st === null || isGone(st.state)) continue;
      const marked = { pid, command: procCommand(pid) };
      for (const value of values) add(value, marked);
    }
    return found;
  }
  const out = ps(['-A', '-E', '-ww', '-o', 'pid=', '-o', 'stat=', '-o', 'command=']);
  if (out === null) return found;
  for (const line of out.split('\n')) {
    const match = /^\s*(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!match || isGone(match[2]!)) continue;
    const pid = Number(match[1]);
    const words = match[3]!.split(' ');
    const values = valuesIn(words);
    if (pid === process.pid || values.length === 0) continue;
    // The environment follows the command on the same line; the first word names the program.
    for (const value of values) add(value, { pid, command: words[0] ?? '?' });
  }
  return found;
}

/**
 * The running processes whose environment has `variable=value` (see markedProcesses). With
 * `since`, the pid counter before the first of them started: only pids handed out after are read.
 */
export const findMarked = (variable: string, value: string, since: PidCounter | null = null): MarkedProcess[] =>
  markedProcesses(variable, since).get(value) ?? [];

interface SharedScan {
  found: Promise<Map<string, MarkedProcess[]>>;
  /** What the scan reads from: the earliest counter of its callers; null, every process. */
  since: PidCounter | null;
}

const scansAhead = new Map<string, SharedScan>();

/**
 * `findMarked`, from a scan that starts once pending callbacks have run and serves every caller
 * that asked before it started: workers that end together cost one pass over /proc, not one each.
 * Started after the caller asked, it sees whatever the caller's processes left; it reads from the
 * earliest of its callers' counters.
 */
function findMarkedShared(variable: string, value: string, since: PidCounter | null): Promise<MarkedProcess[]> {
  let scan = scansAhead.get(variable);
  if (scan === undefined) {
    const shared: SharedScan = {
      since,
      found: new Promise((resolve) =>
        setImmediate(() => {
          scansAhead.delete(variable);
          resolve(markedProcesses(variable, shared.since));
        }),
      ),
    };
    scan = shared;
    scansAhead.set(variable, scan);
  } else if (scan.since !== null && (since === null || since.forks < scan.since.forks)) {
    scan.since = since;
  }
  return scan.found.then((found) => found.get(value) ?? []);
}

/**
 * Ends every process that still carries `variable=value`: SIGTERM, then SIGKILL after `graceMs`
 * to what is left, scanning again so what one of them started meanwhile is ended too. Returns the
 * processes found, to name them. `since`: the marker's pid counter (`newProcessMarker`), so a scan
 * reads only the processes started after it; null reads every process (a marker of another run).
 * `settleMs`: how long what was found may take to end by itself before it counts as left running
 * (a sandboxed command's bubblewrap, in a session of its own, ends a moment after the shell).
 */
export async function endMarked(variable: string, value: string, graceMs = 1000, since: PidCounter | null = null, settleMs = 0): Promise<MarkedProcess[]> {
  const named = new Map<number, MarkedProcess>();
  let found = await findMarkedShared(variable, value, since);
  for (const until = performance.now() + settleMs; found.length > 0 && performance.now() < until; ) {
    await sleep(POLL_MS);
    found = findMarked(variable, value, since);
  }
  if (found.length === 0) return [];
  for (const p of found) named.set(p.pid, p);
  for (const p of found) send(p.pid, 'SIGTERM');
  const deadline = performance.now() + graceMs;
  while (performance.now() < deadline) {
    await sleep(POLL_MS);
    found = findMarked(variable, value, since);
    if (found.length === 0) return [...named.values()];
  }
  // What is left, and what those started while we waited, until nothing carries the marker.
  for (let round = 0; round < 20; round++) {
    found = findMarked(variable, value, since);
    if (found.length === 0) break;
    for (const p of found) {
      if (!named.has(p.pid)) named.set(p.pid, p);
      send(p.pid, 'SIGKILL');
    }
    await sleep(POLL_MS);
  }
  return [...named.values()];
}

/** "1234 (sleep 1000), 1240 (node server.js)". */
export const describeMarked = (processes: readonly MarkedProcess[]): string => processes.map((p) => `${p.pid} (${clipHead(p.command, 120)})`).join(', ');
