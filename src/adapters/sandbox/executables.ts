// Finding a program as a shell would: a name with a slash is a path (relative to `cwd`), a bare
// name the first executable file of that name on PATH.

import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Where `bin` is, or null when no executable file answers to it. */
export function findExecutable(bin: string, env: NodeJS.ProcessEnv, cwd: string): string | null {
  const candidates = bin.includes('/')
    ? [isAbsolute(bin) ? bin : resolve(cwd, bin)]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, bin));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}
