// The session file between in-session steps: this version's (the step function's state) read back
// as written, and the files of the versions before it still resume — the one that kept the
// session's own lists (handed-out tasks, verified work, the merge queue), the one whose state said
// only whether the gate was open, the baseline being the session's word, and the one the code of
// 3b4a9a1 wrote (test/fixtures/session-file). A damaged attempt (not whole for its stage, a field
// not of its type) is dropped as it is read, never thrown on later; a file whose own fields are
// not of their types (schemas/session.schema.json) is read as none, as one that is not JSON.

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { initialState } from '../../src/core/engine/admission.ts';
import type { Attempt } from '../../src/core/engine/attempt.ts';
import { step } from '../../src/core/engine/step.ts';
import { engineToJson, readSession, sessionPathFor, writeSession } from '../../src/run/session/file.ts';
import { defaultSession, sessionConfig } from '../../src/run/session/session-state.ts';
import { repoRoot } from '../support/execute.ts';
import { fakeTask, makePlan, readPlan } from '../support/plans.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function planDir(): Promise<string> {
  const dir = join(tmpdir(), `foreman-session-file-${process.pid}-${dirs.length}-${Date.now()}`);
  dirs.push(dir);
  await mkdir(join(dir, '.design/prompts'), { recursive: true });
  return join(dir, '.design/plan.json');
}

