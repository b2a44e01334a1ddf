// The sandbox hosts of this process: each a node process running scripts/sandbox-host.mjs, which
// keeps the sandbox runtime loaded and initialized and wraps commands for it, one at a time; this
// process runs the wrapped commands itself (adapters/sandbox/checks.ts). A sandboxed command used to start
// the runtime's CLI, which loaded and initialized the runtime for that one command (about 0.35 s
// of CPU); a host pays that once and then wraps a command in a few tens of milliseconds.
//
// A host serves one command at a time, from its wrap until it ended: the runtime removes the
// placeholder files its bubblewrap made in the command's directories only once no command of its
// own runs, so a host shared by two tasks' checks would leave one task's placeholders in its
// worktree while the other's check ran, seen as changes it made. Commands that run at once take
// a host each; a host is reused once its command ended. The runtime keeps one network policy per
// process, so hosts are kept apart by the hosts their commands may reach.
//
// A host never keeps this process alive, and ends when this process ends, however it ends: it
// exits at the end of its stdin. It runs in a process group of its own, so a Ctrl-C meant for a
// run does not take the sandbox away from the checks the run still finishes.

import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { err, ok, type Result } from '../../core/index.ts';
import { sandboxHostPath } from '../layout.ts';
import { endGroup, holdOpen } from '../processes/index.ts';

/** The runtime's settings for one command: what it may write (`filesystem`) and reach (`network`). */
export interface RuntimeSettings {
  filesystem: { allowWrite: string[]; denyWrite: string[]; denyRead: string[] };
  network: { allowedDomains: string[]; deniedDomains: string[] };
}

/** How long a host may take to start, or to answer a request, before it is ended. */
export const HOST_ANSWER_LIMIT_MS = 30_000;

interface Answer {
  id?: number;
  ready?: boolean;
  wrapped?: string;
  error?: string;
}

/** What a lease of a host does: wrap one command, then say it ended. */
export interface SandboxHostLease {
  /**
   * The shell command (for `/bin/sh -c` in `cwd`) that runs `command` under `filesystem`, with
   * `tmp` as its TMPDIR; the files the runtime guards (.bashrc, .git/hooks, …) are those of `cwd`.
   */
  wrap(command: string, cwd: string, filesystem: RuntimeSettings['filesystem'], tmp: string): Promise<Result<string, string>>;
  /** The wrapped command ended: its placeholders are removed and the host serves the next lease. */
  release(): Promise<void>;
}

class SandboxHost {
  private readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  private nextId = 1;
  /** Until its first line (ready or not), the host holds this process's event loop open. */
  private starting = true;
  private ended: string | null = null;
  private stderrTail = '';
  readonly ready: Promise<Result<void, string>>;

  constructor(program: readonly string[], network: RuntimeSettings['network'], tmp: string | undefined) {
    this.child = spawn(process.execPath, [...program, JSON.stringify(network)], {
      // The runtime keeps its bridge sockets in the host's TMPDIR: this process's, unless the caller names one.
      env: tmp === undefined ? process.env : { ...process.env, TMPDIR: tmp },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.unref();
    let onReady!: (answer: Answer) => void;
    const first = new Promise<Answer>((resolve) => (onReady = resolve));
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let answer: Answer;
      try {
        answer = JSON.parse(line) as Answer;
      } catch {
        return;
      }
      if (answer.id === undefined) return onReady(answer);
      const resolve = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      resolve?.(answer);
      this.keepAliveWhileWaiting();
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderrTail = `${this.stderrTail}${chunk.toString('utf8')}`.slice(-2000)));
    this.child.stdin.on('error', () => undefined);
    const gone = (why: string) => {
      this.ended ??= why;
      const said = this.stderrTail.trim().split('\n').filter(Boolean).pop();
      const answer = { error: `${this.ended}${said ? `: ${said}` : ''}` };
      onReady(answer);
      for (const resolve of this.waiting.values()) resolve(answer);
      this.waiting.clear();
      this.keepAliveWhileWaiting();
    };
    this.child.once('error', (e) => gone(`the sandbox host could not start: ${e.message}`));
    this.child.once('exit', (code, signal) => gone(`the sandbox host exited (${signal ?? `code ${code}`})`));
    this.ready = this.answerWithin(first).then((answer) => {
      this.starting = false;
      this.keepAliveWhileWaiting();
      return answer.ready === true ? ok(undefined) : err(answer.error ?? 'the sandbox host did not start');
    });
    this.keepAliveWhileWaiting();
  }

  get alive(): boolean {
    return this.ended === null;
  }

  request(body: Record<string, unknown>): Promise<Answer> {
    if (this.ended !== null) return Promise.resolve({ error: this.ended });
    const id = this.nextId++;
    const answered = new Promise<Answer>((resolve) => this.waiting.set(id, resolve));
    this.keepAliveWhileWaiting();
    this.child.stdin.write(`${JSON.stringify({ id, ...body })}\n`);
    return this.answerWithin(answered);
  }

  /** Ends the host (its process group: the runtime's bridges with it). */
  end(why: string): void {
    this.ended ??= why;
    endGroup(this.child);
  }

  private async answerWithin(answer: Promise<Answer>): Promise<Answer> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<Answer>((resolve) => {
      timer = setTimeout(() => {
        this.end(`the sandbox host did not answer within ${HOST_ANSWER_LIMIT_MS / 1000} s`);
        resolve({ error: this.ended! });
      }, HOST_ANSWER_LIMIT_MS);
      timer.unref();
    });
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Holds this process's event loop open only while an answer is awaited. */
  private keepAliveWhileWaiting(): void {
    holdOpen(this.child, this.starting || this.waiting.size > 0);
  }
}

/** Idle hosts by their program, network policy and TMPDIR. */
const idle = new Map<string, SandboxHost[]>();

/**
 * A host of the network policy `network`, to wrap one command: an idle one, or a new one.
 * `program`: the script node runs as the host, with its leading arguments (this machine's
 * sandbox host; on an SSH host, foreman's remote program, src/host/sandboxed.ts). `tmp`: the
 * host's TMPDIR, where the runtime keeps its bridge sockets (this process's when not given).
 */
export async function leaseSandboxHost(
  network: RuntimeSettings['network'],
  program: readonly string[] = [sandboxHostPath()],
  tmp?: string,
): Promise<Result<SandboxHostLease, string>> {
  const key = JSON.stringify([program, network, tmp ?? null]);
  let free = idle.get(key);
  if (free === undefined) {
    free = [];
    idle.set(key, free);
  }
  let host = free.pop();
  while (host !== undefined && !host.alive) host = free.pop();
  host ??= new SandboxHost(program, network, tmp);
  const ready = await host.ready;
  if (!ready.ok) {
    host.end(ready.error);
    return err(ready.error);
  }
  const leased = host;
  let released = false;
  return ok({
    async wrap(command, cwd, filesystem, tmp) {
      const answer = await leased.request({ wrap: command, cwd, filesystem, tmp });
      return typeof answer.wrapped === 'string' ? ok(answer.wrapped) : err(answer.error ?? 'the sandbox host gave no command');
    },
    async release() {
      if (released) return;
      released = true;
      const answer = await leased.request({ ended: true });
      if (answer.error !== undefined || !leased.alive) {
        leased.end(answer.error ?? 'ended');
        return;
      }
      free.push(leased);
    },
  });
}
