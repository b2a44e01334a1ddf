// Starts short commands (git's, above all) through one bash kept running for the purpose, instead
// of forking this process for each. A fork copies the page tables of the process that forks and
// holds its event loop until the child has started its program: about 2 ms from a node process of
// 140 MB on a quiet machine and 6 ms on a busy one, against a tenth of that from a bash of 4 MB.
// An attempt runs about six git commands; forked from the orchestrator they held its event loop
// for more than half of what it spent per task.
//
// The protocol: one line per command on bash's stdin, after a line giving its length in bytes,
// which bash evaluates to start the command as a background job (`set -m`: a process group of its
// own, so a time limit ends everything it started), answering `s <id> <pid>` at once and
// `d <id> <exit code>` when it ends (or `n <id>` when it could not start). Output goes to files
// in a private directory, read and removed here:
// binary-safe, any size, and no interleaving of concurrent commands. The command's environment is
// this process's (as it is when the command starts) plus its own: bash exports the differences
// from the environment it was started with.
//
// Where that cannot be done exactly (no bash, a variable whose name bash cannot export differs),
// or the private directory cannot be written (removed by a cleaner, a full disk), the command is
// forked from here as before: the same outcome, only dearer.

import { type ChildProcess, type ChildProcessByStdio, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import type { Socket } from 'node:net';
import { join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { signalGroup } from './processes.ts';

export interface ProcessRequest {
  /** The program, looked up on the PATH of `env`. */
  file: string;
  args: readonly string[];
  cwd: string;
  /** The whole environment the command gets. */
  env: NodeJS.ProcessEnv;
  /** Written to its stdin (which is otherwise empty). */
  input?: string;
  /** After this long its process group is ended with SIGKILL. */
  timeoutMs: number;
}

export type ProcessEnd =
  /** It ran and exited: `code` is its exit code, or 128 + the signal that ended it. */
  | { kind: 'exited'; code: number; stdout: Buffer; stderr: Buffer }
  /** It hit `timeoutMs`; its process group was ended. */
  | { kind: 'timed-out' }
  /** It could not be started (no such program, no such directory); `message` says which. */
  | { kind: 'not-started'; message: string };

const BASH = '/bin/bash';

/**
 * Whether `child`'s output keeps this process alive: for a child kept running (a starter, a
 * long-lived git, a sandbox host), only while something here waits for what it says.
 */
export function holdOpen(child: { stdout: Readable | null; stderr: Readable | null }, hold: boolean): void {
  for (const stream of [child.stdout, child.stderr] as unknown as Array<Socket | null>) {
    if (hold) stream?.ref();
    else stream?.unref();
  }
}

/**
 * Closes the input of a child kept running (which it takes as the signal to end) and resolves
 * once it has exited, or after `limitMs`: waited for, its CPU counts among this process's
 * children's.
 */
export function endInput(child: ChildProcess, limitMs: number): Promise<void> {
  child.stdin?.end();
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      child.unref();
      resolve();
    };
    const timer = setTimeout(done, limitMs);
    child.once('exit', done);
    child.ref();
  });
}

/** Ends a child started with `detached: true` (a group of its own) with whatever it started. */
export function endGroup(child: ChildProcess): void {
  if (child.pid === undefined || !signalGroup(child.pid, 'SIGKILL')) child.kill('SIGKILL');
}

/**
 * Variables that change how bash itself starts (a file it sources, options it sets): the starter
 * runs without them, and its commands get them back with the rest of the environment. Bash will
 * not export the two option lists; a command that needs them differing is forked from here.
 */
const BASH_STARTUP = ['BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS'];
/** Variables bash keeps read-only: a command that needs them other than bash has them is forked. */
const UNEXPORTABLE = new Set(['SHELLOPTS', 'BASHOPTS', 'BASH_VERSINFO', 'EUID', 'PPID', 'UID']);
/** What bash sets in its own environment, put back to the command's own values each time. */
const BASH_SETS = ['SHLVL', 'OLDPWD'];

/** A name bash can assign and export. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * One word for bash, in ANSI-C quotes, in ASCII: a newline or any control character stays on the
 * request's one line, and a character beyond ASCII is written as its UTF-8 bytes (`\\xHH`), so a
 * request's length in bytes is its length in characters in any locale (`read -N` counts characters).
 */
export function bashWord(word: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it escapes
  const escaped = word.replace(/[\\'\x00-\x1f\x7f-\u{10ffff}]/gu, (c) => {
    if (c === '\\') return '\\\\';
    if (c === "'") return "\\'";
    let bytes = '';
    for (const byte of Buffer.from(c, 'utf8')) bytes += `\\x${byte.toString(16).padStart(2, '0')}`;
    return bytes;
  });
  return `$'${escaped}'`;
}

/**
 * The loop bash runs: each request is a line with its length, then the line that starts the
 * command; at end of input it waits for the running ones and removes the output directory. Bash
 * reads a line from a pipe a byte at a time (one system call per byte: most of what the starter
 * spent); `read -N` (bash 4.1 and later) takes the counted line in one call. An older bash reads
 * it the slow way.
 */
