// What `execute` checks before a run starts anything, its dry run alike (the Claude Code CLI, the
// sandbox, the worker rules, the ssh hosts), and the errors it refuses a run with.

import { realpath } from 'node:fs/promises';
import { authStatus, decideSandbox, findExecutable, type LockInfo, type SandboxDecision } from '../adapters/index.ts';
import { assertNever, type AuthStatus, notLoggedInLines, type Plan, planPermissions, statusOf } from '../core/index.ts';
import { type HeadlessRefusal, objectFormatOf, type SetupProblem } from '../run/index.ts';
import type { Io } from './command.ts';
import { CliError, EXIT } from './exit.ts';
import { describeSetupProblem, lockedLine } from './setup-problem.ts';
import { checkedHosts } from './host-flags.ts';
import type { Settings } from './execute-flags.ts';

/** The run's ssh hosts reached and checked (`checkedHosts`); null without hosts. */
export async function hostsChecked(settings: Settings, sandboxed: boolean, io: Io, dryRun: boolean) {
  if (settings.hosts === undefined) return null;
  return checkedHosts(settings.hosts, settings.concurrency, { objectFormat: await objectFormatOf(settings.repo), sandbox: sandboxed, dryRun, env: io.env });
}

/** Exit 2 naming each path no permission rule can express exactly (the repository's own included). */
export async function checkWorkerRules(plan: Plan, settings: Settings): Promise<void> {
  if (settings.allowedTools) return;
  const rules = planPermissions(plan, await realpath(settings.repo));
  if (!rules.ok) throw new CliError(EXIT.invalid, ['these paths cannot be given to a worker as exact permission rules:', ...rules.error.map((p) => `  ${p}`)]);
}

/**
 * What the run needs of this machine before it starts anything, its dry run alike: the Claude
 * Code CLI (logged in, when a task is to start) and the sandboxing `--sandbox` asks for. Refuses
 * (exit 3) without them; else the CLI's path, the sandbox's decision (sandboxed, or why not) and
 * the CLI's login (null when not asked: the account the run's own limiter is).
 */
export async function readyToRun(plan: Plan, settings: Settings, io: Io): Promise<{ claudeBin: string; decision: SandboxDecision; login: AuthStatus | null }> {
  const claudeBin = findExecutable(settings.claudeBin, io.env, io.cwd);
  if (claudeBin === null) {
    throw new CliError(EXIT.cannotRun, [
      `the Claude Code CLI "${settings.claudeBin}" was not found. Install it with \`npm install -g @anthropic-ai/claude-code\`, or pass --claude-bin PATH (or set CLAUDE_BIN).`,
    ]);
  }
  // The CLI's login is asked about before anything starts (the probe, the gate, a worker), beside
  // the sandbox, when the run has a task to start: a CLI that says it is not logged in refuses the
  // run; one that cannot say does not. A run with nothing to start (it lands, or gates approved work) needs no login.
  const login = plan.tasks.some((task) => statusOf(task) === 'pending' || statusOf(task) === 'in_progress')
    ? authStatus(claudeBin, settings.repo, io.env)
    : null;
  // The sandbox is asked about once: `on` refuses without it, `auto` says why it goes without.
  const decided = await decideSandbox(settings.sandbox);
  const status = await login;
  if (status?.kind === 'logged-out') throw new CliError(EXIT.cannotRun, notLoggedInLines(claudeBin));
  if (!decided.ok) throw new CliError(EXIT.cannotRun, [decided.error]);
  return { claudeBin, decision: decided.value, login: status };
}

export const setupProblemError = (setupProblem: SetupProblem): CliError => {
  const problem = describeSetupProblem(setupProblem);
  return new CliError(problem.code, problem.lines);
};

export const lockedError = (holder: LockInfo): CliError => new CliError(EXIT.cannotRun, [lockedLine(holder)]);

/** A run refused before it started, as the person is told. */
export function refusalError(refusal: HeadlessRefusal): CliError {
  switch (refusal.kind) {
    case 'setup':
      return setupProblemError(refusal.problem);
    case 'probe':
      return new CliError(EXIT.invalid, refusal.lines);
    default:
      return assertNever(refusal, 'run refusal');
  }
}
