// Nothing outlives its task: every process foreman starts carries a marker in its environment
// (`FOREMAN_PROCESS`), inherited by what it starts even when that detaches (`setsid`) or changes
// directory. When the command or worker ends, whatever still carries the marker is ended and
// named; a run after a `kill -9` ends what carries the dead run's markers.

import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runShell } from '../src/adapters/sandbox/checks.ts';
import { describeOrphans, killOrphans } from '../src/adapters/processes/orphans.ts';
import { processAlive } from '../src/adapters/processes/processes.ts';
import { findMarked, newProcessMarker, PROCESS_MARKER_VARIABLE } from '../src/adapters/processes/process-markers.ts';
import { runWorker } from '../src/adapters/worker/worker.ts';
import { readPidCounter } from '../src/adapters/processes/pid-counter.ts';
import { repoRoot, tsxLoader } from './support/execute.ts';
import { waitFor } from './support/wait.ts';

const linux = process.platform === 'linux';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-markers-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A background process that leaves the command's process group and session, from another
 * directory, through a subshell that exits at once: its parent link leads to init, not to us.
 * The command then waits (at most 5 s) until the process leads a session of its own: a command
 * that ended before would have its group ended with the process still in it, not left running.
 */
const DETACH = `cd / && f=/tmp/foreman-detach-$$ && (setsid sh -c 'exec sleep 1000' </dev/null >/dev/null 2>&1 & echo $! > "$f") && d=$(cat "$f") && rm -f "$f" && i=0 && while [ "$(ps -o sid= -p $d | tr -d ' ')" != "$d" ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done;`;

