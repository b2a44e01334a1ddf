// Reading /proc's files: each read asks the kernel to write the file out afresh, and a scan reads
// one per process of the machine, so they go into one buffer kept between reads (grown for a
// larger file) instead of a new allocation and a size query each (readFileSync).

import { closeSync, openSync, readSync } from 'node:fs';

let buffer = Buffer.allocUnsafe(64 * 1024);

/**
 * The bytes of the file at `path`, or null when it cannot be read (gone, not ours). A view of a
 * buffer the next read overwrites: use or copy it before reading again.
 */
export function readProcFile(path: string): Buffer | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        const larger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(larger, 0, 0, length);
        buffer = larger;
      }
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
    }
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
