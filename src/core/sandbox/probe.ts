// The probe's verdicts, pure: what one acceptance check's run before the work says about it, what
// a task's checks together say about the task, and the key that ties a stored probe to the plan
// it probed. Running the checks is src/run/probe.ts.

import { createHash } from 'node:crypto';
import { assertNever } from '../result.ts';
import { clipTail, formatDuration, plural } from '../format.ts';
import { coveredBy, type Plan, statusOf, taskAt, writesOf } from '../plan/index.ts';
import type { SandboxUse } from './sandbox-words.ts';

/** What running one check on the integration tip, before its task's work, showed. */
export type CheckOutcome =
  /** Exit 0: it passes without the work (information; a whole-suite check often does). */
  | 'passed'
  /** A non-zero exit that is not a broken command: the check can prove the work. */
  | 'failed'
  /** The command itself cannot run: it fails every attempt, whatever the worker does. */
  | 'broken'
  /** Stopped at the per-check budget (or the rest of the whole probe's budget). */
  | 'timed-out'
  /** Not run: the whole probe's budget was spent, or the probe was interrupted. */
  | 'not-run';

/** What a task's checks together say. */
export type TaskVerdict =
  /** At least one check is broken. */
  | 'broken'
  /** At least one check fails before the work (and none is broken): the task can be proven. */
  | 'proven'
  /** Every check passes already: they prove nothing about the task. */
  | 'vacuous'
  /** The task has no acceptance checks. */
  | 'unchecked'
  /** No check failed, but some timed out or were not run: nothing can be said. */
  | 'undecided';

/** The raw facts of one check's run, as the shell adapter reports them. */
export interface CheckRun {
  exitCode: number | null;
  timedOut: boolean;
  /** Stopped by an interrupt (or never started because of one). */
  aborted: boolean;
  output: string;
  /** It ran in the sandbox, and its output shows the sandbox refused its network: what to tell the person (sandbox-words.ts). */
  sandboxRefusal?: string;
}

export interface CheckJudgement {
  outcome: CheckOutcome;
  /** Why a check is broken or was not decided, in words. */
  reason?: string;
}

/**
 * The shell's own words for a command it cannot run. dash: `/bin/sh: 1: foo: not found` and
 * `… Permission denied`; bash: `sh: line 1: foo: command not found`, `bash: foo: No such file or
 * directory`. The command word is captured so a command that a task will create is not blamed.
 */
const SHELL_CANNOT_RUN =
  /^(?:\/\S*\/)?(?:ba|da|z|k)?sh: (?:line )?\d*:? ?([^:\n]+): (not found|command not found|Permission denied|No such file or directory|Is a directory|cannot execute[^\n]*)$/m;
/** npm (`npm error Missing script: "lint"`, older `npm ERR! missing script: lint`), yarn, pnpm. */
const MISSING_SCRIPT =
  /^(?:npm (?:error|ERR!) [Mm]issing script:\s*"?([^"\n]+)"?|error Command "([^"\n]+)" not found\.|.*ERR_PNPM_NO_SCRIPT[^\n]*Missing script:\s*"?([^"\n]+)"?)/m;

/**
 * Judges one check's run before the work. `created` lists the paths tasks still to run will
 * write: a missing command or script that one of them will provide is expected to fail now, so it
 * proves the work rather than being broken.
 *
 * The rules: exit 126 or 127, or a shell line saying a command cannot be run (even when a later
 * command of a pipeline or `;` list set the exit status), is broken; so is a package manager's
 * missing script. The exception: the command that cannot run is a path a pending task writes, or
 * the missing script belongs to a `package.json` a pending task writes. A check that fails because
 * the sandbox refused its network is broken too: it fails so on every attempt, whatever the worker
 * does, until the plan allows the host.
 */
export function judgeCheck(run: CheckRun, created: readonly string[]): CheckJudgement {
  if (run.aborted) return { outcome: 'not-run', reason: 'interrupted' };
  if (run.timedOut) return { outcome: 'timed-out', reason: 'did not finish within its time budget' };
  const shell = SHELL_CANNOT_RUN.exec(run.output);
  if (shell) {
    const word = shell[1]!.trim();
    if (!willBeWritten(word, created)) return { outcome: 'broken', reason: `the command \`${word}\` cannot run (${shell[2]})` };
  }
  const script = MISSING_SCRIPT.exec(run.output);
  if (script) {
    const name = (script[1] ?? script[2] ?? script[3] ?? '').trim();
    if (!created.some((p) => p === 'package.json' || p.endsWith('/package.json'))) {
      return { outcome: 'broken', reason: `the package script "${name}" does not exist (and no pending task writes a package.json)` };
    }
  }
  if (run.exitCode !== 0 && run.sandboxRefusal !== undefined) return { outcome: 'broken', reason: run.sandboxRefusal };
  if (run.exitCode === 126 || run.exitCode === 127) {
    // The shell's line was absent or named a path a task will write.
    if (shell) return { outcome: 'failed' };
    return { outcome: 'broken', reason: `exit ${run.exitCode}: the shell could not ${run.exitCode === 127 ? 'find' : 'execute'} a command` };
  }
  if (run.exitCode === 0) return { outcome: 'passed' };
  if (run.exitCode === null) return { outcome: 'failed', reason: 'ended by a signal' };
  return { outcome: 'failed' };
}

