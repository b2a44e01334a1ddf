// The lock a run's live remote process holds on its folder (`<work dir>/<repository>/<plan>/`),
// and who holds a thing on the host: a holder's file names its pid and start time. The lock is a
// line of generations, `lock.1`, `lock.2`, …, each made once, in one step (a hard link that fails
// when the name is there), and never removed while its folder lives: the holder is the process
// that made the highest, while it runs. Taking over from a dead holder is making the next
// generation, so of two processes taking over the same dead holder's lock at once exactly one
// succeeds and the other finds it held; nothing is ever removed that another process could be
// judging or holding at that moment. A holder that ends lets go by ending (no file to remove).

import { linkSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { processStartTime, sameProcessAlive } from '../adapters/index.ts';

/** The text of a holder's file: its pid and start time, which tell it from a later process with the same pid. */
export const holderText = (): string => `${process.pid} ${processStartTime(process.pid) ?? ''}\n`;

/**
 * The live holder a holder's file names: its pid, or null when it is gone (or the file is). A file
 * with no pid in it (a bootstrap's mark, before the program filled it) is named by its pid and
 * counts while that pid runs.
 */
export function liveHolder(file: string): number | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  // The start time may hold spaces (`ps -o lstart` where there is no /proc).
  const [pid = '', ...start] = text.trim().split(' ');
  const holder = Number(pid === '' ? basename(file) : pid);
  return Number.isSafeInteger(holder) && holder > 0 && sameProcessAlive(holder, start.join(' ')) === 'alive' ? holder : null;
}

const GENERATION = /^lock\.([1-9][0-9]{0,14})$/;

/** The highest lock generation made in `dir` (0: none). */
function highestGeneration(dir: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  return names.reduce((highest, name) => Math.max(highest, Number(GENERATION.exec(name)?.[1] ?? 0)), 0);
}

/** The live process holding the run folder `dir`'s lock, or null. (`lock`: the one file of foreman versions before the generations.) */
export function runLockHolder(dir: string): number | null {
  const highest = highestGeneration(dir);
  return (highest === 0 ? null : liveHolder(join(dir, `lock.${highest}`))) ?? liveHolder(join(dir, 'lock'));
}

/**
 * Takes the run folder `dir`'s lock for this process: null when it holds it now; the live holder's
 * pid when another does. `judged` is called each time it found no live holder, just before it
 * makes the next generation (where the tests hold two processes to race them).
 */
export function takeRunLock(dir: string, judged?: () => void): number | null {
  const mine = join(dir, `.lock-${process.pid}-${randomBytes(4).toString('hex')}`);
  writeFileSync(mine, holderText(), { mode: 0o600 });
  try {
    for (;;) {
      const highest = highestGeneration(dir);
      const holder = runLockHolder(dir);
      if (holder !== null) return holder === process.pid ? null : holder;
      judged?.();
      try {
        linkSync(mine, join(dir, `lock.${highest + 1}`));
        return null;
      } catch (caught) {
        // Another process made that generation first: it holds the lock, or it is gone too; look again.
        if ((caught as NodeJS.ErrnoException).code !== 'EEXIST') throw caught;
      }
    }
  } finally {
    rmSync(mine, { force: true });
  }
}
