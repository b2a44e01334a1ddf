// The probe: every pending task's acceptance checks, run on the integration tip (HEAD) in a
// checkout of its own (a worktree-pool slot, removed afterwards) provisioned with the plan's `context.setupCommand`, before any work, to catch
// checks that cannot run (broken) and tasks whose checks already pass (vacuous). It never touches
// the person's tree and never starts a worker. Verdicts are src/core/sandbox/probe.ts.

import { dirname, join } from 'node:path';
import { readFile } from 'node:fs/promises';
import {
  checkSandbox,
  type Commands,
  describeProvisionFailure,
  type ProvisionFailure,
  resolveCommit,
  sandboxRefusal,
  setupCommandSandbox,
  withCheckout,
  withForemanLine,
  worktreesRoot,
  writeFileAtomic,
} from '../adapters/index.ts';
import {
  assertNever,
  clipProbeOutput,
  describeTimeLimitHit,
  err,
  judgeCheck,
  ok,
  pendingWrites,
  type Plan,
  type ProbeCheck,
  probedTasks,
  probeKey,
  type ProbeReport,
  type ProbeSetup,
  type ProbeTask,
  type Result,
  summarize,
  taskAt,
  taskVerdict,
  type TimeLimit,
} from '../core/index.ts';
import { LIMIT_FLAGS } from './settings.ts';

export interface ProbeOptions {
  /** The repository's top directory. */
  repo: string;
  /** Time limit of each check (--check-timeout). */
  checkTimeoutMs: number;
  /** Time limit of the whole probe, setup included. */
  timeoutMs: number;
  /** The flag that sets `timeoutMs` (`LIMIT_FLAGS.probe` or `.planProbe`), named when it cuts something short. */
  timeoutFlag: string;
  /** Where the probe's checkout goes (`FOREMAN_WORKTREES`), and the setup command's sandbox reads npm's settings. */
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Runs the setup command and the checks (the checks recorded while they run). */
  commands: Commands;
  /** Milliseconds now; a test may pass a fake clock. */
  now?: () => number;
  /**
   * Run the checks in the operating-system sandbox: writes in the probe's checkout and their own
   * TMPDIR, no network but the plan's `checkNetwork` hosts. The setup command too, with the
   * package managers' caches writable and the package registries reachable (`setupCommandSandbox`).
   */
  sandbox?: boolean;
}

export const probePathFor = (planPath: string): string => join(dirname(planPath), 'probe.json');

/**
 * Runs the probe. A repository without a commit, or a checkout git cannot make, is a
 * problem value; interrupts stop the running check and leave the rest `not-run`.
 */
