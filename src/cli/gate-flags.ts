// The merge queue's flags, which `execute` and `plan setup` share: declared and checked here once.

import { DEFAULTS } from '../run/index.ts';
import type { OptionSpec } from './command.ts';
import { usageError } from './exit.ts';
import { RANGES } from './numeric-flags.ts';

/**
 * `--gate`, `--no-gate`, `--gate-batch`, `--gate-timeout`; `integrates`: when work integrates
 * without a gate, and `ended`: what a timed-out gate run's end means, in the command's words.
 */
export const gateOptions = (words: { integrates: string; ended: string }): Record<string, OptionSpec> => ({
  gate: {
    type: 'string',
    valueName: 'CMD',
    description: "the merge queue's gate: verified work integrates only in stacks this command passes (default: the plan's context.testCommand)",
  },
  'no-gate': { type: 'boolean', description: `no gate: verified work integrates ${words.integrates}` },
  'gate-batch': {
    type: 'string',
    valueName: 'N',
    description: `candidates the gate tests together at most (default ${DEFAULTS.gateBatch})`,
    range: RANGES.gateBatch,
  },
  'gate-timeout': {
    type: 'string',
    valueName: 'SECONDS',
    description: `time limit of one gate run${words.ended} (default: --check-timeout)`,
    range: RANGES.timeoutSeconds,
  },
});

/** The gate command asked for (`--gate`), or none; refuses an empty one, and `--gate` with `--no-gate`. */
export function gateCommandOf(values: Record<string, unknown>): string | undefined {
  const command = typeof values.gate === 'string' ? values.gate : undefined;
  if (command !== undefined && command.trim() === '') throw usageError('--gate expects a command, got an empty one (use --no-gate for no gate)');
  if (command !== undefined && values['no-gate'] === true) throw usageError('--gate and --no-gate contradict each other: choose one');
  return command;
}
