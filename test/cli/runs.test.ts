// plan.ts status (lock, running tasks, cost), report and history, on files on disk.

import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openJournal } from '../../src/adapters/store/journal.ts';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import type { RunEvent, RunEventBody } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { ev, LONG_SUBJECT, recordedRun, RUN_ID, T0 } from '../support/events.ts';
import { planAfterRecordedRun } from '../support/report-plan.ts';

let dir: string;
let planPath: string;
let out: string[];
let errs: string[];
const io = (): Io => ({ out: (t) => out.push(t), err: (t) => errs.push(t), cwd: dir, env: {}, isTTY: false, columns: 200 });
const run = (...argv: string[]) => runProgram('plan.ts', planCommands, argv, io());

const writePlan = (plan: Plan) => writeFileSync(planPath, `${JSON.stringify(plan, null, 2)}\n`);
async function writeJournal(events: RunEvent[]) {
  const j = openJournal(planPath);
  for (const e of events) j.append(e);
  await j.close();
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'foreman-runs-'));
  await mkdir(path.join(dir, '.design'));
  planPath = path.join(dir, '.design', 'plan.json');
  out = [];
  errs = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A second run, still going: started by this process (which also holds the lock). */
function liveRun(): RunEvent[] {
  const t = Date.now() - 30_000;
  return [
    ev(
      t,
      {
        type: 'run-started',
        goal: 'Build the parser',
        planPath: '.design/plan.json',
        taskCount: 4,
        maxDepth: 3,
        resumed: true,
        concurrency: 2,
        schedule: 'rounds',
        pid: process.pid,
      },
      'run-live',
    ),
    ev(t + 1000, { type: 'task-started', task: 1, subject: LONG_SUBJECT, attempt: 3, model: 'opus', logPath: '.design/worker-1.log' }, 'run-live'),
  ];
}