export async function runProbe(plan: Plan, options: ProbeOptions): Promise<Result<ProbeReport, ProbeProblem>> {
  const now = options.now ?? Date.now;
  const started = now();
  const deadline = started + options.timeoutMs;
  const remaining = () => deadline - now();
  const created = pendingWrites(plan);
  const setupCommand = typeof plan.context?.setupCommand === 'string' && plan.context.setupCommand.trim() !== '' ? plan.context.setupCommand : null;

  // The last commit, checked out as an attempt's worktree is (copies, links), outside the person's tree.
  const head = await resolveCommit(options.repo);
  if (head === null) return err({ kind: 'no-commit' });
  const probed = await withCheckout(
    options.repo,
    worktreesRoot(options.env ?? process.env),
    async (checkout) => {
      let exhausted = false;
      let setup: ProbeSetup | null = null;
      if (setupCommand !== null) {
        const sandbox = options.sandbox
          ? await setupCommandSandbox(checkout.dir, options.repo, plan.context?.setupNetwork, { ...process.env, ...options.env })
          : undefined;
        // The setup command is bounded by the whole budget only: `npm ci` can take longer than a check.
        const limit: TimeLimit = { ms: Math.max(0, remaining()), flag: options.timeoutFlag, budgetMs: options.timeoutMs };
        const run = await options.commands.run(setupCommand, {
          cwd: checkout.dir,
          timeoutMs: limit.ms,
          role: null,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(sandbox ? { sandbox } : {}),
        });
        const passed = run.exitCode === 0 && !run.timedOut && !run.aborted;
        const refusal = passed ? null : sandboxRefusal(run.output, sandbox, 'context.setupNetwork');
        setup = {
          command: setupCommand,
          exitCode: run.exitCode,
          timedOut: run.timedOut,
          ...(run.timedOut ? { reason: describeTimeLimitHit(setupCommand, limit) } : {}),
          passed,
          durationMs: Math.round(run.durationMs),
          output: clipProbeOutput(sandbox?.npmUnread ? withForemanLine(run.output, sandbox.npmUnread) : run.output),
          sandboxed: sandbox !== undefined,
          ...(refusal !== null ? { sandboxRefusal: refusal } : {}),
        };
        if (run.timedOut) exhausted = true;
      }
      const tasks: ProbeTask[] = [];
      for (const index of probedTasks(plan)) {
        const task = taskAt(plan.tasks, index);
        const checks: ProbeCheck[] = [];
        for (const criterion of task.agent?.acceptanceCriteria ?? []) {
          const base = { criterion: criterion.criterion, check: criterion.check };
          if (setup !== null && !setup.passed) {
            checks.push({ ...base, outcome: 'not-run', exitCode: null, reason: 'the setup command failed', durationMs: 0, output: '' });
            continue;
          }
          if (options.signal?.aborted) {
            checks.push({ ...base, outcome: 'not-run', exitCode: null, reason: 'interrupted', durationMs: 0, output: '' });
            continue;
          }
          const left = remaining();
          if (left <= 0) {
            exhausted = true;
            checks.push({ ...base, outcome: 'not-run', exitCode: null, reason: "the whole probe's time budget was spent", durationMs: 0, output: '' });
            continue;
          }
          // Its own limit, or what is left of the whole probe's when that is shorter.
          const limit: TimeLimit =
            options.checkTimeoutMs <= left
              ? { ms: options.checkTimeoutMs, flag: LIMIT_FLAGS.check }
              : { ms: left, flag: options.timeoutFlag, budgetMs: options.timeoutMs };
          const sandbox = options.sandbox ? checkSandbox(checkout.dir, plan, options.repo) : undefined;
          const run = await options.commands.run(criterion.check, {
            cwd: checkout.dir,
            timeoutMs: limit.ms,
            role: { kind: 'acceptance-check', task: index, command: criterion.check },
            ...(options.signal ? { signal: options.signal } : {}),
            ...(sandbox ? { sandbox } : {}),
          });
          if (run.timedOut && limit.ms < options.checkTimeoutMs) exhausted = true;
          const refusal = run.exitCode === 0 ? null : sandboxRefusal(run.output, sandbox, 'context.checkNetwork');
          const judged = judgeCheck({ ...run, ...(refusal !== null ? { sandboxRefusal: refusal } : {}) }, created);
          checks.push({
            ...base,
            outcome: judged.outcome,
            exitCode: run.exitCode,
            ...(judged.reason !== undefined ? { reason: judged.outcome === 'timed-out' ? describeTimeLimitHit(criterion.check, limit) : judged.reason } : {}),
            durationMs: Math.round(run.durationMs),
            output: clipProbeOutput(run.output),
          });
        }
        tasks.push({ index, subject: task.subject, verdict: taskVerdict(checks.map((c) => c.outcome)), checks });
      }
      return { tasks, setup, exhausted, commit: checkout.commit, included: checkout.included };
    },
    head,
  );
  if (!probed.ok) return err({ kind: 'checkout-failed', failure: probed.error });
  const { tasks, setup, exhausted, commit, included } = probed.value;
  return ok({
    schemaVersion: 1,
    planKey: probeKey(plan),
    commit,
    startedAt: new Date(started).toISOString(),
    durationMs: Math.max(0, Math.round(now() - started)),
    budget: {
      checkTimeoutSeconds: options.checkTimeoutMs / 1000,
      timeoutSeconds: options.timeoutMs / 1000,
      exhausted,
      interrupted: options.signal?.aborted === true,
    },
    setup,
    included,
    ...summarize(tasks, setup),
  });
}

/** Stores the report next to the plan (`.design/probe.json`) for `plan summary`. */
export async function saveProbe(planPath: string, report: ProbeReport): Promise<void> {
  await writeFileAtomic(probePathFor(planPath), `${JSON.stringify(report, null, 2)}\n`);
}

/** The stored report when it is the probe of this plan as it is now, else null. */
export async function storedProbe(planPath: string, plan: Plan): Promise<ProbeReport | null> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(probePathFor(planPath), 'utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const report = parsed as Partial<ProbeReport>;
  if (report.schemaVersion !== 1 || report.planKey !== probeKey(plan) || !Array.isArray(report.tasks) || typeof report.counts !== 'object') return null;
  return report as ProbeReport;
}

/** Why the probe could not start. */
export type ProbeProblem = { kind: 'no-commit' } | { kind: 'checkout-failed'; failure: ProvisionFailure };

/** Why the probe could not start, in one line. */
export function describeProbeProblem(problem: ProbeProblem): string {
  switch (problem.kind) {
    case 'no-commit':
      return 'the repository has no commit yet: the probe checks out the last commit; commit something first';
    case 'checkout-failed':
      return `could not check out the last commit for the probe: ${describeProvisionFailure(problem.failure)}`;
    default:
      return assertNever(problem, 'probe problem');
  }
}