/** `./bin/tool` or `bin/tool` is a repository path some pending task writes. */
function willBeWritten(word: string, created: readonly string[]): boolean {
  const path = word.replace(/^(?:\.\/)+/, '');
  if (path === '' || path.startsWith('/') || path.startsWith('..')) return false;
  return coveredBy(path, created);
}

/** A task's verdict from its checks' outcomes. */
export function taskVerdict(outcomes: readonly CheckOutcome[]): TaskVerdict {
  if (outcomes.length === 0) return 'unchecked';
  if (outcomes.includes('broken')) return 'broken';
  if (outcomes.includes('failed')) return 'proven';
  if (outcomes.every((o) => o === 'passed')) return 'vacuous';
  return 'undecided';
}

/** The probe's result, as `plan probe --json` prints it and `.design/probe.json` stores it (schemas/probe.schema.json). */
export interface ProbeReport {
  schemaVersion: 1;
  /** Ties the report to the plan: a hash of the pending tasks' checks and the setup command (and its hosts). */
  planKey: string;
  /** The commit probed (the integration tip). */
  commit: string | null;
  startedAt: string;
  durationMs: number;
  verdict: 'ok' | 'problems' | 'setup-failed';
  budget: { checkTimeoutSeconds: number; timeoutSeconds: number; exhausted: boolean; interrupted: boolean };
  setup: ProbeSetup | null;
  /** Ignored files copied into the probe's checkout because `.worktreeinclude` lists them. */
  included: string[];
  /** Whether its setup command and checks ran in the sandbox, and with what network (`plan probe`'s; absent from a run's probe, whose run says it). */
  sandbox?: SandboxUse;
  tasks: ProbeTask[];
  counts: { tasks: number; checks: number; broken: number; vacuous: number; passing: number; undecided: number };
}

export interface ProbeSetup {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  /** When it ran out of time: what timed out, after how long, and which flag sets the limit. */
  reason?: string;
  passed: boolean;
  durationMs: number;
  output: string;
  /** It ran in the sandbox (absent in reports of older versions). */
  sandboxed?: boolean;
  /** It failed, and its output shows the sandbox refused its network: what to tell the person (sandbox-words.ts). */
  sandboxRefusal?: string;
}

export interface ProbeTask {
  index: number;
  subject: string;
  verdict: TaskVerdict;
  checks: ProbeCheck[];
}

export interface ProbeCheck {
  criterion: string;
  check: string;
  outcome: CheckOutcome;
  exitCode: number | null;
  reason?: string;
  durationMs: number;
  /** The end of its output, where commands print their error. */
  output: string;
}

export const PROBE_OUTPUT_CHARS = 2000;

/** The tasks a probe looks at: the pending ones. */
export const probedTasks = (plan: Plan): number[] => plan.tasks.flatMap((t, i) => (statusOf(t) === 'pending' ? [i] : []));

/** Paths the tasks still to run will write (created now, they are expected to be missing). */
export const pendingWrites = (plan: Plan): string[] => [...new Set(plan.tasks.flatMap((t) => (statusOf(t) === 'completed' ? [] : writesOf(t))))];

/** The key of what a probe of this plan looks at: the pending tasks' checks and the setup command (and its hosts). */
export function probeKey(plan: Plan): string {
  const subject = {
    setupCommand: typeof plan.context?.setupCommand === 'string' ? plan.context.setupCommand : null,
    // Only when set, so the keys of plans without it stay as they were.
    ...(plan.context?.setupNetwork !== undefined ? { setupNetwork: plan.context.setupNetwork } : {}),
    tasks: probedTasks(plan).map((i) => ({ index: i, checks: (taskAt(plan.tasks, i).agent?.acceptanceCriteria ?? []).map((c) => c.check) })),
  };
  return createHash('sha256').update(JSON.stringify(subject)).digest('hex').slice(0, 16);
}