describe('plan.ts status', () => {
  it('keeps its output when no run is going', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal(recordedRun().filter((e) => e.type !== 'task-activity'));
    expect(await run('status', '--json')).toBe(0);
    const s = JSON.parse(out[0]!);
    expect(s).toMatchObject({ goal: 'Build the parser', counts: { completed: 1, failed: 1, skipped: 2 }, lock: null, running: [], run: null });
    expect(s.costUsd).toBeCloseTo(0.67);
    expect(s.tasks[0]).toEqual({ index: 0, subject: 'Add parser', status: 'completed', attempts: 1, blockedBy: [], result: 'parser added', reviews: [] });
    out = [];
    expect(await run('status')).toBe(0);
    expect(out[0]).toBe('Goal: Build the parser');
    expect(out.at(-1)).toBe('Cost so far: $0.67');
  });

  it('shows the run holding the lock and its running tasks', async () => {
    const plan = planAfterRecordedRun();
    plan.tasks[1]!.status = 'in_progress';
    writePlan(plan);
    await writeJournal([...recordedRun().filter((e) => e.type !== 'task-activity'), ...liveRun()]);
    const startedAt = new Date(Date.now() - 60_000).toISOString();
    writeFileSync(path.join(dir, '.design', 'plan.lock'), JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt, command: 'execute' }));

    expect(await run('status', '--json')).toBe(0);
    const s = JSON.parse(out[0]!);
    expect(s.lock).toEqual({ state: 'live', pid: process.pid, host: os.hostname(), startedAt, command: 'execute' });
    expect(s.running).toHaveLength(1);
    expect(s.running[0]).toMatchObject({ index: 1, subject: LONG_SUBJECT, attempt: 3, model: 'opus' });
    expect(s.running[0].elapsedMs).toBeGreaterThanOrEqual(29_000);
    expect(s.run).toMatchObject({ runId: 'run-live', pid: process.pid, live: true, costUsd: 0 });

    out = [];
    expect(await run('status')).toBe(0);
    const text = out.join('\n');
    expect(text).toContain(`Run in progress: pid ${process.pid} on host ${os.hostname()} holds the lock since ${startedAt} (1m00s): execute`);
    expect(text).toMatch(/Running \(1\):\n#\s+subject\s+attempt\s+model\s+elapsed\n[─ ]+\n1\s+Write the lexer.*\s+3\s+opus\s+\d+s$/m);
    expect(text).toContain('Cost so far: $0.67 ($0.00 in run run-live)');

    // With hosts (--host), where each running task works.
    const placed = liveRun().map((e) => (e.type === 'task-started' ? { ...e, host: 'build1', slot: 2 } : e));
    await writeJournal(placed.map((e) => ({ ...e, runId: 'run-placed' })));
    out = [];
    expect(await run('status')).toBe(0);
    expect(out.join('\n')).toMatch(
      /Running \(1\):\n#\s+subject\s+attempt\s+model\s+host\s+elapsed\n[─ ]+\n1\s+Write the lexer.*\s+3\s+opus\s+build1:2\s+\d+s$/m,
    );
  });

  it('says what a rate or usage limit holds the running run back for, as its last limit event says it now', async () => {
    const plan = planAfterRecordedRun();
    plan.tasks[1]!.status = 'in_progress';
    writePlan(plan);
    const inAMinute = new Date(Date.now() + 60_000);
    const inThreeHours = new Date(Date.now() + 3 * 3_600_000);
    const limit = (change: 'hold' | 'serving', extra: object) =>
      ev(
        Date.now() - 1000,
        {
          type: 'limit',
          change,
          limit: 'rate-limit',
          working: 1,
          concurrency: 2,
          until: null,
          resetAt: null,
          refusals: 3,
          task: 1,
          message: 'as it was then',
          ...extra,
        } as RunEventBody,
        'run-live',
      );
    const lock = () =>
      writeFileSync(
        path.join(dir, '.design', 'plan.lock'),
        JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString(), command: 'execute' }),
      );
    const pad = (n: number) => String(n).padStart(2, '0');
    await writeJournal([...liveRun(), limit('hold', { until: inAMinute.toISOString() })]);
    lock();
    expect(await run('status')).toBe(0);
    // A minute before midnight, the hold ends tomorrow: the time then carries its date ("Nov 28 00:00:30").
    const at = `${pad(inAMinute.getHours())}:${pad(inAMinute.getMinutes())}:${pad(inAMinute.getSeconds())}`;
    const day = new Date().toDateString() === inAMinute.toDateString() ? '' : `${inAMinute.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} `;
    expect(out).toContain(`Waiting: rate-limited: 1 of 2 workers until ${day}${at}`);
    out = [];
    await writeJournal([...liveRun(), limit('hold', { limit: 'usage-limit', until: inThreeHours.toISOString(), resetAt: inThreeHours.toISOString() })]);
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).run.waiting).toMatch(/^waiting for the usage limit to reset at (\w{3} \d+ )?\d\d:\d\d$/);
    // Held back no more, and at full width again: nothing to say.
    out = [];
    await writeJournal([...liveRun(), limit('serving', { working: 2 })]);
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).run.waiting).toBeNull();
    // The API out of reach: since when, and when one worker tries it again.
    out = [];
    const since = new Date(Date.now() - 90_000);
    await writeJournal([...liveRun(), limit('hold', { limit: 'api-unreachable', until: inAMinute.toISOString(), since: since.toISOString() })]);
    expect(await run('status')).toBe(0);
    const clock = (d: Date) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    const sinceDay = new Date().toDateString() === since.toDateString() ? '' : `${since.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} `;
    expect(out).toContain(`Waiting: waiting for the API to answer (out of reach since ${sinceDay}${clock(since)}): one worker tries again at ${day}${at}`);
    // A run that drains waits for nothing, whatever its last hold said.
    out = [];
    await writeJournal([
      ...liveRun(),
      limit('hold', { limit: 'usage-limit', until: inThreeHours.toISOString(), resetAt: inThreeHours.toISOString() }),
      ev(Date.now() - 500, { type: 'draining', running: [1] }, 'run-live'),
    ]);
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).run.waiting).toBeNull();
  });

  it('says what stopped the last run (exit 75: a limit, the API out of reach, every host down) and when to run it again', async () => {
    writePlan(planAfterRecordedRun());
    const stopped = (runId: string, at: number, body: Partial<Extract<RunEventBody, { type: 'run-finished' }>>) => [
      ev(
        at - 60_000,
        {
          type: 'run-started',
          goal: 'g',
          planPath: '.design/plan.json',
          taskCount: 4,
          maxDepth: 1,
          resumed: true,
          concurrency: 2,
          schedule: 'continuous',
          pid: 2 ** 22 + 7,
        },
        runId,
      ),
      ev(
        at,
        {
          type: 'run-finished',
          outcome: 'incomplete',
          exitCode: 75,
          counts: { pending: 2 },
          usage: { costUsd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
          durationMs: 60_000,
          reason: 'limited',
          message: 'the words of the run',
          ...body,
        } as RunEventBody,
        runId,
      ),
    ];
    const inTwoHours = new Date(Date.now() + 2 * 3_600_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    const day = new Date().toDateString() === inTwoHours.toDateString() ? '' : `${inTwoHours.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} `;
    await writeJournal(stopped('run-usage', Date.now() - 1000, { resumeAfter: inTwoHours.toISOString(), message: 'the usage limit resets at …' }));
    expect(await run('status')).toBe(0);
    const said = out.find((l) => l.startsWith('The last run (run-usage) stopped at '))!;
    expect(said).toMatch(/^The last run \(run-usage\) stopped at \S+ \(exit 75\) because of a rate or usage limit: the usage limit resets at …$/);
    expect(out).toContain(`Run the same command again after ${day}${pad(inTwoHours.getHours())}:${pad(inTwoHours.getMinutes())} to go on.`);
    // Once the reset has passed, now.
    out = [];
    await writeJournal(stopped('run-usage-past', Date.now() - 1000, { resumeAfter: new Date(Date.now() - 500).toISOString() }));
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).stopped).toMatchObject({ runId: 'run-usage-past', reason: 'limited', runAgain: 'now (the limit has lifted)' });
    out = [];
    await writeJournal(
      stopped('run-away', Date.now() - 1000, { reason: 'api-unreachable', message: 'could not reach https://api.anthropic.com since 10:00:00 (…)' }),
    );
    expect(await run('status', '--json')).toBe(0);
    const json = JSON.parse(out[0]!);
    expect([json.run, json.stopped]).toEqual([
      null,
      {
        runId: 'run-away',
        finishedAt: expect.any(String),
        reason: 'api-unreachable',
        message: 'could not reach https://api.anthropic.com since 10:00:00 (…)',
        resumeAfter: null,
        runAgain: 'when the API answers',
      },
    ]);
    // Every host down (--host): run again once a host is back.
    out = [];
    await writeJournal(stopped('run-hosts', Date.now() - 1000, { reason: 'hosts-down', message: 'every host was down for longer than --limit-wait (…)' }));
    expect(await run('status')).toBe(0);
    expect(out.find((l) => l.startsWith('The last run (run-hosts) stopped at '))).toMatch(
      /^The last run \(run-hosts\) stopped at \S+ \(exit 75\) because every host was down: every host was down for longer than --limit-wait \(…\)$/,
    );
    expect(out).toContain('Run the same command again once a host is back to go on.');
    // A run after it that ended another way: nothing stopped the plan for a limit any more.
    out = [];
    await writeJournal(stopped('run-done', Date.now(), { reason: 'failures', exitCode: 1, message: '2 of 4 tasks completed' }));
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).stopped).toBeNull();
  });

  it('says when the last run died', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal(liveRun().map((e) => ({ ...e, pid: 2 ** 22 + 12345 }) as RunEvent));
    expect(await run('status')).toBe(0);
    expect(out.join('\n')).toMatch(/The last run \(run-live, started .*\) did not finish: it crashed or was killed\./);
  });
});

