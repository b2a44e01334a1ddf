// The folders foreman's remote program is kept in on a host, one per version
// (`<work dir>/.foreman/<version>/`, src/adapters/host/bootstrap.ts), and which of them a live
// process uses. The bootstrap, keeping or finding a program, marks its folder in use before it
// looks for the program: `running/<its pid>`, which the program (the same process: the bootstrap
// execs node) fills with its pid and start time and removes when it ends. A run starting on the
// host removes the other versions' folders no live process uses, so a foreman updated many times
// leaves one folder per version in use. It also removes the temporary folders (`<work dir>/.t/`)
// of programs that are gone.

import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { processAlive } from '../adapters/index.ts';
import { holderText, liveHolder } from './run-lock.ts';

/** This program's mark on the folder its kept file is in (`keptFile`; none when it runs from memory), and how to take it off. */
export function markProgramInUse(keptFile: string | undefined): () => void {
  if (keptFile === undefined) return () => undefined;
  const mark = join(dirname(keptFile), 'running', String(process.pid));
  try {
    writeFileSync(mark, holderText(), { mode: 0o600 });
  } catch {
    // The bootstrap made the folder; one gone since is one another run removed after its check: nothing to mark.
    return () => undefined;
  }
  return () => rmSync(mark, { force: true });
}

const readdirSafe = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

/** The live processes that marked `folder` in use. */
const usedBy = (folder: string): number[] => readdirSafe(join(folder, 'running')).flatMap((mark) => liveHolder(join(folder, 'running', mark)) ?? []);

/**
 * Removes the program folders under `<work dir>/.foreman/` but `own` that no live process uses:
 * each moved aside first (one step), looked at there, and moved back when a process marked it in
 * use meanwhile. The marks of `own` whose process is gone (a run killed) go too. What it removed,
 * by version.
 */
export function removeOldPrograms(workDir: string, own: string): string[] {
  const programs = join(workDir, '.foreman');
  const ownMarks = join(programs, own, 'running');
  for (const mark of readdirSafe(ownMarks)) if (liveHolder(join(ownMarks, mark)) === null) rmSync(join(ownMarks, mark), { force: true });
  const removed: string[] = [];
  for (const name of readdirSafe(programs)) {
    if (name === own || (name.startsWith('.') && !name.startsWith('.old-')) || usedBy(join(programs, name)).length > 0) continue;
    const version = name.startsWith('.old-') ? name.replace(/^\.old-/, '').replace(/-\d+$/, '') : name;
    const aside = name.startsWith('.old-') ? join(programs, name) : join(programs, `.old-${name}-${process.pid}`);
    try {
      if (!name.startsWith('.old-')) renameSync(join(programs, name), aside);
    } catch {
      continue;
    }
    if (usedBy(aside).length === 0) {
      rmSync(aside, { recursive: true, force: true });
      removed.push(version);
      continue;
    }
    // A bootstrap marked it between the look and the move: it goes back, unless a new one of that version is there already (then it waits aside for a later run).
    try {
      renameSync(aside, join(programs, version));
    } catch {
      // Left aside: no later bootstrap looks there, and the next run removes it once its processes are gone.
    }
  }
  return removed;
}

/** A remote program's temporary folder in the work dir: `.t/<its pid, base 36>-<what for>`. */
const OWN_TMP = /^([0-9a-z]{1,12})-[\w.-]+$/;

/**
 * Removes the temporary folders (`<work dir>/.t/<pid, base 36>-…`) whose program is gone: a
 * program ends its own when it ends, but one killed outright (the OOM killer) cannot. A folder
 * whose pid runs is kept, though that pid may be another process by now. What it removed.
 */
export function removeLeftTemporaryFolders(workDir: string): string[] {
  const tmp = join(workDir, '.t');
  const removed: string[] = [];
  for (const name of readdirSafe(tmp)) {
    const pid = Number.parseInt(OWN_TMP.exec(name)?.[1] ?? '', 36);
    if (!Number.isSafeInteger(pid) || pid <= 1 || processAlive(pid)) continue;
    rmSync(join(tmp, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
