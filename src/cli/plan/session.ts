// `plan setup | next | finalize | commit`: the /execute skill's steps (src/run/session.ts) as
// commands. Each takes the run lock while it works (and refuses with exit 3 while a headless run
// holds it), prints one JSON object on stdout (schemas/<step>.schema.json), and on a problem
// prints `{"error": {kind, message, details}}` there instead, one line on stderr, and exits 2.
// `commit` whose integrated work could not land prints its JSON, one line on stderr saying what
// blocks it, and exits 1 (as a headless run whose work could not land).

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Git } from '../../adapters/git/repository.ts';
import { ownLayout } from '../../adapters/layout.ts';
import { commandHint } from '../../core/command-hint.ts';
import { acquireLock, currentLockInfo } from '../../adapters/run-lock.ts';
import { readPlanFile } from '../../adapters/plan-file.ts';
import { type Plan, statusOf } from '../../core/plan.ts';
import { landingProblemSentence } from '../../core/landing.ts';
import { countByStatus } from '../../core/graph.ts';
import { archivedPlans } from '../../run/plan-landing.ts';
import {
  DEFAULT_GATE_WAIT_MS,
  sessionCommit,
  type SessionContext,
  sessionFinalize,
  sessionNext,
  sessionSetup,
  type NextOutput,
  type Notice,
  type SessionSandbox,
  type WorkerResult,
} from '../../run/session.ts';
import { type Command, type Io, type Numbers, type OptionSpec, describeUsageError } from '../command.ts';
import { RANGES } from '../numeric-flags.ts';
import { CliError, EXIT, type ExitCode, UsageError, usageError } from '../exit.ts';
import { findPlan, loadPlan, loadPlanFile, missingPlanLine, repositoryTop } from '../load.ts';
import { describeEditBetweenSteps, editedSinceLastStep, rememberPlanFile } from '../../run/plan-edits.ts';
import { describeSetupProblem, lockedLine } from '../setup-problem.ts';
import { gateCommandOf, gateOptions } from '../gate-flags.ts';
import { describeGitFailure, isObjectId } from '../../core/git-text.ts';
import { assertNever } from '../../core/failure.ts';
import { DEFAULTS } from '../../run/settings.ts';
import { serveGate } from '../../run/session/gate-process.ts';
import { baselineRefusal } from '../../core/run-lifecycle.ts';
import { describeJsonError, isRecord } from '../../core/json-text.ts';
import { type SandboxDecision, autoSandbox, decideSandbox, installAdvice, sandboxModeOf } from '../../adapters/sandbox.ts';
import { readSession } from '../../run/session/file.ts';

/** A problem with a name the lead can act on. */
export class StepError extends CliError {
  constructor(
    code: ExitCode,
    readonly kind: string,
    lines: string[],
  ) {
    super(code, lines);
  }
}

const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

export const repoPlanOptions: Record<string, OptionSpec> = {
  repo: {
    type: 'string',
    valueName: 'DIR',
    description: 'a folder of the repository, which the step works in at its top, as git finds it (default: the current folder)',
  },
  plan: {
    type: 'string',
    valueName: 'FILE',
    description: 'the plan (default: .design/plan.json in DIR or the nearest folder above it in the repository, else at its top)',
  },
};

interface StepArgs {
  values: Record<string, unknown>;
  /** The numeric flags, checked against their ranges before the step began. */
  numbers: Numbers;
  plan: Plan;
  ctx: SessionContext;
  io: Parameters<Command['run']>[1];
}

/** What every step's output may say besides its result: an edit of the plan between steps is said there first. */
type StepOutput = { notices?: Notice[] };

