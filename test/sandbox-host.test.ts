// The sandbox hosts a foreman process starts for its own commands (src/adapters/sandbox/sandbox-host.ts,
// scripts/sandbox-host.mjs): one serves commands one after another; commands that run at once take
// a host each, so each command's placeholder files are gone as soon as it ended; a host never
// keeps its process alive, and ends when that process ends, however it ends.

import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runShell } from '../src/adapters/sandbox/checks.ts';
import { sandboxSupport } from '../src/adapters/sandbox/sandbox.ts';
import { repoRoot, tsxLoader } from './support/execute.ts';
import { alive, childrenOf } from './support/processes.ts';
import { waitFor } from './support/wait.ts';

const support = await sandboxSupport();
if (!support.ok) console.warn(`sandbox host tests are skipped, the sandbox cannot run here: ${support.error}`);

/** The sandbox hosts `parent` started whose network policy names `host` (each test its own). */
const hostsOf = (parent: number, host: string): number[] => childrenOf(parent, 'sandbox-host.mjs', host);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-sandbox-host-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sandboxed = (command: string, cwd: string, host: string) =>
  runShell(command, { cwd, timeoutMs: 60_000, sandbox: { writable: [cwd], allowedDomains: [host] } });

describe.runIf(support.ok)('sandbox hosts', () => {
  it('serves commands one after another from one host', async () => {
    const work = join(dir, 'serial');
    await mkdir(work);
    for (let i = 0; i < 3; i++) {
      const run = await sandboxed(`echo ${i} > out-${i}.txt && ! touch ${join(dir, `outside-${i}`)}`, work, 'serial.invalid');
      expect(run.exitCode, run.output).toBe(0);
    }
    expect((await readdir(work)).sort()).toEqual(['out-0.txt', 'out-1.txt', 'out-2.txt']);
    expect(await readdir(dir)).not.toContain('outside-0');
    expect(hostsOf(process.pid, 'serial.invalid')).toHaveLength(1);
  });

  it("guards the files of the command's own directory (.bashrc, .git/hooks, …), not of the host's", async () => {
    const work = join(dir, 'guarded');
    await mkdir(join(work, '.git', 'hooks'), { recursive: true });
    expect(process.cwd()).not.toBe(work);
    const run = await sandboxed(
      'echo ok > file.txt; echo hook > .git/hooks/pre-commit; echo rc >> .bashrc; mkdir -p .claude/commands && echo cmd > .claude/commands/x.md; exit 0',
      work,
      'guarded.invalid',
    );
    expect(run.exitCode, run.output).toBe(0);
    expect(readFileSync(join(work, 'file.txt'), 'utf8')).toBe('ok\n');
    expect(await readdir(join(work, '.git', 'hooks'))).toEqual([]);
    expect((await readdir(work)).sort()).toEqual(['.git', 'file.txt']);
  });

  it('says nothing was left running when only the sandbox itself ends a moment after the command', async () => {
    // bubblewrap's process in the sandbox (a session of its own, with the command's marker) is ended
    // by the kernel just after the shell; a sweep that came first named it (1 run in 40 before).
    const work = join(dir, 'settle');
    await mkdir(work);
    for (let i = 0; i < 25; i++) {
      const run = await sandboxed('echo nope; exit 3', work, 'settle.invalid');
      expect(run.exitCode).toBe(3);
      expect(run.output).toBe('nope\n');
      expect(run.leftBehind).toBeUndefined();
    }
  });

  it("gives commands that run at once a host each, so one's placeholders are gone as soon as it ended while the other runs", async () => {
    const [first, second] = [join(dir, 'first'), join(dir, 'second')];
    await mkdir(first);
    await mkdir(second);
    const release = join(dir, 'release');
    // The second runs until the test releases it; the first starts once the second runs, and ends at once.
    const waiting = sandboxed(
      `touch running; while [ ! -e '${release}' ]; do sleep 0.05; done; rm running; echo done > second.txt`,
      second,
      'together.invalid',
    );
    try {
      await waitFor('the second command to run', async () => (await readdir(second)).includes('running'));
      // bubblewrap holds empty placeholders (.bashrc, .gitconfig, .mcp.json, …) in a directory it guards while its command runs.
      expect(await readdir(second)).toEqual(expect.arrayContaining(['running', '.bashrc', '.gitconfig']));
      const quick = await sandboxed('echo done > first.txt', first, 'together.invalid');
      expect(quick.exitCode, quick.output).toBe(0);
      // The first's are gone once it ended, though the second still runs.
      expect(await readdir(first)).toEqual(['first.txt']);
      expect(await readdir(second)).toEqual(expect.arrayContaining(['running', '.bashrc']));
      expect(hostsOf(process.pid, 'together.invalid')).toHaveLength(2);
    } finally {
      await writeFile(release, '');
    }
    const slow = await waiting;
    expect(slow.exitCode, slow.output).toBe(0);
    expect(await readdir(second)).toEqual(['second.txt']);
  });

  // A process of its own, running the sources: it runs a sandboxed command, says so, then either
  // returns (and must exit by itself) or waits to be killed.
  const script = (mode: 'return' | 'wait') => `
    import { runShell } from ${JSON.stringify(join(repoRoot, 'src/adapters/sandbox/checks.ts'))};
    const run = await runShell('true', { cwd: ${JSON.stringify(dir)}, timeoutMs: 60_000, sandbox: { writable: [${JSON.stringify(dir)}], allowedDomains: ['${mode}.invalid'] } });
    console.log('ran ' + run.exitCode);
    ${mode === 'wait' ? 'setInterval(() => undefined, 1000);' : ''}
  `;

  it('never keeps the process that started it alive, and is gone once it exited', async () => {
    const file = join(dir, 'returns.mts');
    await writeFile(file, script('return'));
    const run = await execa('node', ['--import', tsxLoader, file], { reject: false, timeout: 60_000, stdin: 'ignore' });
    expect(run.stdout).toBe('ran 0');
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.timedOut).toBe(false);
  });

  it('ends when the process that started it is killed with SIGKILL', async () => {
    const file = join(dir, 'waits.mts');
    await writeFile(file, script('wait'));
    const child = execa('node', ['--import', tsxLoader, file], { reject: false, stdin: 'ignore', buffer: false });
    await new Promise<void>((resolve) => child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ran 0') && resolve()));
    const hosts = hostsOf(child.pid!, 'wait.invalid');
    expect(hosts).toHaveLength(1);
    child.kill('SIGKILL');
    await child;
    await waitFor('the sandbox host to end', () => !alive(hosts[0]!));
    expect(alive(hosts[0]!)).toBe(false);
  });
});
