// The time limits foreman puts on the processes it starts (checks, the gate, the setup command,
// the probe, its own helpers), and the one wording of what the person is told when one is hit:
// what timed out, after how long, what sets the limit, and that its whole process group was
// ended. Pure.

import { oneLine } from '../format.ts';

/** A process's time limit and where it comes from. */
export interface TimeLimit {
  ms: number;
  /** The flag that sets it, as the person would change it (`--check-timeout`, `plan probe --timeout`); null: a fixed bound of foreman's own. */
  flag: string | null;
  /** When `ms` is what was left of a larger budget the flag sets (the whole probe's): that budget. */
  budgetMs?: number;
}

/** How much of a command a message shows: enough to recognise it, never a page. */
const COMMAND_CHARS = 120;

/** `300s`, `2.5s`, `800ms`: the limit as the flags give it, in seconds. */
export function formatLimit(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  return `${Number((ms / 1000).toFixed(1))}s`;
}

/**
 * What the person is told when `command` ran out of time:
 * ``\`npm test\` timed out after 300s (the limit set by --check-timeout); its whole process group was ended``.
 */
export function describeTimeLimitHit(command: string, limit: TimeLimit): string {
  const setBy =
    limit.flag === null
      ? 'a fixed limit'
      : limit.budgetMs !== undefined
        ? `the rest of the ${formatLimit(limit.budgetMs)} set by ${limit.flag}`
        : `the limit set by ${limit.flag}`;
  return `\`${oneLine(command, COMMAND_CHARS)}\` timed out after ${formatLimit(limit.ms)} (${setBy}); its whole process group was ended`;
}