export const STARTER_LOOP = [
  'set -m',
  'if ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 1))); then',
  '  while IFS= read -r size && IFS= read -r -N "$size" line; do eval "$line"; done',
  'else',
  '  while IFS= read -r size && IFS= read -r line; do eval "$line"; done',
  'fi',
  'wait',
  'rm -rf -- "$1"',
].join('\n');

interface Pending {
  request: ProcessRequest;
  pid: number | null;
  timedOut: boolean;
  timer: NodeJS.Timeout;
  files: { out: string; err: string; in?: string };
  settle: (end: ProcessEnd) => void;
}

/** The bash that starts commands, with what it was started with. */
class Starter {
  private next = 0;
  private readonly pending = new Map<string, Pending>();
  private buffered = '';
  private closed = false;

  constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, null>,
    readonly dir: string,
    /** The environment bash started with: a command's is given as differences from it. */
    readonly base: NodeJS.ProcessEnv,
  ) {
    child.unref();
    holdOpen(child, false);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => this.read(text));
    child.stdin.on('error', () => undefined);
    // Once bash is gone, new commands go to another; the jobs it started still answer on its
    // output until they end, and whatever is left unanswered when that closes has failed.
    child.on('exit', () => this.retire());
    child.on('error', () => this.close());
    child.on('close', () => this.close());
  }

  /** The line that starts `request` as job `id`, or null when its environment cannot be given exactly. */
  private line(id: string, request: ProcessRequest, files: Pending['files']): string | null {
    // A NUL ends a word for bash, where a fork refuses it: let the fork say so.
    if ([request.file, request.cwd, ...request.args].some((word) => word.includes('\0'))) return null;
    const assignments: string[] = [];
    const unset: string[] = [];
    const names = new Set([...Object.keys(this.base), ...Object.keys(request.env), ...BASH_SETS]);
    for (const name of names) {
      const wanted = request.env[name];
      if (!BASH_SETS.includes(name) && wanted === this.base[name]) continue;
      if (!SHELL_NAME.test(name) || UNEXPORTABLE.has(name)) return null;
      if (wanted === undefined) unset.push(name);
      else assignments.push(`${name}=${bashWord(wanted)}`);
    }
    const body = [
      `cd -- ${bashWord(resolve(request.cwd))} 2>/dev/null || { echo "n ${id} cwd"; exit; }`,
      ...(unset.length > 0 ? [`unset ${unset.join(' ')}`] : []),
      ...(assignments.length > 0 ? [`export ${assignments.join(' ')}`] : []),
      // `type -P`: a program file on the PATH (a shell function of that name does not count).
      `type -P -- ${bashWord(request.file)} >/dev/null || { echo "n ${id} command"; exit; }`,
      // `command`: the program itself, never a shell function of that name from the environment.
      `command -- ${[request.file, ...request.args].map(bashWord).join(' ')} <${files.in === undefined ? '/dev/null' : bashWord(files.in)} >${bashWord(files.out)} 2>${bashWord(files.err)}`,
      `echo "d ${id} $?"`,
    ];
    return `{ ${body.join('; ')}; } & echo "s ${id} $!"\n`;
  }

  /** Starts `request`; null when it must be forked from here instead. */
  run(request: ProcessRequest): Promise<ProcessEnd> | null {
    const id = String(this.next++);
    const files: Pending['files'] = {
      out: join(this.dir, `${id}.out`),
      err: join(this.dir, `${id}.err`),
      ...(request.input ? { in: join(this.dir, `${id}.in`) } : {}),
    };
    const line = this.line(id, request, files);
    if (line === null) return null;
    if (files.in !== undefined) {
      try {
        writeFileSync(files.in, request.input!);
      } catch {
        // No room for its input (a full temporary directory): a fork needs none.
        take(files.in);
        return null;
      }
    }
    return new Promise((resolve) => {
      const entry: Pending = {
        request,
        pid: null,
        timedOut: false,
        files,
        timer: setTimeout(() => {
          entry.timedOut = true;
          // Its pid may not have come back yet: the group is ended when it does.
          if (entry.pid !== null) this.finish(id, { kind: 'timed-out' });
        }, request.timeoutMs),
        settle: resolve,
      };
      this.pending.set(id, entry);
      holdOpen(this.child, true);
      // Every word is in ASCII (bashWord), so its length in characters is its length in bytes.
      this.child.stdin.write(`${line.length}\n${line}`);
    });
  }

  private read(text: string): void {
    this.buffered += text;
    let newline = this.buffered.indexOf('\n');
    while (newline >= 0) {
      const [kind, id, value] = this.buffered.slice(0, newline).split(' ');
      this.buffered = this.buffered.slice(newline + 1);
      newline = this.buffered.indexOf('\n');
      const entry = this.pending.get(id ?? '');
      if (entry === undefined) continue;
      if (kind === 's') {
        entry.pid = Number(value);
        if (entry.timedOut) this.finish(id!, { kind: 'timed-out' });
      } else if (kind === 'n') {
        this.finish(id!, { kind: 'not-started', message: value === 'cwd' ? 'no such directory' : 'no such program on the PATH' });
      } else if (kind === 'd') {
        if (existsSync(entry.files.err))
          this.finish(id!, { kind: 'exited', code: Number(value), stdout: take(entry.files.out), stderr: take(entry.files.err) });
        else this.refork(id!);
      }
    }
  }

  private finish(id: string, end: ProcessEnd): void {
    const entry = this.forget(id, end.kind === 'exited');
    if (entry === undefined) return;
    if (end.kind === 'timed-out' && entry.pid !== null) signalGroup(entry.pid, 'SIGKILL');
    entry.settle(end);
  }

  /**
   * Bash could not open a command's output files (its directory removed, or no room left), so the
   * command never ran: it is forked from here instead, and this bash ends once its jobs have, the
   * next command starting another with a directory of its own.
   */
  private refork(id: string): void {
    const entry = this.forget(id, false)!;
    this.retire();
    this.child.stdin.end();
    void forkProcess(entry.request).then(entry.settle);
  }

  /** No longer waits for job `id`: its timer cleared, its files removed (the output files unless `read` took them already). */
  private forget(id: string, outputTaken: boolean): Pending | undefined {
    const entry = this.pending.get(id);
    if (entry === undefined) return undefined;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (!outputTaken) {
      take(entry.files.out);
      take(entry.files.err);
    }
    if (entry.files.in !== undefined) take(entry.files.in);
    if (this.pending.size === 0) holdOpen(this.child, false);
    return entry;
  }

  private retire(): void {
    if (starter === this) starter = null;
  }

  /** Ends this bash once what it runs has ended; resolves when it is gone, or after `limitMs`. */
  end(limitMs: number): Promise<void> {
    this.retire();
    return this.closed ? Promise.resolve() : endInput(this.child, limitMs);
  }

  /**
   * Bash and every job it started are gone; the next command starts a new bash. A command bash
   * never said it started (no pid: it was handed over after bash died, before its exit was seen)
   * never ran, and is forked from here; one that started and left no answer failed.
   */
  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.retire();
    for (const [id, entry] of [...this.pending.entries()]) {
      if (entry.pid !== null) this.finish(id, { kind: 'not-started', message: 'the bash that starts commands ended' });
      else {
        this.forget(id, false);
        void forkProcess(entry.request).then(entry.settle);
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A file's bytes, the file removed; empty when it is not there. */
function take(path: string): Buffer {
  try {
    const bytes = readFileSync(path);
    unlinkSync(path);
    return bytes;
  } catch {
    return Buffer.alloc(0);
  }
}

let starter: Starter | null = null;
let bashAvailable: boolean | undefined;

function theStarter(): Starter | null {
  if (starter !== null) return starter;
  bashAvailable ??= process.platform !== 'win32' && existsSync(BASH);
  if (!bashAvailable) return null;
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of BASH_STARTUP) delete base[name];
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), 'foreman-spawn-'));
  } catch {
    // No temporary directory to write in: commands are forked, and the next one tries again.
    return null;
  }
  const child = spawn(BASH, ['-c', STARTER_LOOP, 'foreman-starter', dir], { stdio: ['pipe', 'pipe', 'ignore'], detached: true, env: base });
  starter = new Starter(child, dir, base);
  return starter;
}

