// Zombies on demand: a parent that forks a child which exits, and never reaps it. The child stays
// a zombie (exited, still in the process table) until the parent dies, exactly like a killed
// orchestrator under a container init that never reaps.

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { waitFor } from './wait.ts';

export interface Zombie {
  /** The zombie's pid. With `ownGroup`, also its process group id (it is the group's only member). */
  pid: number;
  /** The parent that does not reap it; kill it to clean up. */
  parent: ChildProcess;
}

const PARENT = `
import os, sys, time
pid = os.fork()
if pid == 0:
    if sys.argv[1] == "group":
        os.setpgid(0, 0)
    os._exit(0)
if sys.argv[1] == "group":
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
print(pid, flush=True)
time.sleep(1000)
`;

const state = (pid: number): string | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
  } catch {
    return null;
  }
};

/** Makes a zombie; with `ownGroup` it leads a process group of its own. Resolves once it is one. */
export async function makeZombie(ownGroup = false): Promise<Zombie> {
  const parent = spawn('python3', ['-c', PARENT, ownGroup ? 'group' : 'plain'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let text = '';
    parent.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (text.includes('\n')) resolve(Number(text.trim()));
    });
    parent.once('error', reject);
    parent.once('exit', (code) => reject(new Error(`the zombie's parent exited with ${code}`)));
  });
  await waitFor(`process ${pid} to become a zombie`, () => state(pid) === 'Z');
  return { pid, parent };
}
