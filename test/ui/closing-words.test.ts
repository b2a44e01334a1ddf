// What a run says of the work it set aside and of the way to go on: the task's line (plain and
// live), the run's Summary, the closing message (whole, however many commands it names), and
// counted nouns that agree.

import { describe, expect, it } from 'vitest';
import { summaryLines } from '../../src/cli/reporter.ts';
import type { Layout } from '../../src/core/command-hint.ts';
import type { RunEvent } from '../../src/core/report/events.ts';
import { listSome } from '../../src/core/format.ts';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { nextSteps, putBackCommands, resumeAdvice, runFinishedEvent } from '../../src/core/engine/run-lifecycle.ts';
import { createPlainView } from '../../src/ui/render.ts';
import { createLiveView } from '../../src/ui/live-view.ts';
import { describeEvent } from '../../src/ui/event-text.ts';
import { EngineRig, passed } from '../support/engine-rig.ts';
import { ev, T0, usage } from '../support/events.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const checkout: Layout = { kind: 'checkout' };
const COMMIT = '0123456789abcdef0123456789abcdef01234567';
const ID = COMMIT.slice(0, 12);
const COMMANDS = `\`git show --stat ${ID}\` lists them with the attempt's other files, \`git restore --source=${ID} -- <path>\` brings one back into your files`;

const completed = (setAside?: { paths: string[]; commit?: string }): RunEvent =>
  ev(T0, {
    type: 'task-finished',
    task: 3,
    subject: 'Add the parser',
    attempt: 1,
    outcome: 'completed',
    result: 'done',
    durationMs: 12_000,
    usage: usage(0.05),
    logPath: '.design/logs/worker-3.log',
    permissionDenials: 0,
    ...(setAside !== undefined ? { setAside } : {}),
  });

const task = (subject: string, extra: Partial<Task> = {}): Task => ({
  subject,
  blockedBy: [],
  metadata: { files: { create: [`${subject}.txt`], modify: [] } },
  ...extra,
});

