// The orchestrator with the REAL Claude Code CLI as its workers, driven by our scripted Messages
// API server on 127.0.0.1: real tool calls write the files in a temporary git repository.

import { existsSync } from 'node:fs';
import { readFile, readdir, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { worktreesRoot } from '../../src/adapters/git/pool-slots.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { notLoggedInLines } from '../../src/core/hosts/auth-status.ts';
import { runExecute } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse, variants } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const cwdOf = (req: ScriptedRequest) => req.cwd ?? '.';
const writeTurn = (file: string, content: string) => (req: ScriptedRequest) => [toolUse('Write', { file_path: join(cwdOf(req), file), content })];

// The plan's tasks in order: the index names each worker's log, `.design/worker-<index>.log`.
const MARKERS = ['greet', 'farewell', 'combine', 'flaky', 'overlap-a', 'overlap-b'];
/** The repository the running test's workers work for, so a turn can read their logs. */
let current: { repo: string } | null = null;
/** Per marker, the `cwd` of every attempt's `system/init` event, as the worker's log recorded it. */
const initCwds = new Map<string, string[]>();

/** The cwd in the latest `system/init` line of the worker's log (`  model … · cwd <dir>`), waiting for the log to have it. */
async function initCwdOf(marker: string): Promise<string | null> {
  if (current === null) return null;
  const log = join(current.repo, '.design', `worker-${MARKERS.indexOf(marker)}.log`);
  for (let tries = 0; tries < 50; tries++) {
    const found = [...(await readFile(log, 'utf8').catch(() => '')).matchAll(/ · cwd (.+)$/gm)].at(-1)?.[1];
    if (found) return found;
    await sleep(100);
  }
  return null;
}

/** The worker's last turn: records its log's init cwd (the logs go when the plan is archived), then says `line`. */
const finish = (marker: string, line: string) => async () => {
  const cwd = await initCwdOf(marker);
  initCwds.set(marker, [...(initCwds.get(marker) ?? []), cwd ?? 'no system/init cwd in the log']);
  return [text(line)];
};

/** Reads shared.txt, then puts its own line under the first: what the other overlapping task wrote stays. */
const overlapTurns = (marker: string, line: string) => [
  (req: ScriptedRequest) => [toolUse('Read', { file_path: join(cwdOf(req), 'shared.txt') })],
  (req: ScriptedRequest) => [toolUse('Edit', { file_path: join(cwdOf(req), 'shared.txt'), old_string: 'top\n', new_string: `top\n${line}\n` })],
  finish(marker, `COMPLETED: ${line} is in shared.txt`),
];

let server: ModelServer;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      scenario({
        match: 'TASK-MARKER: greet',
        turns: [writeTurn('src/greet.txt', 'hello\n'), finish('greet', 'Wrote it.\nCOMPLETED: src/greet.txt says hello')],
      }),
      scenario({ match: 'TASK-MARKER: farewell', turns: [writeTurn('src/farewell.txt', 'bye\n'), finish('farewell', 'COMPLETED: src/farewell.txt says bye')] }),
      scenario({
        match: 'TASK-MARKER: combine',
        turns: [
          (req) => {
            // The dependency results must be in the prompt the real CLI received.
            const ok = req.prompt.includes('src/greet.txt says hello') && req.prompt.includes('src/farewell.txt says bye');
            return ok ? [toolUse('Read', { file_path: join(cwdOf(req), 'src/greet.txt') })] : [text('FAILED: no dependency results in my prompt')];
          },
          // The blockers' files must be in this worker's worktree: it starts at the integration tip.
          (req) =>
            /hello/.test(req.toolResults[0]?.content ?? '') && req.toolResults[0]?.is_error === false
              ? writeTurn('src/both.txt', 'hello bye\n')(req)
              : [text('FAILED: src/greet.txt is not in my worktree')],
          finish('combine', 'COMPLETED: combined'),
        ],
      }),
      ...variants('TASK-MARKER: flaky', [
        { when: 'This is attempt 2', turns: [writeTurn('src/flaky.txt', 'right\n'), finish('flaky', 'COMPLETED: fixed on the second try')] },
        { turns: [writeTurn('src/flaky.txt', 'wrong\n'), finish('flaky', 'COMPLETED: (but wrong)')] },
      ]),
      scenario({ match: 'TASK-MARKER: overlap-a', turns: overlapTurns('overlap-a', 'from a') }),
      scenario({ match: 'TASK-MARKER: overlap-b', turns: overlapTurns('overlap-b', 'from b') }),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

async function repoWith(plan: Plan): Promise<{ repo: TempGitRepo; planPath: string; env: Record<string, string | undefined> }> {
  const repo = await tempGitRepo({ 'README.md': '# sample\n', 'shared.txt': 'top\n' });
  const home = await tempHome();
  cleanups.push(repo.cleanup, () => rm(home, { recursive: true, force: true }));
  const planPath = await writePlan(repo.dir, plan);
  return { repo, planPath, env: claudeEnv(server.url, home) };
}

const task = (marker: string, create: string[], blockedBy: number[] = [], extra: Partial<Plan['tasks'][number]> = {}, modify: string[] = []) => ({
  subject: `task ${marker}`,
  prompt: `Do the ${marker} step.\nTASK-MARKER: ${marker}`,
  blockedBy,
  metadata: { files: { create, modify } },
  agent: { model: 'haiku' },
  ...extra,
});

