// The frame every in-session step command shares (`plan setup | next | finalize | commit`: the
// /execute skill's steps, src/run/session/session.ts, as commands): each takes the run lock while it works
// (and refuses with exit 3 while a headless run holds it), prints one JSON object on stdout
// (schemas/<step>.schema.json), and on a problem prints `{"error": {kind, message, details}}` there
// instead, one line on stderr, and exits 2. `commit` whose integrated work could not land prints
// its JSON, one line on stderr saying what blocks it, and exits 1 (as a headless run whose work
// could not land).

import { resolve } from 'node:path';
import { acquireLock, currentLockInfo, Git, readPlanFile } from '../../../adapters/index.ts';
import { type Notice, type Plan, statusOf } from '../../../core/index.ts';
import {
  archivedPlans,
  DEFAULT_GATE_WAIT_MS,
  describeEditBetweenSteps,
  editedSinceLastStep,
  rememberPlanFile,
  type SessionContext,
} from '../../../run/index.ts';
import { type Command, describeUsageError, type Io, type Numbers, type OptionSpec } from '../../command.ts';
import { RANGES } from '../../numeric-flags.ts';
import { CliError, EXIT, type ExitCode, UsageError } from '../../exit.ts';
import { findPlan, loadPlanFile, missingPlanLine, repositoryTop } from '../../load.ts';
import { lockedLine } from '../../setup-problem.ts';

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

export const str = (value: unknown) => (typeof value === 'string' ? value : undefined);

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
export const nothingToPrepare = async (): Promise<undefined> => undefined;

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
export async function whereOf(values: Record<string, unknown>, cwd: string): Promise<Where> {
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
          e instanceof StepError
            ? e.kind
            : e instanceof UsageError
              ? 'usage'
              : e.code === EXIT.cannotRun
                ? 'cannot-run'
                : e.code === EXIT.gitFailed
                  ? 'git-failed'
                  : 'invalid',
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
export const millisecondsOf = (seconds: number | undefined): number | undefined => (seconds === undefined ? undefined : seconds * 1000);

export const waitOption: Record<string, OptionSpec> = {
  wait: {
    type: 'string',
    valueName: 'SECONDS',
    description: `how long to wait for a gate run before answering \`"gate": {"state": "running"}\` (default ${DEFAULT_GATE_WAIT_MS / 1000}; the run goes on in the background)`,
    range: RANGES.waitSeconds,
  },
};
