// A host's channel: one process of a transport (./transport.ts; ssh for an SSH host) for the
// whole run, running foreman's remote program there (./bootstrap.ts), and the message protocol
// over its stdin and stdout (src/core/hosts/host-protocol.ts): requests with ids answered by events and
// one reply each, many at once. Both sides beat every few seconds; a host foreman hears nothing
// from for the silence limit (30 s) is down — its transport killed, every request in flight
// answered with the fault — and the remote side, hearing nothing from foreman for as long, ends
// everything it started. A channel that ends without a report (ssh's exit 255, the program gone)
// is a host fault too: a value, never an exception.

import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  base64Chunks,
  clipTail,
  DEFAULT_SILENCE_MS,
  err,
  type FromHost,
  heartbeatInterval,
  HOST_PROTOCOL,
  type HostError,
  type HostEvent,
  type HostReplies,
  type HostRequest,
  MAX_LINE_BYTES,
  messageLine,
  ok,
  oneLine,
  readFromHost,
  type Result,
  type ToHost,
} from '../../core/index.ts';
import { LineSplitter } from '../processes/index.ts';
import { bootstrapExit, readBootstrapLine, remoteCommand } from './bootstrap.ts';
import { hostProgram, type HostProgram } from './program.ts';
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
  const channel = new ChannelProcess(transport, child, program, silenceMs);
  const hello = await channel.opened;
  if (!hello.ok) return hello;
  return ok({
    name: transport.name,
    hello: hello.value,
    get down() {
      return channel.down;
    },
    pid: child.pid,
    onDown: (listener) => channel.onDown(listener),
    request: (request, use) => channel.request(request, use),
    close: () => channel.close(),
  });
}

/** The transport's process running the remote program, and the protocol over its stdin and stdout. */
class ChannelProcess {
  private readonly pending = new Map<number, Pending>();
  private readonly downListeners: Array<(fault: HostFault) => void> = [];
  private nextId = 1;
  private heard = Date.now();
  /** Whether the remote program runs (it said `ready`): before, what comes is the bootstrap's or the host's shell's. */
  private running = false;
  private sentProgram = false;
  private closing = false;
  down: HostFault | null = null;
  private stderr = '';
  private startupNoise: string[] = [];
  private settleOpen: (answer: Result<HostReplies['hello'], HostFault>) => void = () => undefined;
  /** Settles once the program greeted foreman back, or the channel went down first. */
  readonly opened = new Promise<Result<HostReplies['hello'], HostFault>>((resolve) => {
    this.settleOpen = resolve;
  });
  private readonly beat: NodeJS.Timeout;