/** A step as a command: what it checks before the plan is loaded (`P`, given to the step), and what it prints (`O`). */
interface StepSpec<P, O extends StepOutput> {
  name: string;
  summary: string;
  usage: string;
  options: Record<string, OptionSpec>;
  /** Checked before the plan is loaded (flags, input files). */
  prepare(values: Record<string, unknown>, cwd: string, env: NodeJS.ProcessEnv): Promise<P>;
  step(args: StepArgs, prepared: P): Promise<O>;
  /** A finished step that still needs the person: its exit code and the one line for stderr. */
  attention?(output: O): { code: ExitCode; line: string } | null;
  /** What the step answers when the plan is gone because a finished run archived it (else: `no-plan`). */
  afterArchive?(archive: { path: string; plan: Plan }): O;
}

/** A step that checks nothing before the plan is loaded. */
const nothingToPrepare = async (): Promise<undefined> => undefined;

/** A step's problem: `{"error": {kind, message, details}}` on stdout, its first line on stderr. */
function reportProblem(step: string, kind: string, e: CliError, io: Io): ExitCode {
  // A usage error is worded as every command words it; stderr names the step, as for any problem.
  const first = e instanceof UsageError ? describeUsageError(e) : e.lines[0];
  io.out(JSON.stringify({ error: { kind, message: first ?? '', details: e.lines.slice(1) } }));
  io.err(
    `plan ${step}: ${first ?? kind}${e.lines.length > 1 ? ` (${e.lines.length - 1} more line${e.lines.length === 2 ? '' : 's'} in the JSON on stdout)` : ''}`,
  );
  return e.code;
}

/** Where a step works (`whereOf`): `--repo DIR` resolved, the top of its repository (null outside any), the plan. */
interface Where {
  start: string;
  top: string | null;
  planPath: string;
}

/**
 * Where a step works, resolved once for the steps and the gate process: the repository holding
 * `--repo DIR` (default: the current folder), at its top, as git finds it; the plan `--plan FILE`
 * (relative to the current folder), else the one found from DIR (`findPlan`).
 */
async function whereOf(values: Record<string, unknown>, cwd: string): Promise<Where> {
  const start = resolve(cwd, str(values.repo) ?? '.');
  const top = await repositoryTop(start);
  const plan = str(values.plan);
  const planPath = plan !== undefined ? resolve(cwd, plan) : await findPlan(start, top);
  return { start, top, planPath };
}

/** That the repository and the plan exist: the step's place. */
async function locate({ start, top, planPath }: Where): Promise<{ repo: string; planPath: string; git: Git }> {
  if (top === null)
    throw new StepError(EXIT.invalid, 'not-a-repo', [`${start} is not in a git repository (foreman commits each round; run \`git init\` first)`]);
  const read = await readPlanFile(planPath);
  if (!read.ok && read.error.kind === 'missing') throw new StepError(EXIT.invalid, 'no-plan', [await missingPlanLine(planPath)]);
  return { repo: top, planPath, git: new Git(top) };
}

/**
 * When there is no plan at the plan path and the newest archived plan next to it has every task
 * completed (`plan commit` archives a plan once all of it has landed): that archive. Else null.
 */
async function archivedFinished(planPath: string): Promise<{ path: string; plan: Plan } | null> {
  const read = await readPlanFile(planPath);
  if (read.ok || read.error.kind !== 'missing') return null;
  const newest = (await archivedPlans(planPath))[0];
  return newest?.plan.tasks.every((t) => statusOf(t) === 'completed') ? newest : null;
}

async function loadStepPlan(planPath: string): Promise<{ plan: Plan; text: string }> {
  try {
    return await loadPlanFile(planPath);
  } catch (e) {
    if (e instanceof CliError)
      throw new StepError(
        e.code,
        'invalid-plan',
        e.lines.map((l) => l.trim()),
      );
    throw e;
  }
}

