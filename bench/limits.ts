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
import type { Plan, Task } from '../src/core/plan/plan.ts';
import { executeScript, nodeArgsFor } from '../test/support/execute.ts';
import { tempGitRepo } from '../test/support/git-repo.ts';
import { httpError, type ModelServer, type ReplyLike, type ScriptedRequest, startModelServer, text, toolUse } from '../test/support/model-server.ts';
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
  /** The run's events (`--json`), for a closer look. */
  events: Array<Record<string, unknown>>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The scripted API: `capacity` at once, a closed window, refusals counted. */
function limitedApi(shape: ApiShape): { respond: (req: ScriptedRequest) => Promise<ReplyLike>; counts: () => { refusals: number; served: number } } {
  let inFlight = 0;
  let first: number | null = null;
  let refusals = 0;
  let served = 0;
  const log: string[] = [];
  const respond = async (req: ScriptedRequest): Promise<ReplyLike> => {
    const now = Date.now();
    first ??= now;
    const closed = shape.closed;
    if (closed !== undefined) {
      const opens = first + closed.afterMs + closed.forMs;
      if (now >= first + closed.afterMs && now < opens) {
        refusals++;
        log.push(`${((now - first) / 1000).toFixed(1)} closed ${/TASK-MARKER: (t\d+)/.exec(req.prompt)?.[1]} turn ${req.assistantTurns}`);
        return closed.how === '529'
          ? httpError(529, { message: 'Overloaded' })
          : httpError(429, {
              message: "This request would exceed your account's rate limit. Please try again later.",
              headers: { 'retry-after': String(Math.max(1, Math.ceil((opens - now) / 1000))) },
            });
      }
    }
    while (shape.queue === true && inFlight >= shape.capacity) await sleep(20);
    if (inFlight >= shape.capacity) {
      refusals++;
      log.push(`${((now - first) / 1000).toFixed(1)} full ${/TASK-MARKER: (t\d+)/.exec(req.prompt)?.[1]} turn ${req.assistantTurns}`);
      return httpError(429, {
        message: "This request would exceed your account's rate limit. Please try again later.",
        headers: { 'retry-after': String(Math.max(1, Math.ceil(shape.serveMs / 1000))) },
      });
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
  // FOREMAN_BENCH_LOG=1: each refusal (when, closed or full, whose, which turn) on stderr at exit, to see where they come from.
  if (process.env.FOREMAN_BENCH_LOG) process.on('exit', () => process.stderr.write(`${log.join('\n')}\n`));
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
    const r = await execa(
      'node',
      [...nodeArgsFor(executeScript), '--claude-bin', claudeBin, '--no-probe', '--sandbox', 'off', '--concurrency', String(o.concurrency), '--json'],
      {
        cwd: repo.dir,
        reject: false,
        env,
        extendEnv: false,
        stdin: 'ignore',
        timeout: 1_200_000,
      },
    );
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
      events,
    };
  } finally {
    await server.close();
    await repo.cleanup();
  }
}

export const LIMITS_TASKS = 16;

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * The workload: 16 independent tasks at --concurrency 8, the API serving 2 at once and
 * closed for 15 s (429 with the seconds left, or 529 with none), and once closed for 75 s with a
 * `retry-after` past the minute the CLI waits at most (a window that stays closed past a worker's
 * own retries). Runs interleaved, `reps` each (medians); the long window once.
 */
export async function benchLimits(o: { quick?: boolean } = {}): Promise<string> {
  const tasks = o.quick ? 8 : LIMITS_TASKS;
  const reps = o.quick ? 1 : 3;
  const serveMs = 1000;
  const closedMs = 15_000;
  const longMs = 75_000;
  const shapes: Array<[string, ApiShape]> = [
    ['the limit paced perfectly: API 2 at once, queues the rest, never closed', { capacity: 2, serveMs, queue: true }],
    [
      'API 2 at once (429 + retry-after), closed 15 s (429 + retry-after: the seconds left)',
      { capacity: 2, serveMs, closed: { afterMs: 5000, forMs: closedMs, how: '429' } },
    ],
    [
      'API 2 at once (429 + retry-after), closed 15 s (529 overloaded_error, no retry-after)',
      { capacity: 2, serveMs, closed: { afterMs: 5000, forMs: closedMs, how: '529' } },
    ],
  ];
  const runs = shapes.map(() => [] as Measured[]);
  for (let k = 0; k < reps; k++) {
    for (const [i, [name, shape]] of shapes.entries()) {
      progress(`limits: run ${k + 1} of ${reps}: ${name}`);
      runs[i]!.push(await runLimited(shape, { tasks, concurrency: 8 }));
    }
  }
  const long: [string, ApiShape] = [
    'API 2 at once, closed 75 s (429 + retry-after: the seconds left, more than the minute a CLI waits at first, so it gives up)',
    { capacity: 2, serveMs, closed: { afterMs: 5000, forMs: longMs, how: '429' } },
  ];
  progress(`limits: ${long[0]}`);
  const longRun = await runLimited(long[1], { tasks, concurrency: 8 });
  const paced = median(runs[0]!.map((m) => m.seconds));
  const rows: string[][] = [];
  const row = (name: string, ms: Measured[], closed: number | null) => {
    const seconds = median(ms.map((m) => m.seconds));
    const refusals = median(ms.map((m) => m.refusals));
    rows.push([
      name,
      seconds.toFixed(1),
      closed === null ? '–' : (seconds / (paced + closed / 1000)).toFixed(2),
      String(refusals),
      (refusals / tasks).toFixed(2),
      String(median(ms.map((m) => m.requeued))),
      String(median(ms.map((m) => m.paused))),
      String(Math.max(...ms.map((m) => m.extraAttempts))),
      `${Math.min(...ms.map((m) => m.completed))}/${tasks}`,
      [...new Set(ms.map((m) => m.exitCode))].join(', '),
    ]);
  };
  row(shapes[0]![0], runs[0]!, null);
  row(shapes[1]![0], runs[1]!, closedMs);
  row(shapes[2]![0], runs[2]!, closedMs);
  row(long[0], [longRun], longMs);
  return [
    `${tasks} independent tasks (each: one Write, then the status line: 2 requests) at --concurrency 8, the real CLI (2.1.330, its own retries as they come) against the scripted API answering in ${serveMs} ms; the API closes ${5} s after its first request. Median of ${reps} interleaved runs (the 75 s window: one run). × allowed: the run's time over the perfectly paced run's (${paced.toFixed(1)} s) plus the time the API is closed.`,
    '',
    table(['workload', 'seconds', '× allowed', 'refusals', 'a task', 'requeued', 'paused', 'attempts spent', 'completed', 'exit'], rows),
  ].join('\n');
}
