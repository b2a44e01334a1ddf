// The only module that runs shell commands (acceptance checks, test and build commands).
// Each command runs under `/bin/sh -c` as the leader of its own process group, so a timeout or
// an abort kills everything it started, not just the shell. Output (stdout and stderr merged in
// arrival order) is kept within a byte bound while it streams: the first part and the last part,
// with a marker for what was dropped in between. While a command runs its group is tracked (see
// tracked-groups.ts) and, through `onSpawn`, can be recorded so a run after a crash ends it.
// Each command carries a marker in its environment (process-markers.ts): when it ends, whatever
// still carries the marker (something that left the group with `setsid` or `nohup … &`) is ended
// too, and named at the end of the output.

import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { type CommandSandbox, sandboxedSpawn, type SandboxedSpawn } from './sandbox-spawn.ts';
import {
  describeMarked,
  endMarked,
  groupAlive,
  type MarkedProcess,
  newProcessMarker,
  PROCESS_MARKER_VARIABLE,
  type ProcessMarker,
  type SpawnHooks,
  terminateGroup,
  trackGroup,
  untrackGroup,
} from '../processes/index.ts';

/** With the hooks that record it for orphan cleanup (`SpawnHooks`): its marker before the spawn, its group after. */
export interface RunShellOptions extends SpawnHooks {
  cwd: string;
  timeoutMs: number;
  /** Upper bound on the bytes of output kept (head + tail). Default 64 KiB. */
  maxOutputBytes?: number;
  /** Added to (and overriding) the inherited environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL of the process group. Default 2000 ms. */
  killGraceMs?: number;
  /** Run it in the operating-system sandbox (sandbox-spawn.ts) with these limits; absent: unsandboxed. */
  sandbox?: CommandSandbox;
}

export interface ShellResult {
  /** null when the shell was killed by a signal or could not be started. */
  exitCode: number | null;
  /** The signal that ended the shell, e.g. 'SIGTERM'. */
  signal?: string;
  timedOut: boolean;
  /** Stopped because `signal` was aborted. */
  aborted: boolean;
  /** Combined stdout + stderr, at most about `maxOutputBytes` (plus the omission marker). */
  output: string;
  /** Total bytes the command printed, including any omitted. */
  outputBytes: number;
  durationMs: number;
  /** Processes the command left running outside its group, ended when it finished. */
  leftBehind?: MarkedProcess[];
}

export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;

/**
 * How long a sandboxed command's own processes may take to end after its shell did: bubblewrap's
 * process inside the sandbox, in a session of its own, is ended by the kernel once its parent is
 * gone, a moment later. What still carries the command's marker after that was left running.
 */
const SANDBOX_SETTLE_MS = 500;
const DEFAULT_KILL_GRACE_MS = 2000;
/** After the shell exits and the group is killed, how long to wait for the pipes to close. */
const PIPE_DRAIN_MS = 1000;

/** `output` with a line of foreman's own at its end (where what shows an output keeps it). */
export const withForemanLine = (output: string, line: string): string => `${output}${output === '' || output.endsWith('\n') ? '' : '\n'}[foreman] ${line}\n`;

/** Keeps the first `headMax` and the last `tailMax` bytes of a stream, never more. */
export class BoundedOutput {
  private readonly head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  total = 0;

