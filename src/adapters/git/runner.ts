// The one git runner: every git process foreman starts goes through `runGit`, or `GitSession`
// for one kept running to answer request after request. Hooks and fsmonitor
// are always off, every pathspec is literal, each command has a time limit (FOREMAN_GIT_TIMEOUT)
// that ends its process group and names the command, and a failure is a value, never a throw.
// Commands are started by the process starter (../spawner.ts), not forked from this process.
// The runner counts the processes it starts (`gitProcessCount`; the bench divides it by tasks).

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { assertNever, err, Lane, NO_HOOKS, ok, type Result } from '../../core/index.ts';
import { endGroup, endInput, holdOpen, runProcess } from '../processes/index.ts';

/** A git command exited non-zero. */
export class GitCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
    /** What it printed on stdout before it failed (of `runGitSteps`: the steps before it). */
    readonly stdout = '',
  ) {
    super(`git ${args.join(' ')} failed (exit ${exitCode}): ${stderr.trim() || '(no output)'}`);
    this.name = 'GitCommandError';
  }
}

const FALLBACK_NAME = 'foreman';
const FALLBACK_EMAIL = 'foreman@localhost';

export interface GitRun {
  /** The directory git runs in. */
  cwd: string;
  /** Extra environment (GIT_INDEX_FILE for a temporary index, GIT_AUTHOR_… for commit-tree). */
  env?: Record<string, string>;
  /** Written to git's stdin. */
  input?: string;
  /** The command takes path names, not pathspecs, and refuses the literal magic (`check-ignore`). */
  pathNames?: boolean;
  /** Run by `runGitSteps`: a shell script of `steps` git commands instead of one git command. */
  shell?: { script: string; steps: number; name: string };
}

/** `git status`, `git hang`: how a message names a command (its word, without `-c` settings). */
const commandName = (args: readonly string[]): string =>
  `\`git ${args
    .filter((a) => !a.startsWith('-') && !a.includes('='))
    .slice(0, 1)
    .join(' ')}\``;

/** How long one git command may take (`FOREMAN_GIT_TIMEOUT` seconds; default 10 minutes). */
export const GIT_TIME_LIMIT_ENV = 'FOREMAN_GIT_TIMEOUT';
const DEFAULT_GIT_TIME_LIMIT_MS = 600_000;

/** The setting as last read, and what it means: read again only when the environment changed it (a test). */
let timeLimit: { setting: string | undefined; ms: number } = { setting: undefined, ms: DEFAULT_GIT_TIME_LIMIT_MS };

/**
 * The limit from this process's environment, which every process foreman starts inherits. Every
 * command refuses a bad value before it runs (src/cli/command.ts); this default for one is only
 * for code that runs git outside a command (the tests, the bench).
 */