export function stepCommand<P, O extends StepOutput>(spec: StepSpec<P, O>): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: spec.usage,
    sessionStep: true,
    options: { ...repoPlanOptions, ...spec.options },
    async run({ values, numbers }, io) {
      try {
        const prepared = await spec.prepare(values, io.cwd, io.env);
        const where = await whereOf(values, io.cwd);
        const finished = spec.afterArchive === undefined ? null : await archivedFinished(where.planPath);
        if (spec.afterArchive !== undefined && finished !== null) {
          io.out(JSON.stringify(spec.afterArchive(finished)));
          return EXIT.ok;
        }
        const { repo, planPath, git } = await locate(where);
        const lock = await acquireLock(planPath, currentLockInfo(`plan ${spec.name}`));
        if (!lock.ok) {
          throw new StepError(EXIT.cannotRun, 'locked', [lockedLine(lock.error.holder)]);
        }
        try {
          const { plan, text } = await loadStepPlan(planPath);
          // An edit between steps is used as it is (setup starts afresh anyway); the step says so.
          const edited = spec.name !== 'setup' && (await editedSinceLastStep(planPath, text)) ? describeEditBetweenSteps(plan) : null;
          const stepped = await spec.step({ values, numbers, plan, io, ctx: { repo, planPath, git, env: io.env, planText: text } }, prepared);
          const output = edited === null ? stepped : { ...stepped, notices: [edited, ...(stepped.notices ?? [])] };
          await rememberPlanFile(planPath);
          io.out(JSON.stringify(output));
          const attention = spec.attention?.(output) ?? null;
          if (attention === null) return EXIT.ok;
          io.err(`plan ${spec.name}: ${attention.line}`);
          return attention.code;
        } finally {
          await lock.value.release();
        }
      } catch (e) {
        if (!(e instanceof CliError)) throw e;
        return reportProblem(
          spec.name,
          e instanceof StepError ? e.kind : e instanceof UsageError ? 'usage' : e.code === EXIT.cannotRun ? 'cannot-run' : 'invalid',
          e,
          io,
        );
      }
    },
    // Bad flags (a number out of range) are said like any problem of a step: JSON on stdout.
    reportUsageError: (e, io) => void reportProblem(spec.name, 'usage', e, io),
  };
}

/** Seconds (a flag checked against its range) as milliseconds. */
const millisecondsOf = (seconds: number | undefined): number | undefined => (seconds === undefined ? undefined : seconds * 1000);

const waitOption: Record<string, OptionSpec> = {
  wait: {
    type: 'string',
    valueName: 'SECONDS',
    description: `how long to wait for a gate run before answering \`"gate": {"state": "running"}\` (default ${DEFAULT_GATE_WAIT_MS / 1000}; the run goes on in the background)`,
    range: RANGES.waitSeconds,
  },
};

/**
 * `--sandbox on` of a step after setup (`finalize`, `commit`): the form a skill pre-approves. The
 * session's sandbox is plan setup's to decide; with this flag the step refuses (exit 3,
 * `sandbox-unavailable`) before it runs anything when that would run a command outside the
 * sandbox, so running one unsandboxed always takes the person's approval of the plain step.
 */
const requireSandboxOption: Record<string, OptionSpec> = {
  sandbox: {
    type: 'string',
    valueName: 'on',
    description:
      'on: refuse (exit 3) when this session would run a command outside the sandbox (set up with --sandbox off, or where the sandbox cannot run); without it the step runs them as plan setup decided',
  },
};

/** The flag's value checked before anything else: only `on`. */
function requireSandboxFlag(values: Record<string, unknown>): boolean {
  const flag = str(values.sandbox);
  if (flag === undefined) return false;
  if (flag !== 'on')
    throw usageError(
      `--sandbox: "${flag}" is not accepted here; a step after setup takes only --sandbox on (the session's sandbox is plan setup's --sandbox MODE)`,
    );
  return true;
}

/**
 * With `--sandbox on`: refuse when this session runs `what` outside the sandbox. `what` null: the
 * step runs no command this session (a commit with no gate), so there is nothing to refuse.
 */
