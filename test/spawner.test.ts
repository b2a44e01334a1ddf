// The process starter (src/adapters/processes/spawner.ts): commands started through one long-lived bash get
// exactly their words, input, directory and environment, as a fork of this process would give
// them; their output comes back byte for byte; a time limit ends everything a command started; a
// starter that dies fails only what it was running; and it never keeps its process alive.

import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashWord, type ProcessEnd, type ProcessRequest, runProcess, STARTER_LOOP } from '../src/adapters/processes/spawner.ts';
import { repoRoot, tsxLoader } from './support/execute.ts';
import { alive, childrenOf } from './support/processes.ts';
import { restoreEnv } from './support/env.ts';
import { testSignal, waitFor } from './support/wait.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-spawner-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const run = (file: string, args: string[], more: Partial<ProcessRequest> = {}): Promise<ProcessEnd> =>
  runProcess({ file, args, cwd: dir, env: process.env, timeoutMs: 30_000, ...more });

/** Its stdout as text, once it exited 0. */
async function output(file: string, args: string[], more: Partial<ProcessRequest> = {}): Promise<string> {
  const ended = await run(file, args, more);
  if (ended.kind !== 'exited' || ended.code !== 0) throw new Error(`${file} ${args.join(' ')}: ${JSON.stringify(ended)}`);
  return ended.stdout.toString('utf8');
}

/** The bash starters this process runs. */
const starters = (): number[] => childrenOf(process.pid, 'foreman-starter');

/** The spawner module, for an import in a script of its own. */
const SPAWNER = JSON.stringify(join(repoRoot, 'src/adapters/processes/spawner.ts'));

/** Writes `source` as a script of its own; running it (node with tsx, in `dir`) resolves with its stdout. */
async function script(name: string, source: string): Promise<(env?: Record<string, string>, timeoutMs?: number) => Promise<string>> {
  const file = join(dir, `${name}.mts`);
  await writeFile(file, source);
  // No time limit of its own: tsx loading the sources takes seconds on a busy machine; the test's limit catches a hang, and ends it.
  return async (env = {}) => (await execa('node', ['--import', tsxLoader, file], { cwd: dir, env, cancelSignal: testSignal() })).stdout;
}