function gitTimeLimitMs(): number {
  const setting = process.env[GIT_TIME_LIMIT_ENV];
  if (setting !== timeLimit.setting) {
    const seconds = Number(setting);
    timeLimit = { setting, ms: Number.isInteger(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_GIT_TIME_LIMIT_MS };
  }
  return timeLimit.ms;
}

let spawned = 0;
/** How many git processes this process has started (the bench divides it by the tasks run). */
export const gitProcessCount = (): number => spawned;

/**
 * The one git runner: every git command foreman runs goes through here. It always runs with the
 * person's hooks and fsmonitor off (NO_HOOKS) and every pathspec literal (`src/[id].ts` names that
 * file, `*.md` is no glob), within a time limit that ends its process group and says which command
 * hit it. A non-zero exit is returned as a value; stdout is returned untrimmed.
 */
export async function runGit(args: readonly string[], run: GitRun): Promise<Result<string, GitCommandError>> {
  const limitMs = gitTimeLimitMs() * (run.shell?.steps ?? 1);
  spawned += run.shell?.steps ?? 1;
  const ended = await runProcess({
    file: run.shell === undefined ? 'git' : '/bin/sh',
    args: run.shell === undefined ? [...NO_HOOKS, ...args] : ['-c', run.shell.script],
    cwd: run.cwd,
    env: { ...process.env, ...(run.pathNames === true ? {} : { GIT_LITERAL_PATHSPECS: '1' }), ...run.env },
    ...(run.input !== undefined ? { input: run.input } : {}),
    timeoutMs: limitMs,
  });
  switch (ended.kind) {
    case 'exited':
      if (ended.code === 0) return ok(ended.stdout.toString('utf8'));
      return err(new GitCommandError(args, ended.code, ended.stderr.toString('utf8'), ended.stdout.toString('utf8')));
    case 'timed-out': {
      const named = run.shell?.name ?? commandName(args);
      return err(
        new GitCommandError(
          args,
          -1,
          `${named} timed out after ${Math.round(limitMs / 1000)}s (the limit set by ${GIT_TIME_LIMIT_ENV}, in seconds); its process group was ended`,
        ),
      );
    }
    case 'not-started':
      // git cannot be started (not installed, not on PATH, no such directory): a failure like any other, said plainly.
      return err(new GitCommandError(args, -1, `could not run git: ${ended.message}`));
    default:
      return assertNever(ended, 'process end');
  }
}

/** A word the shell reads back as exactly `word`. */
const shellWord = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/** In a step's arguments (`runGitSteps`): the output of the step before it, as one word. No argument git takes holds a NUL. */
export const PREVIOUS_OUTPUT = '\0previous-output';

/** The line a step sequence's shell prints (to stderr) before it exits with a failed step's code. */
const FAILED_STEP = /(?:^|\n)foreman-failed-step (\d+)\n?$/;

/**
 * Git commands run one after another by one `sh`: one command for the process starter to start
 * and report (its output files read, its line answered) instead of one per step. Each step runs as `runGit` would run it
 * (hooks and fsmonitor off, literal pathspecs) and counts as one git process; a step may take
 * the previous step's output as an argument (`PREVIOUS_OUTPUT`); stdin goes to the first step
 * that reads it. The output is each step's, its trailing newlines trimmed, one line each (none
 * for a step that printed nothing): for commands that print little. The sequence stops at the
 * first step that fails, whose failure (its own command, exit code and stderr, and on stdout
 * what the steps before it printed) is returned. The time limit covers all the steps, one limit
 * each.
 */
export async function runGitSteps(steps: ReadonlyArray<readonly string[]>, run: GitRun): Promise<Result<string, GitCommandError>> {
  const script = steps
    .map((args, index) => {
      const command = ['git', ...NO_HOOKS, ...args].map((word) => (word === PREVIOUS_OUTPUT ? '"$out"' : shellWord(word))).join(' ');
      return `out=$(${command}) || { code=$?; echo "foreman-failed-step ${index}" >&2; exit $code; }\n[ -z "$out" ] || printf '%s\\n' "$out"`;
    })
    .join('\n');
  const name = steps.map(commandName).join(' then ');
  const ran = await runGit(['foreman-steps'], { ...run, shell: { script, steps: steps.length, name } });
  if (ran.ok) return ran;
  const failed = FAILED_STEP.exec(ran.error.stderr);
  const index = failed === null ? steps.length - 1 : Number(failed[1]);
  const stderr = failed === null ? ran.error.stderr : ran.error.stderr.slice(0, failed.index);
  return err(new GitCommandError(steps[index] ?? ran.error.args, ran.error.exitCode, stderr, ran.error.stdout));
}

/**
 * Two git commands joined by a pipe in one `sh` (one process for the starter to start), each run
 * as `runGit` runs a command (hooks and fsmonitor off, literal pathspecs; counted as two), the
 * second with `consumerEnv` added to its environment. `input` goes to the first. Fails with the
 * pipeline's exit code and both commands' stderr; stdout is the second's.
 */
export function runGitPipe(
  producer: readonly string[],
  consumer: readonly string[],
  consumerEnv: Readonly<Record<string, string>>,
  run: Omit<GitRun, 'shell'>,
): Promise<Result<string, GitCommandError>> {
  const words = (args: readonly string[]) => ['git', ...NO_HOOKS, ...args].map(shellWord).join(' ');
  const assignments = Object.entries(consumerEnv)
    .map(([name, value]) => `${name}=${shellWord(value)}`)
    .join(' ');
  const script = `${words(producer)} | ${assignments} ${words(consumer)}`;
  return runGit([...producer, '|', ...consumer], { ...run, shell: { script, steps: 2, name: `${commandName(producer)} into ${commandName(consumer)}` } });
}

/** Where a one-line answer of a kept git process (an object id and a newline) ends in `buffered`, or -1. */
export function lineAnswerLength(buffered: Buffer): number {
  const newline = buffered.indexOf(0x0a);
  return newline < 0 ? -1 : newline + 1;
}

/** The git sessions of this process that started a process. */
const sessions = new Set<GitSession>();

/**
 * Ends every kept git process of this process and waits for them (at most `limitMs`): waited for,
 * their CPU is counted among this process's children's, as a command's is. For the end of a
 * command line; a later request starts a process again.
 */
export async function endGitSessions(limitMs = 2_000): Promise<void> {
  const ending = [...sessions].map((session) => session.end(limitMs));
  sessions.clear();
  await Promise.all(ending);
}

/**
 * A git process kept running to answer requests one at a time (`cat-file --batch`,
 * `mktree --batch`): started through the same runner (hooks and fsmonitor off, literal
 * pathspecs, counted once), each request under the same time limit as a command. While it waits
 * for nothing it does not keep this process alive; closing its input ends it, as does this
 * process's end (git reads end of file).
 */
export class GitSession {
  private child: ChildProcessWithoutNullStreams | null = null;
  private buffered: Buffer = Buffer.alloc(0);
  private stderr = '';
  private waiting: {
    child: ChildProcessWithoutNullStreams;
    complete: (buffered: Buffer) => number;
    settle: (answer: Result<Buffer, GitCommandError>) => void;
  } | null = null;
  private readonly lane = new Lane();

  constructor(
    private readonly cwd: string,
    private readonly args: readonly string[],
  ) {}

  /**
   * Writes `input` and resolves with the answer: the first bytes of what git prints for which
   * `complete` returns a length (it returns -1 while the answer is incomplete). A process that
   * died or hit the time limit is a failure, and the next request starts a new one.
   */
  ask(input: Buffer, complete: (buffered: Buffer) => number): Promise<Result<Buffer, GitCommandError>> {
    return this.lane.run(() => this.askNow(input, complete));
  }

  /** Ends the process (its input closed); a later request starts another. */
  close(): void {
    const child = this.child;
    this.child = null;
    child?.stdin.end();
  }

  /** `close`, resolving once the process is gone (or after `limitMs`). */
  end(limitMs: number): Promise<void> {
    const child = this.child;
    this.child = null;
    return child === null ? Promise.resolve() : endInput(child, limitMs);
  }

  private askNow(input: Buffer, complete: (buffered: Buffer) => number): Promise<Result<Buffer, GitCommandError>> {
    const child = this.child ?? this.start();
    return new Promise((resolve) => {
      const limitMs = gitTimeLimitMs();
      const timer = setTimeout(() => {
        this.fail(
          child,
          `\`git ${this.args[0]}\` did not answer within ${Math.round(limitMs / 1000)}s (the limit set by ${GIT_TIME_LIMIT_ENV}, in seconds); its process group was ended`,
        );
        endGroup(child);
      }, limitMs);
      this.waiting = {
        child,
        complete,
        settle: (answer) => {
          clearTimeout(timer);
          this.waiting = null;
          holdOpen(child, false);
          resolve(answer);
        },
      };
      holdOpen(child, true);
      child.stdin.write(input);
      this.deliver();
    });
  }

  private start(): ChildProcessWithoutNullStreams {
    spawned++;
    sessions.add(this);
    this.buffered = Buffer.alloc(0);
    this.stderr = '';
    const child = spawn('git', [...NO_HOOKS, ...this.args], {
      cwd: this.cwd,
      env: { ...process.env, GIT_LITERAL_PATHSPECS: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    child.unref();
    holdOpen(child, false);
    child.stdout.on('data', (data: Buffer) => {
      if (this.child !== child) return;
      this.buffered = this.buffered.length === 0 ? data : Buffer.concat([this.buffered, data]);
      this.deliver();
    });
    child.stderr.on('data', (data: Buffer) => {
      this.stderr = (this.stderr + data.toString('utf8')).slice(-4000);
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => this.fail(child, `could not run git: ${error.message}`));
    child.on('close', (code) => this.fail(child, this.stderr.trim() || `git ${this.args[0]} ended (exit ${code ?? 'by a signal'})`, code ?? -1));
    return child;
  }

  /** Hands the waiting request its answer once the output holds all of it. */
  private deliver(): void {
    if (this.waiting === null) return;
    const length = this.waiting.complete(this.buffered);
    if (length < 0) return;
    const answer = this.buffered.subarray(0, length);
    this.buffered = this.buffered.subarray(length);
    this.waiting.settle(ok(answer));
  }

  private fail(child: ChildProcessWithoutNullStreams, said: string, exitCode = -1): void {
    if (this.child === child) this.child = null;
    if (this.waiting?.child === child) this.waiting.settle(err(new GitCommandError(this.args, exitCode, said)));
  }
}

/**
 * `-c user.name=… -c user.email=…` for whichever part of the identity is not configured (git
 * config at any level, or the GIT_AUTHOR_… and GIT_COMMITTER_… environment). Git's guesses from the
 * host name do not count: they are often refused, and would differ from machine to machine.
 * One `git config` call: both keys at once.
 */
export async function identityArgs(cwd: string): Promise<string[]> {
  const env = process.env;
  const found = await runGit(['config', '--get-regexp', '^user\\.(name|email)$'], { cwd });
  const keys = new Set(found.ok ? found.value.split('\n').flatMap((line) => (/^\S+ \S/.test(line) ? [line.split(' ')[0]!.toLowerCase()] : [])) : []);
  const hasName = (!!env.GIT_AUTHOR_NAME && !!env.GIT_COMMITTER_NAME) || keys.has('user.name');
  const hasEmail = (!!env.GIT_AUTHOR_EMAIL && !!env.GIT_COMMITTER_EMAIL) || !!env.EMAIL || keys.has('user.email');
  return [...(hasName ? [] : ['-c', `user.name=${FALLBACK_NAME}`]), ...(hasEmail ? [] : ['-c', `user.email=${FALLBACK_EMAIL}`])];
}

interface Call {
  env?: Record<string, string>;
  input?: string;
}

/** `runGit` in `cwd`, with extra environment or stdin: the short form the git modules use. */
export const git = (cwd: string, args: readonly string[], call: Call = {}): Promise<Result<string, GitCommandError>> =>
  runGit(args, { cwd, ...(call.env ? { env: call.env } : {}), ...(call.input !== undefined ? { input: call.input } : {}) });
