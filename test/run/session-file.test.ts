// The session file between in-session steps: this version's (the step function's state) read back
// as written, and the files of the two versions before it still resume — the one that kept the
// session's own lists (handed-out tasks, verified work, the merge queue) and the one whose state
// said only whether the gate was open, the baseline being the session's word.

import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan.ts';
import { initialState } from '../../src/core/engine-step.ts';
import { engineToJson, readSession, sessionConfig, sessionPathFor, writeSession } from '../../src/run/session.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

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
    expect([...engine.attempts.values()].map((a) => [a.task, a.stage])).toEqual([
      [2, 'queued'],
      [1, 'verified'],
      [0, 'running'],
    ]);
    expect(engine.attempts.get(1)).toMatchObject({ decision: { kind: 'completed', result: 'made b' }, work: WORK });
    expect(engine.gate.waiting).toEqual([2]);
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
      await writeFile(
        sessionPathFor(planPath),
        JSON.stringify({
          version: 2,
          concurrency: 2,
          maxAttempts: 3,
          checkTimeoutMs: 60_000,
          branch: null,
          startedAt: '2026-01-01T00:00:00.000Z',
          runId: 'run-2',
          runFinished: false,
          handedOut: {},
          gate: { config: GATE, baseline: word, current },
          sandbox: null,
          engine: { ...state, gateOpen },
        }),
      );
      expect((await readSession(planPath, plan())).engine?.baseline, word).toBe(baseline);
    }
  });

  it('of this version reads back as it was written', async () => {
    const planPath = await planDir();
    const session = await readSession(planPath, plan());
    session.gate = { config: GATE, current: null };
    const engine = initialState(plan(), sessionConfig(session, planPath), 0);
    session.engine = { ...engine, baseline: 'failed', stop: { reason: 'failures', message: 'refused', baselineFailure: { output: 'red' } }, finished: true };
    await writeSession(planPath, session);
    const read = await readSession(planPath, plan());
    expect(read.engine).toMatchObject({
      baseline: 'failed',
      stop: { reason: 'failures', message: 'refused', baselineFailure: { output: 'red' } },
      finished: true,
    });
    expect(read.gate).toEqual({ config: GATE, current: null });
  });
});
