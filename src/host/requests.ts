// The requests the remote side serves (src/core/host-protocol.ts), each under the run's folder
// `<work dir>/<repository>/<plan>/`, which this process holds by a lock for as long as it lives.
// Everything made there is private to the host's user (umask 077: folders 0700, files 0600); the
// commands started get TMPDIR inside it, so nothing foreman starts writes outside the work dir.
// Every command carries this process's marker (FOREMAN_RUN), so what it starts is found and ended
// with it, even what detached.

import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { signalGroup, terminateGroup } from '../adapters/processes.ts';
import { RUN_MARKER_VARIABLE, endMarked, runMarker } from '../adapters/process-markers.ts';
import { type Result, err, ok } from '../core/failure.ts';
import { NO_HOOKS, isObjectId } from '../core/git-text.ts';
import { oneLine } from '../core/format.ts';
import { HOST_PROTOCOL } from '../core/host-protocol.ts';
import type { FromHost, HostError, HostEvent, HostReplies, HostRequest, ToHost } from '../core/host-protocol.ts';
import { hostFindings } from './checks.ts';
import { type RunFolder, refused, fault, openRun, git, clean, tryRemoveOldPrograms, hasCommits, insideWorkDir, commandDir } from './run-folder.ts';

/** How long a cancelled command has to end after SIGTERM before SIGKILL. */
const CANCEL_GRACE_MS = 2_000;

/** How foreman's side's messages are written back, with the output's back-pressure. */
export interface Outbox {
  send(message: FromHost): void;
  /** Resolves once what was sent has gone out (the pipe to sshd is not full). */
  drained(): Promise<void>;
}

export interface Requests {
  take(message: Exclude<ToHost, { type: 'ping' }>): void;
  /** Ends every command started and removes what is half made (the run's folder is let go as this process ends). */
  endAll(why: string): Promise<void>;
}

/** A request in progress that takes streamed input or can be cancelled. */
interface Running {
  input?(bytes: Buffer): void;
  inputEnd?(): void;
  cancel?(): void;
}

