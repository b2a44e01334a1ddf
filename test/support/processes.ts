// Whether a process is really running. This machine's init does not reap orphans, so a killed
// process can linger as a zombie that `kill(pid, 0)` still reports; /proc tells the truth.

import { readFileSync } from 'node:fs';

export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
