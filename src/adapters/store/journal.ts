// The run journal: `.design/events.jsonl` next to the plan, one JSON run event per line, appended
// by every run (runs are told apart by `runId`). Written synchronously through an fd opened for
// appending, so an event is in the file (the kernel's) when `append` returns and survives the
// run's own crash or kill -9; the events a machine crash must not lose are then fsync'ed on
// libuv's thread pool, so the run does not wait for the disk on every task. Read back tolerating a
// torn last line (a crash mid-write) and garbage lines.

import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, fsync, fsyncSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { compactTimestamp, isJournaled, type RunEvent, type RunEventType } from '../../core/index.ts';

export const JOURNAL_FILE = 'events.jsonl';

/** `<plan dir>/events.jsonl` */
export const journalPathFor = (planPath: string): string => join(dirname(planPath), JOURNAL_FILE);

/** A new run's id, for headless and in-session runs alike: `20261122T010203Z-a1b2c3`. */
export const newRunId = (): string => `${compactTimestamp()}-${randomBytes(3).toString('hex')}`;

/** Events after which the journal is flushed to the disk (run-level events and task results). */
const DURABLE: ReadonlySet<RunEventType> = new Set<RunEventType>([
  'run-started',
  'task-finished',
  'round-committed',
  'breaker',
  'budget-reached',
  'stalled',
  'interrupted',
  'run-finished',
]);

export interface Journal {
  readonly path: string;
  /** Appends the event if it is journaled (`task-activity` is not). Synchronous: in the file when it returns. */
  append(event: RunEvent): void;
  /** Flushes and closes. Appending after close throws. */
  close(): Promise<void>;
}

/** Opens (creating it and its directory if needed) the journal next to `planPath`. */
export function openJournal(planPath: string): Journal {
  const path = journalPathFor(planPath);
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, 'a+'); // appending; readable so a torn last line can be detected
  // A crash mid-write leaves a line without its newline: start on a fresh line so the next
  // event is not glued to the torn one.
  let needsNewline = endsWithoutNewline(fd);
  let closed = false;
  // The flush in flight, if any, and whether another is wanted after it (one at a time, coalesced).
  let flushing: Promise<void> | null = null;
  let flushAgain = false;
  const flush = (): void => {
    if (flushing !== null) {
      flushAgain = true;
      return;
    }
    flushing = new Promise<void>((resolve) => fsync(fd, () => resolve())).then(() => {
      flushing = null;
      if (flushAgain && !closed) {
        flushAgain = false;
        flush();
      }
    });
  };
  return {
    path,
    append(event) {
      if (closed) throw new Error(`journal ${path}: append after close (${event.type})`);
      if (!isJournaled(event)) return;
      const text = `${needsNewline ? '\n' : ''}${JSON.stringify(event)}\n`;
      writeAll(fd, Buffer.from(text, 'utf8'));
      needsNewline = false;
      if (DURABLE.has(event.type)) flush();
    },
    async close() {
      if (closed) return;
      closed = true;
      // The fd stays open until a flush in flight is done with it.
      while (flushing !== null) await flushing;
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    },
  };
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

function endsWithoutNewline(fd: number): boolean {
  const size = fstatSync(fd).size;
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  try {
    readSync(fd, last, 0, 1, size - 1);
  } catch {
    return false;
  }
  return last[0] !== 0x0a;
}

export interface JournalContents {
  events: RunEvent[];
  /** Lines that were not run events (not JSON, or JSON without type/runId/at), torn line excluded. */
  skipped: number;
  /** The last line was cut off mid-write (no newline, not parseable): ignored. */
  torn: boolean;
}

/** Reads a journal; a missing file is an empty journal. */
export async function readJournal(path: string): Promise<JournalContents> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { events: [], skipped: 0, torn: false };
    throw e;
  }
  return parseJournal(text);
}

/** Parses journal text (pure; see readJournal). */
export function parseJournal(text: string): JournalContents {
  const lines = text.split('\n');
  const complete = text.endsWith('\n') || text.length === 0;
  const events: RunEvent[] = [];
  let skipped = 0;
  let torn = false;
  lines.forEach((line, k) => {
    const last = k === lines.length - 1;
    if (line.trim() === '') return;
    const event = parseEventLine(line);
    if (event) events.push(event);
    else if (last && !complete) torn = true;
    else skipped++;
  });
  return { events, skipped, torn };
}

function parseEventLine(line: string): RunEvent | null {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return null;
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const o = data as Record<string, unknown>;
  if (typeof o.type !== 'string' || typeof o.runId !== 'string' || typeof o.at !== 'string') return null;
  return data as RunEvent;
}