/** `keptFile`: the program's file on the host (none in a dry run), whose version folder a run's start keeps while it removes the others no process uses. */
export function serve(workDir: string, outbox: Outbox, version: string, dryRun: boolean, keptFile?: string): Requests {
  let folder: RunFolder | null = null;
  /** The git binary there, as hello names it. */
  let gitBinary = 'git';
  const running = new Map<number, Running>();
  const groups = new Set<number>();
  const halfMade = new Set<string>();
  const event = (id: number, e: HostEvent): void => outbox.send({ type: 'event', id, event: e });
  const reply = (id: number, answer: Result<unknown, HostError>): void => {
    running.delete(id);
    outbox.send({ type: 'reply', id, reply: answer });
  };

  /** Sends a stream's bytes as events, pausing it while the way out is full. */
  const forward = (id: number, stream: Readable, kind: 'stdout' | 'stderr' | 'data', count?: (bytes: number) => void): void => {
    stream.on('data', (chunk: Buffer) => {
      count?.(chunk.length);
      event(id, { kind, data: chunk.toString('base64') });
      stream.pause();
      void outbox.drained().then(() => stream.resume());
    });
  };

  const started = (child: ChildProcess): void => {
    if (child.pid !== undefined) groups.add(child.pid);
    child.once('exit', () => child.pid !== undefined && groups.delete(child.pid));
  };

  // TMPDIR is the run's, unless foreman names a folder of its own in the work dir (a sandboxed worker's, `.t/<this process's pid, base 36>-<task>`, removed when it ends).
  const commandEnv = (run: RunFolder, extra: Record<string, string>): NodeJS.ProcessEnv => ({
    ...process.env,
    ...extra,
    TMPDIR: extra.TMPDIR !== undefined && insideWorkDir(workDir, extra.TMPDIR) ? extra.TMPDIR : run.tmp,
    [RUN_MARKER_VARIABLE]: runMarker,
  });

  function receiveObjects(id: number, run: RunFolder, commit: string): void {
    if (!isObjectId(commit)) {
      reply(id, err(refused(`${commit} is not an object id`)));
      return;
    }
    const file = join(run.tmp, `incoming-${id}.bundle`);
    halfMade.add(file);
    const out = createWriteStream(file, { mode: 0o600 });
    let failed: string | null = null;
    out.on('error', (error) => {
      failed = error.message;
    });
    const done = async (): Promise<Result<HostReplies['receive-objects'], HostError>> => {
      if (failed !== null) return err(fault(`could not keep the bundle on the host: ${failed}`));
      const heads = await git(run.git, ['bundle', 'unbundle', file], run.repository);
      if (!heads.ok) return heads;
      const kept = await git(run.git, ['update-ref', `refs/foreman/received/${commit}`, commit], run.repository);
      return kept.ok ? ok({ commit }) : kept;
    };
    running.set(id, {
      input: (bytes) => out.write(bytes),
      inputEnd: () =>
        out.end(
          () =>
            void done().then((answer) => {
              rmSync(file, { force: true });
              halfMade.delete(file);
              reply(id, answer);
            }),
        ),
    });
  }

  function sendObjects(id: number, run: RunFolder, commit: string, exclude: readonly string[]): void {
    const bad = [commit, ...exclude].find((name) => !isObjectId(name));
    if (bad !== undefined) {
      reply(id, err(refused(`${bad} is not an object id`)));
      return;
    }
    const ref = `refs/foreman/sending/${id}`;
    void (async () => {
      const named = await git(run.git, ['update-ref', ref, commit], run.repository);
      if (!named.ok) return reply(id, named);
      const child = spawn(run.git, [...NO_HOOKS, 'bundle', 'create', '--quiet', '-', ref, ...exclude.map((e) => `^${e}`)], {
        cwd: run.repository,
        env: commandEnv(run, {}),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      started(child);
      let bytes = 0;
      const errors: Buffer[] = [];
      forward(id, child.stdout, 'data', (n) => {
        bytes += n;
      });
      child.stderr.on('data', (chunk: Buffer) => errors.push(chunk));
      running.set(id, { cancel: () => child.pid !== undefined && signalGroup(child.pid, 'SIGKILL') });
      child.on('error', (error) => reply(id, err(fault(`git bundle could not start on the host: ${error.message}`))));
      child.on('close', (code) => {
        void git(run.git, ['update-ref', '-d', ref], run.repository).then(() =>
          reply(
            id,
            code === 0
              ? ok({ bytes })
              : err(fault(`git bundle create failed on the host: ${oneLine(Buffer.concat(errors).toString('utf8')) || `exit ${code}`}`)),
          ),
        );
      });
    })();
  }

  function runCommand(id: number, run: RunFolder, request: Extract<HostRequest, { op: 'run' }>): void {
    const cwd = commandDir(run, request.cwd);
    if (cwd === null) {
      reply(id, err(refused(`${request.cwd} is outside the run's folder`)));
      return;
    }
    const [file, ...args] = request.argv as [string, ...string[]];
    const child = spawn(file, args, { cwd, env: commandEnv(run, request.env), stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], detached: true });
    let failedToStart: string | null = null;
    child.on('error', (error) => {
      failedToStart = error.message;
    });
    if (child.pid !== undefined) {
      started(child);
      event(id, { kind: 'started', pid: child.pid });
    }
    forward(id, child.stdout as Readable, 'stdout');
    forward(id, child.stderr as Readable, 'stderr');
    child.stdin?.on('error', () => undefined);
    running.set(id, {
      input: (bytes) => child.stdin?.write(bytes),
      inputEnd: () => child.stdin?.end(),
      cancel: () => child.pid !== undefined && void terminateGroup(child.pid, CANCEL_GRACE_MS),
    });
    // What the command left running in its process group ends with it, as a worker's or a check's does on foreman's machine.
    child.on('exit', () => child.pid !== undefined && void terminateGroup(child.pid, CANCEL_GRACE_MS));
    child.on('close', (code, signal) => {
      const exit: HostReplies['run'] =
        failedToStart !== null
          ? { kind: 'not-started', message: failedToStart }
          : signal !== null
            ? { kind: 'killed', signal }
            : { kind: 'exited', code: code ?? 0 };
      reply(id, ok(exit));
    });
  }

  async function handle(id: number, request: HostRequest): Promise<void> {
    switch (request.op) {
      case 'hello':
        if (request.protocol !== HOST_PROTOCOL)
          return reply(
            id,
            err(
              refused(
                `foreman speaks protocol ${request.protocol} and this host program ${HOST_PROTOCOL}: the same foreman version on both sides sends it again`,
              ),
            ),
          );
        gitBinary = request.git;
        return reply(id, ok({ protocol: HOST_PROTOCOL, version, pid: process.pid, node: process.version } satisfies HostReplies['hello']));
      case 'checks':
        return reply(id, ok(await hostFindings(workDir, request.claude, gitBinary)));
      case 'open-run': {
        if (dryRun) return reply(id, err(refused('a dry run writes nothing on the host')));
        if (folder !== null) return reply(id, err(refused(`this connection holds ${folder.dir} already`)));
        const opened = await openRun(gitBinary, workDir, request.repository, request.plan, request.objectFormat);
        if (opened.ok) folder = opened.value;
        // A run starting here: the folders of other versions of this program that no live process uses go (housekeeping, never a failure).
        if (opened.ok) tryRemoveOldPrograms(workDir, keptFile);
        return reply(id, opened.ok ? ok({ dir: opened.value.dir }) : opened);
      }
      case 'clean':
        if (dryRun) return reply(id, err(refused('a dry run writes nothing on the host')));
        try {
          return reply(id, ok(clean(workDir, request, folder)));
        } catch (caught) {
          return reply(id, err(fault(`could not clean the work dir: ${(caught as Error).message}`)));
        }
      case 'receive-objects':
      case 'has-commits':
      case 'send-objects':
      case 'run': {
        if (folder === null) return reply(id, err(refused(`${request.op} needs a run's folder: open-run first`)));
        if (request.op === 'has-commits') return reply(id, await hasCommits(folder, request.commits));
        if (request.op === 'receive-objects') return receiveObjects(id, folder, request.commit);
        if (request.op === 'send-objects') return sendObjects(id, folder, request.commit, request.exclude);
        return runCommand(id, folder, request);
      }
    }
  }

  return {
    take(message) {
      switch (message.type) {
        case 'request':
          running.set(message.id, {});
          void handle(message.id, message.request);
          return;
        case 'input':
          running.get(message.id)?.input?.(Buffer.from(message.data, 'base64'));
          return;
        case 'input-end':
          running.get(message.id)?.inputEnd?.();
          return;
        case 'cancel':
          running.get(message.id)?.cancel?.();
          return;
      }
    },
    async endAll(why) {
      for (const group of groups) signalGroup(group, 'SIGKILL');
      process.stderr.write(`foreman host: ending everything it started: ${why}\n`);
      // What the commands started in sessions of their own, found by the marker they inherited.
      await endMarked(RUN_MARKER_VARIABLE, runMarker, 500);
      for (const file of halfMade) rmSync(file, { force: true });
      // The sandboxed workers' own TMPDIRs this process served (`<work dir>/.t/<its pid, base 36>-…`).
      const ownTmp = join(workDir, '.t');
      for (const name of existsSync(ownTmp) ? readdirSync(ownTmp) : [])
        if (name.startsWith(`${process.pid.toString(36)}-`)) rmSync(join(ownTmp, name), { recursive: true, force: true });
    },
  };
}
