import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/report/events.ts';
import { attemptRecordsOf } from '../../src/core/report/attempts.ts';
import { ganttChart, ganttText } from '../../src/core/report/gantt.ts';
import { groupRuns } from '../../src/core/report/journal.ts';
import { historyEntries, parseArchiveStamp, runForArchive } from '../../src/core/report/history.ts';
import { clipReason, renderReport, reportData } from '../../src/core/report/markdown.ts';
import { summarizeRun, unfinishedRun } from '../../src/core/report/runs.ts';
import { ev, LONG_SUBJECT, recordedRun, RUN_ID, T0, usage } from '../support/events.ts';
import { planAfterRecordedRun } from '../support/report-plan.ts';

const journal = (runId = RUN_ID, t0 = T0): RunEvent[] => recordedRun(runId, t0).filter((e) => e.type !== 'task-activity');

/** The body of the first ```mermaid block. */
function mermaidBlock(md: string): string[] {
  const lines = md.split('\n');
  const start = lines.indexOf('```mermaid');
  expect(start).toBeGreaterThan(-1);
  const end = lines.indexOf('```', start + 1);
  expect(end).toBeGreaterThan(start);
  return lines.slice(start + 1, end);
}

const TASK_LINE = /^ {2}([^:#;\n]+?) :((?:(?:done|active|crit|milestone), )*)(t\d+a\d+), (\d+), (\d+)$/;

/** Checks Gantt syntax line by line; returns the bars. */
function checkGantt(lines: string[]) {
  expect(lines[0]).toBe('gantt');
  const bars: Array<{ section: string; name: string; tags: string[]; id: string; start: number; end: number }> = [];
  let section: string | null = null;
  const ids = new Set<string>();
  for (const line of lines.slice(1)) {
    if (/^ {2}title [^#;\n]+$/.test(line) || line === '  dateFormat x' || /^ {2}axisFormat %\S+$/.test(line) || line === '  todayMarker off') continue;
    const s = /^ {2}section ([^:#;\n]+)$/.exec(line);
    if (s) {
      section = s[1]!;
      continue;
    }
    const m = TASK_LINE.exec(line);
    expect(m, `not a gantt line: ${JSON.stringify(line)}`).not.toBeNull();
    expect(section, 'a task line before any section').not.toBeNull();
    const [, name, tags, id, start, end] = m!;
    expect(ids.has(id!), `duplicate id ${id}`).toBe(false);
    ids.add(id!);
    expect(Number(end)).toBeGreaterThan(Number(start));
    bars.push({ section: section!, name: name!, tags: tags!.split(', ').filter(Boolean), id: id!, start: Number(start), end: Number(end) });
  }
  expect(lines).toContain('  dateFormat x');
  return bars;
}

describe('runs and attempts', () => {
  it('groups events by run id, ordered by start', () => {
    const runs = groupRuns([...journal('b', T0 + 10_000_000), ...journal('a', T0)]);
    expect(runs.map((r) => r.runId)).toEqual(['a', 'b']);
    expect(runs[0]!.started?.goal).toBe('Build the parser');
    expect(runs[0]!.finished?.outcome).toBe('incomplete');
  });

  it('pairs task-started with task-finished', () => {
    const attempts = attemptRecordsOf(groupRuns(journal())[0]!);
    expect(attempts.map((a) => [a.task, a.attempt, a.outcome, a.durationMs, a.usage === 'unknown' ? 'unknown' : a.usage?.costUsd])).toEqual([
      [0, 1, 'completed', 60_000, 0.12],
      [1, 1, 'retry', 90_000, 0.3],
      [1, 2, 'failed', 58_000, 0.25],
    ]);
    expect(attempts[0]!.startMs).toBe(T0 + 1000);
    expect(attempts[0]!.endMs).toBe(T0 + 61_000);
  });

  it('summarises a finished run from run-finished', () => {
    const s = summarizeRun(groupRuns(journal())[0]!);
    expect(s).toMatchObject({
      runId: RUN_ID,
      startedAt: '2026-11-22T01:02:03Z',
      goal: 'Build the parser',
      outcome: 'incomplete',
      reason: 'failures',
      durationMs: 151_000,
      costUsd: 0.67,
    });
  });

  it('tells a running run from a dead one by the lock holder’s pid', () => {
    const cut = groupRuns(journal().slice(0, 6))[0]!; // up to the first round commit
    expect(summarizeRun(cut).outcome).toBe('unfinished');
    expect(summarizeRun(cut, { livePid: 4242, now: T0 + 100_000 })).toMatchObject({ outcome: 'running', durationMs: 100_000 });
    expect(summarizeRun(cut, { livePid: 1 }).outcome).toBe('unfinished');
  });

  it('lists the tasks of an unfinished run that are still running, and cost not yet in the plan', () => {
    const events = journal().slice(0, 4); // run-started, assumption, two task-started
    events.push(
      ev(T0 + 61_000, {
        type: 'task-finished',
        task: 0,
        subject: 'Add parser',
        attempt: 1,
        outcome: 'completed',
        durationMs: 60_000,
        usage: usage(0.12),
        logPath: 'l',
        permissionDenials: 0,
      }),
    );
    const plan = planAfterRecordedRun();
    plan.tasks[0]!.status = 'in_progress'; // its round has not committed yet
    const u = unfinishedRun(groupRuns(events), plan, T0 + 71_500);
    expect(u).toMatchObject({
      runId: RUN_ID,
      pid: 4242,
      runCost: { measured: { costUsd: 0.12 }, unknown: 0 },
      unrecordedCost: { measured: { costUsd: 0.12 }, unknown: 0 },
    });
    expect(u!.running).toEqual([
      { index: 1, subject: LONG_SUBJECT, attempt: 1, model: 'opus', startedAt: '2026-11-22T01:02:04Z', elapsedMs: 70_000, place: null },
    ]);
    plan.tasks[0]!.status = 'completed';
    expect(unfinishedRun(groupRuns(events), plan, T0)!.unrecordedCost).toEqual({
      measured: expect.objectContaining({ costUsd: 0 }),
      measuredCount: 0,
      unknown: 0,
    });
    expect(unfinishedRun(groupRuns(journal()), plan, T0)).toBeNull();
  });

  it("says each account's wait by its hosts, with hosts of more than one account; a drain ends every wait", () => {
    const started = journal().slice(0, 3);
    const limit = (ms: number, hosts: string[], held: boolean): RunEvent =>
      ev(ms, {
        type: 'limit',
        change: held ? 'hold' : 'serving',
        limit: 'usage-limit',
        working: 2,
        concurrency: 2,
        until: held ? new Date(T0 + 3_600_000).toISOString() : null,
        resetAt: held ? new Date(T0 + 3_600_000).toISOString() : null,
        refusals: 1,
        task: held ? 0 : null,
        message: 'as it was',
        hosts,
      });
    const events = [...started, limit(2000, ['build2'], true), limit(3000, ['local'], true), limit(4000, ['local'], false)];
    expect(unfinishedRun(groupRuns(events), null, T0 + 5000)!.waiting).toMatch(/^build2: waiting for the usage limit to reset at \d\d:\d\d(:\d\d)?$/);
    const drained = [...events, ev(6000, { type: 'draining', running: [] })];
    expect(unfinishedRun(groupRuns(drained), null, T0 + 7000)!.waiting).toBeNull();
  });
});

describe('warnings in the report', () => {
  it("shows each attempt's warnings and the run's, beside the reasons", () => {
    const events = journal();
    const retry = events.findIndex((e) => e.type === 'task-finished' && e.outcome === 'retry');
    events[retry] = { ...events[retry]!, warnings: ['changed files it did not declare (the attempt failed; they were not kept): src/stray.ts'] } as RunEvent;
    events.splice(
      retry + 1,
      0,
      ev(T0 + 91_600, { type: 'notice', level: 'warning', message: 'the integrated work could not land: your change to README.md is in the way' }),
    );
    events.splice(retry + 2, 0, ev(T0 + 91_700, { type: 'notice', level: 'info', message: 'landed 2 files on main' }));
    const run = groupRuns(events)[0]!;
    expect(attemptRecordsOf(run)[1]!.warnings).toEqual(['changed files it did not declare (the attempt failed; they were not kept): src/stray.ts']);
    const md = renderReport({ run, plan: planAfterRecordedRun(), planIsOfRun: true }).split('\n');
    const at = md.indexOf('## Warnings');
    expect(at).toBeGreaterThan(-1);
    expect(md.slice(at + 2, at + 4)).toEqual([
      `- Task 1, attempt 1: changed files it did not declare (the attempt failed; they were not kept): src/stray.ts`,
      '- the integrated work could not land: your change to README.md is in the way',
    ]);
    // Information is not a warning.
    expect(md.join('\n')).not.toContain('landed 2 files on main');
    // The JSON report carries the same: the attempt's on the attempt, the run's beside them.
    const data = JSON.parse(JSON.stringify(reportData(run))) as ReturnType<typeof reportData>;
    expect(data.attempts[1]!.warnings).toEqual(['changed files it did not declare (the attempt failed; they were not kept): src/stray.ts']);
    expect(data.warnings).toEqual([
      'the integrated work could not land: your change to README.md is in the way',
      'task 1 changed files it did not declare: notes.txt',
    ]);
    expect(data.speculation).toBeNull();
  });

  it('has no warnings section when nothing warned', () => {
    const quiet = journal().filter((e) => !(e.type === 'notice' && e.level === 'warning'));
    expect(renderReport({ run: groupRuns(quiet)[0]!, plan: planAfterRecordedRun(), planIsOfRun: true })).not.toContain('## Warnings');
  });
});

describe('report', () => {
  const md = renderReport({ run: groupRuns(journal())[0]!, plan: planAfterRecordedRun(), planIsOfRun: true, planPath: '.design/plan.json' });
  const lines = md.split('\n');

  it('has a summary', () => {
    expect(lines[0]).toBe(`# foreman run ${RUN_ID}`);
    expect(lines).toContain('- **Goal:** Build the parser');
    expect(lines).toContain('- **Outcome:** incomplete (failures): 1 of 4 tasks completed');
    expect(lines).toContain('- **Started:** 2026-11-22T01:02:03Z, finished 2026-11-22T01:04:34Z (pid 4242)');
    expect(lines).toContain('- **Duration:** 2m31s (worker time 3m28s, 1.4× parallel)');
    expect(lines).toContain('- **Cost:** $0.67');
    expect(lines).toContain('- **Tokens:** 3,000 input, 600 output, 5,000 cache read, 300 cache write');
    expect(lines).toContain('- **Tasks:** 1 completed, 1 failed, 2 skipped (of 4); 3 attempts in this run');
  });

  it('has a row per task', () => {
    const table = lines.slice(lines.indexOf('## Tasks') + 2, lines.indexOf('## Tasks') + 8);
    expect(table).toEqual([
      '| # | Subject | Status | Attempts | Duration | Cost | Model | Commit |',
      '|---:|---|---|---:|---:|---:|---|---|',
      '| 0 | Add parser | completed | 1 | 1m00s | $0.12 | sonnet | `abcdef1234` |',
      `| 1 | ${LONG_SUBJECT} | failed | 2 | 2m28s | $0.55 | opus | — |`,
      '| 2 | Wire lexer into parser | skipped | — | — | — | sonnet | — |',
      '| 3 | Document the lexer | skipped | — | — | — | sonnet | — |',
    ]);
  });

  it('lists failures with their reasons and logs, and the skipped tasks', () => {
    const failures = md.slice(md.indexOf('## Failures'), md.indexOf('## Timeline'));
    expect(failures).toContain(`### Task 1: ${LONG_SUBJECT}`);
    expect(failures).toContain('- Attempt 1 (opus): failed, retried after 1m30s — log `.design/worker-1.log`');
    expect(failures).toContain('```text\nacceptance check failed (tests): `npm test` exited 1:\nFAIL lexer.test.ts\n```');
    expect(failures).toContain('- Attempt 2 (opus): failed after 58s — log `.design/worker-1.log`');
    expect(failures).toContain('- Task 3 (Document the lexer): skipped: depends on task 1 (Write the lexer), which is failed (through task 2)');
    expect(md).not.toContain('\n\n\n');
  });

  it('draws a valid-looking Gantt chart: a section per task, a bar per attempt, crit for failures', () => {
    const bars = checkGantt(mermaidBlock(md));
    expect(bars.map((b) => [b.section, b.tags, b.id, b.start - T0, b.end - T0])).toEqual([
      ['0 Add parser', ['done'], 't0a1', 1000, 61_000],
      ['1 Write the lexer： tokens ＃1； numbers, strings and a very lon…', ['crit'], 't1a1', 1500, 91_500],
      ['1 Write the lexer： tokens ＃1； numbers, strings and a very lon…', ['crit'], 't1a2', 92_000, 150_000],
    ]);
    expect(bars.map((b) => b.name)).toEqual(['attempt 1 completed 1m00s', 'attempt 1 failed (retried) 1m30s', 'attempt 2 failed 58s']);
  });

  it('marks attempts still running as active, ending now', () => {
    const run = groupRuns(journal().slice(0, 4))[0]!;
    const bars = checkGantt(ganttChart(run, { now: T0 + 5000 }).split('\n'));
    expect(bars.map((b) => [b.tags, b.end - T0])).toEqual([
      [['active'], 5000],
      [['active'], 5000],
    ]);
  });

  it('draws a run with hosts by host and slot: a section for each, a bar per attempt naming its task', () => {
    // The recorded run, as if its attempts had been placed: task 0 and task 1's second attempt on build1's slot 1, task 1's first on local.
    const placed = journal().map((e) => {
      if (e.type !== 'task-started') return e;
      return e.task === 1 && e.attempt === 1 ? { ...e, host: 'local', slot: 1 } : { ...e, host: 'build1', slot: 1 };
    });
    const run = groupRuns(placed)[0]!;
    const bars = checkGantt(ganttChart(run).split('\n'));
    expect(bars.map((b) => [b.section, b.name, b.id])).toEqual([
      ['build1 slot 1', 'task 0 attempt 1 completed 1m00s', 't0a1'],
      ['build1 slot 1', 'task 1 attempt 2 failed 58s', 't1a2'],
      ['local slot 1', 'task 1 attempt 1 failed (retried) 1m30s', 't1a1'],
    ]);
    expect(attemptRecordsOf(run).map((a) => [a.task, a.host, a.slot])).toEqual([
      [0, 'build1', 1],
      [1, 'local', 1],
      [1, 'build1', 1],
    ]);
    // A task still running says where.
    expect(unfinishedRun(groupRuns(placed.slice(0, 4)), null, T0 + 5000)!.running.map((r) => r.place)).toEqual(['build1:1', 'local:1']);
  });

  it('escapes what gantt treats as syntax', () => {
    expect(ganttText('a: b # c; d\ne')).toBe('a： b ＃ c； d e');
    expect(ganttText('')).toBe('(untitled)');
    expect(ganttText('x'.repeat(100), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('escapes table cells', () => {
    const plan = planAfterRecordedRun();
    plan.tasks[0]!.subject = 'pipes | and\nnewlines';
    const out = renderReport({ run: groupRuns(journal())[0]!, plan, planIsOfRun: true });
    expect(out).toContain('| 0 | pipes \\| and newlines | completed |');
  });

  it('reports an archived plan no run matches from the plan alone', () => {
    const out = renderReport({ run: null, plan: planAfterRecordedRun(), planIsOfRun: true, archivedFrom: '.design/history/x-plan.json' });
    expect(out).toContain('# foreman plan report');
    expect(out).toContain('| 1 | ');
    expect(out).toContain('failed after 2 attempts — log `.design/worker-1.log`');
    expect(out).not.toContain('```mermaid');
  });

  it('reports an older run with statuses from its events, not from the current plan', () => {
    const out = renderReport({ run: groupRuns(journal())[0]!, plan: planAfterRecordedRun(), planIsOfRun: false });
    expect(out).toContain('| 0 | Add parser | completed | 1 |');
    expect(out).toContain('| 1 | ');
    expect(out).toContain('- **Tasks:** 1 completed, 1 failed, 2 skipped (of 4)');
  });

  it('counts an attempt still running once in its task’s row', () => {
    const run = groupRuns(journal().slice(0, 4))[0]!; // run-started, assumption, two task-started
    const rows = renderReport({ run, plan: planAfterRecordedRun(), planIsOfRun: false }).split('\n');
    const attemptsCell = (task: number) =>
      rows
        .find((l) => l.startsWith(`| ${task} | `))
        ?.split('|')[4]
        ?.trim();
    expect([attemptsCell(0), attemptsCell(1)]).toEqual(['1', '1']);
  });
});

describe('archives and history', () => {
  it('reads the time in archive names', () => {
    const t = Date.UTC(2026, 10, 22, 1, 4, 40);
    for (const name of [
      '2026-11-22T01-04-40Z-plan.json',
      '2026-11-22T01:04:40Z-plan.json',
      '2026-11-22T01-04-40-000Z-plan.json',
      '20261122T010440Z-plan.json',
      `${t}-plan.json`,
      `/a/b/${t / 1000}-plan.json`,
    ]) {
      expect(parseArchiveStamp(name), name).toBe(t);
    }
    expect(parseArchiveStamp('latest-plan.json')).toBeNull();
  });

  it('matches an archive to the latest run with its goal started before it', () => {
    const runs = groupRuns([...journal('r1', T0), ...journal('r2', T0 + 3_600_000)]);
    const plan = planAfterRecordedRun();
    const path = '.design/history/x-plan.json';
    expect(runForArchive({ path, plan, archivedMs: T0 + 200_000 }, runs)?.runId).toBe('r1');
    expect(runForArchive({ path, plan, archivedMs: T0 + 3_800_000 }, runs)?.runId).toBe('r2');
    expect(runForArchive({ path, plan, archivedMs: T0 - 1 }, runs)?.runId).toBe('r1'); // names hold whole seconds
    expect(runForArchive({ path, plan, archivedMs: T0 - 1000 }, runs)).toBeNull();
    expect(runForArchive({ path, plan: { ...plan, goal: 'other' }, archivedMs: T0 + 200_000 }, runs)).toBeNull();
  });

  it('prefers the run whose last message names the archive', () => {
    const named = journal('r1', T0).map((e) =>
      e.type === 'run-finished' ? { ...e, message: 'all done; the plan was moved to /x/.design/history/x-plan.json' } : e,
    );
    const runs = groupRuns([...named, ...journal('r2', T0 + 3_600_000)]);
    expect(runForArchive({ path: '.design/history/x-plan.json', plan: planAfterRecordedRun(), archivedMs: T0 + 3_800_000 }, runs)?.runId).toBe('r1');
  });

  it('lists runs and unmatched archives, oldest first', () => {
    const runs = groupRuns([...journal('r1', T0), ...journal('r2', T0 + 3_600_000).slice(0, 3)]);
    const plan = planAfterRecordedRun();
    const entries = historyEntries(
      runs,
      [
        { path: '.design/history/a-plan.json', plan, archivedMs: T0 + 200_000 },
        { path: '.design/history/old-plan.json', plan: { ...plan, goal: 'Old goal' }, archivedMs: T0 - 86_400_000 },
      ],
      { livePid: 4242, now: T0 + 3_700_000 },
    );
    expect(entries).toEqual([
      {
        runId: null,
        startedAt: '2026-11-21T01:02:03Z',
        goal: 'Old goal',
        outcome: 'archived',
        reason: null,
        durationMs: null,
        costUsd: 0.67,
        costUnknownFor: 0,
        usage: expect.objectContaining({ unknown: 0 }),
        archive: '.design/history/old-plan.json',
      },
      {
        runId: 'r1',
        startedAt: '2026-11-22T01:02:03Z',
        goal: 'Build the parser',
        outcome: 'incomplete',
        reason: 'failures',
        durationMs: 151_000,
        costUsd: 0.67,
        costUnknownFor: 0,
        usage: expect.objectContaining({ unknown: 0 }),
        archive: '.design/history/a-plan.json',
      },
      {
        runId: 'r2',
        startedAt: '2026-11-22T02:02:03Z',
        goal: 'Build the parser',
        outcome: 'running',
        reason: null,
        durationMs: 100_000,
        costUsd: 0,
        costUnknownFor: 0,
        usage: expect.objectContaining({ unknown: 0 }),
        archive: null,
      },
    ]);
  });
});

describe('a failure reason in the report', () => {
  it('keeps what failed and the last lines of the output, saying how much was cut and where all of it is', () => {
    const output = Array.from({ length: 60 }, (_, i) => `output line ${i}`);
    const reason = ['acceptance check failed (tests): `npm test` exited 1:', ...output].join('\n');
    expect(clipReason(reason, 'see the log').split('\n')).toEqual([
      'acceptance check failed (tests): `npm test` exited 1:',
      '… 55 lines cut: see the log …',
      ...output.slice(-5),
    ]);
  });

  it('leaves a short reason whole, and cuts a very long line', () => {
    const short = 'the worker reported FAILED: no\nsecond\nthird';
    expect(clipReason(short, 'x')).toBe(short);
    const [line] = clipReason('x'.repeat(5000), 'x').split('\n');
    expect(line!.length).toBeLessThanOrEqual(300);
  });
});
