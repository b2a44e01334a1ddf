// A worker attempt's log file as it is written: lines go out while the disk keeps up (the pipe they
// come from is paused while it does not), and past a size bound only the first and last part of
// the attempt's output are kept, with a line saying how much was cut between them.

import type { WriteStream } from 'node:fs';
import type { Readable } from 'node:stream';

/** How much of one attempt's output the log keeps: its first `headBytes` and its last `tailBytes`. */
export interface LogLimit {
  headBytes: number;
  tailBytes: number;
}

export const DEFAULT_LOG_LIMIT: LogLimit = { headBytes: 8 * 1024 * 1024, tailBytes: 2 * 1024 * 1024 };

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/**
 * Writes to the log, pausing the given sources while the file stream is backed up. Past the head
 * bound it stops writing and keeps only the newest lines in memory (within the tail bound); at
 * close it writes a line saying what was cut, then those lines, so the log ends with the real end.
 */
export class LogWriter {
  private waiting = false;
  private closed = false;
  private readonly paused = new Set<Readable>();
  private written = 0;
  private cutting = false;
  // The tail as a queue: `tail[tailStart..]` are the kept lines, oldest first.
  private tail: Array<{ text: string; bytes: number }> = [];
  private tailStart = 0;
  private tailBytes = 0;
  private cutBytes = 0;
  private cutLines = 0;

  constructor(
    private readonly out: WriteStream,
    private readonly limit: LogLimit,
  ) {
    out.on('drain', () => {
      this.waiting = false;
      for (const s of this.paused) s.resume();
      this.paused.clear();
    });
    out.on('error', () => {
      /* a log that cannot be written must not fail the run */
    });
  }

  line(text: string, source?: Readable): void {
    if (this.closed || this.out.destroyed) return;
    const bytes = Buffer.byteLength(text) + 1;
    if (!this.cutting && this.written + bytes <= this.limit.headBytes) {
      this.written += bytes;
      this.write(text, source);
      return;
    }
    this.cutting = true;
    this.keepInTail(text, bytes);
  }

  private write(text: string, source?: Readable): void {
    const ok = this.out.write(`${text}\n`);
    if (!ok) this.waiting = true;
    if (this.waiting && source && !source.destroyed) {
      source.pause();
      this.paused.add(source);
    }
  }

  private keepInTail(text: string, bytes: number): void {
    const max = Math.max(0, this.limit.tailBytes);
    if (bytes > max) {
      // A single line longer than the whole tail: keep its end.
      const kept =
        max > 1
          ? Buffer.from(text)
              .subarray(-(max - 1))
              .toString('utf8')
          : '';
      const keptBytes = max > 1 ? Buffer.byteLength(kept) + 1 : 0;
      this.cutBytes += bytes - keptBytes;
      this.dropTail(this.tailBytes);
      if (keptBytes > 0) this.push(kept, keptBytes);
      return;
    }
    this.push(text, bytes);
    this.dropTail(this.tailBytes - max);
  }

  private push(text: string, bytes: number): void {
    this.tail.push({ text, bytes });
    this.tailBytes += bytes;
  }

  /** Drops the oldest tail lines until at least `bytes` are gone. */
  private dropTail(bytes: number): void {
    let freed = 0;
    while (freed < bytes && this.tailStart < this.tail.length) {
      const oldest = this.tail[this.tailStart++]!;
      freed += oldest.bytes;
      this.tailBytes -= oldest.bytes;
      this.cutBytes += oldest.bytes;
      this.cutLines++;
    }
    // Compact now and then, so the queue's array does not grow with every line ever seen.
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.cutting && !this.out.destroyed) {
      if (this.cutBytes > 0) {
        this.write(
          `==== log cut: ${this.cutBytes} bytes (${mib(this.cutBytes)}, ${this.cutLines} whole lines) of this attempt's log omitted here; ` +
            `the log keeps the first ${mib(this.limit.headBytes)} and the last ${mib(this.limit.tailBytes)} of each attempt ====`,
        );
      }
      for (let i = this.tailStart; i < this.tail.length; i++) this.write(this.tail[i]!.text);
      this.tail = [];
      this.tailStart = 0;
    }
    this.closed = true;
    for (const s of this.paused) s.resume();
    this.paused.clear();
    if (this.out.destroyed) return;
    await new Promise<void>((resolve) => {
      this.out.end(() => resolve());
      this.out.once('error', () => resolve());
    });
  }
}