describe('plan.ts report', () => {
  it('reports the latest run as Markdown', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal(recordedRun());
    expect(await run('report')).toBe(0);
    const md = out.join('\n');
    expect(md).toContain(`# foreman run ${RUN_ID}`);
    expect(md).toContain('| 0 | Add parser | completed | 1 | 1m00s | $0.12 | sonnet | `abcdef1234` |');
    expect(md).toContain('```mermaid\ngantt\n');
    expect(md).toContain('- **Plan:** .design/plan.json');
  });

  it('reports a given run, by id or unique prefix', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal([...recordedRun('r-one', T0), ...recordedRun('r-two', T0 + 3_600_000)]);
    expect(await run('report', '--run', 'r-o')).toBe(0);
    expect(out[0]).toMatch(/^# foreman run r-one/);
    expect(await run('report', '--run', 'r-')).toBe(2);
    expect(errs[0]).toMatch(/matches 2 runs/);
    expect(await run('report', '--run', 'zzz')).toBe(2);
    expect(errs[1]).toMatch(/no such run/);
  });

  it('reports an archived plan together with the journal', async () => {
    writePlan({ ...planAfterRecordedRun(), goal: 'A later goal' });
    await writeJournal(recordedRun());
    await mkdir(path.join(dir, '.design', 'history'));
    const archived = path.join(dir, '.design', 'history', '2026-11-22T01-05-00Z-plan.json');
    writeFileSync(archived, JSON.stringify(planAfterRecordedRun()));
    expect(await run('report', '--archived', archived)).toBe(0);
    const md = out.join('\n');
    expect(md).toContain(`# foreman run ${RUN_ID}`);
    expect(md).toContain('- **Plan:** .design/history/2026-11-22T01-05-00Z-plan.json (archived)');
    expect(md).toContain('| 1 | ');
  });

  it('says there is nothing to report without a journal', async () => {
    writePlan(planAfterRecordedRun());
    expect(await run('report')).toBe(2);
    expect(errs[0]).toMatch(/no runs recorded in .*events\.jsonl/);
  });

  it('notes damaged journal lines on stderr', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal(recordedRun());
    writeFileSync(path.join(dir, '.design', 'events.jsonl'), '{"torn', { flag: 'a' });
    expect(await run('report')).toBe(0);
    expect(errs).toEqual([expect.stringMatching(/1 line skipped \(the last one cut off mid-write, 0 not run events\)/)]);
  });
});

