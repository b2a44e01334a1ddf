// Workspaces on a host (`--host ssh://…`): the same interface as the local pool's (./index.ts),
// reached over the host's one channel (adapters/host/channel.ts). A slot is a worktree of the run's
// repository under `<work dir>/<repository id>/<plan id>/slots/<slot>`: made at the attempt's base
// commit (its objects sent first, without what the host has), provisioned (the setup command;
// `.worktreeinclude` files only with `include=1`, a symbolic link sent as a link), where the
// worker runs (./host-worker.ts: the same `runWorker`, its process a `run` there) and the checks run. Capture is a
// snapshot commit made there and fetched back, so the captured work's objects are here, where the
// integration reads them. Every name, path, prompt and command travels as data (argv, stdin);
// nothing is written outside the work dir. A failure of the host's own (the channel down, git
// failing there) is told as a host fault (`onFault`): the engine loses the attempt, spends none.

import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  BoundedOutput,
  captureCommit,
  DEFAULT_MAX_OUTPUT_BYTES,
  fetchCommit,
  heldBy,
  includedFiles,
  type RequestError,
  sandboxRefusal,
  sendCommit,
  sendSandboxHelper,
} from '../../adapters/index.ts';
import {
  clipTail,
  err,
  type GitFailure,
  type HostEvent,
  type HostSandbox,
  ok,
  oneLine,
  type Plan,
  type Result,
  type Verification,
  type WorkerRun,
} from '../../core/index.ts';
import type { CheckRun, CheckUse, WorkerJob, Workspace, WorkspaceRequest, Workspaces } from './workspace.ts';
import type { WorkPlace } from './verify.ts';
import { EXISTS, hostGitEnv, MAKE_SLOT, repositoryId, SNAPSHOT, WRITE_FILE, WRITE_LINK } from './host-scripts.ts';
import type { Connection, HostContext, HostRun, HostSlot } from './host-connection.ts';
import { runHostWorker } from './host-worker.ts';

export class HostWorkspaces implements Workspaces {
  private connection: Promise<Result<Connection, string>> | null = null;
  /**
   * The slot made last: slots are made one at a time, since `git worktree add` reads the records
   * of the other worktrees, one of which an add at the same moment may be half way through writing
   * ("failed to read …/commondir").
   */
  private slotMaking: Promise<unknown> = Promise.resolve();

  constructor(readonly context: HostContext) {}

  get name(): string {
    return this.context.host.name;
  }

  /** A failure of the host's own, told once per channel; `message` as the attempt's reason. */
  fault(reason: string): string {
    this.context.onFault(this.name, reason);
    return `host ${this.name}: ${reason}`;
  }

  /**
   * The channel and run folder, opened again once the one before went down: by the first attempt
   * to find it down (attempts placed at once after the host's back-off share the new one).
   */
  connect(): Promise<Result<Connection, string>> {
    const current = this.connection ?? this.reconnect();
    return current.then((made) => {
      if (!made.ok || made.value.channel.down === null) return made;
      return this.connection === current ? this.reconnect() : this.connect();
    });
  }

  private reconnect(): Promise<Result<Connection, string>> {
    this.connection = (async (): Promise<Result<Connection, string>> => {
      const opened = await this.context.connect();
      if (!opened.ok) return err(this.fault(opened.error.message));
      const channel = opened.value;
      let abandoned = false;
      channel.onDown((fault) => abandoned || this.context.onFault(this.name, fault.message));
      // A channel that cannot serve the run is closed at once, its failure told once (not again as the closed channel): nothing else has it.
      const abandon = async (why: string): Promise<Result<Connection, string>> => {
        abandoned = true;
        await channel.close();
        return err(why);
      };
      const run = await channel.request({
        op: 'open-run',
        repository: repositoryId(this.context.repo),
        plan: this.context.planId,
        objectFormat: this.context.objectFormat,
      });
      if (!run.ok) return abandon(this.requestFault('take the run’s folder', run.error));
      // What earlier runs of this repository left there and no live process holds goes (a run killed,
      // a plan finished or abandoned); a run's own folder, and one another live run holds, stay.
      // Cleaning is housekeeping: a failure of it is no fault of the host's.
      await channel.request({ op: 'clean', repository: repositoryId(this.context.repo) });
      // Its sandboxed commands' seccomp helper, kept beside the program there once per version.
      if (this.context.sandbox) {
        const helper = await sendSandboxHelper(channel);
        if (!helper.ok) return abandon(helper.error.kind === 'local' ? helper.error.message : this.requestFault('keep the sandbox’s helper', helper.error));
      }
      return ok({ channel, dir: run.value.dir, sent: new Map() });
    })();
    const made = this.connection;
    // A failed opening is tried again by the next attempt placed here (after the host's back-off).
    void made.then((result) => {
      if (!result.ok && this.connection === made) this.connection = null;
    });
    return made;
  }

