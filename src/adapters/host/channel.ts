// A host's channel: one process of a transport (./transport.ts; ssh for an SSH host) for the
// whole run, running foreman's remote program there (./bootstrap.ts), and the message protocol
// over its stdin and stdout (src/core/host-protocol.ts): requests with ids answered by events and
// one reply each, many at once. Both sides beat every few seconds; a host foreman hears nothing
// from for the silence limit (30 s) is down — its transport killed, every request in flight
// answered with the fault — and the remote side, hearing nothing from foreman for as long, ends
// everything it started. A channel that ends without a report (ssh's exit 255, the program gone)
// is a host fault too: a value, never an exception.

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { type Result, err, ok } from '../../core/failure.ts';
import { clipTail, oneLine } from '../../core/format.ts';
import {
  DEFAULT_SILENCE_MS,
  type FromHost,
  HOST_PROTOCOL,
  type HostError,
  type HostEvent,
  type HostReplies,
  type HostRequest,
  MAX_LINE_BYTES,
  type ToHost,
  base64Chunks,
  heartbeatInterval,
  messageLine,
  readFromHost,
} from '../../core/host-protocol.ts';
import { LineSplitter } from '../line-splitter.ts';
import { bootstrapExit, readBootstrapLine, remoteCommand } from './bootstrap.ts';
import { type HostProgram, hostProgram } from './program.ts';
import type { HostFault, HostTransport } from './transport.ts';

export interface ChannelOptions {
  /** How long a silence ends the channel, on both sides (DEFAULT_SILENCE_MS). */
  silenceMs?: number;
  /** Whether the remote program may be kept on the host; false (a dry run) writes nothing there. */
  keep?: boolean;
  /** The remote program (hostProgram() by default). */
  program?: HostProgram;
}

/** Why a request got no reply of its own: the host's answer that it could not, or the channel down. */
export type RequestError = HostError | { kind: 'down'; fault: HostFault };

export interface RequestUse {
  /** The bytes the request streams in (a bundle, a command's stdin). */
  input?: Buffer | AsyncIterable<Buffer>;
  /** Each event the request produces, in order. */
  onEvent?: (event: HostEvent) => void;
  /** Cancels the request on the host (a command's process group is ended). */
  signal?: AbortSignal;
}

export interface HostChannel {
  /** The host as a person names it. */
  readonly name: string;
  /** What the host's program said of itself. */
  readonly hello: HostReplies['hello'];
  /** Why the channel is down; null while it serves. */
  readonly down: HostFault | null;
  /** The transport's process (the ssh client). */
  readonly pid: number | undefined;
  /** Called once when the channel goes down. */
  onDown(listener: (fault: HostFault) => void): void;
  request<R extends HostRequest>(request: R, use?: RequestUse): Promise<Result<HostReplies[R['op']], RequestError>>;
  /** Ends the channel: the remote side ends what it started when its input ends. */
  close(): Promise<void>;
}

interface Pending {
  onEvent?: (event: HostEvent) => void;
  resolve: (answer: Result<unknown, RequestError>) => void;
}

/** The transport's stderr kept to name a failure: its last 8 KiB. */
const STDERR_KEPT = 8 * 1024;

/**
 * Opens the channel to the host `transport` reaches: the remote program started (sent first when
 * the host does not keep it yet) and greeted. A host that cannot be reached, or whose program
 * cannot run, is a fault, named.
 */