const BASE = 'a'.repeat(40);
const WORK = { base: BASE, entries: [{ path: 'b.txt', mode: '100644', object: 'b'.repeat(40) }] };
const GATE = { command: 'npm test', batchSize: 2, timeoutMs: 60_000 };
/** A worker's run that reported its task completed. */
const RUN = {
  usage: { costUsd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
  durationMs: 5,
  permissionDenials: [],
  logPath: '',
  outcome: { kind: 'reported', resultText: 'COMPLETED: made b', statusLine: { status: 'COMPLETED', text: 'made b' } },
};

/** A session file of this version, with the run, gate and step function's state given. */
const writeSessionFile = (planPath: string, given: { runId: string; gate: object; engine: object }) =>
  writeFile(
    sessionPathFor(planPath),
    JSON.stringify({
      version: 2,
      concurrency: 2,
      maxAttempts: 3,
      checkTimeoutMs: 60_000,
      branch: null,
      startedAt: '2026-01-01T00:00:00.000Z',
      runId: given.runId,
      runFinished: false,
      handedOut: {},
      gate: given.gate,
      sandbox: null,
      engine: given.engine,
    }),
  );

/** Three tasks in progress: handed out, verified, a candidate in the merge queue. */
const plan = (): Plan =>
  makePlan([
    { ...fakeTask('A', { create: ['a.txt'] }), status: 'in_progress' },
    { ...fakeTask('B', { create: ['b.txt'] }), status: 'in_progress', result: 'made b' },
    { ...fakeTask('C', { create: ['c.txt'] }), status: 'in_progress', result: 'made c' },
  ]);

describe('the session file', () => {
  it('of the version that kept the session’s own lists resumes as the step function’s state', async () => {
    const planPath = await planDir();
    await writeFile(
      sessionPathFor(planPath),
      JSON.stringify({
        round: 2,
        concurrency: 2,
        maxAttempts: 3,
        checkTimeoutMs: 60_000,
        branch: 'refs/heads/main',
        startedAt: '2026-01-01T00:00:00.000Z',
        runId: 'run-1',
        runFinished: false,
        started: { '0': '2026-01-01T00:01:00.000Z' },
        bases: { '0': BASE },
        verified: [{ task: 1, result: 'made b', work: WORK }],
        gate: {
          config: GATE,
          baseline: 'running',
          queue: { waiting: [2], segments: [], red: null, aloneFailures: [] },
          current: { id: 'g-1', tasks: [], tip: BASE, startedAt: '2026-01-01T00:02:00.000Z' },
        },
        sandbox: null,
      }),
    );
    const session = await readSession(planPath, plan());
    expect(session.handedOut).toEqual({ '0': { at: '2026-01-01T00:01:00.000Z', base: BASE } });
    expect(session.gate).toEqual({ config: GATE, current: { id: 'g-1', tasks: [], tip: BASE, startedAt: '2026-01-01T00:02:00.000Z' } });
    const engine = session.engine!;
    // Its merge queue's candidate (task 2) is not read into the state: that version kept a
    // candidate's work on its ref only, and a candidate without its work could be neither gated
    // nor integrated. It stays in progress; the next `setup` reads its ref and queues it again.
    expect([...engine.attempts.values()].map((a) => [a.task, a.stage])).toEqual([
      [1, 'verified'],
      [0, 'running'],
    ]);
    expect(engine.attempts.get(1)).toMatchObject({ decision: { kind: 'completed', result: 'made b' }, work: WORK });
    expect(engine.gate.waiting).toEqual([]);
    expect(engine.plan.tasks[2]!.status).toBe('in_progress');
    expect(engine.round).toBe(2);
    // Its gate process was testing the starting commit: the step function waits for that verdict.
    expect(engine.baseline).toBe('testing');
    expect(engine.config.gate).toEqual({ batchSize: 2, command: 'npm test' });
  });

  it('of the version whose state said whether the gate was open takes the baseline from the session’s word', async () => {
    for (const [word, current, gateOpen, baseline] of [
      ['passed', null, true, 'passed'],
      ['failed', null, false, 'failed'],
      ['running', null, false, 'due'],
      ['running', { id: 'g-2', tasks: [], tip: BASE, startedAt: '2026-01-01T00:02:00.000Z' }, false, 'testing'],
      ['none', null, true, 'none'],
    ] as const) {
      const planPath = await planDir();
      const { baseline: _baseline, ...state } = engineToJson(
        initialState(plan(), sessionConfig({ concurrency: 2, maxAttempts: 3, gate: { config: GATE, current: null } }, planPath), 0),
      ) as Record<string, unknown>;
      await writeSessionFile(planPath, { runId: 'run-2', gate: { config: GATE, baseline: word, current }, engine: { ...state, gateOpen } });
      expect((await readSession(planPath, plan())).engine?.baseline, word).toBe(baseline);
    }
  });

  it('of this version drops an attempt that is not whole for its stage, and the steps go on without it', async () => {
    const planPath = await planDir();
    const engine = engineToJson(initialState(plan(), sessionConfig({ concurrency: 2, maxAttempts: 3, gate: { config: GATE, current: null } }, planPath), 0));
    const attempts = [
      { task: 0, number: 1, stage: 'running' },
      // Verified without its decision: damaged.
      { task: 1, number: 1, stage: 'verified', run: RUN, work: WORK },
      // A candidate without its work: damaged.
      { task: 2, number: 1, stage: 'queued', run: RUN, decision: { kind: 'completed', result: 'made c' }, held: true },
    ];
    await writeSessionFile(planPath, {
      runId: 'run-3',
      gate: { config: GATE, current: null },
      engine: { ...engine, baseline: 'passed', attempts, gate: { waiting: [2], segments: [], red: null, aloneFailures: [] } },
    });
    const read = (await readSession(planPath, plan())).engine!;
    expect([...read.attempts.values()].map((a) => [a.task, a.stage])).toEqual([[0, 'running']]);
    // The damaged candidate left the merge queue with its attempt.
    expect(read.gate.waiting).toEqual([]);
    // The next step goes on: `commit` finds nothing verified, `next` hands nothing new out (tasks 1 and 2 stay in progress for `setup`).
    const committed = step(read, { type: 'integrate', now: 1 });
    expect(committed.effects.filter((e) => e.type === 'record' || e.type === 'gate')).toEqual([]);
    expect(step(committed.state, { type: 'hand-out', now: 2 }).state.attempts.size).toBe(1);
  });

  it('of this version reads every stage of an attempt back as it was written', async () => {
    const planPath = await planDir();
    const run = {
      usage: { costUsd: 0.5, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0 },
      durationMs: 5,
      permissionDenials: [{ tool: 'Edit', input: { file_path: '/w/x' }, path: 'x', tracked: true }],
      logPath: '/l/worker-0.log',
      sessionId: 's-1',
      progressed: true as const,
      outcome: { kind: 'failed' as const, failure: { reason: 'rate-limited' as const, message: '429', retryAfterMs: 1000 } },
    };
    const reportedRun = {
      ...run,
      outcome: { kind: 'reported' as const, resultText: 'COMPLETED: made', statusLine: { status: 'COMPLETED' as const, text: 'made' } },
    };
    const completed = { kind: 'completed' as const, result: 'made' };
    const tasks = Array.from({ length: 9 }, (_, i) => ({ ...fakeTask(`T${i}`, { create: [`t${i}.txt`] }), status: 'in_progress' as const }));
    const everyStage: Attempt[] = [
      { task: 0, number: 1, stage: 'running', run, cancelled: 'task 4 left the queue', progressed: true, stopping: true, refused: true, stack: [4] },
      { task: 1, number: 2, stage: 'paused', run, sessionId: 's-1' },
      { task: 2, number: 1, stage: 'verifying', run: reportedRun },
      {
        task: 3,
        number: 1,
        stage: 'verified',
        decision: { kind: 'awaiting_approval', result: 'made' },
        work: WORK,
        verifiedBy: { kind: 'this-run', run: reportedRun },
      },
      { task: 4, number: 1, stage: 'queued', decision: completed, work: WORK, verifiedBy: { kind: 'earlier-run', held: true } },
      { task: 5, number: 1, stage: 'gating', decision: completed, work: WORK, verifiedBy: { kind: 'this-run', run: reportedRun } },
      { task: 6, number: 1, stage: 'recording', purpose: 'hold', decision: completed, work: WORK, verifiedBy: { kind: 'this-run', run: reportedRun } },
      {
        task: 7,
        number: 1,
        stage: 'recording',
        purpose: 'park',
        decision: { kind: 'awaiting_approval', result: 'made' },
        work: WORK,
        verifiedBy: { kind: 'earlier-run', held: false },
      },
      { task: 8, number: 1, stage: 'verified', decision: completed, work: WORK, verifiedBy: { kind: 'earlier-run', held: true } },
    ];
    const session = await readSession(planPath, makePlan(tasks));
    session.gate = { config: GATE, current: null };
    const engine = initialState(makePlan(tasks), sessionConfig(session, planPath), 0);
    session.engine = { ...engine, attempts: new Map(everyStage.map((a) => [a.task, a])), gate: { ...engine.gate, waiting: [4], segments: [[5]] } };
    await writeSession(planPath, session);
    const read = (await readSession(planPath, makePlan(tasks))).engine!;
    expect([...read.attempts.values()]).toEqual(everyStage);
    // In the words every version wrote: a candidate is `held`, one in the lane says whether it is held for the queue.
    const written = JSON.parse(await readFile(sessionPathFor(planPath), 'utf8')).engine.attempts;
    expect(written.map((a: Record<string, unknown>) => [a.task, a.held ?? null, a.candidate ?? null, 'run' in a])).toEqual([
      [0, null, null, true],
      [1, null, null, true],
      [2, null, null, true],
      [3, null, null, true],
      [4, true, null, false],
      [5, true, null, true],
      [6, null, true, true],
      [7, null, false, false],
      [8, true, null, false],
    ]);
  });

  it('of this version reads back as it was written', async () => {
    const planPath = await planDir();
    const session = await readSession(planPath, plan());
    session.gate = { config: GATE, current: null };
    const engine = initialState(plan(), sessionConfig(session, planPath), 0);
    session.engine = {
      ...engine,
      baseline: 'failed',
      stop: { reason: 'failures', message: 'refused', baselineFailure: { output: 'red' } },
      finished: true,
      unlanded: new Set([1]),
      widened: new Set([0]),
    };
    await writeSession(planPath, session);
    const read = await readSession(planPath, plan());
    expect(read.engine).toMatchObject({
      baseline: 'failed',
      stop: { reason: 'failures', message: 'refused', baselineFailure: { output: 'red' } },
      finished: true,
    });
    // The sets, as sets (a Set written to JSON as it is comes out as {}).
    expect(read.engine?.unlanded).toEqual(new Set([1]));
    expect(read.engine?.widened).toEqual(new Set([0]));
    expect(read.gate).toEqual({ config: GATE, current: null });
  });

  it('written by the code of 3b4a9a1 reads as that code read it, and is written again as it wrote it', async () => {
    const fixture = join(repoRoot, 'test/fixtures/session-file/3b4a9a1');
    const planPath = await planDir();
    const plan = await readPlan(join(fixture, 'plan.json'));
    await writeFile(sessionPathFor(planPath), await readFile(join(fixture, 'session.json'), 'utf8'));
    const session = await readSession(planPath, plan);
    // Every attempt kept, in its stage.
    expect([...session.engine!.attempts.values()].map((a) => [a.task, a.stage])).toEqual([
      [0, 'running'],
      [1, 'paused'],
      [2, 'verifying'],
      [3, 'verified'],
      [4, 'queued'],
      [5, 'gating'],
      [6, 'recording'],
      [7, 'recording'],
      [8, 'running'],
    ]);
    await writeSession(planPath, session);
    // What that code wrote of what it read (read.json), but where the session file's own folder
    // goes (the configuration is not read back: each step makes it) and the limiter's field added
    // since (the API out of reach), which a file without it reads as a new run's.
    const expected = JSON.parse(await readFile(join(fixture, 'read.json'), 'utf8'));
    expected.engine.config.logDir = join(planPath, '../prompts');
    expected.engine.limiter = Object.fromEntries(
      Object.entries(expected.engine.limiter).flatMap((field) => (field[0] === 'resetAt' ? [field, ['unreachable', null]] : [field])),
    );
    expect(await readFile(sessionPathFor(planPath), 'utf8')).toBe(`${JSON.stringify(expected, null, 2)}\n`);
  });

  it('that is not a session file is read as none: not JSON, not an object, or a field not of its type', async () => {
    const planPath = await planDir();
    const valid = JSON.parse(await readFile(join(repoRoot, 'test/fixtures/resume/session/design/prompts/session.json'), 'utf8'));
    const none = { ...defaultSession(), startedAt: expect.any(String) };
    for (const [what, text] of [
      ['not JSON', '{"version": 2,'],
      ['null', 'null'],
      ['a list', '[]'],
      ['a string', '"session"'],
      ['concurrency not a number', JSON.stringify({ ...valid, concurrency: 'two' })],
      ['a branch that is not one', JSON.stringify({ ...valid, branch: 'main' })],
      ['a handed-out task without its commit', JSON.stringify({ ...valid, handedOut: { '1': { at: '2026-01-01T00:00:00.000Z' } } })],
      ['the engine’s usage not a figure', JSON.stringify({ ...valid, engine: { ...valid.engine, usage: 5 } })],
      ['the engine’s usage an object of other fields', JSON.stringify({ ...valid, engine: { ...valid.engine, usage: { costUsd: 1 } } })],
      ['a stop for no reason it knows', JSON.stringify({ ...valid, engine: { ...valid.engine, stop: { reason: 'tired', message: 'm' } } })],
      ['the attempts not a list', JSON.stringify({ ...valid, engine: { ...valid.engine, attempts: {} } })],
      ['a limiter working at none', JSON.stringify({ ...valid, engine: { ...valid.engine, limiter: { ...valid.engine.limiter, working: 0 } } })],
    ]) {
      await writeFile(sessionPathFor(planPath), text!);
      expect(await readSession(planPath, plan()), what).toEqual(none);
    }
    // The fixture itself is one, of course.
    await writeFile(sessionPathFor(planPath), JSON.stringify(valid));
    expect((await readSession(planPath, plan())).runId).toBe(valid.runId);
  });

  it('drops an attempt record whose field is not of its type, rather than trusting it, and keeps the rest', async () => {
    const planPath = await planDir();
    const verified = { task: 1, number: 1, stage: 'verified', run: RUN, decision: { kind: 'completed', result: 'made b' }, work: WORK };
    const engine = engineToJson(initialState(plan(), sessionConfig({ concurrency: 2, maxAttempts: 3, gate: { config: GATE, current: null } }, planPath), 0));
    for (const [what, damaged] of [
      ['its run’s usage not an object', { ...verified, run: { ...RUN, usage: 'lots' } }],
      ['its run’s usage without a field', { ...verified, run: { ...RUN, usage: { costUsd: 0 } } }],
      ['its run’s duration a string', { ...verified, run: { ...RUN, durationMs: '5' } }],
      ['its run failed for no reason it knows', { ...verified, run: { ...RUN, outcome: { kind: 'failed', failure: { reason: 'tired' } } } }],
      ['its run failed without the failure’s fields', { ...verified, run: { ...RUN, outcome: { kind: 'failed', failure: { reason: 'timed-out' } } } }],
      ['a status it does not know', { ...verified, run: { ...RUN, outcome: { ...RUN.outcome, statusLine: { status: 'DONE', text: 'x' } } } }],
      ['a permission denial without its tool', { ...verified, run: { ...RUN, permissionDenials: [{ path: 'x' }] } }],
      ['its work’s entry not an object id', { ...verified, work: { base: BASE, entries: [{ path: 'b.txt', mode: '100644', object: 'b' }] } }],
      ['its work’s base not a commit', { ...verified, work: { ...WORK, base: 'HEAD' } }],
      ['a decision that does not pass', { ...verified, decision: { kind: 'failed', result: 'made b' } }],
      ['a candidate awaiting approval', { ...verified, stage: 'queued', held: true, decision: { kind: 'awaiting_approval', result: 'made b' } }],
      ['held for the queue awaiting approval', { ...verified, stage: 'recording', candidate: true, decision: { kind: 'awaiting_approval', result: 'made b' } }],
      ['a stage it does not know', { ...verified, stage: 'resting' }],
      ['a task that is not an index', { ...verified, task: '1' }],
      ['its stack not a list of tasks', { ...verified, stack: [-1] }],
      ['paused without its conversation', { task: 1, number: 1, stage: 'paused', run: RUN }],
      ['running, cancelled for no words', { task: 1, number: 1, stage: 'running', cancelled: true }],
      ['running, a flag not a flag', { task: 1, number: 1, stage: 'running', progressed: 'yes' }],
    ] as const) {
      const attempts = [{ task: 0, number: 1, stage: 'running' }, damaged, { ...verified, task: 2 }];
      await writeSessionFile(planPath, { runId: 'run-4', gate: { config: GATE, current: null }, engine: { ...engine, baseline: 'passed', attempts } });
      const read = (await readSession(planPath, plan())).engine!;
      expect(
        [...read.attempts.values()].map((a) => [a.task, a.stage]),
        what,
      ).toEqual([
        [0, 'running'],
        [2, 'verified'],
      ]);
    }
  });
});