describe('plan.ts history', () => {
  it('lists past runs and archives', async () => {
    writePlan(planAfterRecordedRun());
    await writeJournal([...recordedRun('r-one', T0), ...recordedRun('r-two', T0 + 3_600_000)]);
    await mkdir(path.join(dir, '.design', 'history'));
    writeFileSync(path.join(dir, '.design', 'history', '2026-11-20T00-00-00Z-plan.json'), JSON.stringify({ ...planAfterRecordedRun(), goal: 'Earlier' }));
    writeFileSync(path.join(dir, '.design', 'history', 'broken-plan.json'), '{');
    expect(await run('history', '--json')).toBe(0);
    const { runs } = JSON.parse(out[0]!);
    expect(runs.map((r: { runId: string | null; outcome: string }) => [r.runId, r.outcome])).toEqual([
      [null, 'archived'],
      ['r-one', 'incomplete'],
      ['r-two', 'incomplete'],
    ]);
    expect(errs).toEqual([expect.stringMatching(/skipping .*broken-plan\.json/)]);
    out = [];
    expect(await run('history')).toBe(0);
    const lines = out.join('\n').split('\n');
    expect(lines[0]).toMatch(/^run\s+started\s+outcome\s+duration\s+cost\s+goal\s+archive$/);
    expect(lines[2]).toMatch(/^—\s+2026-11-20T00:00:00Z\s+archived\s+—\s+\$0\.67\s+Earlier\s+\.design\/history\/2026-11-20T00-00-00Z-plan\.json$/);
    expect(lines[3]).toMatch(/^r-one\s+2026-11-22T01:02:03Z\s+incomplete \(failures\)\s+2m31s\s+\$0\.67\s+Build the parser\s+—$/);
    expect(lines.at(-1)).toBe('3 runs, $2.01 in all');
  });

  it('says when there is no history', async () => {
    writePlan(planAfterRecordedRun());
    expect(await run('history')).toBe(0);
    expect(out[0]).toMatch(/^No runs yet/);
  });
});
