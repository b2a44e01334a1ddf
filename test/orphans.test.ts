import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runShell } from '../src/adapters/sandbox/checks.ts';
import { describeOrphans, killOrphans, ProcessRegistry, recorded } from '../src/adapters/processes/orphans.ts';
import { findMarked, newProcessMarker, PROCESS_MARKER_VARIABLE } from '../src/adapters/processes/process-markers.ts';
import { groupAlive, processAlive, processStartTime } from '../src/adapters/processes/processes.ts';
import { waitFor } from './support/wait.ts';

let dir: string;
const started: ChildProcess[] = [];
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-orphans-'));
});
afterEach(async () => {
  for (const c of started.splice(0)) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await rm(dir, { recursive: true, force: true });
});

function sleeper(): number {
  const child = spawn('/bin/sh', ['-c', 'sleep 1000 & sleep 1000; wait'], { detached: true, stdio: 'ignore' });
  started.push(child);
  return child.pid!;
}

describe('ProcessRegistry', () => {
  it('records what each group is while it runs, and forgets it when it is done', async () => {
    const path = join(dir, 'workers.json');
    const registry = new ProcessRegistry(path);
    // The record is completed with the group just after the spawn: wait for that, then show it.
    const command = `echo ${'x'.repeat(300)} >/dev/null; while ! grep -q pgid ${path}; do sleep 0.05; done; cat ${path}`;
    const r = await recorded(registry, { kind: 'acceptance-check', task: 3, command }, (hooks) =>
      runShell(command, { cwd: dir, timeoutMs: 120_000, ...hooks }),
    );
    expect(JSON.parse(r.output)).toEqual([
      {
        kind: 'acceptance-check',
        task: 3,
        command: `${command.slice(0, 199)}…`,
        pgid: expect.any(Number),
        started: expect.stringMatching(/\S/),
        marker: expect.stringMatching(/^\d+-\w+\.\d+$/),
      },
    ]);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual([]);
    await registry.clear();
    expect(existsSync(path)).toBe(false);
  });

  it('rewrites its file in place: the same file throughout, always the whole list, however it shrinks', async () => {
    const path = join(dir, 'workers.json');
    const registry = new ProcessRegistry(path);
    const [first, second] = [sleeper(), sleeper()];
    registry.add({ kind: 'worker', task: 0 }, first);
    const inode = (await stat(path)).ino;
    registry.add({ kind: 'acceptance-check', task: 1, command: 'x'.repeat(150) }, second);
    expect((JSON.parse(await readFile(path, 'utf8')) as Array<{ pgid: number }>).map((r) => r.pgid)).toEqual([first, second]);
    registry.remove(first);
    expect((JSON.parse(await readFile(path, 'utf8')) as Array<{ pgid: number }>).map((r) => r.pgid)).toEqual([second]);
    registry.remove(second);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual([]);
    expect((await stat(path)).ino).toBe(inode);
    // What a crashed run left is read as it was last written.
    registry.add({ kind: 'worker', task: 2 }, first);
    const killed = await killOrphans(path);
    expect(killed.map((r) => [r.kind, r.task])).toEqual([['worker', 2]]);
    expect(groupAlive(first)).toBe(false);
    await registry.clear();
  });

  it('records a process by its marker before it is spawned, then by its group', async () => {
    const path = join(dir, 'workers.json');
    const registry = new ProcessRegistry(path);
    const read = async () => JSON.parse(await readFile(path, 'utf8')) as unknown[];
    const seen: unknown[][] = [];
    const group = await recorded(registry, { kind: 'gate', task: -1, command: 'npm test' }, async (hooks) => {
      hooks.onMarker?.('run.7');
      seen.push(await read());
      const pgid = sleeper();
      hooks.onSpawn?.(pgid, 'run.7');
      seen.push(await read());
      return pgid;
    });
    expect(seen).toEqual([
      [{ kind: 'gate', task: -1, command: 'npm test', marker: 'run.7' }],
      [{ kind: 'gate', task: -1, command: 'npm test', marker: 'run.7', pgid: group, started: processStartTime(group) }],
    ]);
    expect(await read()).toEqual([]);
  });

  it('forgets a group even when what started it throws', async () => {
    const path = join(dir, 'workers.json');
    const registry = new ProcessRegistry(path);
    await expect(
      recorded(registry, { kind: 'worker', task: 0 }, async (hooks) => {
        hooks.onMarker?.('run.1');
        hooks.onSpawn?.(sleeper(), 'run.1');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual([]);
  });
});

describe('killOrphans', () => {
  it('kills recorded groups (records of older versions too), spares a reused pid, and names what it ended', async () => {
    const path = join(dir, 'workers.json');
    const check = sleeper();
    const oldWorker = sleeper();
    const stranger = sleeper();
    await writeFile(
      path,
      JSON.stringify([
        { kind: 'assumption-check', task: 2, command: 'test -f x', pgid: check, started: processStartTime(check) },
        { task: 1, pgid: oldWorker, started: processStartTime(oldWorker) }, // no kind: written by an older version
        { kind: 'worker', task: 4, pgid: stranger, started: `${processStartTime(stranger)}7` }, // the pid was reused
        { kind: 'something-else', task: 5, pgid: 999_999, started: '' },
        'garbage',
      ]),
    );
    const killed = await killOrphans(path);
    expect(killed.map((r) => [r.kind, r.task])).toEqual([
      ['assumption-check', 2],
      ['worker', 1],
    ]);
    expect(groupAlive(check)).toBe(false);
    expect(groupAlive(oldWorker)).toBe(false);
    expect(groupAlive(stranger)).toBe(true);
    expect(existsSync(path)).toBe(false);
    expect(describeOrphans(killed)).toBe(
      'stopped 2 process group(s) left running by an earlier run: the assumption check of task 2 (`test -f x`); the worker of task 1',
    );
  });

  it.runIf(process.platform === 'linux')('a run killed between recording a process and learning its group: the next run ends it by its marker', async () => {
    const path = join(dir, 'workers.json');
    const registry = new ProcessRegistry(path);
    const marker = newProcessMarker();
    registry.expect({ kind: 'gate', task: -1, command: 'npm test' }, marker.marker);
    // Spawned, but the run died before it wrote the group down.
    const child = spawn('/bin/sh', ['-c', 'exec sleep 1000'], { detached: true, stdio: 'ignore', env: { ...process.env, ...marker.env } });
    started.push(child);
    await waitFor('the sleep to carry its marker', () => findMarked(PROCESS_MARKER_VARIABLE, marker.marker).some((p) => p.command === 'sleep 1000'));
    const killed = await killOrphans(path);
    expect(killed.map((k) => [k.kind, k.task, k.pgid])).toEqual([['gate', -1, undefined]]);
    expect(processAlive(child.pid!)).toBe(false);
    expect(describeOrphans(killed)).toBe(
      `stopped 1 process group(s) left running by an earlier run: the gate (\`npm test\`), found by its marker: ${child.pid} (sleep 1000)`,
    );
    expect(existsSync(path)).toBe(false);
  });

  it.runIf(process.platform === 'linux')('names a recorded group that runs inside another recorded group’s tree as ended with it', async () => {
    const path = join(dir, 'workers.json');
    const inner = join(dir, 'inner-pid');
    // A gate process and the test command it started, each leading a group of its own.
    const outer = spawn('/bin/sh', ['-c', `setsid sh -c 'echo $$ > ${inner}; exec sleep 1000' & wait`], { detached: true, stdio: 'ignore' });
    started.push(outer);
    await waitFor('the inner group to start', () => existsSync(inner) && readFileSync(inner, 'utf8').trim() !== '');
    const innerGroup = Number(readFileSync(inner, 'utf8').trim());
    await waitFor('the inner group to run sleep', () => processAlive(innerGroup) && readFileSync(`/proc/${innerGroup}/cmdline`, 'utf8').startsWith('sleep'));
    const record = (pgid: number) => ({ kind: 'gate', task: -1, command: 'npm test', pgid, started: processStartTime(pgid) });
    await writeFile(path, JSON.stringify([record(outer.pid!), record(innerGroup)]));
    const killed = await killOrphans(path);
    expect(killed.map((k) => k.pgid)).toEqual([outer.pid, innerGroup]);
    expect(groupAlive(outer.pid!)).toBe(false);
    expect(groupAlive(innerGroup)).toBe(false);
  });

  it('does nothing without a registry file, or with a damaged one', async () => {
    expect(await killOrphans(join(dir, 'none.json'))).toEqual([]);
    await writeFile(join(dir, 'bad.json'), '{ not json');
    expect(await killOrphans(join(dir, 'bad.json'))).toEqual([]);
  });
});