  /** A request that failed: the channel down (told by its listener already), or the host failing it. */
  requestFault(doing: string, error: RequestError): string {
    if (error.kind === 'down') return `host ${this.name}: ${error.fault.message}`;
    return this.fault(`could not ${doing} there: ${error.message}`);
  }

  /** Runs `argv` in the run's folder there (`cwd` inside it), its stdin `input`. */
  async run(
    connection: Connection,
    argv: string[],
    use: { cwd: string; env?: Record<string, string>; input?: Buffer; signal?: AbortSignal; sandbox?: HostSandbox },
  ): Promise<HostRun> {
    const started = performance.now();
    const max = DEFAULT_MAX_OUTPUT_BYTES;
    const output = new BoundedOutput(Math.floor(max / 2), max - Math.floor(max / 2));
    const stdout: Buffer[] = [];
    const ended = await connection.channel.request(
      { op: 'run', argv, cwd: use.cwd, env: use.env ?? {}, stdin: use.input !== undefined, ...(use.sandbox ? { sandbox: use.sandbox } : {}) },
      {
        ...(use.input !== undefined ? { input: use.input } : {}),
        ...(use.signal ? { signal: use.signal } : {}),
        onEvent: (event: HostEvent) => {
          if (event.kind !== 'stdout' && event.kind !== 'stderr') return;
          const bytes = Buffer.from(event.data, 'base64');
          output.push(bytes);
          if (event.kind === 'stdout') stdout.push(bytes);
        },
      },
    );
    if (!ended.ok) return ended;
    return ok({ exit: ended.value, stdout: Buffer.concat(stdout).toString('utf8'), output, durationMs: Math.round(performance.now() - started) });
  }

  /** A git script of foreman's there: its stdout, or (a host fault, told) why it failed. */
  async git(connection: Connection, doing: string, cwd: string, script: string, args: string[]): Promise<Result<string, string>> {
    const ran = await this.run(connection, ['sh', '-c', script, 'foreman', ...args], { cwd, env: hostGitEnv(this.context.host.git) });
    if (!ran.ok) return err(this.requestFault(doing, ran.error));
    const exit = ran.value.exit;
    if (exit.kind === 'exited' && exit.code === 0) return ok(ran.value.stdout);
    const why =
      exit.kind === 'exited' ? clipTail(oneLine(ran.value.output.toString()), 300) || `exit ${exit.code}` : exit.kind === 'killed' ? exit.signal : exit.message;
    return err(this.fault(`git failed there as it tried to ${doing}: ${why}`));
  }

  async make(request: WorkspaceRequest): Promise<Result<Workspace, string>> {
    const slot = request.place?.slot;
    if (slot === undefined) throw new Error(`host ${this.name}: an attempt without a slot`);
    const connected = await this.connect();
    if (!connected.ok) return connected;
    const connection = connected.value;
    const sent = await this.send(connection, request.commit);
    if (!sent.ok) return sent;
    const cwd = `slots/${slot}`;
    const making = this.slotMaking.then(() => this.git(connection, 'make the slot’s worktree', '.', MAKE_SLOT, [cwd, request.commit]));
    this.slotMaking = making;
    const made = await making;
    if (!made.ok) return made;
    const dir = made.value.trim();
    const kept = await this.provision(connection, cwd, request.signal);
    if (!kept.ok) return kept;
    return ok(new HostWorkspace(this, connection, { cwd, dir, base: request.base ?? request.commit, kept: kept.value }));
  }

  /** Sends `commit`'s objects the host lacks, once per connection; a failed sending is tried again by the next attempt. */
  private send(connection: Connection, commit: string): Promise<Result<void, string>> {
    const already = connection.sent.get(commit);
    if (already !== undefined) return already;
    const candidates = [...connection.sent.keys()];
    const sending = sendCommit(connection.channel, this.context.repo, commit, candidates).then((sent): Result<void, string> => {
      if (sent.ok) return ok(undefined);
      connection.sent.delete(commit);
      return err(sent.error.kind === 'local' ? sent.error.message : this.requestFault('receive the commit', sent.error));
    });
    connection.sent.set(commit, sending);
    return sending;
  }