  constructor(
    private readonly transport: HostTransport,
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly program: HostProgram,
    private readonly silenceMs: number,
  ) {
    this.beat = setInterval(() => this.tick(), heartbeatInterval(silenceMs));
    const lines = new LineSplitter((line, truncated) => this.readLine(line, truncated), MAX_LINE_BYTES);
    child.stdout.on('data', (chunk: Buffer) => lines.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      this.heard = Date.now();
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_KEPT);
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => this.goDown({ reason: 'ssh-failed', message: `${transport.name}'s channel could not start: ${error.message}` }));
    child.on('close', (code, signal) => this.goDown(this.endedFault(code, signal)));
  }

  private write(message: ToHost): boolean {
    return this.down === null ? this.child.stdin.write(messageLine(message)) : true;
  }

  private goDown(fault: HostFault): void {
    if (this.down !== null) return;
    this.down = fault;
    clearInterval(this.beat);
    this.child.kill('SIGKILL');
    this.settleOpen(err(fault));
    for (const [, request] of this.pending) request.resolve(err({ kind: 'down', fault }));
    this.pending.clear();
    for (const listener of this.downListeners) listener(fault);
  }

  /** A heartbeat: the host given up after the silence limit, else told foreman is there. */
  private tick(): void {
    if (Date.now() - this.heard > this.silenceMs)
      this.goDown({
        reason: 'silent',
        message: `${this.transport.name} said nothing for ${this.silenceMs / 1000}s${this.running ? '' : ' while its channel opened'}, so it is taken as down`,
      });
    else if (this.running) this.write({ type: 'ping' });
  }

  onDown(listener: (fault: HostFault) => void): void {
    if (this.down !== null) listener(this.down);
    else this.downListeners.push(listener);
  }

  request<R extends HostRequest>(asked: R, use: RequestUse = {}): Promise<Result<HostReplies[R['op']], RequestError>> {
    if (this.down !== null) return Promise.resolve(err({ kind: 'down', fault: this.down }));
    const id = this.nextId++;
    const answer = new Promise<Result<unknown, RequestError>>((resolve) => this.pending.set(id, { ...(use.onEvent ? { onEvent: use.onEvent } : {}), resolve }));
    this.write({ type: 'request', id, request: asked });
    const cancel = (): void => void this.write({ type: 'cancel', id });
    use.signal?.addEventListener('abort', cancel, { once: true });
    if (use.signal?.aborted) cancel();
    if (use.input !== undefined || (asked.op === 'run' && asked.stdin)) void this.streamInput(id, use.input ?? Buffer.alloc(0));
    return answer.then((result) => {
      use.signal?.removeEventListener('abort', cancel);
      return result as Result<HostReplies[R['op']], RequestError>;
    });
  }

  /** Sends `input` as the request's stream, waiting while the way there is full, then its end. */
  private async streamInput(id: number, input: Buffer | AsyncIterable<Buffer>): Promise<void> {
    const chunks: AsyncIterable<Buffer> | Iterable<Buffer> = Buffer.isBuffer(input) ? [input] : input;
    for await (const chunk of chunks) {
      for (const data of base64Chunks(chunk)) {
        if (this.down !== null || !this.pending.has(id)) return;
        if (!this.write({ type: 'input', id, data })) await new Promise((resolve) => this.child.stdin.once('drain', resolve));
      }
    }
    this.write({ type: 'input-end', id });
  }

  private receive(message: FromHost): void {
    switch (message.type) {
      case 'ping':
        return;
      case 'ready':
        this.greet(message.protocol);
        return;
      case 'event':
        this.pending.get(message.id)?.onEvent?.(message.event);
        return;
      case 'reply': {
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        waiting?.resolve(message.reply);
        return;
      }
    }
  }

  /** The program runs: foreman's hello, which the channel opens with. */
  private greet(protocol: number): void {
    const name = this.transport.name;
    if (protocol !== HOST_PROTOCOL) {
      this.goDown({ reason: 'lost', message: `${name} runs a foreman program of protocol ${protocol}, not ${HOST_PROTOCOL}` });
      return;
    }
    this.running = true;
    void this.request({ op: 'hello', protocol: HOST_PROTOCOL, silenceMs: this.silenceMs, git: this.transport.git }).then((hello) => {
      if (hello.ok) this.settleOpen(ok(hello.value));
      else
        this.goDown(hello.error.kind === 'down' ? hello.error.fault : { reason: 'lost', message: `${name} refused foreman's hello: ${hello.error.message}` });
    });
  }

  /** A line the transport's stdout brought: the bootstrap's before the program runs, then a message. */
  private readLine(line: string, truncated: boolean): void {
    this.heard = Date.now();
    if (!this.running) {
      const said = readBootstrapLine(line);
      if (said?.kind === 'send' && !this.sentProgram && said.bytes === this.program.bytes.length) {
        // Nothing else is written until the program says it runs: the bootstrap reads exactly these bytes.
        this.sentProgram = true;
        this.child.stdin.write(this.program.bytes);
        return;
      }
      if (said?.kind === 'no-node') {
        this.goDown({
          reason: 'no-node',
          message: `the node binary (${this.transport.node}) is not on the PATH of an ssh command on ${this.transport.name}: install Node.js 20 or later there, or name it with the URL's node= parameter`,
        });
        return;
      }
    }
    const read = truncated ? err(`a line longer than ${MAX_LINE_BYTES} bytes`) : readFromHost(line);
    if (read.ok) this.receive(read.value);
    // Before the program runs, what else comes is the host's shell startup files talking (a
    // greeting in .bashrc): kept to name it should the channel not open, and passed over.
    else if (!this.running) this.startupNoise = [...this.startupNoise, clipTail(oneLine(line), 200)].slice(-3);
    else this.goDown({ reason: 'lost', message: `${this.transport.name} sent ${read.error} (${clipTail(oneLine(line), 200)}), so its channel is closed` });
  }

  /**
   * Why the transport's process ended: before the program ran, an exit is the transport's own (a
   * host key, a login) or the bootstrap's; after, whatever ended it, the channel is lost.
   */
  private endedFault(code: number | null, signal: NodeJS.Signals | null): HostFault {
    const name = this.transport.name;
    const bootstrap = this.running ? null : bootstrapExit(code);
    const said = clipTail(oneLine(this.stderr), 300);
    const own = this.running ? null : this.transport.fault(code, this.stderr);
    if (own !== null) return own;
    if (bootstrap !== null) return { reason: 'bootstrap-failed', message: `${name}: ${bootstrap} (${said || `exit ${code}`})` };
    if (this.closing) return { reason: 'lost', message: `the channel to ${name} was closed` };
    const noise = this.startupNoise.length > 0 ? ` (before foreman's program ran, the host's shell printed: ${this.startupNoise.join(' / ')})` : '';
    return { reason: 'lost', message: `the channel to ${name} ended (${signal ?? `exit ${code}`}) without a report${said ? `: ${said}` : ''}${noise}` };
  }

  async close(): Promise<void> {
    if (this.down !== null) return;
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.child.once('close', () => resolve()));
    this.child.stdin.end();
    await closed;
  }
}
