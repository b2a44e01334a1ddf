// The gate's runs in `plan report`: their own row in the Gantt chart, the time in the gate, the
// runs, flakes and culprits in the Markdown and in the JSON.

import { describe, expect, it } from 'vitest';
import type { RunEvent, RunEventBody } from '../../src/core/report/events.ts';
import { ganttChart } from '../../src/core/report/gantt.ts';
import { gateRunsOf, gateSummaryOf } from '../../src/core/report/gate-runs.ts';
import { groupRuns } from '../../src/core/report/journal.ts';
import { renderReport, reportData } from '../../src/core/report/markdown.ts';
import { ev, RUN_ID, T0, usage } from '../support/events.ts';

const e = (dt: number, body: RunEventBody): RunEvent => ev(T0 + dt, body);
const finished = (task: number, dt: number, outcome: 'completed' | 'retry', reason?: string): RunEvent =>
  e(dt, {
    type: 'task-finished',
    task,
    subject: `task ${task}`,
    attempt: outcome === 'retry' ? 1 : 2,
    outcome,
    ...(reason ? { reason } : { result: 'done' }),
    durationMs: 1000,
    usage: usage(0.1),
    logPath: `.design/worker-${task}.log`,
    permissionDenials: 0,
  });
const gateDone = (
  dt: number,
  tasks: number[],
  passed: boolean,
  durationMs: number,
  extra: Partial<{ integrated: number[]; culprit: number | null; flake: boolean; output: string }> = {},
): RunEvent =>
  e(dt, {
    type: 'gate-finished',
    tasks,
    passed,
    durationMs,
    integrated: extra.integrated ?? [],
    culprit: extra.culprit ?? null,
    flake: extra.flake ?? false,
    ...(extra.output ? { output: extra.output } : {}),
  });

/** Baseline, a red batch of three bisected to its culprit (task 2), a flake on task 0's retry batch. */
function gatedRun(): RunEvent[] {
  return [
    e(0, {
      type: 'run-started',
      goal: 'Gate',
      planPath: '.design/plan.json',
      taskCount: 3,
      maxDepth: 1,
      resumed: false,
      concurrency: 3,
      schedule: 'continuous',
      pid: 7,
    }),
    gateDone(400, [], true, 400),
    e(1000, { type: 'task-started', task: 0, subject: 'task 0', attempt: 1, model: 'sonnet', logPath: '.design/worker-0.log' }),
    e(1000, { type: 'task-started', task: 1, subject: 'task 1', attempt: 1, model: 'sonnet', logPath: '.design/worker-1.log' }),
    e(1000, { type: 'task-started', task: 2, subject: 'task 2', attempt: 1, model: 'sonnet', logPath: '.design/worker-2.log' }),
    { ...finished(0, 2000, 'completed'), attempt: 1 } as RunEvent,
    { ...finished(1, 2000, 'completed'), attempt: 1 } as RunEvent,
    { ...finished(2, 2000, 'completed'), attempt: 1 } as RunEvent,
    e(2100, { type: 'gate-started', tasks: [0, 1, 2], waiting: 0 }),
    gateDone(5100, [0, 1, 2], false, 3000, { output: 'not ok 1 - use.js calls greet()' }),
    e(5100, { type: 'gate-started', tasks: [0, 1], waiting: 0 }),
    gateDone(7100, [0, 1], true, 2000, { integrated: [0, 1] }),
    e(7200, { type: 'gate-started', tasks: [2], waiting: 0 }),
    gateDone(8200, [2], false, 1000, { culprit: 2, output: 'not ok 1 - greet is not a function' }),
    finished(2, 8200, 'retry', "the plan's test command failed with this task's work on top of the integration tip"),
    e(8300, { type: 'task-started', task: 2, subject: 'task 2', attempt: 2, model: 'sonnet', logPath: '.design/worker-2.log' }),
    finished(2, 9300, 'completed'),
    e(9400, { type: 'gate-started', tasks: [2], waiting: 0 }),
    gateDone(10_400, [2], false, 1000, { output: 'flaky' }),
    e(10_400, { type: 'gate-started', tasks: [2], waiting: 0 }),
    gateDone(11_400, [2], true, 1000, { integrated: [2], flake: true }),
    e(11_500, { type: 'round-committed', round: 3, tasks: [2], commit: 'c0ffee' }),
    e(12_000, {
      type: 'run-finished',
      outcome: 'completed',
      reason: 'all-done',
      exitCode: 0,
      counts: { completed: 3 },
      usage: usage(0.4),
      durationMs: 12_000,
      message: 'all 3 tasks completed',
    }),
  ];
}