async function refuseUnsandboxed(
  step: string,
  values: Record<string, unknown>,
  plan: Plan,
  planPath: string,
  what: (gated: boolean) => string | null,
): Promise<void> {
  if (!requireSandboxFlag(values)) return;
  const session = await readSession(planPath, plan);
  const runs = what(session.gate.config !== null);
  if (runs === null) return;
  // A session file of an earlier version has no decision: its steps ask as `auto`.
  const decided: SandboxDecision = session.sandbox ?? (await autoSandbox());
  if (decided.sandboxed) return;
  const why = decided.unavailable === null ? 'it was set up with --sandbox off' : `plan setup found that the sandbox cannot run here: ${decided.unavailable}`;
  throw new StepError(EXIT.cannotRun, 'sandbox-unavailable', [
    `--sandbox on: this session runs ${runs} outside the sandbox (${why}); nothing was done. To go on unsandboxed, run \`plan ${step}\` as before without --sandbox on (the person approves it); to sandbox them, ${installAdvice()}, then \`plan setup --sandbox on\` again`,
  ]);
}

/**
 * What a step that stops had to say before it did (a gate run started again, a person's edit of
 * the plan kept aside): the error's last `details`, one line each, as its output would have had them.
 */
const noticeLines = (notices: readonly Notice[]): string[] => notices.map((notice) => `${notice.level}: ${notice.message}`);

/** The gate failed on the starting commit (`failedOn`: the integration ref and the tip it ran on): the same refusal as a headless run. */
async function refuseBaseline(
  ctx: { git: Git },
  command: string,
  failedOn: { ref: string; tip: string },
  output: string,
  notices: readonly Notice[],
): Promise<never> {
  const tested = { ...failedOn, head: await ctx.git.headCommit() };
  throw new StepError(EXIT.invalid, 'baseline-failed', [...baselineRefusal(command, tested, output), ...noticeLines(notices)]);
}

export const setup = stepCommand({
  name: 'setup',
  summary:
    'For /execute: validate the plan, set up its integration ref, clean up after an interrupted session, check blocking assumptions, integrate and land verified work an earlier session left. JSON out.',
  usage:
    '[--repo DIR] [--plan FILE] [--concurrency N] [--max-attempts N] [--check-timeout SECONDS] [--gate CMD | --no-gate] [--gate-batch N] [--gate-timeout SECONDS] [--speculate N | --no-speculate] [--wait SECONDS] [--sandbox MODE] [--strict-scope]',
  options: {
    concurrency: { type: 'string', valueName: 'N', description: `workers at once for this session (default ${DEFAULTS.concurrency})`, range: RANGES.workers },
    'max-attempts': {
      type: 'string',
      valueName: 'N',
      description: `attempts per task, retries included (default ${DEFAULTS.maxAttempts})`,
      range: RANGES.attempts,
    },
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: `time limit of each acceptance or assumption command (default ${DEFAULTS.checkTimeoutMs / 1000})`,
      range: RANGES.timeoutSeconds,
    },
    ...gateOptions({ integrates: 'as soon as plan commit sees it', ended: '' }),
    speculate: {
      type: 'string',
      valueName: 'N',
      description:
        "as execute's; in a session a subagent starts from HEAD, so a dependant always waits for its blockers' work to land (the output's speculate.depth is 0, and a notice says so when more is asked)",
      range: RANGES.speculate,
    },
    'no-speculate': { type: 'boolean', description: 'a dependant waits for its blockers to land (what a session always does)' },
    'strict-scope': {
      type: 'boolean',
      description:
        "as execute's: a change outside a task's declared files fails its attempt (default: it is set aside, never integrated, and the acceptance checks decide)",
    },
    ...waitOption,
    sandbox: {
      type: 'string',
      valueName: 'MODE',
      description: `auto: run the checks, the gate and each worker's Bash commands in the operating-system sandbox where it works, and say once when it cannot (then a worker's commands ask you); on: refuse without it (exit 3); off: never (default: FOREMAN_SANDBOX, else ${DEFAULTS.sandbox})`,
    },
  },
  async prepare(values, _cwd, env): Promise<{ gate: string | undefined; sandbox: SessionSandbox }> {
    const gate = gateCommandOf(values);
    if (values.speculate !== undefined && values['no-speculate'] === true) throw usageError('--speculate and --no-speculate contradict each other: choose one');
    const mode = sandboxModeOf(str(values.sandbox), env);
    if (!mode.ok) throw usageError(mode.error);
    const decided = await decideSandbox(mode.value);
    if (!decided.ok) throw new StepError(EXIT.cannotRun, 'sandbox-unavailable', [decided.error]);
    return { gate, sandbox: { mode: mode.value, ...decided.value } };
  },
  async step({ values, numbers, plan, ctx }, { gate, sandbox }) {
    const setupResult = await sessionSetup(plan, ctx, {
      concurrency: numbers.concurrency,
      maxAttempts: numbers['max-attempts'],
      checkTimeoutMs: millisecondsOf(numbers['check-timeout']),
      ...(gate !== undefined ? { gate } : {}),
      noGate: values['no-gate'] === true,
      gateBatch: numbers['gate-batch'],
      gateTimeoutMs: millisecondsOf(numbers['gate-timeout']),
      waitMs: millisecondsOf(numbers.wait),
      sandbox,
      ...(values['no-speculate'] === true ? { speculate: 0 } : numbers.speculate !== undefined ? { speculate: numbers.speculate } : {}),
      ...(values['strict-scope'] === true ? { strictScope: true } : {}),
    });
    if (setupResult.ok && setupResult.value.gate.baseline === 'failed') {
      const report = setupResult.value.gate;
      // Only setup's own baseline run can have failed (a session starts afresh): its report names what it ran on.
      if (report.failedOn === undefined) throw new Error('plan setup: the baseline failed, and the gate report does not say on what');
      await refuseBaseline(ctx, report.command ?? '', report.failedOn, report.output ?? '', setupResult.value.notices);
    }
    if (setupResult.ok) return setupResult.value;
    // As `execute` refuses it: the same exit code and lines.
    const problem = describeSetupProblem(setupResult.error);
    throw new StepError(problem.code, problem.kind, problem.lines);
  },
});

