// The run lock on a host (src/host/run-lock.ts), raced by real processes: two processes taking
// over the same dead holder's lock, both having judged it dead before either acts — exactly one holds
// it each round and the other is told that one's pid; a live holder is never taken over; a folder
// of foreman versions before the generations (`lock`) is read too.

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { runLockHolder, takeRunLock } from '../../src/host/run-lock.ts';
import { repoRoot, tsxLoader } from '../support/execute.ts';
import { waitFor } from '../support/wait.ts';

const ROUNDS = 30;
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'foreman-run-lock-'));
  dirs.push(dir);
  return dir;
};

/** A dead holder's lock: a pid no process has. */
const staleLock = (dir: string): void => writeFileSync(join(dir, 'lock.1'), '999999999 1\n');

/**
 * A process that, for each round, waits for `go-<round>`, takes the round's folder's lock — held,
 * once it has found the dead holder, until the other racer has found it too — and writes what it
 * got; it keeps running (holding what it took) until killed.
 */
const RACER = `
import { existsSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { takeRunLock } from ${JSON.stringify(join(repoRoot, 'src/host/run-lock.ts'))};
const [root, rounds] = [process.argv[2], Number(process.argv[3])];
writeFileSync(join(root, 'ready-' + process.pid), '');
for (let round = 0; round < rounds; round++) {
  while (!existsSync(join(root, 'go-' + round))) {}
  // The worst moment: each has found the holder dead and waits for the other to have found it too before it acts.
  let first = true;
  const holder = takeRunLock(join(root, 'round-' + round), () => {
    if (!first) return;
    first = false;
    writeFileSync(join(root, 'judged-' + round + '-' + process.pid), '');
    while (readdirSync(root).filter((name) => name.startsWith('judged-' + round + '-')).length < 2) {}
  });
  // Written whole before the test can see it.
  writeFileSync(join(root, 'partial-' + process.pid), String(holder));
  renameSync(join(root, 'partial-' + process.pid), join(root, 'result-' + round + '-' + process.pid));
}
setInterval(() => {}, 1000);
`;

describe('the run lock on a host', () => {
  test('two processes taking over the same dead holder’s lock at once: exactly one holds it, the other is told who', async () => {
    const root = tempDir();
    const script = join(root, 'racer.mts');
    writeFileSync(script, RACER);
    for (let round = 0; round < ROUNDS; round++) {
      mkdirSync(join(root, `round-${round}`));
      staleLock(join(root, `round-${round}`));
    }
    const racers = [0, 1].map(() => spawn(process.execPath, ['--import', tsxLoader, script, root, String(ROUNDS)], { stdio: 'inherit' }));
    children.push(...racers);
    const pids = racers.map((racer) => racer.pid as number);
    await waitFor('both racers to be ready', () => pids.every((pid) => existsSync(join(root, `ready-${pid}`))));
    for (let round = 0; round < ROUNDS; round++) {
      writeFileSync(join(root, `go-${round}`), '');
      await waitFor(`both racers to take round ${round}`, () => pids.every((pid) => existsSync(join(root, `result-${round}-${pid}`))));
      const got = pids.map((pid) => readFileSync(join(root, `result-${round}-${pid}`), 'utf8'));
      const winners = pids.filter((_, index) => got[index] === 'null');
      expect(winners, `round ${round}: ${got.join(', ')}`).toHaveLength(1);
      const loser = pids.find((pid) => pid !== winners[0]) as number;
      expect(got[pids.indexOf(loser)], `round ${round}`).toBe(String(winners[0]));
      expect(runLockHolder(join(root, `round-${round}`))).toBe(winners[0]);
    }
  });

  test('a live holder is never taken over; a dead one is, and so is the lock of a foreman before the generations', () => {
    const dir = tempDir();
    expect(takeRunLock(dir)).toBeNull();
    expect(runLockHolder(dir)).toBe(process.pid);
    // Held by this process: taking it again keeps it.
    expect(takeRunLock(dir)).toBeNull();
    const live = tempDir();
    writeFileSync(join(live, 'lock.3'), `${process.ppid} \n`);
    expect(takeRunLock(live)).toBe(process.ppid);
    const legacy = tempDir();
    writeFileSync(join(legacy, 'lock'), `${process.ppid} \n`);
    expect(takeRunLock(legacy)).toBe(process.ppid);
    writeFileSync(join(legacy, 'lock'), '999999999 1\n');
    expect(takeRunLock(legacy)).toBeNull();
    expect(existsSync(join(legacy, 'lock.1'))).toBe(true);
    const stale = tempDir();
    staleLock(stale);
    expect(takeRunLock(stale)).toBeNull();
    expect(readFileSync(join(stale, 'lock.2'), 'utf8')).toMatch(new RegExp(`^${process.pid} `));
  });
});