  constructor(
    private readonly headMax: number,
    private readonly tailMax: number,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLen < this.headMax) {
      const take = Math.min(this.headMax - this.headLen, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailMax === 0) return;
    if (rest.length >= this.tailMax) {
      // Copy so the big chunk itself can be freed.
      this.tail = [Buffer.from(rest.subarray(rest.length - this.tailMax))];
      this.tailLen = this.tailMax;
      return;
    }
    this.tail.push(rest);
    this.tailLen += rest.length;
    while (this.tailLen > this.tailMax) {
      const first = this.tail[0]!;
      const excess = this.tailLen - this.tailMax;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailLen -= first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailLen -= excess;
      }
    }
  }

  /** Bytes held right now (≤ headMax + tailMax). */
  get held(): number {
    return this.headLen + this.tailLen;
  }

  toString(): string {
    const head = Buffer.concat(this.head);
    const tail = Buffer.concat(this.tail);
    const omitted = this.total - head.length - tail.length;
    if (omitted <= 0) return Buffer.concat([head, tail]).toString('utf8');
    // Cut on character boundaries: drop a partial UTF-8 sequence at the end of the head and
    // continuation bytes at the start of the tail.
    let h = head.length;
    let back = 0;
    while (h > 0 && back < 4 && (head[h - 1]! & 0xc0) === 0x80) {
      h--;
      back++;
    }
    if (h > 0 && (head[h - 1]! & 0xc0) === 0xc0) {
      const lead = head[h - 1]!;
      const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
      if (back + 1 < need) h--;
      else h += back;
    } else h += back;
    let t = 0;
    while (t < tail.length && t < 4 && (tail[t]! & 0xc0) === 0x80) t++;
    const dropped = omitted + (head.length - h) + t;
    return `${head.subarray(0, h).toString('utf8')}\n… ${dropped} bytes omitted …\n${tail.subarray(t).toString('utf8')}`;
  }
}

/**
 * Runs `command` with `/bin/sh -c` in `cwd`. Never throws: a command that fails, times out or
 * cannot start is reported in the result (a spawn failure as exitCode null with the error as
 * output). When the shell exits, whatever it left running in its process group is killed too.
 */
export async function runShell(command: string, opts: RunShellOptions): Promise<ShellResult> {
  const started = performance.now();

  const failed = (message: string, aborted = false): ShellResult => ({
    exitCode: null,
    timedOut: false,
    aborted,
    output: message,
    outputBytes: 0,
    durationMs: performance.now() - started,
  });

  if (opts.signal?.aborted) return failed('aborted before start', true);
  let sandboxed: SandboxedSpawn | undefined;
  if (opts.sandbox) {
    const prepared = await sandboxedSpawn(command, opts.cwd, opts.sandbox);
    if (!prepared.ok) return failed(`could not start the sandbox: ${prepared.error}`);
    sandboxed = prepared.value;
    if (opts.signal?.aborted) {
      await sandboxed.cleanup();
      return failed('aborted before start', true);
    }
  }

  const marker = newProcessMarker();
  opts.onMarker?.(marker.marker);
  let child: ShellChild;
  try {
    child = spawnShell(command, opts.cwd, shellEnvironment(opts.env, marker, sandboxed), sandboxed);
  } catch (e) {
    return new Promise<ShellResult>((resolve) => {
      void (sandboxed?.cleanup() ?? Promise.resolve()).then(() =>
        resolve(failed(`could not start ${sandboxed ? 'the sandbox' : '/bin/sh'}: ${(e as Error).message}`)),
      );
    });
  }
  if (child.pid !== undefined) {
    trackGroup(child.pid);
    opts.onSpawn?.(child.pid, marker.marker);
  }
  return new Promise<ShellResult>((resolve) => superviseShell({ command, opts, child, marker, sandboxed, started }, resolve));
}

type ShellChild = ChildProcessByStdio<null, Readable, Readable>;

