// foreman's remote side: the program a host's channel runs there (started by the bootstrap and
// its loader, src/adapters/host/bootstrap.ts), bundled into one file and kept on the host under
// `<work dir>/.foreman/<version>/`. It reads requests on stdin and answers on
// stdout (src/core/hosts/host-protocol.ts), and ends everything it started when foreman's side goes
// quiet for the silence limit (a laptop that sleeps sends no end of file) or its input ends.

import { LineSplitter } from '../adapters/index.ts';
import { DEFAULT_SILENCE_MS, err, heartbeatInterval, HOST_PROTOCOL, MAX_LINE_BYTES, messageLine, readToHost, type ToHost } from '../core/index.ts';
import { markProgramInUse } from './program-folders.ts';
import { type Outbox, type Requests, serve } from './requests.ts';

// Replaced by the host program's version when it is bundled (src/adapters/host/program.ts).
declare const FOREMAN_HOST_VERSION: string | undefined;
const version = typeof FOREMAN_HOST_VERSION === 'string' ? FOREMAN_HOST_VERSION : 'sources';

/** The messages written to stdout, where sshd reads them, with the pipe's back-pressure. */
function stdoutOutbox(): Outbox {
  let waiting: Promise<void> | null = null;
  return {
    send(message) {
      if (!process.stdout.write(messageLine(message)) && waiting === null)
        waiting = new Promise((resolve) =>
          process.stdout.once('drain', () => {
            waiting = null;
            resolve();
          }),
        );
    },
    drained: () => waiting ?? Promise.resolve(),
  };
}

/**
 * Serves foreman's side; `dryRun`: nothing may be written on the host. `keptFile`: the program's
 * file on the host, whose folder it marks in use while it runs (none when it runs from memory).
 */
export async function main(workDir: string, dryRun: boolean, keptFile: string | undefined): Promise<void> {
  const outbox = stdoutOutbox();
  let silenceMs = DEFAULT_SILENCE_MS;
  let heard = Date.now();
  let ending = false;
  const unmark = dryRun ? () => undefined : markProgramInUse(keptFile);
  const requests: Requests = serve(workDir, outbox, version, dryRun, dryRun ? undefined : keptFile);

  const end = async (why: string): Promise<void> => {
    if (ending) return;
    ending = true;
    clearInterval(beat);
    process.stdin.pause();
    await requests.endAll(why);
    unmark();
    process.exit(0);
  };

  let beat = setInterval(tick, heartbeatInterval(silenceMs));
  function tick(): void {
    if (Date.now() - heard > silenceMs) void end(`foreman's side was silent for ${silenceMs / 1000}s`);
    else outbox.send({ type: 'ping' });
  }

  const lines = new LineSplitter((line, truncated) => {
    heard = Date.now();
    if (ending) return;
    const read = truncated ? err(`a line longer than ${MAX_LINE_BYTES} bytes`) : readToHost(line);
    if (!read.ok) {
      process.stderr.write(`foreman host: ${read.error}; ending\n`);
      void end(read.error);
      return;
    }
    const message: ToHost = read.value;
    if (message.type === 'request' && message.request.op === 'hello') {
      // The silence limit foreman keeps, kept here too from now on.
      silenceMs = message.request.silenceMs;
      clearInterval(beat);
      beat = setInterval(tick, heartbeatInterval(silenceMs));
    }
    if (message.type !== 'ping') requests.take(message);
  }, MAX_LINE_BYTES);

  process.stdin.on('data', (chunk: Buffer) => lines.push(chunk));
  process.stdin.on('end', () => void end('its input ended'));
  process.stdin.on('error', () => void end('its input failed'));
  // sshd closing the session: the output is gone, so is foreman's side.
  process.stdout.on('error', () => void end('its output closed'));
  // Nobody may be reading what it says on stderr any more either: that must not end it before it has ended the rest.
  process.stderr.on('error', () => undefined);
  for (const signal of ['SIGHUP', 'SIGTERM', 'SIGINT'] as const) process.on(signal, () => void end(`it got ${signal}`));
  outbox.send({ type: 'ready', protocol: HOST_PROTOCOL, version });
}