/** Builds the report's task entries, counts and verdict from what ran. */
export function summarize(tasks: ProbeTask[], setup: ProbeSetup | null): Pick<ProbeReport, 'tasks' | 'counts' | 'verdict'> {
  const checks = tasks.flatMap((t) => t.checks);
  const counts = {
    tasks: tasks.length,
    checks: checks.length,
    broken: checks.filter((c) => c.outcome === 'broken').length,
    vacuous: tasks.filter((t) => t.verdict === 'vacuous').length,
    passing: checks.filter((c) => c.outcome === 'passed').length,
    undecided: tasks.filter((t) => t.verdict === 'undecided').length,
  };
  const verdict = setup !== null && !setup.passed ? 'setup-failed' : counts.broken > 0 || counts.vacuous > 0 ? 'problems' : 'ok';
  return { tasks, counts, verdict };
}

export const clipProbeOutput = (output: string): string => clipTail(output.trim(), PROBE_OUTPUT_CHARS);

/** One line on the whole probe. */
export function probeHeadline(report: ProbeReport): string {
  const { counts } = report;
  const where = `on ${report.commit?.slice(0, 12) ?? 'an empty repository'}, ${formatDuration(report.durationMs)}`;
  switch (report.verdict) {
    case 'setup-failed':
      return `probe: the setup command \`${report.setup?.command ?? ''}\` ${report.setup?.timedOut ? 'ran out of time' : 'failed'} in a fresh checkout (${where}); no check was run`;
    case 'ok':
    case 'problems': {
      const parts = [`${plural(counts.checks, 'check')} of ${plural(counts.tasks, 'pending task')}`];
      parts.push(`${counts.broken} broken`, `${counts.vacuous} vacuous ${counts.vacuous === 1 ? 'task' : 'tasks'}`);
      if (counts.passing > 0) parts.push(`${counts.passing} passing already`);
      if (counts.undecided > 0) parts.push(`${counts.undecided} undecided`);
      const tail = report.budget.interrupted ? '; interrupted' : report.budget.exhausted ? '; the time budget ran out' : '';
      return `probe ${report.verdict === 'ok' ? 'passed' : 'found problems'}: ${parts.join(', ')} (${where})${tail}`;
    }
    default:
      return assertNever(report.verdict, 'probe verdict');
  }
}

const SANDBOXED_SETUP_HINT =
  " (it ran in the sandbox: it may write only in the checkout, its TMPDIR and the package managers' caches, and reach only the package registries and the plan's context.setupNetwork hosts)";

/** What a person must fix (broken checks, vacuous tasks), then what is only information. */
export function probeFindings(report: ProbeReport): { problems: string[]; information: string[] } {
  const problems: string[] = [];
  const information: string[] = [];
  if (report.verdict === 'setup-failed' && report.setup) {
    const { setup } = report;
    // A report stored by an older version has no reason.
    const how = setup.timedOut ? (setup.reason ?? `\`${setup.command}\` timed out`) : `\`${setup.command}\` exited ${setup.exitCode ?? 'by a signal'}`;
    const hint = setup.sandboxRefusal !== undefined ? ` (${setup.sandboxRefusal})` : setup.sandboxed === true ? SANDBOXED_SETUP_HINT : '';
    problems.push(`setup command ${how}${setup.output ? `: ${lastLine(setup.output)}` : ''}${hint}`);
  }
  for (const t of report.tasks) {
    for (const c of t.checks) {
      switch (c.outcome) {
        case 'broken':
          problems.push(`task ${t.index}: broken check \`${c.check}\`: ${c.reason ?? 'cannot run'}`);
          break;
        case 'passed':
          if (t.verdict !== 'vacuous')
            information.push(`task ${t.index}: \`${c.check}\` passes already (other checks of the task fail, so the task is still proven)`);
          break;
        case 'timed-out':
          information.push(`task ${t.index}: ${c.reason ?? `\`${c.check}\` did not finish within its time budget`}`);
          break;
        case 'not-run':
          information.push(`task ${t.index}: \`${c.check}\` was not run (${c.reason ?? 'the probe stopped'})`);
          break;
        case 'failed':
          break;
        default:
          assertNever(c.outcome, 'check outcome');
      }
    }
    if (t.verdict === 'vacuous')
      problems.push(
        `task ${t.index} (${t.subject}) is vacuous: every check passes before the work is done (${t.checks.map((c) => `\`${c.check}\``).join(', ')})`,
      );
    if (t.verdict === 'unchecked') information.push(`task ${t.index} (${t.subject}) has no acceptance checks`);
  }
  return { problems, information };
}

const lastLine = (text: string): string => text.trim().split('\n').at(-1)?.trim() ?? '';
