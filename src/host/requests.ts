// The requests the remote side serves (src/core/hosts/host-protocol.ts), each under the run's folder
// `<work dir>/<repository>/<plan>/`, which this process holds by a lock for as long as it lives.
// Everything made there is private to the host's user (umask 077: folders 0700, files 0600); the
// commands started get TMPDIR inside it, so nothing foreman starts writes outside the work dir.
// Every command carries this process's marker (FOREMAN_RUN), so what it starts is found and ended
// with it, even what detached.

import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { endMarked, RUN_MARKER_VARIABLE, runMarker, signalGroup, terminateGroup } from '../adapters/index.ts';
import {
  err,
  type FromHost,
  HOST_PROTOCOL,
  type HostError,
  type HostEvent,
  type HostReplies,
  type HostRequest,
  isObjectId,
  NO_HOOKS,
  ok,
  oneLine,
  type Result,
  type ToHost,
} from '../core/index.ts';
import { hostFindings } from './checks.ts';
import { hostSandboxedSpawn, sandboxHelperFile, sandboxStarts } from './sandboxed.ts';
import { clean, commandDir, fault, git, hasCommits, insideWorkDir, openRun, refused, type RunFolder, tidyWorkDir } from './run-folder.ts';

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
  return new RequestServer(workDir, outbox, version, dryRun, keptFile);
}

/** The requests of one connection: its run's folder, the requests in progress, the process groups it started, what is half made. */
class RequestServer implements Requests {
  private folder: RunFolder | null = null;
  /** The git binary there, as hello names it. */
  private gitBinary = 'git';
  private readonly running = new Map<number, Running>();
  private readonly groups = new Set<number>();
  private readonly halfMade = new Set<string>();

  constructor(
    private readonly workDir: string,
    private readonly outbox: Outbox,
    private readonly version: string,
    private readonly dryRun: boolean,
    private readonly keptFile: string | undefined,
  ) {}

  private event(id: number, e: HostEvent): void {
    this.outbox.send({ type: 'event', id, event: e });
  }

  private reply(id: number, answer: Result<unknown, HostError>): void {
    this.running.delete(id);
    this.outbox.send({ type: 'reply', id, reply: answer });
  }

  /** Sends a stream's bytes as events, pausing it while the way out is full. */
  private forward(id: number, stream: Readable, kind: 'stdout' | 'stderr' | 'data', count?: (bytes: number) => void): void {
    stream.on('data', (chunk: Buffer) => {
      count?.(chunk.length);
      this.event(id, { kind, data: chunk.toString('base64') });
      stream.pause();
      void this.outbox.drained().then(() => stream.resume());
    });
  }

  private started(child: ChildProcess): void {
    if (child.pid !== undefined) this.groups.add(child.pid);
    child.once('exit', () => child.pid !== undefined && this.groups.delete(child.pid));
  }

  // TMPDIR is the run's, unless foreman names a folder of its own in the work dir (a sandboxed worker's, `.t/<this process's pid, base 36>-<task>`, removed when it ends).
  private commandEnv(run: RunFolder, extra: Record<string, string>): NodeJS.ProcessEnv {
    return {
      ...process.env,
      ...extra,
      TMPDIR: extra.TMPDIR !== undefined && insideWorkDir(this.workDir, extra.TMPDIR) ? extra.TMPDIR : run.tmp,
      [RUN_MARKER_VARIABLE]: runMarker,
    };
  }

  private receiveObjects(id: number, run: RunFolder, commit: string): void {
    if (!isObjectId(commit)) {
      this.reply(id, err(refused(`${commit} is not an object id`)));
      return;
    }
    const file = join(run.tmp, `incoming-${id}.bundle`);
    this.halfMade.add(file);
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
    this.running.set(id, {
      input: (bytes) => out.write(bytes),
      inputEnd: () =>
        out.end(
          () =>
            void done().then((answer) => {
              rmSync(file, { force: true });
              this.halfMade.delete(file);
              this.reply(id, answer);
            }),
        ),
    });
  }

