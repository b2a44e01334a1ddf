// The API out of reach, and a key it refuses, with the REAL Claude Code CLI as the workers and the
// scripted Messages API server on 127.0.0.1 (test/support/model-server.ts), which can close its
// port and listen on it again. What must hold (issue: the API out of reach is a run-wide signal):
// a closed port stops the run resumable within --limit-wait (exit 75, reason api-unreachable, no
// attempt spent, the breaker untouched), `plan status` says why and when to go on, and the same
// command finishes the plan once the API answers on that port; an API that goes away mid-run and
// comes back within --limit-wait is waited for; a key the API refuses (401) stops the run at once
// (exit 3). The workers run with the CLI's own retries (10, over about 3 minutes, for a
// connection failure): foreman stops a worker the API served nothing at its first `api_retry`.

import { readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunEventBody } from '../../src/core/report/events.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute, runPlanTool } from '../support/execute.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { httpError, type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const task = (marker: string) => ({
  subject: `write ${marker}.txt`,
  prompt: `Write ${marker}.txt.\nTASK-MARKER: ${marker}`,
  blockedBy: [],
  metadata: { files: { create: [`${marker}.txt`], modify: [] } },
  agent: { model: 'haiku', acceptanceCriteria: [{ criterion: `${marker}.txt is there`, check: `test -f ${marker}.txt` }] },
});

/** Each task's worker: write its file, then report. */
const writes = (marker: string, before?: (req: ScriptedRequest) => Promise<void>) =>
  scenario({
    match: `TASK-MARKER: ${marker}`,
    turns: [
      (req) => [toolUse('Write', { file_path: join(req.cwd ?? '.', `${marker}.txt`), content: `${marker}\n` })],
      async (req) => {
        await before?.(req);
        return [text(`COMPLETED: wrote ${marker}.txt`)];
      },
    ],
  });

async function repoWith(plan: Plan, server: ModelServer) {
  const repo = await tempGitRepo({ 'README.md': '# sample\n', '.gitignore': '.design/\n' });
  const home = await tempHome();
  cleanups.push(repo.cleanup, () => rm(home, { recursive: true, force: true }));
  const planPath = await writePlan(repo.dir, plan);
  // The CLI's own retries, as a person's run has them (claudeEnv turns them off for other tests).
  const env = { ...claudeEnv(server.url, home, { CLAUDE_CODE_MAX_RETRIES: undefined }), FOREMAN_BACKOFF_MS: '500' };
  return { repo, planPath, env };
}

const fitsSchema = new Ajv({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8')),
);
/** The run's `--json` events, each checked against schemas/event.schema.json. */
const eventsOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      const event = JSON.parse(line) as RunEventBody & { at: string; runId: string };
      expect(fitsSchema(event), `${line}\n${JSON.stringify(fitsSchema.errors)}`).toBe(true);
      return event;
    });
const finishedOf = (events: ReturnType<typeof eventsOf>) => events.find((e): e is Extract<typeof e, { type: 'run-finished' }> => e.type === 'run-finished')!;
const args = (limitWait: number) => ['--claude-bin', claudeBin, '--json', '--concurrency', '2', '--no-probe', '--limit-wait', String(limitWait)];

