// Paths as the file system resolves them: the sandbox runtime and the kernel follow symlinks, so
// what foreman compares with what they will do is compared as real paths.

import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** The real path of `file`: its deepest existing part resolved through symlinks, the rest as named. */
export async function realTarget(file: string): Promise<string> {
  let existing = file;
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(existing).catch(() => null);
    if (real !== null) return path.join(real, ...rest.reverse());
    const parent = path.dirname(existing);
    if (parent === existing) return file;
    rest.push(path.basename(existing));
    existing = parent;
  }
}

/** The real path of each of `paths` (see `realTarget`), by the path as given. */
export async function realTargets(paths: readonly string[]): Promise<Map<string, string>> {
  const unique = [...new Set(paths)];
  const real = await Promise.all(unique.map(realTarget));
  return new Map(unique.map((p, i) => [p, real[i]!]));
}
