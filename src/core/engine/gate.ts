// The merge queue's decisions, pure: which candidates the gate (the plan's test command) tests
// next, stacked in order on the integration tip, and what a result means. Verified attempts wait
// in the queue; the gate takes every one waiting (up to the batch size) as one batch; a batch that
// passes is integrated whole. A red batch is split in two and the halves tested in order, each on
// top of what passed before it (bors-ng and Mergify do the same), until the candidate that breaks
// the build is found. A candidate is the culprit only when it fails on its own twice; a failure
// that does not repeat is a flake, reported, and blames no task.
//
// One observation saves runs: when a red segment's first half passes and is integrated, its second
// half on the new tip is exactly the stack that already failed, so it counts as failed without
// running it again; and once a culprit (or a flake) is found, what is left of the batch is tested
// together again. A batch of four with one culprit therefore costs at most four runs after the
// first, and a batch with no culprit one run in all.

import type { RunEventBody } from '../report/index.ts';
import type { Decision } from '../attempt/index.ts';
import { clipMiddle } from '../format.ts';

export interface GateQueue {
  /** Verified candidates not yet taken into a batch, in arrival order. */
  readonly waiting: readonly number[];
  /** Segments of the current batch still to test, first to test first; each is stacked in order. */
  readonly segments: readonly (readonly number[])[];
  /** A segment that failed on the current tip and whose first half is being tested: its rest is known to fail if that half passes. */
  readonly red: readonly number[] | null;
  /** Failures of a candidate tested on its own in this batch. */
  readonly aloneFailures: ReadonlyMap<number, number>;
}

export const emptyGateQueue = (): GateQueue => ({ waiting: [], segments: [], red: null, aloneFailures: new Map() });

/** What one gate run found. */
export interface GateVerdict {
  /** Tasks whose stack passed: integrate them, in order (empty when the run failed). */
  integrate: number[];
  /** The one candidate tested passed after failing on its own: the earlier failure was a flake. */
  flake: boolean;
  /** A candidate that failed on its own twice (found now, or known from a run before): its attempt fails. */
  culprit: number | null;
}

/** Candidates join the queue. */
export function enqueue(queue: GateQueue, tasks: readonly number[]): GateQueue {
  return { ...queue, waiting: [...queue.waiting, ...tasks.filter((t) => !queue.waiting.includes(t))] };
}

/**
 * Candidates leave the queue without integrating (work built speculatively on a candidate that
 * was blamed): out of the waiting list and the batch. The red stack they were part of is
 * forgotten: what is left is tested again rather than assumed to fail.
 */
export function withdraw(queue: GateQueue, tasks: ReadonlySet<number>): GateQueue {
  if (![...queueOrder(queue)].some((t) => tasks.has(t))) return queue;
  const aloneFailures = new Map([...queue.aloneFailures].filter(([task]) => !tasks.has(task)));
  return {
    waiting: queue.waiting.filter((t) => !tasks.has(t)),
    segments: queue.segments.map((segment) => segment.filter((t) => !tasks.has(t))).filter((segment) => segment.length > 0),
    red: queue.red?.some((t) => tasks.has(t)) ? null : queue.red,
    aloneFailures,
  };
}

/** Every candidate in the queue, in the order the gate will stack them: the batch under test, then those waiting. */
export function queueOrder(queue: GateQueue): number[] {
  const order: number[] = [];
  for (const task of [...queue.segments.flat(), ...queue.waiting]) if (!order.includes(task)) order.push(task);
  return order;
}

/** Whether a batch is under test (its segments not all decided). */
export const testing = (queue: GateQueue): boolean => queue.segments.length > 0;

/**
 * The segment to test next, or null when nothing waits. A new batch takes up to `batchSize`
 * waiting candidates when the previous one is done.
 */
export function nextSegment(queue: GateQueue, batchSize: number): { queue: GateQueue; segment: readonly number[] } | null {
  if (queue.segments.length > 0) return { queue, segment: queue.segments[0]! };
  if (queue.waiting.length === 0) return null;
  const batch = queue.waiting.slice(0, Math.max(1, batchSize));
  const next: GateQueue = { waiting: queue.waiting.slice(batch.length), segments: [batch], red: null, aloneFailures: new Map() };
  return { queue: next, segment: batch };
}

const halves = (segment: readonly number[]): [number[], number[]] => {
  const middle = Math.ceil(segment.length / 2);
  return [segment.slice(0, middle), segment.slice(middle)];
};