describe('the process starter', () => {
  it('gives a command exactly its words, quotes, newlines and control characters included', async () => {
    const words = ["it's", 'a "quoted" $HOME `x` \\n', 'two\nlines', 'tab\there', '\x01\x1b[0m\x7f', 'ünïcødé ✓', '', '*', '-n', '$(touch pwned)'];
    const printed = await output('/bin/sh', ['-c', 'for a; do printf "%s\\0" "$a"; done', 'sh', ...words]);
    expect(printed.split('\0').slice(0, -1)).toEqual(words);
    expect(await readdir(dir)).not.toContain('pwned');
  });

  it('delivers its input and returns its output byte for byte, at any size', async () => {
    const input = 'line one\nlínea dos\n\n  three  \n';
    expect(await output('cat', [], { input })).toBe(input);
    const ended = await run('/bin/sh', ['-c', 'printf "a\\0b\\377"; head -c 3000000 /dev/zero; echo err >&2']);
    expect(ended.kind).toBe('exited');
    if (ended.kind !== 'exited') return;
    expect(ended.stdout.subarray(0, 4)).toEqual(Buffer.from([0x61, 0, 0x62, 0xff]));
    expect(ended.stdout.length).toBe(4 + 3_000_000);
    expect(ended.stderr.toString()).toBe('err\n');
  });

  it('reports exit codes, and 128 + the signal for a command a signal ended', async () => {
    expect(await run('/bin/sh', ['-c', 'exit 7'])).toMatchObject({ kind: 'exited', code: 7 });
    expect(await run('/bin/sh', ['-c', 'kill -TERM $$'])).toMatchObject({ kind: 'exited', code: 143 });
  });

  it('gives the environment of this process as it is when the command starts, with the command’s own', async () => {
    await output('true', []);
    const saved = { ...process.env };
    try {
      process.env.FOREMAN_SPAWNER_LATER = 'set after the starter started';
      delete process.env.HOME;
      delete process.env.OLDPWD;
      process.env.SHLVL = '7';
      const env = (await output('env', [], { env: { ...process.env, FOREMAN_SPAWNER_OWN: 'a\nb' } })).split('\n');
      expect(env).toContain('FOREMAN_SPAWNER_LATER=set after the starter started');
      expect(env.join('\n')).toContain('FOREMAN_SPAWNER_OWN=a\nb');
      expect(env.some((line) => line.startsWith('HOME='))).toBe(false);
      expect(env).toContain('SHLVL=7');
      expect(env.some((line) => line.startsWith('OLDPWD='))).toBe(false);
      // A read-only variable of bash's, exported: forked, with it.
      expect((await output('env', [], { env: { ...process.env, UID: '12345' } })).split('\n')).toContain('UID=12345');
      // A name bash cannot export: the command is forked from here, with it.
      expect((await output('env', [], { env: { ...process.env, 'FOREMAN.DOTTED': '1' } })).split('\n')).toContain('FOREMAN.DOTTED=1');
    } finally {
      restoreEnv(saved);
    }
  });

  it('runs in its directory, a relative one from this process’s, and says when it cannot start', async () => {
    const sub = await mkdtemp(join(dir, 'sub-'));
    expect((await output('pwd', ['-P'], { cwd: sub })).trim()).toBe(sub);
    expect((await output('pwd', ['-P'], { cwd: relative(process.cwd(), sub) })).trim()).toBe(sub);
    expect(await run('pwd', [], { cwd: join(dir, 'no-such-directory') })).toEqual({ kind: 'not-started', message: 'no such directory' });
    expect(await run('foreman-no-such-program', [])).toEqual({ kind: 'not-started', message: 'no such program on the PATH' });
    // A word with a NUL in it is refused, as a fork refuses it.
    await expect(run('echo', ['a\0b'])).rejects.toThrow(/null bytes/);
  });

  it('ends a command at its time limit, with everything it started', async () => {
    const pidFile = join(dir, 'sleeper.pid');
    const ended = await run('/bin/sh', ['-c', `sleep 60 & echo $! > ${pidFile}; wait`], { timeoutMs: 500 });
    expect(ended).toEqual({ kind: 'timed-out' });
    const sleeper = Number(readFileSync(pidFile, 'utf8'));
    await waitFor('the command’s child ended', () => !alive(sleeper));
  });

  it('reads a request of any length whole, with words, a directory and a value beyond ASCII, in a UTF-8 locale or C', async () => {
    // About 70 KB as an argument (one may hold 128 KiB), a request of 220 KB once escaped.
    const long = 'é✓'.repeat(10_000) + 'x'.repeat(20_000);
    const own = await mkdtemp(join(dir, 'dïr ✓-'));
    const runScript = await script(
      'locale',
      `import { runProcess } from ${SPAWNER};\n` +
        `const ask = (args) => runProcess({ file: '/bin/sh', args: ['-c', 'printf "%s|%s|%s" "$1" "$PWD" "$FOREMAN_SPAWNER_VALUE"', 'sh', ...args], cwd: ${JSON.stringify(own)}, env: { ...process.env, FOREMAN_SPAWNER_VALUE: 'välue ✓' }, timeoutMs: 30000 });\n` +
        `const ends = await Promise.all([ask([${JSON.stringify(long)}]), ask(['ünï ✓']), ask(['plain'])]);\n` +
        `console.log(JSON.stringify(ends.map((e) => (e.kind === 'exited' ? e.stdout.toString('utf8') : e))));\n`,
    );
    for (const locale of ['C.UTF-8', 'C']) {
      expect(JSON.parse(await runScript({ LC_ALL: locale })), locale).toEqual([`${long}|${own}|välue ✓`, `ünï ✓|${own}|välue ✓`, `plain|${own}|välue ✓`]);
    }
  });

  it('reads requests line by line where bash has no `read -N` (older than 4.1)', async () => {
    const slow = STARTER_LOOP.replace(/^if .*; then$/m, 'if false; then');
    expect(slow).not.toBe(STARTER_LOOP);
    const out = join(dir, 'older-bash.out');
    const line = `{ printf %s ${bashWord("ünï ✓ 'quoted'")} >${bashWord(out)}; echo "d 0 $?"; } & echo "s 0 $!"\n`;
    const ran = await execa('/bin/bash', ['-c', slow, 'foreman-starter', await mkdtemp(join(dir, 'older-'))], {
      input: `${line.length}\n${line}`,
      cancelSignal: testSignal(),
    });
    // Two processes answer, the started one and the one that ends: either may write first.
    expect(
      ran.stdout
        .split('\n')
        .map((answer) => answer.split(' ')[0])
        .sort(),
    ).toEqual(['d', 's']);
    expect(readFileSync(out, 'utf8')).toBe("ünï ✓ 'quoted'");
  });

  it('keeps the output of commands that run at once apart', async () => {
    const ends = await Promise.all(Array.from({ length: 30 }, (_, i) => output('/bin/sh', ['-c', `sleep 0.0${i % 10}; echo ${i}; echo ${i} >&2`])));
    expect(ends).toEqual(Array.from({ length: 30 }, (_, i) => `${i}\n`));
  });

  it('still reports what a starter that died was running, and starts another', async () => {
    const started = join(dir, 'job-started');
    const running = run('/bin/sh', ['-c', `touch ${started}; sleep 1; echo finished`]);
    await waitFor('the job started', () => existsSync(started));
    expect(starters()).toHaveLength(1);
    const first = starters()[0]!;
    process.kill(first, 'SIGKILL');
    await waitFor('the starter gone', () => !alive(first));
    // The command's job outlives its starter, and still says how it ended.
    const ended = await running;
    expect(ended.kind === 'exited' && ended.stdout.toString()).toBe('finished\n');
    expect(await output('echo', ['again'])).toBe('again\n');
    expect(starters()).not.toContain(first);
  });

  it('runs a command handed to a starter that had just died, before its exit was seen', async () => {
    expect(await output('true', [])).toBe('');
    const first = starters()[0]!;
    // In the same tick: the starter's exit cannot have been seen yet, so the command goes to it.
    process.kill(first, 'SIGKILL');
    expect(await output('echo', ['handed over'])).toBe('handed over\n');
    expect(await output('echo', ['after'])).toBe('after\n');
  });

  it('forks a command whose output or input it cannot write, and carries on with another bash', async () => {
    const own = await mkdtemp(join(dir, 'tmp-'));
    const runScript = await script(
      'full-tmp',
      `import { readdirSync, rmSync } from 'node:fs';\n` +
        `import { join } from 'node:path';\n` +
        `import { runProcess } from ${SPAWNER};\n` +
        `const starters = () => readdirSync(process.env.TMPDIR).filter((name) => name.startsWith('foreman-spawn-'));\n` +
        `const run = async (file, args, input) => { const ended = await runProcess({ file, args, cwd: process.cwd(), env: process.env, timeoutMs: 30000, ...(input ? { input } : {}) }); return ended.kind === 'exited' ? ended.stdout.toString().trim() : JSON.stringify(ended); };\n` +
        `await run('true', []);\n` +
        `const first = starters();\n` +
        // What a cleaned or full temporary directory does to the starter: its files cannot be made.
        `for (const name of first) rmSync(join(process.env.TMPDIR, name), { recursive: true });\n` +
        `console.log(await run('cat', [], 'input, forked'));\n` +
        `console.log(await run('echo', ['output, forked']));\n` +
        `console.log(await run('echo', ['a new bash']));\n` +
        `console.log(JSON.stringify({ first, now: starters() }));\n`,
    );
    const [input, output, again, starters] = (await runScript({ TMPDIR: own })).split('\n');
    expect(input).toBe('input, forked');
    expect(output).toBe('output, forked');
    expect(again).toBe('a new bash');
    const { first, now } = JSON.parse(starters!) as { first: string[]; now: string[] };
    expect(first).toHaveLength(1);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(first[0]);
  });

  it.runIf(existsSync('/proc/self/stat'))(
    'ended at the end of a command line, its commands’ CPU counts among the process’s children’s, as a fork’s would',
    async () => {
      const runScript = await script(
        'ends-starter',
        `import { readFileSync } from 'node:fs';\n` +
          `import { endStarter, runProcess } from ${SPAWNER};\n` +
          `const childrenCpuMs = () => { const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' '); return (Number(f[13]) + Number(f[14])) * 10; };\n` +
          `const burn = () => runProcess({ file: '/bin/sh', args: ['-c', 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'], cwd: process.cwd(), env: process.env, timeoutMs: 60000 });\n` +
          `await burn();\n` +
          `const before = childrenCpuMs();\n` +
          `await endStarter();\n` +
          `const after = childrenCpuMs();\n` +
          `const again = await runProcess({ file: 'echo', args: ['a new bash'], cwd: process.cwd(), env: process.env, timeoutMs: 60000 });\n` +
          `await endStarter();\n` +
          `console.log(JSON.stringify({ before, after, again: again.kind === 'exited' ? again.stdout.toString().trim() : again }));\n`,
      );
      const { before, after, again } = JSON.parse(await runScript({})) as { before: number; after: number; again: string };
      // Before: the command's CPU is the starter's, which nothing has waited for yet.
      expect(after - before).toBeGreaterThan(50);
      expect(again).toBe('a new bash');
    },
  );

  it('never keeps its process alive, removes its files when that process ends, and is not misled by BASH_ENV or a shell function', async () => {
    const own = await mkdtemp(join(dir, 'tmp-'));
    const noisy = join(dir, 'noisy.sh');
    await writeFile(noisy, 'echo "d 0 0"\necho noise\n');
    const runScript = await script(
      'uses-starter',
      `import { runProcess } from ${SPAWNER};\n` +
        `const ended = await runProcess({ file: 'printenv', args: ['BASH_ENV'], cwd: process.cwd(), env: process.env, timeoutMs: 30000 });\n` +
        `console.log(ended.kind === 'exited' ? ended.stdout.toString().trim() : JSON.stringify(ended));\n` +
        `const git = await runProcess({ file: 'git', args: ['--version'], cwd: process.cwd(), env: process.env, timeoutMs: 30000 });\n` +
        `console.log(git.kind === 'exited' ? git.stdout.toString().trim() : JSON.stringify(git));\n`,
    );
    // The starter starts with this environment: a shell function named git, exported, is not what runs.
    const [bashEnv, git] = (await runScript({ TMPDIR: own, BASH_ENV: noisy, 'BASH_FUNC_git%%': '() { echo hijacked; }' })).split('\n');
    expect(bashEnv).toBe(noisy);
    expect(git).toMatch(/^git version /);
    await waitFor('the starter removed its directory', async () => !(await readdir(own)).some((name) => name.startsWith('foreman-spawn-')));
  });
});
