// Rate limits, measured through the real Claude Code CLI (node_modules/.bin/claude) against a
// scripted Messages API that refuses as the real one does: it serves `capacity` requests at once
// and answers one more with 429 `rate_limit_error` and a `retry-after` (the seconds until a
// request in flight is done); a few seconds into the run it closes for a while, answering every
// request with 429 and the seconds until it opens again (or 529 `overloaded_error` with no
// `retry-after`). The workload: independent tasks, each a worker writing its file (one request)
// and reporting (a second), at `--concurrency 8`.
//
// Figures: the API's refusals per task, the run's time against what the limit allows (the same
// run against an API that serves as many at once but queues the rest instead of refusing them —
// the limit paced perfectly — plus the time the API stays closed), attempts spent beyond one a
// task, tasks not completed.

import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Plan, Task } from '../src/core/plan.ts';
import { executeScript, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { type ModelServer, type ReplyLike, type ScriptedRequest, httpError, startModelServer, text, toolUse } from '../test/support/model-server.ts';
import { makePlan, writePlan } from '../test/support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../test/support/real-claude.ts';
import { progress, table } from './timing.ts';

/** How the scripted API refuses. */
export interface ApiShape {
  /** Requests it serves at once. */
  capacity: number;
  /** How long it takes to answer one (ms). */
  serveMs: number;
  /** Closed for `forMs` from `afterMs` after the first request; `how`: what a closed API answers. */
  closed?: { afterMs: number; forMs: number; how: '429' | '529' };
  /** Never refuse: a request beyond `capacity` waits for a slot (the limit paced perfectly). */
  queue?: boolean;
}

interface Measured {
  seconds: number;
  refusals: number;
  served: number;
  exitCode: number;
  completed: number;
  /** Attempts recorded beyond one a task. */
  extraAttempts: number;
  requeued: number;
  paused: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The scripted API: `capacity` at once, a closed window, refusals counted. */
function limitedApi(shape: ApiShape): { respond: (req: ScriptedRequest) => Promise<ReplyLike>; counts: () => { refusals: number; served: number } } {
  let inFlight = 0;
  let first: number | null = null;
  let refusals = 0;
  let served = 0;
  const respond = async (req: ScriptedRequest): Promise<ReplyLike> => {
    const now = Date.now();
    first ??= now;
    const closed = shape.closed;
    if (closed !== undefined) {
      const opens = first + closed.afterMs + closed.forMs;
      if (now >= first + closed.afterMs && now < opens) {
        refusals++;
        return closed.how === '529'
          ? httpError(529, { message: 'Overloaded' })
          : httpError(429, { message: "This request would exceed your account's rate limit. Please try again later.", headers: { 'retry-after': String(Math.max(1, Math.ceil((opens - now) / 1000))) } });
      }
    }
    while (shape.queue === true && inFlight >= shape.capacity) await sleep(20);
    if (inFlight >= shape.capacity) {
      refusals++;
      return httpError(429, { message: "This request would exceed your account's rate limit. Please try again later.", headers: { 'retry-after': String(Math.max(1, Math.ceil(shape.serveMs / 1000))) } });
    }
    inFlight++;
    try {
      await sleep(shape.serveMs);
    } finally {
      inFlight--;
    }
    served++;
    const task = /TASK-MARKER: (t\d+)/.exec(req.prompt)?.[1] ?? 'unknown';
    if (req.assistantTurns === 0) return [toolUse('Write', { file_path: join(req.cwd ?? '.', `${task}.txt`), content: `${task}\n` })];
    return [text(`COMPLETED: wrote ${task}.txt`)];
  };
  return { respond, counts: () => ({ refusals, served }) };
}

function limitsPlan(tasks: number): Plan {
  const list: Task[] = Array.from({ length: tasks }, (_, i) => ({
    subject: `write t${i}.txt`,
    prompt: `Write t${i}.txt holding its name.\nTASK-MARKER: t${i}`,
    blockedBy: [],
    metadata: { files: { create: [`t${i}.txt`], modify: [] } },
    agent: { model: 'haiku', acceptanceCriteria: [{ criterion: `t${i}.txt is there`, check: `test -f t${i}.txt` }] },
  }));
  return makePlan(list, { goal: 'write the files' });
}

/** One run of `scripts/execute.ts` with real workers against the scripted API. */
export async function runLimited(shape: ApiShape, o: { tasks: number; concurrency: number; env?: Record<string, string | undefined> }): Promise<Measured> {
  const api = limitedApi(shape);
  const server: ModelServer = await startModelServer({ respond: api.respond });
  const repo = await tempGitRepo({ 'README.md': '# bench\n', '.gitignore': '.design/\n' });
  const home = await tempHome();
  try {
    await mkdir(join(home, 'config'), { recursive: true });
    const planPath = await writePlan(repo.dir, limitsPlan(o.tasks));
    // As a person runs it: the CLI's own retries as they come (no CLAUDE_CODE_MAX_RETRIES).
    const env = { ...claudeEnv(server.url, home, { CLAUDE_CODE_MAX_RETRIES: undefined }), NO_COLOR: '1', ...o.env };
    const r = await execa('node', [...nodeArgsFor(executeScript), '--claude-bin', claudeBin, '--no-probe', '--sandbox', 'off', '--concurrency', String(o.concurrency), '--json'], {
      cwd: repo.dir,
      reject: false,
      env,
      extendEnv: false,
      stdin: 'ignore',
      timeout: 1_200_000,
    });
    const events = String(r.stdout)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const finished = events.find((e) => e['type'] === 'run-finished');
    if (finished === undefined) throw new Error(`execute.ts exited ${r.exitCode} without a run-finished event:\n${String(r.stderr).slice(-2000)}`);
    const archived = await readFile(planPath, 'utf8').then(
      (t) => JSON.parse(t) as Plan,
      () => null,
    );
    const counts = finished['counts'] as Record<string, number>;
    const attempts = archived === null ? o.tasks : archived.tasks.reduce((n, t) => n + (t.attempts ?? 0), 0);
    const outcomes = events.filter((e) => e['type'] === 'task-finished').map((e) => e['outcome']);
    return {
      seconds: (finished['durationMs'] as number) / 1000,
      ...api.counts(),
      exitCode: r.exitCode ?? -1,
      completed: counts['completed'] ?? 0,
      extraAttempts: Math.max(0, attempts - (counts['completed'] ?? 0)),
      requeued: outcomes.filter((x) => x === 'requeued').length,
      paused: events.filter((e) => e['type'] === 'task-paused').length,
    };
  } finally {
    await server.close();
    await repo.cleanup();
  }
}

export const LIMITS_TASKS = 16;

/** The workload: 16 independent tasks at --concurrency 8, the API serving 2 at once and closed for 15 s. */
export async function benchLimits(o: { quick?: boolean } = {}): Promise<string> {
  const tasks = o.quick ? 8 : LIMITS_TASKS;
  const serveMs = 1000;
  const closedMs = 15_000;
  const rows: string[][] = [];
  progress('limits: the limit paced perfectly (the API queues, never refuses, never closes)');
  const paced = await runLimited({ capacity: 2, serveMs, queue: true }, { tasks, concurrency: 8 });
  const allowed = paced.seconds + closedMs / 1000;
  const row = (name: string, m: Measured, bound: number | null) => {
    rows.push([
      name,
      m.seconds.toFixed(1),
      bound === null ? '–' : (m.seconds / bound).toFixed(2),
      String(m.refusals),
      (m.refusals / tasks).toFixed(2),
      String(m.requeued),
      String(m.paused),
      String(m.extraAttempts),
      `${m.completed}/${tasks}`,
      String(m.exitCode),
    ]);
  };
  row('the limit paced perfectly: API 2 at once, queues the rest, never closed', paced, null);
  const cases: Array<[string, ApiShape]> = [
    ['--concurrency 8, API 2 at once (429 + retry-after), closed 15 s (429 + retry-after)', { capacity: 2, serveMs, closed: { afterMs: 5000, forMs: closedMs, how: '429' } }],
    ['--concurrency 8, API 2 at once (429 + retry-after), closed 15 s (529, no retry-after)', { capacity: 2, serveMs, closed: { afterMs: 5000, forMs: closedMs, how: '529' } }],
  ];
  for (const [name, shape] of cases) {
    progress(`limits: ${name}`);
    row(name, await runLimited(shape, { tasks, concurrency: 8 }), allowed);
  }
  return [
    `${tasks} independent tasks (each: one Write, then the status line: 2 requests), the real CLI (2.1.330, its own retries as they come) against the scripted API answering in ${serveMs} ms. Allowed: the perfectly paced run plus the ${closedMs / 1000} s the API is closed = ${allowed.toFixed(1)} s.`,
    '',
    table(['workload', 'seconds', '× allowed', 'refusals', 'a task', 'requeued', 'paused', 'attempts spent', 'completed', 'exit'], rows),
  ].join('\n');
}
