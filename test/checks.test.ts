import { readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedOutput, DEFAULT_MAX_OUTPUT_BYTES, runShell } from '../src/adapters/sandbox/checks.ts';
import { groupAlive } from '../src/adapters/processes/processes.ts';
import { waitFor } from './support/wait.ts';

/** The time limit of a command whose test is not about time limits: beyond the test's own, which catches a hang. */
const NOT_THE_LIMIT = 120_000;

const cwd = os.tmpdir();

/** A `sleep` duration no other process on the machine uses, to find our own sleeps. */
const marker = () => `${1000 + Math.floor(Math.random() * 1000)}.${process.pid}${Math.floor(Math.random() * 1e6)}`;

/** Pids of live processes whose command line contains `needle`. */
async function pidsWith(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = (await readFile(path.join('/proc', name, 'cmdline'), 'utf8')).replaceAll('\0', ' ');
      const stat = await readFile(path.join('/proc', name, 'stat'), 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (cmd.includes(needle) && state !== 'Z') pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

async function expectNoProcesses(needle: string): Promise<void> {
  await waitFor(`the processes of ${needle} to end`, async () => (await pidsWith(needle)).length === 0);
  expect(await pidsWith(needle)).toEqual([]);
}

describe('runShell', () => {
  it('reports exit codes and merges stdout and stderr', async () => {
    const ok = await runShell('echo out; echo err >&2', { cwd, timeoutMs: NOT_THE_LIMIT });
    expect(ok).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
    expect(ok.output).toContain('out\n');
    expect(ok.output).toContain('err\n');
    expect(ok.signal).toBeUndefined();
    expect(ok.durationMs).toBeGreaterThan(0);

    expect((await runShell('exit 3', { cwd, timeoutMs: NOT_THE_LIMIT })).exitCode).toBe(3);
    const missing = await runShell('definitely-not-a-command-xyz', { cwd, timeoutMs: NOT_THE_LIMIT });
    expect(missing.exitCode).toBe(127);
    expect(missing.output).toMatch(/not found/);
  });

  it('runs in cwd with the given environment', async () => {
    const r = await runShell('pwd; echo "$FOREMAN_TEST_VAR"; echo "${HOME:-unset}"', {
      cwd: '/',
      timeoutMs: NOT_THE_LIMIT,
      env: { FOREMAN_TEST_VAR: 'hello there', HOME: undefined },
    });
    expect(r.output).toBe('/\nhello there\nunset\n');
  });

  it('does not throw when the command cannot start', async () => {
    const r = await runShell('true', { cwd: path.join(cwd, 'no-such-dir-foreman-xyz'), timeoutMs: NOT_THE_LIMIT });
    expect(r.exitCode).toBeNull();
    expect(r.timedOut).toBe(false);
    expect(r.output).toMatch(/ENOENT/);
  });

  it('kills the whole process group on timeout', async () => {
    const m = marker();
    const started = Date.now();
    const r = await runShell(`sleep ${m} & sleep ${m}; wait`, { cwd, timeoutMs: 300 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.signal).toBe('SIGTERM');
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectNoProcesses(`sleep ${m}`);
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const m = marker();
    const r = await runShell(`trap '' TERM; sleep ${m} & sleep ${m}; wait`, { cwd, timeoutMs: 200, killGraceMs: 300 });
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe('SIGKILL');
    await expectNoProcesses(`sleep ${m}`);
  });

  it('kills what a finished command left running instead of waiting for it', async () => {
    const m = marker();
    const started = Date.now();
    const r = await runShell(`sleep ${m} & echo done`, { cwd, timeoutMs: 30_000 });
    expect(r).toMatchObject({ exitCode: 0, timedOut: false, output: 'done\n' });
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectNoProcesses(`sleep ${m}`);
  });

  it('reports its process group through onSpawn and resolves only once that group is gone', async () => {
    const m = marker();
    const groups: number[] = [];
    // The shell ends at once; what it leaves behind ignores SIGTERM and does not hold the pipes.
    const ready = `ready-${m}`;
    const script = `(trap '' TERM; touch ${ready}; exec sleep ${m}) >/dev/null 2>&1 & while [ ! -e ${ready} ]; do sleep 0.01; done; echo done`;
    const r = await runShell(script, { cwd, timeoutMs: 30_000, killGraceMs: 300, onSpawn: (g) => groups.push(g) });
    expect(r).toMatchObject({ exitCode: 0, output: 'done\n' });
    expect(groups).toHaveLength(1);
    // No waiting here: the leftover got SIGKILL and is gone when runShell resolves.
    expect(groupAlive(groups[0]!)).toBe(false);
    await rm(path.join(cwd, ready), { force: true });
  });

  it('stops on abort', async () => {
    const m = marker();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const r = await runShell(`sleep ${m}`, { cwd, timeoutMs: 30_000, signal: ac.signal });
    expect(r).toMatchObject({ aborted: true, timedOut: false, exitCode: null });
    await expectNoProcesses(`sleep ${m}`);

    const pre = new AbortController();
    pre.abort();
    expect(await runShell('echo never', { cwd, timeoutMs: 1000, signal: pre.signal })).toMatchObject({ aborted: true, exitCode: null });
  });

  it('bounds the output, keeping its start and end', async () => {
    const r = await runShell('yes | head -c 10000000; echo; echo THE END', { cwd, timeoutMs: 30_000 });
    expect(r.exitCode).toBe(0);
    expect(r.outputBytes).toBe(10_000_000 + 1 + 8);
    expect(Buffer.byteLength(r.output)).toBeLessThan(DEFAULT_MAX_OUTPUT_BYTES + 100);
    expect(r.output.startsWith('y\ny\ny\n')).toBe(true);
    expect(r.output.endsWith('y\ny\n\nTHE END\n')).toBe(true);
    expect(r.output).toMatch(/\n… \d+ bytes omitted …\n/);
    const omitted = Number(/… (\d+) bytes omitted …/.exec(r.output)?.[1]);
    expect(omitted).toBe(r.outputBytes - DEFAULT_MAX_OUTPUT_BYTES);

    const small = await runShell('seq 1 100000', { cwd, timeoutMs: 30_000, maxOutputBytes: 20 });
    expect(small.output).toMatch(/^1\n2\n3\n4\n5\n\n… \d+ bytes omitted …\n99\n100000\n$/);
  });

  it('cuts the output on character boundaries', async () => {
    // 'é' is two bytes; with an odd bound both cuts fall inside a character.
    const r = await runShell(`printf 'é%.0s' $(seq 1 1000)`, { cwd, timeoutMs: NOT_THE_LIMIT, maxOutputBytes: 11 });
    expect(r.output).not.toContain('\uFFFD');
    expect(r.output).toMatch(/^(é)+\n… \d+ bytes omitted …\n(é)+$/);
    const shown = (r.output.match(/é/g) ?? []).length * 2;
    const omitted = Number(/… (\d+) bytes omitted …/.exec(r.output)?.[1]);
    expect(shown + omitted).toBe(2000);
  });
});

describe('BoundedOutput', () => {
  it('keeps exactly the first and last bytes and never holds more than the bound', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c', '\n'), maxLength: 300 }), { maxLength: 30 }),
        fc.nat({ max: 200 }),
        fc.nat({ max: 200 }),
        (chunks, headMax, tailMax) => {
          const b = new BoundedOutput(headMax, tailMax);
          for (const c of chunks) {
            b.push(Buffer.from(c));
            expect(b.held).toBeLessThanOrEqual(headMax + tailMax);
          }
          const full = chunks.join('');
          expect(b.total).toBe(full.length);
          if (full.length <= headMax + tailMax) {
            expect(b.toString()).toBe(full);
          } else {
            const omitted = full.length - headMax - tailMax;
            expect(b.toString()).toBe(`${full.slice(0, headMax)}\n… ${omitted} bytes omitted …\n${full.slice(full.length - tailMax)}`);
          }
        },
      ),
    );
  });
});