  /** The `.worktreeinclude` files (with `include=1`), then the plan's setup command: what provisioning put there, or why it failed. */
  private async provision(connection: Connection, cwd: string, signal?: AbortSignal): Promise<Result<string[], string>> {
    const kept: string[] = [];
    if (this.context.host.include) {
      for (const file of await includedFiles(this.context.git, this.context.repo)) {
        const ran =
          file.link === null
            ? await this.run(connection, ['sh', '-c', WRITE_FILE, 'foreman', file.path], { cwd, input: await readFile(`${this.context.repo}/${file.path}`) })
            : await this.run(connection, ['sh', '-c', WRITE_LINK, 'foreman', file.path, file.link], { cwd });
        if (!ran.ok) return err(this.requestFault(`write ${file.path}`, ran.error));
        if (ran.value.exit.kind !== 'exited' || ran.value.exit.code !== 0)
          return err(this.fault(`could not write ${file.path} there: ${clipTail(oneLine(ran.value.output.toString()), 300)}`));
        kept.push(file.path);
      }
    }
    const command = this.context.plan.context?.setupCommand;
    if (command === undefined || command.trim() === '') return ok(kept);
    const setup = await this.check(connection, cwd, command, {
      timeoutMs: this.context.setupTimeoutMs,
      ...(signal ? { signal } : {}),
      ...(this.context.sandbox
        ? { sandbox: { kind: 'setup', ...(this.context.plan.context?.setupNetwork ? { network: this.context.plan.context.setupNetwork } : {}) } }
        : {}),
    });
    if (setup.exitCode === 0 && !setup.timedOut) return ok(kept);
    const how = setup.timedOut ? `timed out after ${Math.round(this.context.setupTimeoutMs / 1000)} s` : `failed (exit ${setup.exitCode ?? setup.signal})`;
    return err(`the setup command \`${command}\` ${how} on host ${this.name}: ${clipTail(oneLine(setup.output), 300)}`);
  }