/**
 * The result of testing the front segment. The queue that follows and what it means: a passed
 * segment is integrated (a single candidate that passes after failing on its own is a flake); a
 * failed one is split, retested or, on a second failure of a single candidate, its culprit.
 */
export function afterGateRun(queue: GateQueue, passed: boolean): { queue: GateQueue; verdict: GateVerdict } {
  const [segment, ...rest] = queue.segments;
  if (segment === undefined) throw new Error('gate: no segment under test');
  if (!passed) {
    const failed = failSegment({ ...queue, segments: rest }, segment);
    return { queue: failed.queue, verdict: { integrate: [], flake: false, culprit: failed.culprit } };
  }
  const flake = segment.length === 1 && (queue.aloneFailures.get(segment[0]!) ?? 0) > 0;
  const red = queue.red;
  // The rest of a red segment, on top of its first half that passed, is the stack that failed.
  const remainder = red !== null && red.length > segment.length && segment.every((task, i) => red[i] === task) ? red.slice(segment.length) : null;
  if (remainder !== null && sameTasks(rest[0], remainder)) {
    const failed = failSegment({ ...queue, segments: rest.slice(1) }, remainder);
    return { queue: failed.queue, verdict: { integrate: [...segment], flake, culprit: failed.culprit } };
  }
  return { queue: { ...queue, segments: flake ? collapse(rest) : rest, red: null }, verdict: { integrate: [...segment], flake, culprit: null } };
}

/** The segments left once a bisection has its answer, as one: tested together, split only if red again. */
const collapse = (segments: readonly (readonly number[])[]): number[][] => (segments.length === 0 ? [] : [segments.flat()]);

const sameTasks = (a: readonly number[] | undefined, b: readonly number[]): boolean =>
  a !== undefined && a.length === b.length && a.every((task, i) => b[i] === task);

/** `segment` failed on the current tip (it is no longer in `queue.segments`): split it, retest it, or name its culprit. */
function failSegment(queue: GateQueue, segment: readonly number[]): { queue: GateQueue; culprit: number | null } {
  if (segment.length > 1) {
    const [left, right] = halves(segment);
    return { queue: { ...queue, segments: [left, right, ...queue.segments], red: segment }, culprit: null };
  }
  const task = segment[0]!;
  const aloneFailures = new Map(queue.aloneFailures);
  const failures = (aloneFailures.get(task) ?? 0) + 1;
  aloneFailures.set(task, failures);
  // Found: what is left of the batch is tested together again, as a batch of its own.
  if (failures >= 2) return { queue: { ...queue, segments: collapse(queue.segments), red: null, aloneFailures }, culprit: task };
  return { queue: { ...queue, segments: [segment, ...queue.segments], red: null, aloneFailures }, culprit: null };
}

export type GateFinished = Extract<RunEventBody, { type: 'gate-finished' }>;

/**
 * The journal's record of one gate run on `tasks` (none: the baseline on the starting commit),
 * with what its verdict made of it; the output only when it failed: its first line (how the
 * command ended: it exited, or timed out after its limit) and its end.
 */
export function gateFinishedEvent(
  tasks: readonly number[],
  run: { passed: boolean; output: string; durationMs: number },
  verdict: GateVerdict | null,
): GateFinished {
  return {
    type: 'gate-finished',
    tasks: [...tasks],
    passed: run.passed,
    durationMs: run.durationMs,
    integrated: [...(verdict?.integrate ?? [])],
    culprit: verdict?.culprit ?? null,
    flake: verdict?.flake ?? false,
    ...(run.passed ? {} : { output: clipMiddle(run.output, 4000) }),
  };
}

/** The warning for a flake: `task` failed once on its own and passed when tested again. */
export const flakeNotice = (task: number): Extract<RunEventBody, { type: 'notice' }> => ({
  type: 'notice',
  level: 'warning',
  message: `the test command failed once on task ${task} and passed when run again: a flaky test, which blames no task`,
});

/**
 * What becomes of a culprit's attempt: it fails like a failed acceptance check, with the gate's
 * output (its first line, how the command ended, and its end); retried while attempts remain
 * (`attemptsBefore` counts those already made).
 */
export function culpritDecision(output: string, attemptsBefore: number, maxAttempts: number): Extract<Decision, { kind: 'retry' | 'failed' }> {
  const said = output.trim() === '' ? '' : `:\n${clipMiddle(output.trim(), 2000)}`;
  const failure = `the plan's test command failed with this task's work on top of the integration tip (run twice, on its own)${said}`;
  return attemptsBefore + 1 < maxAttempts ? { kind: 'retry', failure } : { kind: 'failed', failure };
}