describe.runIf(linux)('markers (Linux: /proc/<pid>/environ)', () => {
  it('gives each process its own marker, under the run marker', () => {
    const a = newProcessMarker();
    const b = newProcessMarker();
    expect(a.marker).not.toBe(b.marker);
    expect(a.env.FOREMAN_PROCESS).toBe(a.marker);
    expect(a.marker.startsWith(`${a.env.FOREMAN_RUN}.`)).toBe(true);
  });

  it('a shell command: what it detached is ended when it ends, and named in its output', async () => {
    let marker = '';
    const seen: number[] = [];
    const result = await runShell(`${DETACH} sleep 0.3; echo done`, {
      cwd: dir,
      timeoutMs: 30_000,
      killGraceMs: 500,
      onSpawn: (_pgid, m) => {
        marker = m;
      },
    });
    expect(result.exitCode).toBe(0);
    expect(marker).not.toBe('');
    const left = result.leftBehind ?? [];
    expect(left.map((p) => p.command)).toContain('sleep 1000');
    for (const p of left) seen.push(p.pid);
    expect(result.output).toContain('done');
    expect(result.output).toMatch(/\[foreman\] ended what the command left running: \d+ \(sleep 1000\)/);
    expect(findMarked(PROCESS_MARKER_VARIABLE, marker)).toEqual([]);
    for (const pid of seen) expect(processAlive(pid)).toBe(false);
  });

  it('commands that end together: each ends what it left, and only that', async () => {
    const markers: string[] = [];
    const results = await Promise.all(
      [0, 1, 2].map((k) =>
        runShell(`${DETACH} echo ${k}`, {
          cwd: dir,
          timeoutMs: 30_000,
          killGraceMs: 500,
          onSpawn: (_pgid, m) => {
            markers[k] = m;
          },
        }),
      ),
    );
    const left = results.map((r) => r.leftBehind ?? []);
    // Each command ends at once, so its scan may find the detached process before its last exec:
    // named then by the command line it had (`setsid sh -c exec sleep 1000`, `sh -c …`), one pid throughout.
    const detached = expect.stringMatching(/(^|\s)sleep 1000$/);
    expect(left.map((l) => l.map((p) => p.command))).toEqual([[detached], [detached], [detached]]);
    expect(new Set(left.flat().map((p) => p.pid)).size).toBe(3);
    for (const [k, r] of results.entries()) expect(r.output).toContain(`ended what the command left running: ${left[k]![0]!.pid} (${left[k]![0]!.command})`);
    for (const m of markers) expect(findMarked(PROCESS_MARKER_VARIABLE, m)).toEqual([]);
  });

  it('finds a marker at the end of an environment larger than the buffer a scan reads into (64 KiB), and only its own', async () => {
    const { marker, env } = newProcessMarker();
    const other = newProcessMarker();
    // Variables are laid out in the order given: the marker comes after 200 KiB of others.
    const large = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`FOREMAN_TEST_FILLER_${i}`, 'x'.repeat(4096)]));
    const sleeper = execa('sleep', ['1000'], { env: { ...large, ...env }, extendEnv: false, reject: false });
    const bystander = execa('sleep', ['1000'], { env: other.env, extendEnv: false, reject: false });
    try {
      await waitFor('the marked sleep to start', () => findMarked(PROCESS_MARKER_VARIABLE, marker).length > 0);
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker)).toEqual([{ pid: sleeper.pid, command: 'sleep 1000' }]);
      expect(findMarked(PROCESS_MARKER_VARIABLE, other.marker)).toEqual([{ pid: bystander.pid, command: 'sleep 1000' }]);
    } finally {
      sleeper.kill('SIGKILL');
      bystander.kill('SIGKILL');
      await Promise.all([sleeper, bystander]);
    }
  });

  it('finds a process at every scan while it goes from program to program (execve empties its environment for a moment), with busy processes beside it', async () => {
    // 400 programs in turn, one pid: each `exec`s the next. Before scans looked again at an empty
    // environment, a fifth of them missed it; while they gave up after 50 ms, a loaded machine
    // made some miss it still. Busy processes beside it, two a core in this session (so they share
    // its CPU), stretch an exec's window from a fifth of a millisecond to tens or a hundred, as a
    // loaded machine does. The scans read from the marker's pid counter, as a command's or a
    // worker's cleanup does: hundreds of them while the chain runs.
    const busy = Array.from({ length: 2 * availableParallelism() }, () => execa('sh', ['-c', 'while :; do :; done'], { reject: false }));
    const chain = join(dir, 'chain.sh');
    await writeFile(chain, `n=$1; if [ "$n" -gt 0 ]; then exec sh '${chain}' $((n - 1)); fi; exec sleep 1000\n`);
    const { marker, env, since } = newProcessMarker();
    const child = execa('sh', [chain, '400'], { env, reject: false });
    const missed: number[] = [];
    let scans = 0;
    try {
      for (;;) {
        const command = (() => {
          try {
            return readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
          } catch {
            return '';
          }
        })();
        if (command.startsWith('sleep')) break;
        expect(processAlive(child.pid!)).toBe(true);
        scans++;
        if (findMarked(PROCESS_MARKER_VARIABLE, marker, since).length === 0) missed.push(scans);
      }
      expect(scans).toBeGreaterThan(20);
      expect(missed).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      for (const burner of busy) burner.kill('SIGKILL');
      await Promise.all([child, ...busy]);
    }
  });

  it("a scan from a marker's pid counter reads only the processes started after it", async () => {
    const { marker, env, since } = newProcessMarker();
    expect(since).not.toBeNull();
    const after = execa('sleep', ['1000'], { env, reject: false });
    try {
      // `after` carries the marker, but was started before this counter was read: a scan from it skips it.
      const laterCounter = readPidCounter();
      await waitFor('the marked sleep to start', () => findMarked(PROCESS_MARKER_VARIABLE, marker).length > 0);
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker, since)).toEqual([{ pid: after.pid, command: 'sleep 1000' }]);
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker, laterCounter)).toEqual([]);
      // Without a counter, every process is read.
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker)).toEqual([{ pid: after.pid, command: 'sleep 1000' }]);
    } finally {
      after.kill('SIGKILL');
      await after;
    }
  });

  it('a command that leaves nothing behind says nothing', async () => {
    const result = await runShell('echo plain', { cwd: dir, timeoutMs: 30_000 });
    expect(result.output).toBe('plain\n');
    expect(result.leftBehind).toBeUndefined();
  });

  it('a worker: what it detached is ended when it ends, and named in its log', async () => {
    const bin = join(dir, 'detaching-worker.sh');
    const result = JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'COMPLETED: ok', total_cost_usd: 0, usage: {} });
    await writeFile(bin, `#!/bin/sh\ncat >/dev/null\n${DETACH}\nsleep 0.3\necho '${result}'\n`);
    await chmod(bin, 0o755);
    let marker = '';
    const logPath = join(dir, 'worker.log');
    await runWorker({
      taskIndex: 0,
      attempt: 1,
      prompt: 'x',
      model: 'sonnet',
      cwd: dir,
      claudeBin: bin,
      permissionMode: 'dontAsk',
      allowedTools: [],
      timeoutMs: 60_000,
      logPath,
      killGraceMs: 500,
      onSpawn: (_pgid, m) => {
        marker = m;
      },
    });
    expect(marker).not.toBe('');
    expect(findMarked(PROCESS_MARKER_VARIABLE, marker)).toEqual([]);
    expect(await readFile(logPath, 'utf8')).toMatch(/! ended what the worker left running outside its process group: \d+ \(sleep 1000\)/);
  });

  it('a run killed with kill -9: the next run ends what carries its markers', async () => {
    const registryPath = join(dir, 'workers.json');
    const script = join(dir, 'killed-run.mts');
    await writeFile(
      script,
      [
        `import { ProcessRegistry, recorded } from ${JSON.stringify(join(repoRoot, 'src/adapters/processes/orphans.ts'))};`,
        `import { runShell } from ${JSON.stringify(join(repoRoot, 'src/adapters/sandbox/checks.ts'))};`,
        `const registry = new ProcessRegistry(${JSON.stringify(registryPath)});`,
        `await recorded(registry, { kind: 'acceptance-check', task: 3, command: 'serve' }, (hooks) =>`,
        `  runShell(${JSON.stringify(`${DETACH} sleep 1000`)}, { cwd: ${JSON.stringify(dir)}, timeoutMs: 600000, ...hooks }));`,
      ].join('\n'),
    );
    const run = execa('node', ['--import', tsxLoader, script], { reject: false });
    // Wait for the record and for the detached process to carry its marker.
    let marker: string | undefined;
    await waitFor('the detached sleep to carry its recorded marker', async () => {
      try {
        const records = JSON.parse(await readFile(registryPath, 'utf8')) as Array<{ marker?: string }>;
        const m = records[0]?.marker;
        if (m && findMarked(PROCESS_MARKER_VARIABLE, m).some((p) => p.command === 'sleep 1000' && isDetached(p.pid))) marker = m;
      } catch {
        // not written yet
      }
      return marker !== undefined;
    });
    expect(marker).toBeDefined();
    run.kill('SIGKILL');
    await run;
    expect(findMarked(PROCESS_MARKER_VARIABLE, marker!).length).toBeGreaterThan(0);

    const killed = await killOrphans(registryPath);
    expect(killed.map((k) => [k.kind, k.task])).toEqual([['acceptance-check', 3]]);
    expect(killed[0]!.leftRunning?.map((p) => p.command)).toContain('sleep 1000');
    expect(describeOrphans(killed)).toMatch(/the acceptance check of task 3 \(`serve`\), with what it left running: \d+ \(sleep 1000\)/);
    expect(findMarked(PROCESS_MARKER_VARIABLE, marker!)).toEqual([]);
  });
});

/** Whether `pid` leads a session of its own (it left the command's group with setsid). */
function isDetached(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[3]) === pid;
  } catch {
    return false;
  }
}
