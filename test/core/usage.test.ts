// Unknown usage (a Task subagent's, in-session) is never summed as zero: anything plus unknown
// is unknown, and totals over many figures say "unknown" or "at least $X (N unknown)".

import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/report/events.ts';
import { addUsage, emptyUsage, formatCostFigure, formatCostTally, mergeTallies, tallyCostUsd, tallyOf, UNKNOWN } from '../../src/core/plan/usage.ts';
import { formatTokens, historyEntries, planTally } from '../../src/core/report/history.ts';
import { groupRuns } from '../../src/core/report/journal.ts';
import { renderReport } from '../../src/core/report/markdown.ts';
import { describeEvent } from '../../src/ui/event-text.ts';
import { ev, recordedRun, RUN_ID, T0, usage } from '../support/events.ts';
import { planAfterRecordedRun } from '../support/report-plan.ts';

/** A session run: one attempt, unknown figures, finished. */
const sessionRun = (runId: string, t0: number): RunEvent[] => [
  ev(
    t0,
    {
      type: 'run-started',
      goal: 'Build the parser',
      planPath: '.design/plan.json',
      taskCount: 4,
      maxDepth: 3,
      resumed: true,
      concurrency: 4,
      schedule: 'rounds',
      pid: 77,
      mode: 'session',
    },
    runId,
  ),
  ev(t0 + 1000, { type: 'task-started', task: 1, subject: 'Add lexer', attempt: 3, model: 'sonnet', logPath: '' }, runId),
  ev(
    t0 + 31_000,
    {
      type: 'task-finished',
      task: 1,
      subject: 'Add lexer',
      attempt: 3,
      outcome: 'completed',
      durationMs: 30_000,
      usage: UNKNOWN,
      logPath: '',
      permissionDenials: UNKNOWN,
    },
    runId,
  ),
  ev(
    t0 + 32_000,
    {
      type: 'run-finished',
      outcome: 'incomplete',
      reason: 'failures',
      exitCode: 1,
      counts: { completed: 2 },
      usage: UNKNOWN,
      durationMs: 32_000,
      message: 'm',
    },
    runId,
  ),
];

describe('unknown usage', () => {
  it('absorbs: known plus unknown is unknown', () => {
    expect(addUsage(usage(0.4), UNKNOWN)).toBe(UNKNOWN);
    expect(addUsage(UNKNOWN, usage(0.4))).toBe(UNKNOWN);
    expect(addUsage(usage(0.4), usage(0.1))).toMatchObject({ costUsd: 0.5 });
    expect(formatCostFigure(UNKNOWN)).toBe('unknown');
    expect(formatCostFigure(usage(0.4))).toBe('$0.40');
  });

  it('totals say unknown when nothing was measured, and "at least" when part was', () => {
    expect(formatCostTally(tallyOf([UNKNOWN, UNKNOWN]))).toBe('unknown');
    expect(tallyCostUsd(tallyOf([UNKNOWN]))).toBe('unknown');
    const mixed = tallyOf([usage(0.4), UNKNOWN, undefined, usage(0.1)]);
    expect(mixed).toMatchObject({ measuredCount: 2, unknown: 1 });
    expect(formatCostTally(mixed)).toBe('at least $0.50 (1 attempt unknown)');
    expect(formatCostTally(mergeTallies(mixed, tallyOf([UNKNOWN])), 'task')).toBe('at least $0.50 (2 tasks unknown)');
    expect(formatTokens(tallyOf([UNKNOWN]))).toBe('unknown');
    expect(formatTokens(mixed)).toBe('at least 2,000 input, 400 output, 10,000 cache read, 600 cache write (1 attempt unknown)');
    // Nothing recorded at all is an honest zero.
    expect(formatCostTally(tallyOf([]))).toBe('$0.00');
    expect(formatCostTally(tallyOf([emptyUsage()]))).toBe('$0.00');
  });

  it('a plan whose tasks are partly unknown costs "at least" what the rest measured', () => {
    const plan = planAfterRecordedRun();
    plan.tasks[1]!.usage = UNKNOWN;
    const t = planTally(plan);
    expect(t.unknown).toBe(1);
    expect(formatCostTally(t, 'task')).toMatch(/^at least \$\d+\.\d\d \(1 task unknown\)$/);
  });

  it('history and report keep a headless run measured and a session run unknown', () => {
    const runs = groupRuns([...recordedRun(RUN_ID, T0).filter((e) => e.type !== 'task-activity'), ...sessionRun('s1', T0 + 3_600_000)]);
    const entries = historyEntries(runs, []);
    expect(entries.map((e) => [e.runId, e.costUsd, e.costUnknownFor])).toEqual([
      [RUN_ID, 0.67, 0],
      ['s1', 'unknown', 1],
    ]);
    expect(entries[1]!.durationMs).toBe(32_000);
    expect(formatCostTally(entries.reduce((t, e) => mergeTallies(t, e.usage), tallyOf([])))).toBe('at least $0.67 (1 attempt unknown)');
    const md = renderReport({ run: runs[1]!, plan: null, planIsOfRun: false });
    expect(md).toContain('- **Cost:** unknown');
    expect(md).toContain('- **Started:** 2026-11-22T02:02:03Z, finished');
    expect(md).toContain('(in a Claude Code session, resumed)');
    expect(md).toMatch(/\| 1 \| Add lexer \| completed \| 1 \| 30s \| unknown \|/);
  });

  it('the plain log says unknown for an unmeasured attempt and run', () => {
    const [, , finished, runFinished] = sessionRun('s2', T0);
    expect(describeEvent(finished!, { kind: 'checkout' })).toBe('task 1 completed (attempt 3, 30s, unknown): Add lexer');
    expect(describeEvent(runFinished!, { kind: 'checkout' })).toMatch(/^run s2 finished: incomplete \(failures\) in 32s, unknown; /);
  });
});
