// The pending tasks' assumption checks (`agent.assumptions`), run as a run is set up, in one
// workspace of the integration tip: what each found, what setup makes of it, and the event that
// tells it.

import {
  clipMiddle,
  describeTimeLimitHit,
  err,
  type Notice,
  ok,
  type Plan,
  type Result,
  type RunEventBody,
  type SetupFindings,
  type TaskStatus,
} from '../core/index.ts';
import type { Workspace, Workspaces } from './workspace/index.ts';
import { LIMIT_FLAGS } from './settings.ts';

export interface AssumptionResult {
  task: number;
  claim: string;
  verify: string;
  severity: 'blocking' | 'warning';
  passed: boolean;
  /** What it printed; when it ran out of time, after a first line saying so (`describeTimeLimitHit`). */
  output: string;
}

/** An assumption check as the journal tells it (the run's start says each, headless and in-session). */
export const assumptionCheckedEvent = (a: AssumptionResult): RunEventBody => ({
  type: 'assumption-checked',
  task: a.task,
  claim: a.claim,
  severity: a.severity,
  passed: a.passed,
  output: a.output,
});

/** The pending tasks' assumption checks, run in one workspace of the integration tip (made ready like any other). */
async function checkAssumptions(
  plan: Plan,
  options: { checkTimeoutMs: number; signal?: AbortSignal },
  at: { workspaces: Workspaces; tip: string },
  statusNow: (index: number) => TaskStatus,
): Promise<Result<AssumptionResult[], string>> {
  const checks = plan.tasks.flatMap((task, i) =>
    statusNow(i) === 'pending' ? (task.agent?.assumptions ?? []).map((assumption) => ({ task: i, assumption })) : [],
  );
  if (checks.length === 0) return ok([]);
  // Task number -1: no task's attempt, just the setup's own use of a workspace.
  const made = await at.workspaces.make({ task: -1, commit: at.tip, ...(options.signal ? { signal: options.signal } : {}) });
  if (!made.ok) return err(made.error);
  const workspace: Workspace = made.value;
  // Headless and in-session alike (`plan setup`), --check-timeout sets it.
  const timeLimit = { ms: options.checkTimeoutMs, flag: LIMIT_FLAGS.check };
  try {
    const results: AssumptionResult[] = [];
    for (const { task, assumption: a } of checks) {
      const run = await workspace.runCheck(a.verify, {
        timeoutMs: timeLimit.ms,
        role: { kind: 'assumption-check', task, command: a.verify },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const passed = run.exitCode === 0 && !run.timedOut;
      // Said first, where the live view, the step's JSON and the task's result each keep it.
      const said = run.timedOut ? describeTimeLimitHit(a.verify, timeLimit) : run.sandboxRefusal;
      const output = said === null ? run.output : `${said}${run.output.trim() ? `:\n${run.output}` : ''}`;
      results.push({ task, claim: a.claim, verify: a.verify, severity: a.severity, passed, output });
    }
    return ok(results);
  } finally {
    workspace.release();
  }
}

/**
 * The assumption checks run, and what setup makes of them: a failed blocking one blocks its task
 * (its result says why, added to `findings.blocked`), a failed warning one is said. The checks,
 * the tasks they block now (`statusNow`: a task's status with what setup found so far), and what
 * to tell the person.
 */
export async function assumptionFindings(
  plan: Plan,
  options: { checkTimeoutMs: number; signal?: AbortSignal },
  at: { workspaces: Workspaces; tip: string },
  findings: SetupFindings,
  statusNow: (index: number) => TaskStatus,
): Promise<Result<{ assumptions: AssumptionResult[]; blocked: number[]; notices: Notice[] }, string>> {
  const checked = await checkAssumptions(plan, options, at, statusNow);
  if (!checked.ok) return checked;
  const blocked: number[] = [];
  const notices: Notice[] = [];
  for (const a of checked.value) {
    if (a.passed) continue;
    if (a.severity === 'warning') {
      notices.push({ level: 'warning', message: `task ${a.task}: assumption not confirmed (${a.claim}): \`${a.verify}\`` });
      continue;
    }
    if (statusNow(a.task) !== 'blocked') blocked.push(a.task);
    // The middle goes: the first line may say it timed out, the end is where the error is.
    const result = `BLOCKED: assumption failed (${a.claim}): \`${a.verify}\`${a.output.trim() ? `: ${clipMiddle(a.output.trim(), 1000)}` : ''}`;
    const earlier = findings.blocked.find((b) => b.task === a.task);
    if (earlier) earlier.result = result;
    else findings.blocked.push({ task: a.task, result });
  }
  return ok({ assumptions: checked.value, blocked, notices });
}
