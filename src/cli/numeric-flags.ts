// The numbers foreman's commands take (flags, a task index, FOREMAN_BACKOFF_MS): what each takes
// and its range, checked in one place so every bad value is one line naming the flag, what it
// takes and its range (exit 2). docs/cli.md's flag tables state these ranges (test/docs.test.ts holds them to it).

import { usageError } from './exit.ts';

/** What a number must be. */
export interface NumberRange {
  /** Whole numbers only; otherwise decimals too (`2.50`). */
  whole: boolean;
  min: number;
  /** The minimum itself is refused: an amount must be more than 0. */
  aboveMin?: boolean;
  max: number;
  /** What it counts, when not a plain number: `seconds`, `dollars`, `milliseconds`. */
  unit?: string;
  /** What the maximum amounts to, when that helps: `7 days`. */
  maxNote?: string;
}

/**
 * Node's timers fire at once above 2^31-1 ms (about 24.8 days), so no time limit may go past
 * that; a week is longer than any task, check or gate run foreman should wait for.
 */
export const MAX_SECONDS = 7 * 24 * 60 * 60;

const count = (min: number, max: number): NumberRange => ({ whole: true, min, max });
const seconds = (min: number): NumberRange => ({ whole: true, min, max: MAX_SECONDS, unit: 'seconds', maxNote: '7 days' });
const dollars: NumberRange = { whole: false, min: 0, aboveMin: true, max: 1_000_000, unit: 'dollars' };

/** Every numeric flag's range, by what it counts. */
export const RANGES = {
  /** `--concurrency`: workers at once. */
  workers: count(1, 64),
  /** `--max-attempts`: attempts per task. */
  attempts: count(1, 20),
  /** `--gate-batch`: candidates the gate tests together. */
  gateBatch: count(1, 64),
  /** `--speculate`: levels of candidates a task may be built on (0: none). */
  speculate: count(0, 16),
  /** `--task-timeout`, `--check-timeout`, `--gate-timeout`, `--probe-timeout`, `probe --timeout`. */
  timeoutSeconds: seconds(1),
  /** `commit --wait`, `setup --wait`: 0 answers at once. */
  waitSeconds: seconds(0),
  /** `--max-cost-usd`, `--task-budget-usd`. */
  dollars,
  /** `revise --max-rounds`: review rounds a task may have. */
  reviewRounds: count(1, 100),
  /** A task index (`retry N`): plans are far smaller. */
  taskIndex: count(0, 99_999),
  /** `FOREMAN_BACKOFF_MS`: the limiter's first back-off; its doublings stop at an hour too (core/limits/limiter.ts). */
  backoffMs: { whole: true, min: 0, max: 3_600_000, unit: 'milliseconds', maxNote: '1 hour' },
  /** `--limit-wait`: 0 waits for no limit. */
  limitWait: seconds(0),
  /** `plan gate --timeout-ms` (internal): a gate timeout in milliseconds. */
  timeoutMs: { whole: true, min: 1, max: MAX_SECONDS * 1000, unit: 'milliseconds', maxNote: '7 days' },
} satisfies Record<string, NumberRange>;

/** `a whole number from 1 to 64`, `a whole number of seconds from 1 to 604800 (7 days)`, `a number of dollars above 0, at most 1000000`. */
export function describeRange(range: NumberRange): string {
  const what = `${range.whole ? 'a whole number' : 'a number'}${range.unit ? ` of ${range.unit}` : ''}`;
  const max = `${range.max}${range.maxNote ? ` (${range.maxNote})` : ''}`;
  return range.aboveMin ? `${what} above ${range.min}, at most ${max}` : `${what} from ${range.min} to ${max}`;
}

const WHOLE = /^\d+$/;
const DECIMAL = /^(\d+(\.\d*)?|\.\d+)$/;

/** `raw` as a number in `range`, or a usage error naming `name`; undefined when not given. */
export function parseNumber(name: string, raw: string | undefined, range: NumberRange): number | undefined {
  if (raw === undefined) return undefined;
  if (!fitsRange(raw, range)) throw usageError(`${name} expects ${describeRange(range)}, got "${raw}"`);
  return Number(raw);
}

/** Whether `raw` is written as a number of `range` and lies in it. */
export function fitsRange(raw: string, range: NumberRange): boolean {
  const value = Number(raw);
  return (range.whole ? WHOLE : DECIMAL).test(raw) && (range.aboveMin ? value > range.min : value >= range.min) && value <= range.max;
}