  /**
   * `command` by `sh -c` in the slot, as a check is run here: its output, its time limit, cancelled
   * by `signal`; in the sandbox there when the run sandboxes (a check's, unless `use` names the
   * setup command's).
   */
  async check(
    connection: Connection,
    cwd: string,
    command: string,
    use: Pick<CheckUse, 'timeoutMs' | 'signal'> & { sandbox?: HostSandbox },
  ): Promise<CheckRun> {
    const sandbox: HostSandbox | undefined =
      use.sandbox ?? (this.context.sandbox ? { kind: 'check', network: this.context.plan.context?.checkNetwork ?? [] } : undefined);
    const stop = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stop.abort();
    }, use.timeoutMs);
    const onAbort = () => stop.abort();
    use.signal?.addEventListener('abort', onAbort, { once: true });
    if (use.signal?.aborted) stop.abort();
    const started = performance.now();
    const ran = await this.run(connection, ['sh', '-c', command], { cwd, signal: stop.signal, ...(sandbox ? { sandbox } : {}) });
    clearTimeout(timer);
    use.signal?.removeEventListener('abort', onAbort);
    const aborted = use.signal?.aborted === true;
    if (!ran.ok) {
      const message = this.requestFault('run a check', ran.error);
      return {
        exitCode: null,
        timedOut: false,
        aborted,
        output: message,
        outputBytes: message.length,
        durationMs: Math.round(performance.now() - started),
        sandboxRefusal: null,
      };
    }
    const exit = ran.value.exit;
    const output = exit.kind === 'not-started' ? exit.message : ran.value.output.toString();
    return {
      exitCode: exit.kind === 'exited' ? exit.code : null,
      ...(exit.kind === 'killed' ? { signal: exit.signal } : {}),
      timedOut,
      aborted,
      output,
      outputBytes: exit.kind === 'not-started' ? output.length : ran.value.output.total,
      durationMs: ran.value.durationMs,
      sandboxRefusal: refusalOf(output, sandbox),
    };
  }

  runWorker(connection: Connection, slot: HostSlot, job: WorkerJob): Promise<WorkerRun> {
    return runHostWorker(this, connection, slot, job);
  }

  verify(connection: Connection, slot: HostSlot, plan: Plan, task: number, signal?: AbortSignal): Promise<Verification> {
    return this.context.local.verifyWork(this.workPlace(connection, slot), (command, use) => this.check(connection, slot.cwd, command, use), {
      base: slot.base,
      kept: slot.kept,
      plan,
      task,
      ...(signal ? { signal } : {}),
    });
  }

  /** The attempt's work, where it is: captured from a snapshot commit fetched back, set aside and looked at there. */
  workPlace(connection: Connection, slot: HostSlot): WorkPlace {
    const failure = (step: string, message: string): GitFailure => ({ step, exitCode: 1, stderr: message });
    return {
      capture: async (declared, kept, base = slot.base) => {
        const index = `${connection.dir}/tmp/snapshot-index-${randomBytes(4).toString('hex')}`;
        const made = await this.git(connection, 'snapshot the attempt’s worktree', slot.cwd, SNAPSHOT, [index, base, ...kept]);
        if (!made.ok) return err(failure('snapshot', made.error));
        const commit = made.value.trim();
        const fetched = await fetchCommit(connection.channel, this.context.repo, commit, [base]);
        if (!fetched.ok)
          return err(
            failure('fetch', fetched.error.kind === 'local' ? fetched.error.message : this.requestFault('send the attempt’s work back', fetched.error)),
          );
        return captureCommit(this.context.repo, declared, kept, base, commit);
      },
      setAside: async (base, paths) => {
        const held = await heldBy(this.context.repo, base, paths);
        if (!held.ok) return held;
        const restore = paths.filter((path) => held.value.inBase.has(path));
        const remove = paths.filter((path) => !held.value.inBase.has(path));
        if (restore.length > 0) {
          const restored = await this.git(
            connection,
            'set aside what the attempt changed outside its files',
            slot.cwd,
            '"$FOREMAN_GIT" checkout -q --no-overlay "$@"',
            [base, '--', ...restore],
          );
          if (!restored.ok) return err(failure('checkout', restored.error));
        }
        if (remove.length > 0) {
          const removed = await this.git(connection, 'remove what the attempt made outside its files', slot.cwd, 'rm -rf -- "$@"', remove);
          if (!removed.ok) return err(failure('remove', removed.error));
        }
        return ok({ tracked: held.value.tracked });
      },
      exists: async (path) => {
        const ran = await this.run(connection, ['sh', '-c', EXISTS, 'foreman', path], { cwd: slot.cwd });
        return ran.ok && ran.value.exit.kind === 'exited' && ran.value.exit.code === 0;
      },
    };
  }

  /** Every slot of the plan there goes (its tasks are all done); the run's repository stays for a later run's objects. */
  async remove(): Promise<void> {
    if (this.connection === null) return;
    const connected = await this.connection;
    if (!connected.ok || connected.value.channel.down !== null) return;
    await this.run(connected.value, ['sh', '-c', 'rm -rf slots && "$FOREMAN_GIT" --git-dir=repository.git worktree prune'], {
      cwd: '.',
      env: hostGitEnv(this.context.host.git),
    });
  }

  /** Ends the channel: the remote side ends what it started and lets go of the run's folder. */
  async close(): Promise<void> {
    if (this.connection === null) return;
    const connected = await this.connection;
    if (connected.ok) await connected.value.channel.close();
  }
}

/** An attempt's workspace on a host: a slot's worktree there. */
class HostWorkspace implements Workspace {
  constructor(
    private readonly workspaces: HostWorkspaces,
    private readonly connection: Connection,
    private readonly slot: HostSlot,
  ) {}

  get base(): string {
    return this.slot.base;
  }

  runWorker(job: WorkerJob): Promise<WorkerRun> {
    return this.workspaces.runWorker(this.connection, this.slot, job);
  }

  verify(plan: Plan, task: number, signal?: AbortSignal): Promise<Verification> {
    return this.workspaces.verify(this.connection, this.slot, plan, task, signal);
  }

  runCheck(command: string, use: CheckUse): Promise<CheckRun> {
    return this.workspaces.check(this.connection, this.slot.cwd, command, use);
  }

  release(): void {
    // The slot is reset when an attempt is placed on it next.
  }
}

/**
 * What the sandbox refused of a check's network there, as its output shows it (`sandboxRefusal`),
 * naming `context.checkNetwork`. The setup command's hosts are made up there (the registries'
 * defaults and the host's npm registry), so its output is told as it is.
 */
function refusalOf(output: string, sandbox: HostSandbox | undefined): string | null {
  if (sandbox?.kind !== 'check') return null;
  return sandboxRefusal(output, { writable: [], allowedDomains: sandbox.network }, 'context.checkNetwork');
}