export const next = stepCommand({
  name: 'next',
  summary:
    'For /execute: mark the tasks to start now in progress and write their worker prompts to .design/prompts/task-<i>.md; dispatch each with isolation "worktree". JSON out.',
  usage: '[--repo DIR] [--plan FILE] [--concurrency N]',
  options: {
    concurrency: { type: 'string', valueName: 'N', description: "workers at once (default: the session's, from setup)", range: RANGES.workers },
  },
  prepare: nothingToPrepare,
  step: ({ numbers, plan, ctx }) => sessionNext(plan, ctx, { concurrency: numbers.concurrency }),
  // The last `commit` archived the finished plan: the lead asking again is told it is done.
  afterArchive: ({ path, plan }): NextOutput => ({
    round: 0,
    tasks: [],
    waiting: [],
    queued: 0,
    inProgress: [],
    stall: 'done',
    stuck: [],
    counts: countByStatus(plan),
    complete: true,
    archived: path,
  }),
});

/** The results file: `[{"task": N, "output": "…", "worktree": "<worktreePath>"}]` (`worktree` when the Task result named one). */
export function parseResults(text: string, file: string): WorkerResult[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new StepError(EXIT.invalid, 'bad-results', [`${file}: ${describeJsonError(text, e instanceof Error ? e : new Error(String(e)))}`]);
  }
  const list = Array.isArray(data) ? data : isRecord(data) ? data.results : undefined;
  if (!Array.isArray(list)) throw new StepError(EXIT.invalid, 'bad-results', [`${file}: expected a JSON array of {"task": N, "output": "…"}`]);
  // A round's results are never none: a lead that has none has lost its workers' replies (the tasks stay in progress).
  if (list.length === 0)
    throw new StepError(EXIT.invalid, 'bad-results', [
      `${file}: no results (an empty list), so nothing was finalized: give one {"task": N, "output": "…"} for each task \`plan next\` handed out`,
    ]);
  return list.map((r: unknown, k) => {
    const o = isRecord(r) ? r : {};
    const { task, output, worktree } = o;
    const worktreeOk = worktree === undefined || worktree === null || (typeof worktree === 'string' && worktree !== '');
    if (!isRecord(r) || typeof task !== 'number' || !Number.isInteger(task) || task < 0 || typeof output !== 'string' || !worktreeOk) {
      throw new StepError(EXIT.invalid, 'bad-results', [
        `${file}: entry ${k} must be {"task": <task index>, "output": "<the worker's final text>", "worktree": "<the worktreePath of its Task result, when there is one>"} (got ${JSON.stringify(r)?.slice(0, 200)})`,
      ]);
    }
    return { task, output, ...(typeof worktree === 'string' ? { worktree } : {}) };
  });
}