const BAR = /^ {2}([^:#;\n]+?) :((?:(?:done|active|crit), )*)(gate\d+|t\d+a\d+), (\d+), (\d+)$/;

/** The bars of the gantt chart's `gate` section, checked line by line. */
function gateBars(chart: string) {
  const lines = chart.split('\n');
  const at = lines.indexOf('  section gate');
  expect(at).toBeGreaterThan(-1);
  const bars = [];
  for (const line of lines.slice(at + 1)) {
    if (line.startsWith('  section ')) break;
    const m = BAR.exec(line);
    expect(m, `not a gantt line: ${JSON.stringify(line)}`).not.toBeNull();
    bars.push({ name: m![1]!, tags: m![2]!.split(', ').filter(Boolean), id: m![3]!, start: Number(m![4]), end: Number(m![5]) });
  }
  return bars;
}

describe('the gate in plan report', () => {
  const run = groupRuns(gatedRun())[0]!;

  it('pairs gate-started with gate-finished, the baseline without a start', () => {
    const runs = gateRunsOf(run);
    expect(runs.map((g) => [g.tasks, g.passed, g.durationMs])).toEqual([
      [[], true, 400],
      [[0, 1, 2], false, 3000],
      [[0, 1], true, 2000],
      [[2], false, 1000],
      [[2], false, 1000],
      [[2], true, 1000],
    ]);
    expect(runs[0]!.startMs).toBe(T0);
    expect(runs[3]!.culprit).toBe(2);
    expect(runs[5]!.flake).toBe(true);
  });

  it('sums the time in the gate and names flakes and culprits', () => {
    expect(gateSummaryOf(run)).toMatchObject({ totalMs: 8400, passed: 3, failed: 3, flakes: [2], culprits: [2], integrated: [0, 1, 2], baseline: true });
  });

  it('gives the gate one row in the Gantt chart, a bar per run named by its tasks, red when it failed', () => {
    const bars = gateBars(ganttChart(run));
    expect(bars.map((b) => b.id)).toEqual(['gate1', 'gate2', 'gate3', 'gate4', 'gate5', 'gate6']);
    expect(bars.map((b) => b.tags)).toEqual([['done'], ['crit'], ['done'], ['crit'], ['crit'], ['done']]);
    expect(bars[0]!.name).toMatch(/^baseline passed/);
    expect(bars[1]!.name).toMatch(/^tasks 0, 1 and 2 failed/);
    expect(bars[3]!.name).toMatch(/^task 2 failed culprit 2/);
    expect(bars[5]!.name).toMatch(/^task 2 passed flake/);
    expect(bars[1]).toMatchObject({ start: T0 + 2100, end: T0 + 5100 });
  });

  it('a gate still running is an active bar up to now', () => {
    const running = groupRuns([...gatedRun().slice(0, 9)])[0]!;
    const bars = gateBars(ganttChart(running, { now: T0 + 4000 }));
    expect(bars.at(-1)).toMatchObject({ tags: ['active'], start: T0 + 2100, end: T0 + 4000 });
    expect(gateSummaryOf(running, T0 + 4000)!.totalMs).toBe(400 + 1900);
  });

  it('says the time in the gate, the runs, the flake and the culprit in the Markdown', () => {
    const md = renderReport({ run, plan: null, planIsOfRun: false });
    expect(md).toContain('- **Gate:** 6 runs (3 failed), 8s in the gate; 1 flake (blamed no task); culprit: task 2');
    expect(md).toContain('## Gate (merge queue)');
    expect(md).toContain('1. the starting commit (baseline): passed');
    expect(md).toContain('2. tasks 0, 1 and 2 on the integration tip: failed');
    expect(md).toContain('3. tasks 0 and 1 on the integration tip: passed in 2s — integrated 0 and 1');
    expect(md).toContain('culprit: task 2 (failed on its own twice)');
    expect(md).toContain('flake: task 2 failed once and passed again, no task blamed');
    expect(md).toContain('not ok 1 - greet is not a function');
    expect(md).toContain('commits of one batch were tested together, not alone');
    expect(md).toContain('  section gate');
  });

  it('a refused baseline: the report says the starting commit failed', () => {
    const refused = groupRuns([gatedRun()[0]!, gateDone(300, [], false, 300, { output: 'baseline red' })])[0]!;
    const md = renderReport({ run: refused, plan: null, planIsOfRun: false });
    expect(md).toContain('the starting commit already failed it');
    expect(md).toContain('## Timeline');
  });

  it('a run without a gate has no gate line, section or row', () => {
    const plain = groupRuns(gatedRun().filter((x) => x.type !== 'gate-started' && x.type !== 'gate-finished'))[0]!;
    const md = renderReport({ run: plain, plan: null, planIsOfRun: false });
    expect(md).not.toContain('**Gate:**');
    expect(md).not.toContain('section gate');
    expect(gateSummaryOf(plain)).toBeNull();
  });

  it('puts the gate runs in the JSON report', () => {
    const data = JSON.parse(JSON.stringify(reportData(run))) as ReturnType<typeof reportData>;
    expect(data.summary.runId).toBe(RUN_ID);
    // The culprit's verified attempt, blamed by the gate, is one attempt that failed, not two.
    expect(data.attempts).toHaveLength(4);
    expect(data.attempts.filter((a) => a.task === 2).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retry'],
      [2, 'completed'],
    ]);
    expect(data.gate).toMatchObject({ totalMs: 8400, flakes: [2], culprits: [2], baseline: true });
    expect(data.gate!.runs).toHaveLength(6);
  });
});
