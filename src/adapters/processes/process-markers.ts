// Markers: what a process carries in its environment so it can be found after it left its group
// (`setsid`, `nohup … &`), found by a scan of every process (process-table.ts) and ended.

import { clipHead } from '../../core/index.ts';
import { allocatedSince, type PidCounter, readPidCounter, readPidMax } from './pid-counter.ts';
import { BETWEEN_PROGRAMS_WAIT_MS, hasProcfs, isGone, kernelThreads, procCommand, procPids, procStat, ps, readEnviron, readSettled } from './process-table.ts';
import { POLL_MS, send, sleep } from './processes.ts';

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
