// A recorded run for renderer, journal and report tests: two workers, a retry that ends in a
// failure, a cascade skip, a commit and the end of the run. Times are fixed.

import type { RunEvent, RunEventBody } from '../../src/core/report/events.ts';
import type { Usage } from '../../src/core/plan/usage.ts';

export const T0 = Date.UTC(2026, 10, 22, 1, 2, 3); // 2026-11-22T01:02:03Z
export const RUN_ID = 'run-20261122-010203';

export const at = (ms: number): string => new Date(ms).toISOString();
export const ev = (ms: number, body: RunEventBody, runId = RUN_ID): RunEvent => ({ ...body, runId, at: at(ms) }) as RunEvent;

export const usage = (costUsd: number, inputTokens = 1000, outputTokens = 200): Usage => ({
  costUsd,
  inputTokens,
  outputTokens,
  cacheReadTokens: 5000,
  cacheCreationTokens: 300,
});

export const LONG_SUBJECT = 'Write the lexer: tokens #1; numbers, strings and a very long tail of words';

/** The events of one run, in order (tasks: 0 ← nothing, 1 ← nothing, 2 ← 1, 3 ← 2). */
export function recordedRun(runId = RUN_ID, t0 = T0): RunEvent[] {
  const e = (dt: number, body: RunEventBody) => ev(t0 + dt, body, runId);
  return [
    e(0, {
      type: 'run-started',
      goal: 'Build the parser',
      planPath: '.design/plan.json',
      taskCount: 4,
      maxDepth: 3,
      resumed: false,
      concurrency: 2,
      schedule: 'rounds',
      pid: 4242,
    }),
    e(500, { type: 'assumption-checked', task: 2, claim: 'node is installed', severity: 'warning', passed: true, output: '' }),
    e(1000, { type: 'task-started', task: 0, subject: 'Add parser', attempt: 1, model: 'sonnet', logPath: '.design/worker-0.log' }),
    e(1500, { type: 'task-started', task: 1, subject: LONG_SUBJECT, attempt: 1, model: 'opus', logPath: '.design/worker-1.log' }),
    e(2000, { type: 'task-activity', task: 0, text: 'Edit src/parser.ts', costUsd: 0.05 }),
    e(2500, { type: 'task-activity', task: 1, text: 'Bash(npm test -- --run lexer)\nwith a second line', costUsd: 0.02 }),
    e(61_000, {
      type: 'task-finished',
      task: 0,
      subject: 'Add parser',
      attempt: 1,
      outcome: 'completed',
      result: 'parser added',
      durationMs: 60_000,
      usage: usage(0.12),
      sessionId: 's-0',
      logPath: '.design/worker-0.log',
      permissionDenials: 0,
    }),
    e(62_000, { type: 'round-committed', round: 1, tasks: [0], commit: 'abcdef1234567890abcdef1234567890abcdef12' }),
    e(91_500, {
      type: 'task-finished',
      task: 1,
      subject: LONG_SUBJECT,
      attempt: 1,
      outcome: 'retry',
      reason: 'acceptance check failed (tests): `npm test` exited 1:\nFAIL lexer.test.ts',
      durationMs: 90_000,
      usage: usage(0.3),
      logPath: '.design/worker-1.log',
      permissionDenials: 0,
    }),
    e(92_000, { type: 'task-started', task: 1, subject: LONG_SUBJECT, attempt: 2, model: 'opus', logPath: '.design/worker-1.log' }),
    e(93_000, { type: 'task-activity', task: 1, text: 'Read src/lexer.ts', costUsd: 0.01 }),
    e(150_000, {
      type: 'task-finished',
      task: 1,
      subject: LONG_SUBJECT,
      attempt: 2,
      outcome: 'failed',
      reason: 'the worker reported FAILED: cannot make the tests pass',
      durationMs: 58_000,
      usage: usage(0.25),
      logPath: '.design/worker-1.log',
      permissionDenials: 1,
    }),
    e(150_100, {
      type: 'task-skipped',
      task: 2,
      subject: 'Wire lexer into parser',
      rootCause: 1,
      reason: 'skipped: depends on task 1 (Write the lexer), which is failed',
    }),
    e(150_100, {
      type: 'task-skipped',
      task: 3,
      subject: 'Document the lexer',
      rootCause: 1,
      reason: 'skipped: depends on task 1 (Write the lexer), which is failed (through task 2)',
    }),
    e(150_200, { type: 'notice', level: 'warning', message: 'task 1 changed files it did not declare: notes.txt' }),
    e(151_000, {
      type: 'run-finished',
      outcome: 'incomplete',
      reason: 'failures',
      exitCode: 1,
      counts: { completed: 1, failed: 1, skipped: 2 },
      usage: usage(0.67, 3000, 600),
      durationMs: 151_000,
      message: '1 of 4 tasks completed',
    }),
  ];
}