export const finalize = stepCommand({
  name: 'finalize',
  summary:
    "For /execute: judge the workers' final lines, verify each in its subagent's worktree (spot-check, undeclared changes, acceptance checks), retry, fail or block, cascade, breaker; remove the worktrees. JSON out.",
  usage: '--results FILE [--repo DIR] [--plan FILE] [--max-attempts N] [--check-timeout SECONDS] [--sandbox on]',
  options: {
    ...requireSandboxOption,
    results: {
      type: 'string',
      valueName: 'FILE',
      description: 'JSON array of {"task": N, "output": "<the worker\'s final text, or its last line>", "worktree": "<the worktreePath of its Task result>"}',
    },
    'max-attempts': { type: 'string', valueName: 'N', description: "attempts per task (default: the session's, from setup)", range: RANGES.attempts },
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: "time limit of each acceptance command (default: the session's)",
      range: RANGES.timeoutSeconds,
    },
  },
  async prepare(values, cwd) {
    requireSandboxFlag(values);
    const file = str(values.results);
    if (file === undefined) throw usageError('--results FILE is required (a JSON array of {"task": N, "output": "…"})');
    const path = resolve(cwd, file);
    const text = await readFile(path, 'utf8').catch((e: Error) => {
      throw new StepError(EXIT.invalid, 'bad-results', [`cannot read ${path}: ${e.message}`]);
    });
    return parseResults(text, path);
  },
  async step({ values, numbers, plan, ctx }, results) {
    await refuseUnsandboxed('finalize', values, plan, ctx.planPath, () => 'the acceptance checks');
    const r = await sessionFinalize(plan, ctx, results, {
      maxAttempts: numbers['max-attempts'],
      checkTimeoutMs: millisecondsOf(numbers['check-timeout']),
    });
    if (r.ok) return r.value;
    switch (r.error.kind) {
      case 'bad-worktree':
        throw new StepError(EXIT.invalid, 'bad-worktree', [
          `task ${r.error.task}: ${r.error.message}; give the worktreePath its Task result named, or leave "worktree" out when it named none. Nothing was finalized.`,
        ]);
      case 'git-failed':
        throw new StepError(EXIT.gitFailed, 'git-failed', [
          `could not ${r.error.doing}: ${describeGitFailure(r.error.failure)}; nothing was finalized (every task stays in progress). Fix it and run finalize again with the same results.`,
        ]);
      default:
        return assertNever(r.error, 'finalize problem');
    }
  },
});