export async function openChannel(transport: HostTransport, options: ChannelOptions = {}): Promise<Result<HostChannel, HostFault>> {
  const silenceMs = options.silenceMs ?? DEFAULT_SILENCE_MS;
  const program = options.program ?? (await hostProgram());
  const child: ChildProcessWithoutNullStreams = transport.start(
    remoteCommand(transport.workDir, { version: program.version, bytes: program.bytes.length }, transport.node, options.keep ?? true),
  );
  const pending = new Map<number, Pending>();
  const downListeners: Array<(fault: HostFault) => void> = [];
  let nextId = 1;
  let heard = Date.now();
  let running = false;
  let sentProgram = false;
  let closing = false;
  let down: HostFault | null = null;
  let stderr = '';
  let startupNoise: string[] = [];
  let settleOpen: (answer: Result<HostReplies['hello'], HostFault>) => void = () => undefined;
  const opened = new Promise<Result<HostReplies['hello'], HostFault>>((resolve) => {
    settleOpen = resolve;
  });

  const write = (message: ToHost): boolean => (down === null ? child.stdin.write(messageLine(message)) : true);

  const goDown = (fault: HostFault): void => {
    if (down !== null) return;
    down = fault;
    clearInterval(beat);
    child.kill('SIGKILL');
    settleOpen(err(fault));
    for (const [, request] of pending) request.resolve(err({ kind: 'down', fault }));
    pending.clear();
    for (const listener of downListeners) listener(fault);
  };

  const beat = setInterval(() => {
    if (Date.now() - heard > silenceMs)
      goDown({
        reason: 'silent',
        message: `${transport.name} said nothing for ${silenceMs / 1000}s${running ? '' : ' while its channel opened'}, so it is taken as down`,
      });
    else if (running) write({ type: 'ping' });
  }, heartbeatInterval(silenceMs));

  const request = <R extends HostRequest>(asked: R, use: RequestUse = {}): Promise<Result<HostReplies[R['op']], RequestError>> => {
    if (down !== null) return Promise.resolve(err({ kind: 'down', fault: down }));
    const id = nextId++;
    const answer = new Promise<Result<unknown, RequestError>>((resolve) => pending.set(id, { ...(use.onEvent ? { onEvent: use.onEvent } : {}), resolve }));
    write({ type: 'request', id, request: asked });
    const cancel = (): void => void write({ type: 'cancel', id });
    use.signal?.addEventListener('abort', cancel, { once: true });
    if (use.signal?.aborted) cancel();
    if (use.input !== undefined || (asked.op === 'run' && asked.stdin)) void streamInput(id, use.input ?? Buffer.alloc(0));
    return answer.then((result) => {
      use.signal?.removeEventListener('abort', cancel);
      return result as Result<HostReplies[R['op']], RequestError>;
    });
  };

  /** Sends `input` as the request's stream, waiting while the way there is full, then its end. */
  const streamInput = async (id: number, input: Buffer | AsyncIterable<Buffer>): Promise<void> => {
    const chunks: AsyncIterable<Buffer> | Iterable<Buffer> = Buffer.isBuffer(input) ? [input] : input;
    for await (const chunk of chunks) {
      for (const data of base64Chunks(chunk)) {
        if (down !== null || !pending.has(id)) return;
        if (!write({ type: 'input', id, data })) await new Promise((resolve) => child.stdin.once('drain', resolve));
      }
    }
    write({ type: 'input-end', id });
  };

  const receive = (message: FromHost): void => {
    switch (message.type) {
      case 'ping':
        return;
      case 'ready':
        if (message.protocol !== HOST_PROTOCOL) {
          goDown({ reason: 'lost', message: `${transport.name} runs a foreman program of protocol ${message.protocol}, not ${HOST_PROTOCOL}` });
          return;
        }
        running = true;
        void request({ op: 'hello', protocol: HOST_PROTOCOL, silenceMs, git: transport.git }).then((hello) => {
          if (hello.ok) settleOpen(ok(hello.value));
          else
            goDown(
              hello.error.kind === 'down'
                ? hello.error.fault
                : { reason: 'lost', message: `${transport.name} refused foreman's hello: ${hello.error.message}` },
            );
        });
        return;
      case 'event':
        pending.get(message.id)?.onEvent?.(message.event);
        return;
      case 'reply': {
        const waiting = pending.get(message.id);
        pending.delete(message.id);
        waiting?.resolve(message.reply);
        return;
      }
    }
  };

  const lines = new LineSplitter((line, truncated) => {
    heard = Date.now();
    if (!running) {
      const said = readBootstrapLine(line);
      if (said?.kind === 'send' && !sentProgram && said.bytes === program.bytes.length) {
        // Nothing else is written until the program says it runs: the bootstrap reads exactly these bytes.
        sentProgram = true;
        child.stdin.write(program.bytes);
        return;
      }
      if (said?.kind === 'no-node')
        return goDown({
          reason: 'no-node',
          message: `the node binary (${transport.node}) is not on the PATH of an ssh command on ${transport.name}: install Node.js 20 or later there, or name it with the URL's node= parameter`,
        });
    }
    const read = truncated ? err(`a line longer than ${MAX_LINE_BYTES} bytes`) : readFromHost(line);
    if (read.ok) receive(read.value);
    // Before the program runs, what else comes is the host's shell startup files talking (a
    // greeting in .bashrc): kept to name it should the channel not open, and passed over.
    else if (!running) startupNoise = [...startupNoise, clipTail(oneLine(line), 200)].slice(-3);
    else goDown({ reason: 'lost', message: `${transport.name} sent ${read.error} (${clipTail(oneLine(line), 200)}), so its channel is closed` });
  }, MAX_LINE_BYTES);

  child.stdout.on('data', (chunk: Buffer) => lines.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    heard = Date.now();
    stderr = (stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
  });
  child.stdin.on('error', () => undefined);
  child.on('error', (error) => goDown({ reason: 'ssh-failed', message: `${transport.name}'s channel could not start: ${error.message}` }));
  child.on('close', (code, signal) => {
    // Before the program ran, an exit is the transport's own (a host key, a login) or the
    // bootstrap's; after, whatever ended it, the channel is lost.
    const bootstrap = running ? null : bootstrapExit(code);
    const said = clipTail(oneLine(stderr), 300);
    goDown(
      (running ? null : transport.fault(code, stderr)) ??
        (bootstrap !== null
          ? { reason: 'bootstrap-failed', message: `${transport.name}: ${bootstrap} (${said || `exit ${code}`})` }
          : {
              reason: 'lost',
              message: closing
                ? `the channel to ${transport.name} was closed`
                : `the channel to ${transport.name} ended (${signal ?? `exit ${code}`}) without a report${said ? `: ${said}` : ''}${
                    startupNoise.length > 0 ? ` (before foreman's program ran, the host's shell printed: ${startupNoise.join(' / ')})` : ''
                  }`,
            }),
    );
  });

  const hello = await opened;
  if (!hello.ok) return hello;
  return ok({
    name: transport.name,
    hello: hello.value,
    get down() {
      return down;
    },
    pid: child.pid,
    onDown: (listener) => {
      if (down !== null) listener(down);
      else downListeners.push(listener);
    },
    request,
    close: async () => {
      if (down !== null) return;
      closing = true;
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
      child.stdin.end();
      await closed;
    },
  });
}