/**
 * Ends this process's starter, if it has one, and waits for it (at most `limitMs`): it exits once
 * the commands it runs have, and, waited for, the CPU they spent is counted among this process's
 * children's, as a fork's would be (`time`, a parent's rusage). The next command starts another.
 */
export function endStarter(limitMs = 2_000): Promise<void> {
  return starter?.end(limitMs) ?? Promise.resolve();
}

/**
 * Runs one command to its end (or its time limit), its output collected. Started through the
 * long-lived bash when it can be, otherwise forked from here.
 */
export function runProcess(request: ProcessRequest): Promise<ProcessEnd> {
  return theStarter()?.run(request) ?? forkProcess(request);
}

/** Signal numbers by name, for an exit code of 128 + the signal, as a shell reports it. */
const signalNumber = (signal: NodeJS.Signals | null): number => (signal === null ? 0 : (constants.signals[signal] ?? 0));

/** `runProcess` by a fork of this process: the command in a process group of its own. */
export function forkProcess(request: ProcessRequest): Promise<ProcessEnd> {
  return new Promise((resolve) => {
    const child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const errOut: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      endGroup(child);
    }, request.timeoutMs);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => errOut.push(d));
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ kind: 'not-started', message: error.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) resolve({ kind: 'timed-out' });
      else resolve({ kind: 'exited', code: code ?? 128 + signalNumber(signal), stdout: Buffer.concat(out), stderr: Buffer.concat(errOut) });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(request.input ?? '');
  });
}