export const commit = stepCommand({
  name: 'commit',
  summary:
    "For /execute: integrate the verified work (exactly the declared files, with trailers) onto the plan's ref and land it on your branch; archive the plan once every task is completed and landed. JSON out; exit 1 when the work could not land.",
  usage: '[--repo DIR] [--plan FILE] [--wait SECONDS] [--sandbox on]',
  options: {
    ...waitOption,
    ...requireSandboxOption,
  },
  prepare: async (values) => requireSandboxFlag(values),
  async step({ values, numbers, plan, ctx }) {
    await refuseUnsandboxed('commit', values, plan, ctx.planPath, (gated) => (gated ? "the gate (the plan's test command)" : null));
    const r = await sessionCommit(plan, ctx, { waitMs: millisecondsOf(numbers.wait) });
    if (r.ok) return r.value;
    switch (r.error.kind) {
      case 'baseline-failed':
        return refuseBaseline(ctx, r.error.command, r.error, r.error.output, r.error.notices);
      case 'git-failed':
        // As a headless run: the run stops, and the tasks run again (from a fresh setup) once git works.
        throw new StepError(EXIT.gitFailed, 'git-failed', [
          `could not integrate the verified work: ${describeGitFailure(r.error.failure)}; your branch and files were not touched. Fix it, then start again with \`${commandHint('plan', 'setup', ownLayout())}\`: those tasks run again.`,
          ...noticeLines(r.error.notices),
        ]);
      default:
        return assertNever(r.error, 'commit problem');
    }
  },
  attention({ landing }) {
    return landing.landed
      ? null
      : {
          code: EXIT.incomplete,
          line: `the integrated work could not land: ${landingProblemSentence(landing.problem)} Then run \`${commandHint('plan', 'commit', ownLayout())}\` again.`,
        };
  },
});

/**
 * `plan gate --serve`: the gate process `plan commit` starts in the background (not for people:
 * hidden from the help). It runs the test command on the candidates stacked on the integration
 * tip and writes the result to `.design/gate.json`; it takes no lock and writes no plan.
 */
export const gate: Command = {
  name: 'gate',
  summary: 'Internal: the background gate process of the in-session merge queue.',
  usage: '--serve --id ID --tip COMMIT --tasks N,… --command CMD --timeout-ms MS [--sandbox] [--repo DIR] [--plan FILE]',
  hidden: true,
  options: {
    ...repoPlanOptions,
    serve: { type: 'boolean', description: 'run one gate run and write its result next to the plan' },
    id: { type: 'string', valueName: 'ID', description: 'the run id the session recorded' },
    tip: { type: 'string', valueName: 'COMMIT', description: 'the integration tip the stack goes on' },
    tasks: { type: 'string', valueName: 'N,…', description: 'the candidates, in order (empty: the baseline)' },
    command: { type: 'string', valueName: 'CMD', description: 'the test command' },
    'timeout-ms': { type: 'string', valueName: 'MS', description: 'its time limit', range: RANGES.timeoutMs },
    sandbox: { type: 'boolean', description: 'run it in the sandbox' },
  },
  async run({ values, numbers }, io) {
    const id = str(values.id);
    const tip = str(values.tip);
    const command = str(values.command);
    const tasksText = str(values.tasks) ?? '';
    const tasks = tasksText === '' ? [] : tasksText.split(',').map(Number);
    const timeoutMs = numbers['timeout-ms'];
    if (
      values.serve !== true ||
      id === undefined ||
      !/^[\w-]+$/.test(id) ||
      tip === undefined ||
      !isObjectId(tip) ||
      command === undefined ||
      tasks.some((t) => !Number.isInteger(t) || t < 0) ||
      timeoutMs === undefined
    ) {
      io.err('plan gate: internal to plan commit (--serve --id ID --tip COMMIT --tasks N,… --command CMD --timeout-ms MS)');
      return EXIT.invalid;
    }
    const where = await whereOf(values, io.cwd);
    const repo = where.top ?? where.start;
    const planPath = where.planPath;
    const plan = await loadPlan(planPath).catch(() => null);
    if (plan === null) {
      io.err(`plan gate: cannot read the plan at ${planPath}`);
      return EXIT.invalid;
    }
    await serveGate({ repo, planPath, plan, env: io.env, id, tip, tasks, command, timeoutMs, sandbox: values.sandbox === true });
    return EXIT.ok;
  },
};