describe('execute.ts with the real Claude Code CLI', () => {
  it('runs a multi-task plan: every worker in a worktree of its own, overlapping tasks never at once, results passed on, retried on an acceptance failure, every file landed', async () => {
    const plan = makePlan([
      task('greet', ['src/greet.txt']),
      task('farewell', ['src/farewell.txt']),
      task('combine', ['src/both.txt'], [0, 1]),
      task('flaky', ['src/flaky.txt'], [], {
        agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'says right', check: 'grep -q right src/flaky.txt' }], fallback: 'write "right"' },
      }),
      // Both modify shared.txt and neither depends on the other: they overlap, so never run at once.
      task('overlap-a', [], [], {}, ['shared.txt']),
      task('overlap-b', [], [], {}, ['shared.txt']),
    ]);
    const { repo, env } = await repoWith(plan);
    current = { repo: repo.dir };
    initCwds.clear();
    // The default --sandbox (auto), four workers at once: sandboxed workers run in parallel.
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--concurrency', '4'], env);
    current = null;
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);

    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type: string; task?: number; attempt?: number; outcome?: string; commit?: string | null; at: string; message?: string });
    const sandboxed = (await sandboxSupport()).ok;
    if (sandboxed)
      expect(
        events
          .filter((e) => e.type === 'notice')
          .map((e) => e.message)
          .join('\n'),
      ).not.toMatch(/without the sandbox/);

    // Every attempt's worker ran in a worktree under FOREMAN_WORKTREES, never in the repository,
    // and workers running at the same time never shared one.
    const root = await realpath(worktreesRoot(process.env));
    for (const marker of MARKERS) {
      const cwds = initCwds.get(marker) ?? [];
      expect(cwds.length, marker).toBe(marker === 'flaky' ? 2 : 1);
      for (const cwd of cwds) {
        expect(cwd.startsWith(`${root}/`), `${marker}: ${cwd}`).toBe(true);
        expect(cwd.startsWith(repo.dir)).toBe(false);
      }
    }
    const spans = events
      .filter((e) => e.type === 'task-started')
      .map((start) => {
        const end = events.find((e) => e.type === 'task-finished' && e.task === start.task && e.attempt === start.attempt)!;
        return { marker: MARKERS[start.task!]!, attempt: start.attempt!, start: Date.parse(start.at), end: Date.parse(end.at) };
      });
    expect(spans).toHaveLength(7);
    const cwdOfSpan = (span: { marker: string; attempt: number }) => initCwds.get(span.marker)![span.attempt - 1];
    let concurrent = 0;
    for (const [i, one] of spans.entries()) {
      for (const other of spans.slice(i + 1)) {
        if (one.start < other.end && other.start < one.end) {
          concurrent++;
          expect(cwdOfSpan(one), `${one.marker} and ${other.marker} ran at once`).not.toBe(cwdOfSpan(other));
        }
      }
    }
    expect(concurrent).toBeGreaterThan(0);
    // The overlapping pair, one after the other: the second started from the first's work, so both lines are there.
    const a = spans.find((span) => span.marker === 'overlap-a')!;
    const b = spans.find((span) => span.marker === 'overlap-b')!;
    expect(a.end <= b.start || b.end <= a.start).toBe(true);
    const shared = await readFile(join(repo.dir, 'shared.txt'), 'utf8');
    expect([`top\nfrom a\nfrom b\n`, `top\nfrom b\nfrom a\n`]).toContain(shared);

    expect(await readFile(join(repo.dir, 'src/greet.txt'), 'utf8')).toBe('hello\n');
    expect(await readFile(join(repo.dir, 'src/farewell.txt'), 'utf8')).toBe('bye\n');
    expect(await readFile(join(repo.dir, 'src/both.txt'), 'utf8')).toBe('hello bye\n');
    expect(await readFile(join(repo.dir, 'src/flaky.txt'), 'utf8')).toBe('right\n');

    const flaky = events.filter((e) => e.type === 'task-finished' && e.task === 3).map((e) => e.outcome);
    expect(flaky).toEqual(['retry', 'completed']);
    const commits = events.filter((e) => e.type === 'round-committed');
    expect(commits.length).toBeGreaterThanOrEqual(2);
    for (const c of commits) expect(c.commit).toMatch(/^[0-9a-f]{40}$/);

    // Every file landed, committed on the person's branch; the plan's worktrees and refs are gone.
    const tracked = await repo.git(['ls-files']);
    for (const f of ['src/greet.txt', 'src/farewell.txt', 'src/both.txt', 'src/flaky.txt', 'shared.txt']) expect(tracked).toContain(f);
    expect(await repo.git(['status', '--porcelain', '--', '.', ':!.design'])).toBe('');
    expect(await repo.git(['log', '-1', '--format=%H'])).toBe(`${commits.at(-1)!.commit}\n`);
    expect((await repo.git(['worktree', 'list', '--porcelain'])).match(/^worktree /gm)).toHaveLength(1);
    expect(await repo.git(['for-each-ref', 'refs/foreman', 'refs/foreman-awaiting'])).toBe('');
    for (const cwds of initCwds.values()) for (const cwd of cwds) expect(existsSync(cwd), cwd).toBe(false);
    const history = await readdir(join(repo.dir, '.design/history'));
    expect(history).toHaveLength(1);
  });

  it('refuses with exit 3 before anything starts when the real CLI has no credentials', async () => {
    const plan = makePlan([task('greet', ['src/greet.txt']), task('farewell', ['src/farewell.txt'])]);
    const { repo, planPath } = await repoWith(plan);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    const before = server.requests.length;
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin], claudeEnv(undefined, home));
    expect(r.exitCode).toBe(3);
    // Its `auth status` says so: the headless words, before the probe, the gate and any worker (no run in the journal).
    expect(r.stderr.split('\n')).toEqual(notLoggedInLines(claudeBin));
    expect(r.stdout).toBe('');
    await expect(readFile(join(repo.dir, '.design/events.jsonl'))).rejects.toThrow(/ENOENT/);
    expect(server.requests.length).toBe(before);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
  });
});