/** The command's environment: this process's, with `overrides` (`undefined` removes one), its marker and the sandbox's own. */
function shellEnvironment(overrides: RunShellOptions['env'], marker: ProcessMarker, sandboxed: SandboxedSpawn | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(overrides ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  Object.assign(env, marker.env);
  if (sandboxed) Object.assign(env, sandboxed.env);
  return env;
}

/** The shell (or the sandbox wrapping it) as the leader of a process group of its own; throws when it cannot be spawned. */
const spawnShell = (command: string, cwd: string, env: NodeJS.ProcessEnv, sandboxed: SandboxedSpawn | undefined): ShellChild =>
  spawn(sandboxed?.file ?? '/bin/sh', sandboxed?.args ?? ['-c', command], {
    cwd,
    env,
    detached: true, // own process group, pgid = pid
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/** A shell that runs: what `superviseShell` watches until it ends. */
interface SupervisedShell {
  command: string;
  opts: RunShellOptions;
  child: ShellChild;
  marker: ProcessMarker;
  sandboxed: SandboxedSpawn | undefined;
  /** When `runShell` was called (performance.now()). */
  started: number;
}

/**
 * Collects the shell's output within its bound, ends its group on a timeout or an abort, and
 * resolves once the shell exited and its group and everything carrying its marker are gone.
 */
function superviseShell({ command, opts, child, marker, sandboxed, started }: SupervisedShell, resolve: (result: ShellResult) => void): void {
  const max = Math.max(0, opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const headMax = Math.floor(max / 2);
  const out = new BoundedOutput(headMax, max - headMax);
  const grace = opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS;

  let timedOut = false;
  let aborted = false;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let openStreams = 2;
  let done = false;
  const timers: NodeJS.Timeout[] = [];

  const finish = (override?: string) => {
    if (done) return;
    done = true;
    for (const t of timers) clearTimeout(t);
    opts.signal?.removeEventListener('abort', onAbort);
    child.stdout?.destroy();
    child.stderr?.destroy();
    const output = override ?? out.toString();
    // Resolve only once the group and everything carrying the marker are gone, so nothing a
    // check started outlives it.
    void (termination ?? Promise.resolve(true))
      .then(() => sweep)
      .then(async (leftBehind) => {
        if (child.pid !== undefined) untrackGroup(child.pid);
        await sandboxed?.cleanup();
        resolve({
          exitCode: exit?.code ?? null,
          ...(exit?.signal ? { signal: exit.signal } : {}),
          timedOut,
          aborted,
          output: leftBehind.length > 0 ? withForemanLine(output, `ended what the command left running: ${describeMarked(leftBehind)}`) : output,
          outputBytes: out.total,
          durationMs: performance.now() - started,
          ...(leftBehind.length > 0 ? { leftBehind } : {}),
        });
      });
  };
  const maybeFinish = () => {
    if (exit && openStreams === 0) finish();
  };

  /** SIGTERM the group now, SIGKILL it after the grace period if anything is left. */
  let termination: Promise<boolean> | undefined;
  /** Ends what carries the marker once the shell exited (and its group is gone). */
  let sweep: Promise<MarkedProcess[]> = Promise.resolve([]);
  const terminate = () => {
    const pid = child.pid;
    if (termination !== undefined || pid === undefined) return;
    termination = terminateGroup(pid, grace);
  };

  const onAbort = () => {
    if (exit) return;
    aborted = true;
    terminate();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  timers.push(
    setTimeout(
      () => {
        if (exit) return;
        timedOut = true;
        terminate();
      },
      Math.max(0, opts.timeoutMs),
    ),
  );

  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (chunk: Buffer) => out.push(chunk));
    stream.once('close', () => {
      openStreams--;
      maybeFinish();
    });
    stream.on('error', () => {});
  }

  child.once('error', (e) => {
    // Spawn failure (e.g. cwd missing): no process, no exit event.
    if (child.pid === undefined) {
      exit = { code: null, signal: null };
      finish(`could not start /bin/sh -c ${JSON.stringify(command)}: ${e.message}`);
    }
  });

  child.once('exit', (code, signal) => {
    exit = { code, signal };
    const pid = child.pid;
    // Leftover background processes would outlive the check and keep the pipes open.
    if (pid !== undefined && groupAlive(pid)) terminate();
    // Then what left the group still carries the marker: ending it also closes the pipes it holds.
    sweep = (termination ?? Promise.resolve(true)).then(() =>
      endMarked(PROCESS_MARKER_VARIABLE, marker.marker, grace, marker.since, sandboxed ? SANDBOX_SETTLE_MS : 0),
    );
    // Whatever still holds the pipes once the group is dead (something that left the group,
    // e.g. with setsid) is not waited for.
    timers.push(setTimeout(finish, (termination !== undefined ? grace : 0) + PIPE_DRAIN_MS));
    maybeFinish();
  });
}
