// Splitting a byte stream (a worker's stdout or stderr) into lines, with a cap on one line's
// length so a worker printing a gigabyte without a newline keeps the orchestrator flat. Pure.

/**
 * Splits a byte stream into lines without ever holding more than `maxLineBytes` of one line.
 * Longer lines are cut to their first `maxLineBytes` bytes and reported with `truncated: true`.
 * Splits on raw bytes, so multi-byte UTF-8 characters split across chunks decode correctly.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private overflow = false;

  constructor(
    private readonly onLine: (line: string, truncated: boolean) => void,
    private readonly maxLineBytes = 1024 * 1024,
  ) {}

  push(chunk: Buffer | string): void {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(0x0a, start);
      if (newline === -1) {
        this.keep(bytes.subarray(start));
        return;
      }
      this.keep(bytes.subarray(start, newline));
      this.flush();
      start = newline + 1;
    }
  }

  /** Call at end of stream: emits a last line that had no newline. */
  end(): void {
    if (this.partBytes > 0 || this.overflow) this.flush();
  }

  private keep(piece: Buffer): void {
    if (piece.length === 0) return;
    const room = this.maxLineBytes - this.partBytes;
    if (piece.length > room) {
      this.overflow = true;
      if (room > 0) {
        this.parts.push(Buffer.from(piece.subarray(0, room)));
        this.partBytes += room;
      }
      return;
    }
    // Copy: the chunk may be a slice of a large pooled buffer we must not pin.
    this.parts.push(Buffer.from(piece));
    this.partBytes += piece.length;
  }

  private flush(): void {
    let line = Buffer.concat(this.parts, this.partBytes).toString('utf8');
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const truncated = this.overflow;
    this.parts = [];
    this.partBytes = 0;
    this.overflow = false;
    this.onLine(line, truncated);
  }
}
