// Whether a process is really running. This machine's init does not reap orphans, so a killed
// process can linger as a zombie that `kill(pid, 0)` still reports; /proc tells the truth.

import { readdirSync, readFileSync } from 'node:fs';

export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The running children of `parent` whose command line holds every one of `words`. */
export function childrenOf(parent: number, ...words: string[]): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      return ppid === parent && words.every((word) => command.includes(word)) && alive(Number(entry)) ? [Number(entry)] : [];
    } catch {
      // gone meanwhile
      return [];
    }
  });
}
