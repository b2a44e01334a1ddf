// The orchestrator with the REAL Claude Code CLI as its workers, driven by our scripted Messages
// API server on 127.0.0.1: real tool calls write the files in a temporary git repository.

import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan.ts';
import { runExecute } from '../support/execute.ts';
import { type TempGitRepo, tempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, type ScriptedRequest, scenario, startModelServer, text, toolUse, variants } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const cwdOf = (req: ScriptedRequest) => req.cwd ?? '.';
const writeTurn = (file: string, content: string) => (req: ScriptedRequest) => [toolUse('Write', { file_path: join(cwdOf(req), file), content })];

let server: ModelServer;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      scenario({ match: 'TASK-MARKER: greet', turns: [writeTurn('src/greet.txt', 'hello\n'), [text('Wrote it.\nCOMPLETED: src/greet.txt says hello')]] }),
      scenario({ match: 'TASK-MARKER: farewell', turns: [writeTurn('src/farewell.txt', 'bye\n'), [text('COMPLETED: src/farewell.txt says bye')]] }),
      scenario({
        match: 'TASK-MARKER: combine',
        turns: [
          (req) => {
            // The dependency results must be in the prompt the real CLI received.
            const ok = req.prompt.includes('src/greet.txt says hello') && req.prompt.includes('src/farewell.txt says bye');
            return ok ? [toolUse('Read', { file_path: join(cwdOf(req), 'src/greet.txt') })] : [text('FAILED: no dependency results in my prompt')];
          },
          writeTurn('src/both.txt', 'hello bye\n'),
          [text('COMPLETED: combined')],
        ],
      }),
      ...variants('TASK-MARKER: flaky', [
        { when: 'This is attempt 2', turns: [writeTurn('src/flaky.txt', 'right\n'), [text('COMPLETED: fixed on the second try')]] },
        { turns: [writeTurn('src/flaky.txt', 'wrong\n'), [text('COMPLETED: (but wrong)')]] },
      ]),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

async function repoWith(plan: Plan): Promise<{ repo: TempGitRepo; planPath: string; env: Record<string, string> }> {
  const repo = await tempGitRepo({ 'README.md': '# sample\n' });
  const home = await tempHome();
  cleanups.push(repo.cleanup);
  const planPath = await writePlan(repo.dir, plan);
  return { repo, planPath, env: claudeEnv(server.url, home) };
}

const task = (marker: string, create: string[], blockedBy: number[] = [], extra: Partial<Plan['tasks'][number]> = {}) => ({
  subject: `task ${marker}`,
  prompt: `Do the ${marker} step.\nTASK-MARKER: ${marker}`,
  blockedBy,
  metadata: { files: { create, modify: [] } },
  agent: { model: 'haiku' },
  ...extra,
});

describe('execute.ts with the real Claude Code CLI', () => {
  it('runs a multi-task plan: files written by the real tools, committed per round, retried on an acceptance failure', async () => {
    const plan = makePlan([
      task('greet', ['src/greet.txt']),
      task('farewell', ['src/farewell.txt']),
      task('combine', ['src/both.txt'], [0, 1]),
      task('flaky', ['src/flaky.txt'], [], {
        agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'says right', check: 'grep -q right src/flaky.txt' }], fallback: 'write "right"' },
      }),
    ]);
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json'], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);

    expect(await readFile(join(repo.dir, 'src/greet.txt'), 'utf8')).toBe('hello\n');
    expect(await readFile(join(repo.dir, 'src/both.txt'), 'utf8')).toBe('hello bye\n');
    expect(await readFile(join(repo.dir, 'src/flaky.txt'), 'utf8')).toBe('right\n');

    const events = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; task?: number; outcome?: string; commit?: string | null });
    const flaky = events.filter((e) => e.type === 'task-finished' && e.task === 3).map((e) => e.outcome);
    expect(flaky).toEqual(['retry', 'completed']);
    const commits = events.filter((e) => e.type === 'round-committed');
    expect(commits.length).toBeGreaterThanOrEqual(2);
    for (const c of commits) expect(c.commit).toMatch(/^[0-9a-f]{40}$/);

    const tracked = await repo.git(['ls-files']);
    for (const f of ['src/greet.txt', 'src/farewell.txt', 'src/both.txt', 'src/flaky.txt']) expect(tracked).toContain(f);
    expect(await repo.git(['status', '--porcelain', '--', 'src'])).toBe('');
    const history = await readdir(join(repo.dir, '.design/history'));
    expect(history).toHaveLength(1);
  });

  it('stops with exit 3 and burns nothing when the real CLI has no credentials', async () => {
    const plan = makePlan([task('greet', ['src/greet.txt']), task('farewell', ['src/farewell.txt'])]);
    const { repo, planPath } = await repoWith(plan);
    const home = await tempHome();
    const before = server.requests.length;
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin], claudeEnv(undefined, home));
    expect(r.exitCode).toBe(3);
    expect(r.stdout + r.stderr).toMatch(/not authenticated/i);
    expect(server.requests.length).toBe(before);
    const after = await readPlan(planPath);
    expect(after.tasks.map((t) => [t.status, t.attempts ?? 0])).toEqual([
      ['pending', 0],
      ['pending', 0],
    ]);
  });
});
