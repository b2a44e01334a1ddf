// A host's worker (./host.ts): the same `runWorker` as a local one, with the rules anchored at the
// slot's real path there and its process a `run` request on the host's channel, its output
// streamed back to the same parser and log as a local worker's.

import { PassThrough } from 'node:stream';
import type { RequestError, WorkerPlace, WorkerProcess, WorkerProcessEnd } from '../../adapters/index.ts';
import type { WorkerRun } from '../../core/index.ts';
import type { Connection, HostContext, HostRun, HostSlot } from './host-connection.ts';
import type { WorkerJob } from './workspace.ts';
import { permissionsFor, withTrackedDenials } from './local.ts';

/** What a host's worker needs of its workspaces (HostWorkspaces). */
export interface WorkerHost {
  readonly name: string;
  readonly context: HostContext;
  run(connection: Connection, argv: string[], use: { cwd: string; env?: Record<string, string>; input?: Buffer; signal?: AbortSignal }): Promise<HostRun>;
  requestFault(doing: string, error: RequestError): string;
}

/** The attempt's worker in its slot there: the same `runWorker` as a local one, its process a `run` on the host. */
export async function runHostWorker(host: WorkerHost, connection: Connection, slot: HostSlot, job: WorkerJob): Promise<WorkerRun> {
  const { plan, allowedTools, ...request } = job;
  // The rules are anchored at the slot's real path there, as the CLI there matches them.
  const tools = permissionsFor(plan, job.taskIndex, slot.dir, allowedTools);
  const run = await host.context.local.place.workers.run({
    ...request,
    claudeBin: host.context.host.claude,
    cwd: slot.dir,
    allowedTools: tools.allow,
    deniedTools: tools.deny,
    rulesOf: host.context.repo,
    place: workerPlace(host, connection, slot),
    ...(host.context.sandbox ? { sandbox: { allowedDomains: plan.context?.checkNetwork ?? [] } } : {}),
  });
  return host.context.local.marksTracked ? withTrackedDenials(run, host.context.repo, slot.base) : run;
}

/** Where a worker's process runs: the slot there, its output streamed back to the same parser and log as a local worker's. */
function workerPlace(host: WorkerHost, connection: Connection, slot: HostSlot): WorkerPlace {
  return {
    realCwd: async () => slot.dir,
    // A short folder in the work dir (the sandbox's bridge sockets live there, and a socket's
    // path may not pass 107 bytes), which the remote side lets a command take as its TMPDIR.
    ownTmp: async (task) => {
      // Named by the remote process's pid: it removes what is left of its own when it ends (a run killed).
      const path = `${host.context.host.workDir.replace(/\/+$/, '')}/.t/${connection.channel.hello.pid.toString(36)}-${task}`;
      const made = await host.run(connection, ['sh', '-c', 'umask 077 && mkdir -p -- "$1" && cd -- "$1" && pwd -P', 'foreman', path], { cwd: '.' });
      const realPath = made.ok ? made.value.stdout.trim() || path : path;
      return { path, realPath, remove: async () => void (await host.run(connection, ['rm', '-rf', '--', path], { cwd: '.' })) };
    },
    // The host's own login is used; nothing of the person's settings travels.
    loginSettings: async () => ({}),
    start: (spawn) => workerProcess(host, connection, slot.cwd, spawn.file, spawn.args, spawn.input, spawn.own),
  };
}

function workerProcess(
  host: WorkerHost,
  connection: Connection,
  cwd: string,
  file: string,
  args: string[],
  input: string,
  own: Record<string, string>,
): WorkerProcess {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stop = new AbortController();
  const exits: Array<() => void> = [];
  const ended = connection.channel
    .request(
      { op: 'run', argv: [file, ...args], cwd, env: own, stdin: true },
      {
        input: Buffer.from(input),
        signal: stop.signal,
        onEvent: (event) => {
          if (event.kind === 'stdout') stdout.write(Buffer.from(event.data, 'base64'));
          else if (event.kind === 'stderr') stderr.write(Buffer.from(event.data, 'base64'));
        },
      },
    )
    .then((answer): WorkerProcessEnd => {
      stdout.end();
      stderr.end();
      for (const listener of exits) listener();
      if (!answer.ok) return { spawnError: { message: host.requestFault('run the worker', answer.error) } };
      const exit = answer.value;
      if (exit.kind === 'not-started') return { spawnError: { message: `${exit.message} (on host ${host.name})` } };
      return exit.kind === 'exited' ? { exitCode: exit.code } : { signal: exit.signal };
    });
  return {
    stdout,
    stderr,
    // The host ends the worker's process group (SIGTERM, then SIGKILL) when its run is cancelled.
    terminate: () => {
      stop.abort();
      return ended;
    },
    groupLeft: () => false,
    onExit: (listener) => void exits.push(listener),
    ended,
    // What it left outside its group there carries the run's marker, ended with the run's remote side.
    endLeftovers: async () => '',
  };
}