describe('the API out of reach (the real CLI)', () => {
  it('a closed port: the run stops resumable within --limit-wait (exit 75, api-unreachable, no attempt, no breaker), says why in plan status; the same command finishes the plan once the API answers on that port', async () => {
    const server = await startModelServer({ scenarios: [writes('one'), writes('two'), writes('three')] });
    cleanups.push(() => server.close());
    const { repo, planPath, env } = await repoWith(makePlan([task('one'), task('two'), task('three')]), server);
    await server.refuseConnections();

    const stopped = await runExecute(repo.dir, args(4), env);
    expect(stopped.exitCode, stopped.stderr).toBe(75);
    const events = eventsOf(stopped.stdout);
    const end = finishedOf(events);
    expect([end.reason, end.exitCode, end.outcome]).toEqual(['api-unreachable', 75, 'incomplete']);
    expect(end.message).toMatch(
      new RegExp(
        `^could not reach ${server.url.replace(/\./g, '\\.')} since \\d\\d:\\d\\d:\\d\\d \\(.+\\); that is longer than --limit-wait \\(4s\\) lets the run wait: nothing new started, and the run stopped once what ran had finished\\. Check the network, a proxy \\(HTTPS_PROXY\\) and ANTHROPIC_BASE_URL, then run the same command again when the API answers`,
      ),
    );
    // Every worker was stopped (or ended) with no attempt counted, and the breaker never tripped.
    expect(new Set(events.filter((e) => e.type === 'task-finished').map((e) => e.type === 'task-finished' && e.outcome))).toEqual(new Set(['requeued']));
    expect(events.some((e) => e.type === 'breaker')).toBe(false);
    // The first try was as wide as the run; every later one, one worker (the probe).
    const starts = events.filter((e) => e.type === 'task-started');
    expect(starts.length).toBeGreaterThan(2);
    const hold = events.find((e) => e.type === 'limit' && e.change === 'hold');
    expect(hold).toMatchObject({ limit: 'api-unreachable', working: 1 });
    expect(hold?.type === 'limit' && hold.message).toMatch(/^waiting for the API to answer \(out of reach since /);
    expect((await readPlan(planPath)).tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
      ['pending', 0],
    ]);
    // No request reached the closed port, and no worker sat through its CLI's ten tries (3 minutes):
    // each was stopped at its first `api_retry` without a status.
    expect(server.requests).toEqual([]);
    const log = await readFile(join(repo.dir, '.design', 'worker-0.log'), 'utf8');
    const tries = [
      ...log.matchAll(
        /^\[[\d:.]+\] (! API retry \d+\/10: status \? unknown|! killing the worker's process group \(a limit refused it \(or the API did not answer\))/gm,
      ),
    ].map((m) => (m[1]!.startsWith('! API retry') ? 'retry' : 'stopped'));
    expect(tries.length).toBeGreaterThanOrEqual(2);
    expect(tries.join(' ')).toMatch(/^(retry stopped ?)+$/);

    const status = await runPlanTool(repo.dir, ['status']);
    expect(status.stdout).toContain(
      `The last run (${end.runId}) stopped at ${end.at} (exit 75) because the API was out of reach: could not reach ${server.url}`,
    );
    expect(status.stdout).toContain('Run the same command again when the API answers to go on.');
    const json = JSON.parse((await runPlanTool(repo.dir, ['status', '--json'])).stdout);
    expect(json.stopped).toMatchObject({ runId: end.runId, reason: 'api-unreachable', resumeAfter: null, runAgain: 'when the API answers' });

    await server.acceptConnections();
    const resumed = await runExecute(repo.dir, args(4), env);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect((await repo.git(['show', 'HEAD:one.txt'])).trim()).toBe('one');
    expect((await repo.git(['show', 'HEAD:three.txt'])).trim()).toBe('three');
    expect(finishedOf(eventsOf(resumed.stdout)).reason).toBe('all-done');
  }, 240_000);

  it('an API that goes away mid-run and comes back within --limit-wait: the run waits (the worker it had served is not cut short) and finishes', async () => {
    let server: ModelServer;
    let away = false;
    // Task one's worker has written its file; before its last answer, the API goes away for a few seconds.
    const goAway = async () => {
      if (away) return;
      away = true;
      setTimeout(() => void server.acceptConnections(), 4000);
      await server.refuseConnections();
    };
    server = await startModelServer({ scenarios: [writes('one', goAway), writes('two'), writes('three')] });
    cleanups.push(() => server.close());
    const { repo, planPath, env } = await repoWith(makePlan([task('one'), task('two'), task('three')]), server);

    const r = await runExecute(repo.dir, args(120), env);
    expect(r.exitCode, r.stderr).toBe(0);
    const events = eventsOf(r.stdout);
    const limits = events.filter((e) => e.type === 'limit');
    expect(limits.some((e) => e.type === 'limit' && e.change === 'hold' && e.limit === 'api-unreachable')).toBe(true);
    expect(limits.at(-1)).toMatchObject({ change: 'serving' });
    // Task one's worker had been served when the API went away: never stopped, it waited with its CLI and went on.
    expect(events.filter((e) => e.type === 'task-started' && e.task === 0).length).toBe(1);
    expect(events.filter((e) => e.type === 'task-finished' && e.task === 0).map((e) => e.type === 'task-finished' && e.outcome)).toEqual(['completed']);
    // Nothing failed or was retried: a task the outage met was requeued (or its worker waited it out), no attempt spent.
    expect(
      events
        .filter((e) => e.type === 'task-finished' && e.outcome !== 'completed' && e.outcome !== 'requeued')
        .map((e) => e.type === 'task-finished' && e.reason),
    ).toEqual([]);
    const plan = await readPlan(planPath).catch(() => null);
    // The plan finished: it was archived, or says completed with one attempt each.
    if (plan !== null) expect(plan.tasks.map((t) => [t.status, t.attempts])).toEqual(plan.tasks.map(() => ['completed', 1]));
    for (const marker of ['one', 'two', 'three']) expect((await repo.git(['show', `HEAD:${marker}.txt`])).trim()).toBe(marker);
  }, 240_000);

  it('a key the API refuses (401 authentication_error) stops the run at once: exit 3, no attempt spent', async () => {
    const server = await startModelServer({ respond: () => httpError(401, { message: 'invalid x-api-key' }) });
    cleanups.push(() => server.close());
    const { repo, planPath, env } = await repoWith(makePlan([task('one'), task('two')]), server);
    const r = await runExecute(repo.dir, args(60), env);
    expect(r.exitCode, r.stderr).toBe(3);
    const end = finishedOf(eventsOf(r.stdout));
    expect([end.reason, end.exitCode]).toEqual(['agent-unavailable', 3]);
    expect(end.message).toMatch(
      /^the agent is not authenticated \(.+\): log in by running `claude` once in a terminal, or set ANTHROPIC_API_KEY, then run again/,
    );
    expect((await readPlan(planPath)).tasks.map((t) => t.attempts ?? 0)).toEqual([0, 0]);
    // Each worker was ended at its CLI's first retry of the 401, not after its ten.
    const messages = server.requests.filter((req) => req.path === '/v1/messages');
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.length).toBeLessThanOrEqual(4);
  }, 120_000);
});