  private sendObjects(id: number, run: RunFolder, commit: string, exclude: readonly string[]): void {
    const bad = [commit, ...exclude].find((name) => !isObjectId(name));
    if (bad !== undefined) {
      this.reply(id, err(refused(`${bad} is not an object id`)));
      return;
    }
    const ref = `refs/foreman/sending/${id}`;
    void (async () => {
      const named = await git(run.git, ['update-ref', ref, commit], run.repository);
      if (!named.ok) return this.reply(id, named);
      const child = spawn(run.git, [...NO_HOOKS, 'bundle', 'create', '--quiet', '-', ref, ...exclude.map((e) => `^${e}`)], {
        cwd: run.repository,
        env: this.commandEnv(run, {}),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      this.started(child);
      let bytes = 0;
      const errors: Buffer[] = [];
      this.forward(id, child.stdout, 'data', (n) => {
        bytes += n;
      });
      child.stderr.on('data', (chunk: Buffer) => errors.push(chunk));
      this.running.set(id, { cancel: () => child.pid !== undefined && signalGroup(child.pid, 'SIGKILL') });
      child.on('error', (error) => this.reply(id, err(fault(`git bundle could not start on the host: ${error.message}`))));
      child.on('close', (code) => {
        void git(run.git, ['update-ref', '-d', ref], run.repository).then(() =>
          this.reply(
            id,
            code === 0
              ? ok({ bytes })
              : err(fault(`git bundle create failed on the host: ${oneLine(Buffer.concat(errors).toString('utf8')) || `exit ${code}`}`)),
          ),
        );
      });
    })();
  }

  private runCommand(id: number, run: RunFolder, request: Extract<HostRequest, { op: 'run' }>): void {
    const cwd = commandDir(run, request.cwd);
    if (cwd === null) {
      this.reply(id, err(refused(`${request.cwd} is outside the run's folder`)));
      return;
    }
    const [file, ...args] = request.argv as [string, ...string[]];
    if (request.sandbox === undefined) {
      this.spawnCommand(id, run, request, cwd, { file, args, env: {} });
      return;
    }
    // Until the sandbox has wrapped it: a cancel ends it before it starts, its input waits.
    const waiting: Buffer[] = [];
    let inputEnded = false;
    let cancelled = false;
    this.running.set(id, { input: (bytes) => waiting.push(bytes), inputEnd: () => (inputEnded = true), cancel: () => (cancelled = true) });
    void hostSandboxedSpawn({ id, argv: request.argv, cwd, sandbox: request.sandbox }, this.workDir, this.keptFile).then(async (wrapped) => {
      if (!wrapped.ok) return this.reply(id, wrapped);
      if (cancelled) {
        await wrapped.value.cleanup();
        return this.reply(id, ok({ kind: 'killed', signal: 'SIGTERM' }));
      }
      const child = this.spawnCommand(id, run, request, cwd, wrapped.value);
      for (const bytes of waiting) child.stdin?.write(bytes);
      if (inputEnded) child.stdin?.end();
    });
  }

  /** Spawns `command` for the `run` request `id`, streams its output back and replies how it ended (after `cleanup`, a sandboxed command's). */
  private spawnCommand(
    id: number,
    run: RunFolder,
    request: Extract<HostRequest, { op: 'run' }>,
    cwd: string,
    command: { file: string; args: string[]; env: Record<string, string>; cleanup?: () => Promise<void> },
  ): ChildProcess {
    const child = spawn(command.file, command.args, {
      cwd,
      env: this.commandEnv(run, { ...request.env, ...command.env }),
      stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let failedToStart: string | null = null;
    child.on('error', (error) => {
      failedToStart = error.message;
    });
    if (child.pid !== undefined) {
      this.started(child);
      this.event(id, { kind: 'started', pid: child.pid });
    }
    this.forward(id, child.stdout as Readable, 'stdout');
    this.forward(id, child.stderr as Readable, 'stderr');
    child.stdin?.on('error', () => undefined);
    this.running.set(id, {
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
      void (command.cleanup?.() ?? Promise.resolve()).then(() => this.reply(id, ok(exit)));
    });
    return child;
  }

  /** Says whether the sandbox's seccomp helper is kept beside the program; with `keep`, keeps the bytes that follow as it (whole, or not at all). */
  private sandboxHelper(id: number, keep: boolean): void {
    if (this.keptFile === undefined) {
      this.reply(id, err(refused('the sandbox’s helper is kept only beside a kept program')));
      return;
    }
    const helper = sandboxHelperFile(this.keptFile);
    if (!keep || helper === null) {
      this.reply(id, ok({ arch: helper?.arch ?? null, kept: helper !== null && existsSync(helper.path) }));
      return;
    }
    const cannotKeep = (why: string): Result<HostReplies['sandbox-helper'], HostError> => err(fault(`could not keep the sandbox’s helper there: ${why}`));
    try {
      mkdirSync(dirname(helper.path), { recursive: true });
    } catch (caught) {
      // No file to write (a path through a file is not even removable): the bytes that follow are let go, and the reply says why.
      const why = (caught as Error).message;
      this.running.set(id, { inputEnd: () => this.reply(id, cannotKeep(why)) });
      return;
    }
    const partial = `${helper.path}.${process.pid}`;
    let failed: string | null = null;
    this.halfMade.add(partial);
    const out = createWriteStream(partial, { mode: 0o700 });
    out.on('error', (error) => {
      failed ??= error.message;
    });
    const kept = (): Result<HostReplies['sandbox-helper'], HostError> => {
      try {
        if (failed === null) renameSync(partial, helper.path);
      } catch (caught) {
        failed = (caught as Error).message;
      }
      rmSync(partial, { force: true });
      this.halfMade.delete(partial);
      return failed === null ? ok({ arch: helper.arch, kept: true }) : cannotKeep(failed);
    };
    this.running.set(id, { input: (bytes) => out.write(bytes), inputEnd: () => out.end(() => this.reply(id, kept())) });
  }

  private async handle(id: number, request: HostRequest): Promise<void> {
    switch (request.op) {
      case 'hello':
        if (request.protocol !== HOST_PROTOCOL)
          return this.reply(
            id,
            err(
              refused(
                `foreman speaks protocol ${request.protocol} and this host program ${HOST_PROTOCOL}: the same foreman version on both sides sends it again`,
              ),
            ),
          );
        this.gitBinary = request.git;
        return this.reply(id, ok({ protocol: HOST_PROTOCOL, version: this.version, pid: process.pid, node: process.version } satisfies HostReplies['hello']));
      case 'checks':
        return this.reply(id, ok(await hostFindings(this.workDir, request.claude, this.gitBinary)));
      case 'sandbox-check':
        if (this.keptFile === undefined)
          return this.reply(id, err(refused('the sandbox is tried only with the program kept on the host: a dry run writes nothing')));
        return this.reply(id, ok({ failed: await sandboxStarts(id, this.workDir, this.keptFile, { ...process.env, [RUN_MARKER_VARIABLE]: runMarker }) }));
      case 'open-run':
        return this.openRun(id, request);
      case 'sandbox-helper':
        return this.sandboxHelper(id, request.keep);
      case 'clean':
        if (this.dryRun) return this.reply(id, err(refused('a dry run writes nothing on the host')));
        try {
          return this.reply(id, ok(clean(this.workDir, request, this.folder)));
        } catch (caught) {
          return this.reply(id, err(fault(`could not clean the work dir: ${(caught as Error).message}`)));
        }
      case 'receive-objects':
      case 'has-commits':
      case 'send-objects':
      case 'run': {
        const folder = this.folder;
        if (folder === null) return this.reply(id, err(refused(`${request.op} needs a run's folder: open-run first`)));
        if (request.op === 'has-commits') return this.reply(id, await hasCommits(folder, request.commits));
        if (request.op === 'receive-objects') return this.receiveObjects(id, folder, request.commit);
        if (request.op === 'send-objects') return this.sendObjects(id, folder, request.commit, request.exclude);
        return this.runCommand(id, folder, request);
      }
    }
  }

  private async openRun(id: number, request: Extract<HostRequest, { op: 'open-run' }>): Promise<void> {
    if (this.dryRun) return this.reply(id, err(refused('a dry run writes nothing on the host')));
    if (this.folder !== null) return this.reply(id, err(refused(`this connection holds ${this.folder.dir} already`)));
    const opened = await openRun(this.gitBinary, this.workDir, request.repository, request.plan, request.objectFormat);
    if (opened.ok) this.folder = opened.value;
    // A run starting here: what gone programs left in the work dir goes (housekeeping, never a failure).
    if (opened.ok) tidyWorkDir(this.workDir, this.keptFile);
    return this.reply(id, opened.ok ? ok({ dir: opened.value.dir }) : opened);
  }

  take(message: Exclude<ToHost, { type: 'ping' }>): void {
    switch (message.type) {
      case 'request':
        this.running.set(message.id, {});
        void this.handle(message.id, message.request);
        return;
      case 'input':
        this.running.get(message.id)?.input?.(Buffer.from(message.data, 'base64'));
        return;
      case 'input-end':
        this.running.get(message.id)?.inputEnd?.();
        return;
      case 'cancel':
        this.running.get(message.id)?.cancel?.();
        return;
    }
  }

  async endAll(why: string): Promise<void> {
    for (const group of this.groups) signalGroup(group, 'SIGKILL');
    process.stderr.write(`foreman host: ending everything it started: ${why}\n`);
    // What the commands started in sessions of their own, found by the marker they inherited.
    await endMarked(RUN_MARKER_VARIABLE, runMarker, 500);
    for (const file of this.halfMade) rmSync(file, { force: true });
    // The sandboxed workers' own TMPDIRs this process served (`<work dir>/.t/<its pid, base 36>-…`).
    const ownTmp = join(this.workDir, '.t');
    for (const name of existsSync(ownTmp) ? readdirSync(ownTmp) : [])
      if (name.startsWith(`${process.pid.toString(36)}-`)) rmSync(join(ownTmp, name), { recursive: true, force: true });
  }
}