/** A live view on a terminal of `columns`, fed `events`: the lines above its block of counts (its own rows, which fit the width), escape codes left out. */
function onScreen(columns: number, events: RunEvent[]): string[] {
  let out = '';
  const view = createLiveView({ write: (text) => (out += text), columns, color: false, layout: checkout, now: () => T0 });
  for (const event of events) view.update(event);
  view.close();
  return out
    .replace(/\x1b\[\d*[A-Za-z]/g, '')
    .split('\n')
    .filter((line) => line !== '' && !/ running · |rounds? committed · /.test(line));
}

describe('a task whose attempt set files aside', () => {
  it('says so on its line: a few paths, how many more, and the commands that read them back', () => {
    const paths = ['dist/index.js', 'dist/index.d.ts', 'test/__snapshots__/a.snap', 'coverage/lcov.info', 'package-lock.json'];
    expect(describeEvent(completed({ paths, commit: COMMIT }), checkout)).toBe(
      `task 3 completed (attempt 1, 12s, $0.05): Add the parser — set aside, not integrated: dist/index.js, dist/index.d.ts, test/__snapshots__/a.snap and 2 more (${COMMANDS})`,
    );
    expect(describeEvent(completed({ paths: ['stray.txt'], commit: COMMIT }), checkout)).toBe(
      `task 3 completed (attempt 1, 12s, $0.05): Add the parser — set aside, not integrated: stray.txt (${COMMANDS})`,
    );
    // Not kept (git could not write the commit): nothing to read back, and the line says so.
    expect(describeEvent(completed({ paths: ['a', 'b'] }), checkout)).toBe(
      'task 3 completed (attempt 1, 12s, $0.05): Add the parser — set aside, not integrated (and not kept): a and b',
    );
    expect(describeEvent(completed(), checkout)).toBe('task 3 completed (attempt 1, 12s, $0.05): Add the parser');
    // A run the person started from outside the repository names it, so the commands work where they are.
    const away: Layout = { kind: 'checkout', plan: '/work/my repo/.design/plan.json', repo: '/work/my repo' };
    expect(describeEvent(completed({ paths: ['stray.txt'], commit: COMMIT }), away)).toContain(
      `(\`git -C '/work/my repo' show --stat ${ID}\` lists them with the attempt's other files, \`git -C '/work/my repo' restore --source=${ID} -- <path>\` brings one back into your files)`,
    );
  });

  it('the plain log has the whole line; the live view wraps it to the terminal, never cutting it', () => {
    const event = completed({ paths: ['dist/index.js', 'stray.txt'], commit: COMMIT });
    const plain: string[] = [];
    const view = createPlainView({ write: (text) => plain.push(text), layout: checkout, now: () => T0 });
    view.update(event);
    expect(plain[0]).toContain(`set aside, not integrated: dist/index.js and stray.txt (${COMMANDS})\n`);
    const screen = onScreen(50, [event]);
    for (const line of screen) expect([...line].length, line).toBeLessThanOrEqual(49);
    const said = screen.join(' ').replace(/\s+/g, ' ');
    expect(said).toContain(`git restore --source=${ID} -- <path>\` brings one back into your files)`);
    expect(screen.filter((line) => line.endsWith('…'))).toEqual([]);
  });

  it('the Summary lists every task whose attempt set files aside, with the commands', () => {
    const plan = makePlan([
      task('a', { status: 'completed', setAside: { attempt: 2, paths: ['x.txt', 'y.txt', 'z.txt', 'w.txt'], commit: COMMIT } }),
      task('b', { status: 'completed' }),
    ]);
    const lines = summaryLines(plan, usage(0.5), []);
    expect(lines).toContain('Summary: 2/2 completed');
    expect(lines).toContain('  set aside: 1 task');
    expect(lines).toContain(`    0: a (attempt 2) — set aside, not integrated: x.txt, y.txt, z.txt and 1 more (${COMMANDS})`);
    expect(lines.some((line) => line.startsWith('  to go on:'))).toBe(false);
    expect(summaryLines(plan, usage(0.5), [], '/r')).toContain(
      `    0: a (attempt 2) — set aside, not integrated: x.txt, y.txt, z.txt and 1 more (\`git -C /r show --stat ${ID}\` lists them with the attempt's other files, \`git -C /r restore --source=${ID} -- <path>\` brings one back into your files)`,
    );
  });
});

describe('counted nouns agree', () => {
  it("the run's last words when its one task completed, or not", async () => {
    const one = new EngineRig(makePlan([fakeTask('A', { create: ['A.txt'] })]), { verify: (t, plan) => passed(plan.tasks[t]!) });
    await one.advance(0);
    await one.finish(0, 'COMPLETED: a');
    expect((await one.ended()).message).toBe('the one task completed');

    const failing = new EngineRig(makePlan([fakeTask('A', { create: ['A.txt'] })]), { settings: { maxAttempts: 1 } });
    await failing.advance(0);
    await failing.finish(0, 'FAILED: no');
    expect((await failing.ended()).message).toBe('0 of 1 task completed');
  });

  it('the circuit breaker with one pending task', () => {
    expect(describeEvent(ev(T0, { type: 'breaker', pendingCount: 1, wouldBeSkipped: 1 }), checkout)).toBe(
      'circuit breaker: 1 of 1 pending task would be skipped; stopping',
    );
  });

  it('listSome: a few, then how many more', () => {
    expect(listSome([])).toBe('');
    expect(listSome(['a'])).toBe('a');
    expect(listSome(['a', 'b'])).toBe('a and b');
    expect(listSome(['a', 'b', 'c'])).toBe('a, b and c');
    expect(listSome(['a', 'b', 'c', 'd'])).toBe('a, b, c and 1 more');
    expect(listSome(['a', 'b', 'c', 'd', 'e'], 2)).toBe('a, b and 3 more');
  });
});

describe('the way to go on', () => {
  /** 40 failed tasks (each skipping one after it), one that needs a file it does not declare, two awaiting approval, one pending. */
  function stuckPlan(): Plan {
    const tasks: Task[] = [];
    for (let i = 0; i < 40; i++) tasks.push(task(`failing ${i}`, { status: 'failed', attempts: 3, result: `check ${i} failed` }));
    tasks.push(task('needy', { status: 'blocked', attempts: 1, result: 'BLOCKED: needs src/wanted.ts', undeclaredWrites: ['src/wanted.ts'] }));
    tasks.push(task('gated', { status: 'awaiting_approval', gate: 'human-approval' }));
    tasks.push(task('gated too', { status: 'awaiting_approval', gate: 'human-approval' }));
    tasks.push(task('later'));
    return makePlan(tasks);
  }
  const every = Array.from({ length: 40 }, (_, i) => i).join(' ');

  it('one `plan retry` with every number, and a `plan declare` for the task that needs files', () => {
    expect(putBackCommands(stuckPlan(), checkout)).toEqual([
      { command: `npx tsx scripts/plan.ts retry ${every}`, tasks: Array.from({ length: 40 }, (_, i) => i) },
      { command: 'npx tsx scripts/plan.ts declare 40 --needed', tasks: [40], needs: ['src/wanted.ts'] },
    ]);
    const advice = resumeAdvice(stuckPlan(), checkout);
    expect(advice.match(/retry /g)).toHaveLength(2); // "will not retry them", then the one command
    expect(advice).toContain(`\`npx tsx scripts/plan.ts retry ${every}\` and \`npx tsx scripts/plan.ts declare 40 --needed\` (task 40 needs src/wanted.ts)`);
  });

  it('the closing message is never cut, however many commands it names: plain and live', () => {
    const plan = stuckPlan();
    const finished = runFinishedEvent(
      plan,
      { reason: 'breaker', message: 'circuit breaker: 3 of 4 pending tasks were skipped because of failures', usage: usage(1), durationMs: 60_000 },
      { layout: checkout, planPath: '.design/plan.json', landing: { landed: true, advice: '' }, archived: null },
    );
    expect(finished.message.length).toBeGreaterThan(520);
    expect(finished.message.endsWith('and run the same command again')).toBe(true);
    const event = ev(T0, finished);
    const line = describeEvent(event, checkout)!;
    expect(line.endsWith(` — ${finished.message}`)).toBe(true);
    expect(line).not.toContain('…');
    const screen = onScreen(80, [event]);
    for (const row of screen) expect([...row].length, row).toBeLessThanOrEqual(79);
    expect(screen.filter((row) => row.endsWith('…'))).toEqual([]);
    expect(screen.join(' ').replace(/\s+/g, ' ')).toContain(`retry ${every}`);
  });

  it('the Summary repeats the commands: put back, decide, then run again', () => {
    const next = nextSteps(stuckPlan(), checkout, { landingAdvice: null, refused: false });
    expect(next).toEqual([
      `\`npx tsx scripts/plan.ts retry ${every}\` puts tasks ${Array.from({ length: 39 }, (_, i) => i).join(', ')} and 39 back to pending, with the tasks skipped because of them`,
      '`npx tsx scripts/plan.ts declare 40 --needed` declares what task 40 needs (src/wanted.ts) and puts it back',
      '`npx tsx scripts/plan.ts approve 41`, `npx tsx scripts/plan.ts revise 41 --feedback …` or `npx tsx scripts/plan.ts reject 41 --reason …` decides on task 41, which awaits approval',
      '`npx tsx scripts/plan.ts approve 42`, `npx tsx scripts/plan.ts revise 42 --feedback …` or `npx tsx scripts/plan.ts reject 42 --reason …` decides on task 42, which awaits approval',
      'then run the same command again',
    ]);
    const lines = summaryLines(stuckPlan(), usage(1), next);
    expect(lines.slice(-6)).toEqual(['  to go on:', ...next.map((step) => `    ${step}`)]);
  });

  it('says what blocks landing and when a limit lets the run go on; nothing when all is done', () => {
    const pending = makePlan([task('a', { status: 'completed' }), task('b')]);
    expect(
      nextSteps(pending, checkout, { landingAdvice: 'not landed: x.txt has local changes.', refused: false, resumeAfter: '2026-11-22T05:00:00.000Z' }),
    ).toEqual(['not landed: x.txt has local changes.', 'then run the same command again after 2026-11-22T05:00:00.000Z']);
    expect(nextSteps(pending, checkout, { landingAdvice: null, refused: false })).toEqual(['run the same command again']);
    const done = makePlan([task('a', { status: 'completed' })]);
    expect(nextSteps(done, checkout, { landingAdvice: null, refused: false })).toEqual([]);
    expect(nextSteps(done, checkout, { landingAdvice: 'land it by hand.', refused: false })).toEqual(['land it by hand.']);
  });
});
