import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { Layout } from '../../src/core/command-hint.ts';
import type { DryRunEvent, RunEvent, StopReason } from '../../src/core/report/events.ts';
import { createPlainView, jsonView } from '../../src/ui/render.ts';
import { createLiveView } from '../../src/ui/live-view.ts';
import { fitSegments } from '../../src/ui/segments.ts';
import { describeEvent, sanitize } from '../../src/ui/event-text.ts';
import { ev, LONG_SUBJECT, recordedRun, RUN_ID, T0, usage } from '../support/events.ts';

const SGR = /\x1b\[[0-9;]*m/;
const checkout: Layout = { kind: 'checkout' };

/**
 * A tiny terminal: applies text, `\r`, `\n`, cursor-up (`ESC[nA`), clear-line (`ESC[2K`) and
 * clear-to-end (`ESC[J`); SGR codes are dropped. Fails on any other escape sequence.
 */
class Screen {
  lines: string[] = [''];
  row = 0;
  col = 0;
  frames = 0;
  raw = '';
  write = (chunk: string): void => {
    this.frames++;
    this.raw += chunk;
    let i = 0;
    while (i < chunk.length) {
      const c = chunk[i]!;
      if (c === '\x1b') {
        const m = /^\x1b\[(\d*)([A-Za-z])/.exec(chunk.slice(i));
        if (!m) throw new Error(`bad escape at ${JSON.stringify(chunk.slice(i, i + 8))}`);
        const [all, n, cmd] = m;
        if (cmd === 'A') this.row = Math.max(0, this.row - Number(n || 1));
        else if (cmd === 'K' && n === '2') this.lines[this.row] = '';
        else if (cmd === 'J' && (n === '' || n === '0')) {
          this.lines[this.row] = (this.lines[this.row] ?? '').slice(0, this.col);
          this.lines.length = this.row + 1;
        } else if (cmd !== 'm') throw new Error(`unexpected escape ${JSON.stringify(all)}`);
        i += all!.length;
        continue;
      }
      if (c === '\r') this.col = 0;
      else if (c === '\n') {
        this.row++;
        this.col = 0;
        while (this.lines.length <= this.row) this.lines.push('');
      } else {
        const chars = [...(this.lines[this.row] ?? '')];
        while (chars.length < this.col) chars.push(' ');
        chars[this.col] = c;
        this.lines[this.row] = chars.join('');
        this.col++;
      }
      i++;
    }
  };
  /** What is on screen, without the empty line the cursor sits on. */
  get text(): string[] {
    return this.lines.slice(0, this.row + (this.lines[this.row] === '' ? 0 : 1));
  }
}

/** Feed events to a live view on a fake clock that follows the events' timestamps. */
function playLive(columns: number, color: boolean, events: RunEvent[] = recordedRun(), stopAt?: (e: RunEvent) => boolean) {
  const screen = new Screen();
  let clock = T0;
  const view = createLiveView({ write: screen.write, columns, color, layout: checkout, now: () => clock });
  for (const e of events) {
    clock = Date.parse(e.at);
    view.update(e);
    if (stopAt?.(e)) break;
  }
  return { screen, view, setClock: (t: number) => (clock = t) };
}

const isActivityOf = (task: number) => (e: RunEvent) => e.type === 'task-activity' && e.task === task;
const width = (s: string) => [...s].length;

describe('live view', () => {
  it('shows one row per running task with elapsed time, latest activity and cost, then the counts', () => {
    const { screen } = playLive(120, false, recordedRun(), isActivityOf(1));
    expect(screen.text).toEqual([
      '• run run-20261122-010203 started: Build the parser (4 tasks, concurrency 2, rounds schedule, pid 4242)',
      '▸ 0  Add parser                                    1s   $0.05  Edit src/parser.ts',
      '▸ 1  Write the lexer: tokens #1; numbers, st…      1s   $0.02  Bash(npm test -- --run lexer) with a second line',
      '2 running · 0 completed · 0 failed · 0 skipped · 2 pending · 0 rounds committed · $0.07 · 2s',
    ]);
  });

  it('says what a limit holds the run back for: a new hold above, the wait in the footer until it ends', () => {
    const started = recordedRun().slice(0, 3);
    const at = Date.parse(started.at(-1)!.at) + 1000;
    const until = new Date(at + 90_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    const hold: RunEvent = {
      type: 'limit',
      change: 'hold',
      limit: 'rate-limit',
      working: 1,
      concurrency: 2,
      until: until.toISOString(),
      resetAt: null,
      refusals: 1,
      task: 1,
      message: 'rate-limited: 1 of 2 workers until then',
      runId: RUN_ID,
      at: new Date(at).toISOString(),
    };
    const { screen, view, setClock } = playLive(160, false, [...started, hold]);
    const clock = `${pad(until.getHours())}:${pad(until.getMinutes())}:${pad(until.getSeconds())}`;
    expect(screen.text).toContain('! rate-limited: 1 of 2 workers until then (task 1 refused; 1 refusal so far)');
    expect(screen.text.at(-1)).toMatch(new RegExp(`· rate-limited: 1 of 2 workers until ${clock} · 0 rounds committed`));
    // Past the hold: still one of two at once, until responses raise it.
    setClock(until.getTime() + 1);
    view.tick();
    expect(screen.text.at(-1)).toMatch(/· rate-limited: 1 of 2 workers · 0 rounds committed/);
  });

  it("with hosts of two accounts, says each account's wait by its hosts: one account serving again leaves the other's hold said", () => {
    const started = recordedRun().slice(0, 3);
    const at = Date.parse(started.at(-1)!.at) + 1000;
    const until = new Date(at + 90_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    const clock = `${pad(until.getHours())}:${pad(until.getMinutes())}:${pad(until.getSeconds())}`;
    const limit = (hosts: string[], change: 'hold' | 'serving', held: boolean, seconds: number): RunEvent => ({
      type: 'limit',
      change,
      limit: 'rate-limit',
      working: held ? 1 : 2,
      concurrency: 2,
      until: held ? until.toISOString() : null,
      resetAt: null,
      refusals: 1,
      task: held ? 1 : null,
      message: `the account of ${hosts.join(', ')}: ${held ? 'rate-limited: 1 of 2 workers until then' : 'the API serves again: 2 of 2 workers'}`,
      hosts,
      runId: RUN_ID,
      at: new Date(at + seconds * 1000).toISOString(),
    });
    const { screen } = playLive(200, false, [
      ...started,
      limit(['build2'], 'hold', true, 0),
      limit(['local', 'build1'], 'hold', true, 1),
      limit(['local', 'build1'], 'serving', false, 2),
    ]);
    expect(screen.text).toContain('! the account of build2: rate-limited: 1 of 2 workers until then (task 1 refused; 1 refusal so far)');
    expect(screen.text.at(-1)).toContain(`· build2: rate-limited: 1 of 2 workers until ${clock} ·`);
    expect(screen.text.at(-1)).not.toContain('local, build1:');
  });

  it('says while the API is out of reach since when, and when one worker tries it again; once the run drains it says it waits no more', () => {
    const started = recordedRun().slice(0, 3);
    const at = Date.parse(started.at(-1)!.at) + 1000;
    const until = new Date(at + 30_000);
    const pad = (n: number) => String(n).padStart(2, '0');
    const clock = (d: Date) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    const hold: RunEvent = {
      type: 'limit',
      change: 'hold',
      limit: 'api-unreachable',
      working: 1,
      concurrency: 2,
      until: until.toISOString(),
      resetAt: null,
      since: new Date(at).toISOString(),
      refusals: 1,
      task: 1,
      message: 'waiting for the API to answer: as it was then',
      runId: RUN_ID,
      at: new Date(at).toISOString(),
    };
    const { screen, view, setClock } = playLive(200, false, [...started, hold]);
    expect(screen.text).toContain("! waiting for the API to answer: as it was then (task 1's request got no answer)");
    const waiting = `waiting for the API to answer (out of reach since ${clock(new Date(at))}): one worker tries again at ${clock(until)}`;
    expect(screen.text.at(-1)).toContain(`· ${waiting} ·`);
    // The hold is over and one worker tries the API: said until a response is served.
    setClock(until.getTime() + 1);
    view.tick();
    expect(screen.text.at(-1)).toContain(`· waiting for the API to answer (out of reach since ${clock(new Date(at))}): one worker tries it ·`);
    view.update({ type: 'draining', running: [1], runId: RUN_ID, at: new Date(until.getTime() + 2).toISOString() });
    expect(screen.text.at(-1)).not.toContain('waiting');
    expect(screen.text.at(-1)).toContain('· draining ·');
  });

  it('prints finished tasks and notices above the block and keeps the block at the bottom', () => {
    const { screen, view } = playLive(160, false);
    view.close();
    expect(screen.text).toEqual([
      '• run run-20261122-010203 started: Build the parser (4 tasks, concurrency 2, rounds schedule, pid 4242)',
      '✓ task 0 completed (attempt 1, 1m00s, $0.12): Add parser',
      '● round 1 committed (abcdef1234): tasks 0',
      `↻ task 1 failed, will retry (attempt 1, 1m30s, $0.30): ${LONG_SUBJECT}`,
      '    acceptance check failed (tests): `npm test` exited 1: FAIL lexer.test.ts',
      `✗ task 1 failed (attempt 2, 58s, $0.25): ${LONG_SUBJECT}`,
      '    the worker reported FAILED: cannot make the tests pass',
      '    log: .design/worker-1.log',
      '- task 2 skipped: depends on task 1 (Write the lexer), which is failed',
      '- task 3 skipped: depends on task 1 (Write the lexer), which is failed (through task 2)',
      '• warning: task 1 changed files it did not declare: notes.txt',
      '• run run-20261122-010203 finished: incomplete (failures) in 2m31s, $0.67; 1 completed, 1 failed, 2 skipped — 1 of 4 tasks completed',
      '0 running · 1 completed · 1 failed · 2 skipped · 0 pending · 1 round committed · $0.67 · 2m31s',
    ]);
  });

  for (const columns of [60, 30]) {
    for (const color of [false, true]) {
      it(`fits every line in ${columns} columns (color ${color ? 'on' : 'off'})`, () => {
        const { screen, view } = playLive(columns, color, recordedRun(), isActivityOf(1));
        const visible = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');
        for (const line of screen.raw.split('\n')) {
          const text = visible(line.replace(/\x1b\[\d*[AKJ]/g, '').replace(/\r/g, ''));
          expect(width(text), JSON.stringify(text)).toBeLessThanOrEqual(columns);
        }
        if (color) expect(screen.raw).toMatch(SGR);
        else expect(screen.raw).not.toMatch(SGR);
        const rows = screen.text.map(visible);
        if (columns >= 40) {
          expect(rows).toEqual([
            '• run run-20261122-010203 started: Build the parser (4 tas…',
            '▸ 0  Add parser               1s   $0.05  Edit src/parser.…',
            '▸ 1  Write the lexer: t…      1s   $0.02  Bash(npm test --…',
            '0 rounds committed · $0.07 · 2s',
            '2 running · 0 completed · 0 failed · 0 skipped · 2 pending',
          ]);
        } else {
          // Compact: index, elapsed, subject; then a one-line footer.
          expect(rows.slice(-4)).toEqual(['0 1s Add parser', '1 1s Write the lexer: tokens…', '$0.07 2s r0', '0 done 0 fail 0 skip 2 left']);
        }
        view.close();
      });
    }
  }

  it('redraws at most every 200 ms; tick() advances the clock display', () => {
    const events = recordedRun();
    const { screen, view, setClock } = playLive(80, false, events, isActivityOf(1));
    const before = screen.frames;
    // A burst of activity within 100 ms: no redraw.
    const t = Date.parse(events[5]!.at);
    for (let k = 1; k <= 10; k++) {
      setClock(t + k * 10);
      view.update(ev(t + k * 10, { type: 'task-activity', task: 0, text: `Edit file${k}.ts`, costUsd: 0.05 + k / 100 }));
    }
    expect(screen.frames).toBe(before);
    setClock(t + 150);
    view.tick();
    expect(screen.frames).toBe(before);
    setClock(t + 250);
    view.tick();
    expect(screen.frames).toBe(before + 1);
    expect(screen.text.some((l) => l.includes('Edit file10.ts') && l.includes('$0.15'))).toBe(true);
    // Nothing visible changed: no output.
    setClock(t + 450);
    view.tick();
    expect(screen.frames).toBe(before + 1);
    // A second later the elapsed times change.
    setClock(t + 1300);
    view.tick();
    expect(screen.frames).toBe(before + 2);
    expect(screen.text.at(-2)).toBe('0 rounds committed · $0.17 · 3s');
  });

  it('keeps control characters from workers off the terminal', () => {
    const events = recordedRun().slice(0, 4);
    events.push(ev(T0 + 3000, { type: 'task-activity', task: 0, text: 'Bash(printf "\x1b[31mred\x1b[2J")', costUsd: 0 }));
    const { screen } = playLive(100, false, events);
    expect(screen.text.find((l) => l.startsWith('▸ 0'))).toContain('Bash(printf " [31mred [2J")');
  });

  it('shows a drain: a line saying what finishes, and `draining` in the counts until the run ends', () => {
    const events = recordedRun();
    const { screen, view } = playLive(200, false, events, isActivityOf(1));
    const at = Date.parse(events.find(isActivityOf(1))!.at) + 100;
    view.update(ev(at, { type: 'draining', running: [0, 1] }));
    expect(screen.text).toContain(
      '! draining: tasks 0 and 1 finish; nothing new starts, and the run stops once their work is integrated and landed (Ctrl-C stops it now)',
    );
    expect(screen.text.at(-1)).toBe('2 running · 0 completed · 0 failed · 0 skipped · 2 pending · draining · 0 rounds committed · $0.07 · 2s');
    view.update(
      ev(at + 200, {
        type: 'run-finished',
        outcome: 'incomplete',
        reason: 'drained',
        exitCode: 1,
        counts: { pending: 2, in_progress: 0, completed: 2, failed: 0, blocked: 0, skipped: 0, awaiting_approval: 0 },
        usage: usage(0.07),
        durationMs: 2000,
        message: 'drained',
      }),
    );
    expect(screen.text.at(-1)).not.toContain('draining');
  });

  it('wraps the end of the run and warnings rather than cutting off what to do next', () => {
    const finished = recordedRun().find((e) => e.type === 'run-finished')!;
    const resume = `${finished.type === 'run-finished' ? finished.message : ''}. The plan keeps its state in .design/plan.json: run the same command again to resume`;
    const events = [
      recordedRun()[0]!,
      { ...finished, message: resume } as RunEvent,
      ev(Date.parse(finished.at), {
        type: 'notice',
        level: 'warning',
        message: `not landed: a file it would update has local changes: ${'src/a.ts '.repeat(8).trim()}; commit, stash or undo them`,
      }),
    ];
    const { screen } = playLive(60, false, events);
    const said = screen.text.slice(1, -2).join(' ').replace(/\s+/g, ' ');
    expect(said).toContain('run the same command again to resume');
    expect(said).toContain('commit, stash or undo them');
    for (const line of screen.text) expect(width(line), line).toBeLessThanOrEqual(60);
    // The start line is cut as before; none of the lines after it.
    expect(screen.text.slice(1).filter((line) => line.endsWith('…'))).toEqual([]);
  });

  it('with hosts, shows where each running task works, and says when a host goes down and comes back', () => {
    const screen = new Screen();
    const view = createLiveView({ write: screen.write, columns: 120, color: false, layout: checkout, now: () => T0, baseline: { pending: 2 } });
    view.update(ev(T0, { type: 'task-started', task: 0, subject: 'Parse', attempt: 1, model: 'opus', logPath: 'l', host: 'build1', slot: 2 }));
    expect(screen.text.some((line) => /^▸ 0 {2}Parse .* build1:2 starting$/.test(line))).toBe(true);
    view.update(
      ev(T0, {
        type: 'host-down',
        host: 'build1',
        reason: 'ssh exited 255',
        until: '2026-11-22T01:03:00.000Z',
        faults: 1,
        lost: [0],
        message: 'host build1 is down (ssh exited 255): task 0 back to pending, no attempt spent; tried again after 2026-11-22T01:03:00.000Z',
      }),
    );
    view.update(ev(T0, { type: 'host-up', host: 'build1', message: "host build1 works again (task 1's worker finished there)" }));
    const said = screen.text.join('\n');
    expect(said).toContain('host build1 is down (ssh exited 255): task 0 back to pending');
    expect(said).toContain('host build1 works again');
    expect(describeEvent(ev(T0, { type: 'task-resumed', task: 0, subject: 'Parse', attempt: 1, logPath: 'l', host: 'build1', slot: 2 }), checkout)).toBe(
      'task 0 resumed (attempt 1, on build1 slot 2): its worker goes on with its conversation: Parse',
    );
  });

  it('counts the tasks of the plan from its first frame, before the run has started', () => {
    const screen = new Screen();
    const view = createLiveView({ write: screen.write, columns: 100, color: false, layout: checkout, now: () => T0, baseline: { pending: 6 } });
    // What a run says before run-started (the probe's notices, a lock taken over) draws the first frame.
    view.update(ev(T0, { type: 'notice', level: 'info', message: 'probe passed' }));
    expect(screen.text.at(-1)).toBe('0 running · 0 completed · 0 failed · 0 skipped · 6 pending · 0 rounds committed · $0.00 · 0s');
  });

  it('shows the last round committed, never one the lines above have not said, up to the end', () => {
    const screen = new Screen();
    const view = createLiveView({ write: screen.write, columns: 200, color: false, layout: checkout, now: () => T0, baseline: { pending: 2 } });
    const footer = () => screen.text.at(-1)!.replace(/ · \$.*$/, '');
    view.update(
      ev(T0, { type: 'run-started', goal: 'g', planPath: 'p', taskCount: 2, maxDepth: 1, resumed: false, concurrency: 2, schedule: 'continuous', pid: 1 }),
    );
    expect(footer()).toMatch(/ · 0 rounds committed$/);
    for (const round of [1, 2]) {
      view.update(ev(T0 + round, { type: 'round-committed', round, commit: `${round}`.repeat(40), tasks: [round - 1] }));
      expect(screen.text.at(-2)).toMatch(new RegExp(`^● round ${round} committed`));
      expect(footer()).toMatch(new RegExp(` · ${round} rounds? committed$`));
    }
    view.update(
      ev(T0 + 3, {
        type: 'run-finished',
        outcome: 'completed',
        reason: 'all-done',
        exitCode: 0,
        counts: { pending: 0, in_progress: 0, completed: 2, failed: 0, blocked: 0, skipped: 0, awaiting_approval: 0 },
        usage: usage(0),
        durationMs: 3,
        message: '',
      }),
    );
    expect(footer()).toMatch(/ · 2 rounds committed$/);
  });

  it('counts tasks finished before a resumed run', () => {
    const screen = new Screen();
    const view = createLiveView({ write: screen.write, columns: 100, color: false, layout: checkout, now: () => T0, baseline: { completed: 2, pending: 2 } });
    view.update(
      ev(T0, { type: 'run-started', goal: 'g', planPath: 'p', taskCount: 4, maxDepth: 1, resumed: true, concurrency: 1, schedule: 'rounds', pid: 1 }),
    );
    expect(screen.text.at(-1)).toBe('0 running · 2 completed · 0 failed · 0 skipped · 2 pending · 0 rounds committed · $0.00 · 0s');
  });
});

describe('plain view', () => {
  it('prints one timestamped line per event, without activity or control codes', () => {
    const out: string[] = [];
    const view = createPlainView({ write: (s) => out.push(s), layout: checkout, now: () => T0 });
    for (const e of recordedRun()) view.update(e);
    view.close();
    const text = out.join('');
    expect(text).not.toMatch(/\x1b/);
    expect(text.split('\n')).toEqual([
      '2026-11-22T01:02:03Z run run-20261122-010203 started: Build the parser (4 tasks, concurrency 2, rounds schedule, pid 4242)',
      '2026-11-22T01:02:03Z task 2 assumption holds (warning): node is installed',
      '2026-11-22T01:02:03Z task 0 started (attempt 1, sonnet): Add parser',
      `2026-11-22T01:02:03Z task 1 started (attempt 1, opus): ${LONG_SUBJECT}`,
      '2026-11-22T01:02:03Z task 0 completed (attempt 1, 1m00s, $0.12): Add parser',
      '2026-11-22T01:02:03Z round 1 committed (abcdef1234): tasks 0',
      '2026-11-22T01:02:03Z task 1 failed, will retry (attempt 1, 1m30s, $0.30): acceptance check failed (tests): `npm test` exited 1: FAIL lexer.test.ts (log: .design/worker-1.log)',
      `2026-11-22T01:02:03Z task 1 started (attempt 2, opus): ${LONG_SUBJECT}`,
      '2026-11-22T01:02:03Z task 1 failed (attempt 2, 58s, $0.25): the worker reported FAILED: cannot make the tests pass (log: .design/worker-1.log)',
      '2026-11-22T01:02:03Z task 2 skipped: depends on task 1 (Write the lexer), which is failed',
      '2026-11-22T01:02:03Z task 3 skipped: depends on task 1 (Write the lexer), which is failed (through task 2)',
      '2026-11-22T01:02:03Z warning: task 1 changed files it did not declare: notes.txt',
      '2026-11-22T01:02:03Z run run-20261122-010203 finished: incomplete (failures) in 2m31s, $0.67; 1 completed, 1 failed, 2 skipped — 1 of 4 tasks completed',
      '',
    ]);
  });

  it('describes the other events too', () => {
    const lines = [
      ev(T0, {
        type: 'task-finished',
        task: 4,
        subject: 'Gate',
        attempt: 1,
        outcome: 'awaiting_approval',
        durationMs: 5000,
        usage: usage(0.01),
        logPath: 'l',
        permissionDenials: 0,
      }),
      ev(T0, {
        type: 'task-finished',
        task: 5,
        subject: 'X',
        attempt: 1,
        outcome: 'requeued',
        reason: 'rate limited: slow down',
        durationMs: 1000,
        usage: usage(0),
        logPath: 'l',
        permissionDenials: 0,
      }),
      ev(T0, { type: 'round-committed', round: 2, tasks: [], commit: null }),
      ev(T0, { type: 'breaker', pendingCount: 6, wouldBeSkipped: 3 }),
      ev(T0, { type: 'budget-reached', costUsd: 5.02, limitUsd: 5 }),
      ev(T0, { type: 'stalled', kind: 'awaiting_approval', tasks: [4] }),
      ev(T0, { type: 'stalled', kind: 'deadlock', tasks: [6, 7] }),
      ev(T0, { type: 'interrupted', signal: 'SIGINT' }),
      ev(T0, { type: 'assumption-checked', task: 1, claim: 'has git', severity: 'blocking', passed: false, output: 'git: not found\n' }),
      ev(T0, { type: 'task-activity', task: 1, text: 'x', costUsd: 0 }),
      ev(T0, { type: 'task-started', task: 8, subject: 'Y', attempt: 1, model: 'sonnet', logPath: 'l', stack: [2, 3] }),
      ev(T0, {
        type: 'speculation-cancelled',
        task: 8,
        subject: 'Y',
        attempt: 1,
        stack: [2, 3],
        stage: 'running',
        reason: 'task 3, a candidate it was built on, broke the test command',
      }),
      ev(T0, {
        type: 'task-finished',
        task: 8,
        subject: 'Y',
        attempt: 1,
        outcome: 'cancelled',
        reason: 'speculation cancelled: task 3, a candidate it was built on, broke the test command',
        durationMs: 2000,
        usage: usage(0.02),
        logPath: 'l',
        permissionDenials: 0,
      }),
    ].map((event) => describeEvent(event, checkout));
    expect(lines).toEqual([
      'task 4 awaits approval (attempt 1, 5s, $0.01): Gate — run `npx tsx scripts/plan.ts approve 4`, `npx tsx scripts/plan.ts revise 4 --feedback …` or `npx tsx scripts/plan.ts reject 4 --reason …`',
      'task 5 requeued (attempt 1, 1s, $0.00): rate limited: slow down',
      'round 2: nothing to commit',
      'circuit breaker: 3 of 6 pending tasks would be skipped; stopping',
      'budget reached: spent $5.02 of $5.00; no new task starts',
      'waiting for approval of task 4 (`npx tsx scripts/plan.ts approve 4`, `npx tsx scripts/plan.ts revise 4 --feedback …` or `npx tsx scripts/plan.ts reject 4 --reason …`)',
      'stalled: tasks 6 and 7 pending but none can start',
      'interrupted by SIGINT; stopping workers',
      'task 1 assumption failed (blocking): has git — git: not found',
      null,
      'task 8 started (attempt 1, sonnet, on candidates 2 and 3): Y',
      'task 8: speculation cancelled while running: task 3, a candidate it was built on, broke the test command',
      'task 8 cancelled (attempt 1, 2s, $0.02): speculation cancelled: task 3, a candidate it was built on, broke the test command',
    ]);
  });
});

describe('json view', () => {
  it('writes each event as one JSON line, as it is', () => {
    const out: string[] = [];
    const view = jsonView({ write: (s) => out.push(s) });
    const events = recordedRun();
    for (const e of events) view.update(e);
    expect(out.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    expect(out.map((l) => JSON.parse(l))).toEqual(events);
  });
});

describe('event schema', () => {
  const schema = JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8'));
  const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

  it('accepts every recorded event', () => {
    for (const e of recordedRun()) expect(validate(e), `${e.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
  });

  it('rejects unknown types, missing fields and extra fields', () => {
    expect(validate({ type: 'nope', runId: RUN_ID, at: '2026-11-22T01:02:03Z' })).toBe(false);
    expect(validate({ type: 'interrupted', runId: RUN_ID, at: '2026-11-22T01:02:03Z' })).toBe(false);
    expect(validate({ type: 'interrupted', runId: RUN_ID, at: '2026-11-22T01:02:03Z', signal: 'SIGINT', extra: 1 })).toBe(false);
    expect(validate({ type: 'interrupted', runId: RUN_ID, at: 'yesterday', signal: 'SIGINT' })).toBe(false);
    expect(validate({ type: 'interrupted', runId: RUN_ID, at: '2026-11-22T01:02:03.456Z', signal: 'SIGINT' })).toBe(true);
  });

  it('accepts every reason a run stops for', () => {
    const reasons: Record<StopReason, true> = {
      'all-done': true,
      breaker: true,
      deadlock: true,
      awaiting_approval: true,
      budget: true,
      failures: true,
      interrupted: true,
      'agent-unavailable': true,
      'git-failed': true,
      'setup-failed': true,
      drained: true,
      limited: true,
      'api-unreachable': true,
      'hosts-down': true,
    };
    for (const reason of Object.keys(reasons)) {
      const finished = ev(T0, {
        type: 'run-finished',
        outcome: 'incomplete',
        reason: reason as StopReason,
        exitCode: 1,
        counts: {},
        usage: usage(0),
        durationMs: 0,
        message: '',
      });
      expect(validate(finished), `${reason}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('has one branch per event type', () => {
    const types = (schema.oneOf as Array<{ properties: { type: { const: string } } }>).map((b) => b.properties.type.const).sort();
    const all: Record<RunEvent['type'] | DryRunEvent['type'], true> = {
      'run-started': true,
      notice: true,
      'assumption-checked': true,
      'task-started': true,
      'review-ended': true,
      'speculation-cancelled': true,
      limit: true,
      'task-paused': true,
      'task-resumed': true,
      'host-down': true,
      'host-up': true,
      'task-activity': true,
      'task-finished': true,
      'task-skipped': true,
      'task-widened': true,
      'round-committed': true,
      'gate-started': true,
      'gate-finished': true,
      breaker: true,
      'budget-reached': true,
      stalled: true,
      interrupted: true,
      draining: true,
      'run-finished': true,
      'dry-run-plan': true,
      'dry-run-command': true,
      'dry-run-permissions': true,
      'dry-run-review': true,
      'dry-run-warning': true,
      'dry-run-host': true,
    };
    expect(types).toEqual(Object.keys(all).sort());
  });
});

describe('helpers', () => {
  it('fitSegments cuts to the width with an ellipsis and colours only when asked', () => {
    expect(fitSegments([{ text: 'abc' }, { text: 'defgh', style: 'red' }], 5, false)).toBe('abcd…');
    expect(fitSegments([{ text: 'abc' }, { text: 'de', style: 'red' }], 5, true)).toBe('abc\x1b[31mde\x1b[39m');
    expect(fitSegments([{ text: 'abcdef' }], 1, false)).toBe('…');
    expect(fitSegments([{ text: 'abcdef' }], 0, false)).toBe('');
  });
  it('sanitize removes control characters', () => {
    expect(sanitize('a\nb\x1b[0mc\td')).toBe('a b [0mc d');
  });
});
