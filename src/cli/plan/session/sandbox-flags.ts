// `--require-sandbox` on the steps that run commands (finalize, commit): a session set up without
// the sandbox it asks for refuses, saying what to install.

import type { Plan } from '../../../core/index.ts';
import type { OptionSpec } from '../../command.ts';
import { EXIT, usageError } from '../../exit.ts';
import { autoSandbox, installAdvice, type SandboxDecision } from '../../../adapters/index.ts';
import { readSession } from '../../../run/index.ts';
import { StepError, str } from './step-command.ts';

/**
 * `--sandbox on` of a step after setup (`finalize`, `commit`): the form a skill pre-approves. The
 * session's sandbox is plan setup's to decide; with this flag the step refuses (exit 3,
 * `sandbox-unavailable`) before it runs anything when that would run a command outside the
 * sandbox, so running one unsandboxed always takes the person's approval of the plain step.
 */
export const requireSandboxOption: Record<string, OptionSpec> = {
  sandbox: {
    type: 'string',
    valueName: 'on',
    description:
      'on: refuse (exit 3) when this session would run a command outside the sandbox (set up with --sandbox off, or where the sandbox cannot run); without it the step runs them as plan setup decided',
  },
};

/** The flag's value checked before anything else: only `on`. */
export function requireSandboxFlag(values: Record<string, unknown>): boolean {
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
export async function refuseUnsandboxed(
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
