import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerFailure, WorkerRun } from '../src/core/attempt/worker-run.ts';
import { runWorker } from '../src/adapters/worker/worker.ts';
import { buildWorkerArgs, type WorkerRequest } from '../src/adapters/worker/worker-request.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const FAKE = join(ROOT, 'test/fixtures/fake-worker.mjs');
const REAL_CLAUDE = join(ROOT, 'node_modules/.bin/claude');

let dir: string;
let n = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-worker-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Setup {
  req: WorkerRequest;
  cwd: string;
  journal: string;
}

async function setup(directive: unknown, over: Partial<WorkerRequest> = {}, promptPrefix = ''): Promise<Setup> {
  const id = ++n;
  const cwd = join(dir, `w${id}`);
  await mkdir(cwd, { recursive: true });
  const journal = join(dir, `journal-${id}.jsonl`);
  const req: WorkerRequest = {
    taskIndex: id,
    attempt: 1,
    prompt: `${promptPrefix}TASK-MARKER: t${id}\nDo the thing.\nFAKE-WORKER: ${JSON.stringify(directive)}\n`,
    model: 'sonnet',
    cwd,
    claudeBin: FAKE,
    permissionMode: 'dontAsk',
    allowedTools: ['Read', 'Edit', 'Write', 'Bash(npm test *)'],
    // Beyond the test's own limit: these tests are not about the worker's (those that are set theirs).
    timeoutMs: 300_000,
    logPath: join(dir, `logs-${id}`, '.design', `worker-${id}.log`),
    env: { ...process.env, FAKE_WORKER_JOURNAL: journal },
    killGraceMs: 1000,
    ...over,
  };
  return { req, cwd, journal };
}

type JournalEntry = { event: string; pid: number; childPid?: number; args: string[]; attempt: number; taskMarker: string | null };
const readJournal = (file: string): JournalEntry[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as JournalEntry)
    : [];

function failureOf(run: WorkerRun): WorkerFailure {
  if (run.outcome.kind !== 'failed') throw new Error(`expected a failure, got ${JSON.stringify(run.outcome)}`);
  return run.outcome.failure;
}

/** Alive and not a zombie (a container's init may not reap orphans). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('runWorker with the fake worker', () => {
  it('runs a task: files written, status line, usage, session, readable log, prompt only on stdin', async () => {
    const activity: string[] = [];
    const { req, cwd, journal } = await setup(
      { write: { 'src/a.ts': 'export const a = 1;\n' }, status: 'COMPLETED: wrote a', costUsd: 0.25, tokens: { input: 1234, output: 56 } },
      { onActivity: (a) => activity.push(a.text), maxBudgetUsd: 1.5, extraArgs: ['--append-system-prompt', 'be brief'] },
    );
    const run = await runWorker(req);
    expect(run.outcome).toEqual({ kind: 'reported', resultText: 'COMPLETED: wrote a', statusLine: { status: 'COMPLETED', text: 'wrote a' } });
    expect(readFileSync(join(cwd, 'src/a.ts'), 'utf8')).toBe('export const a = 1;\n');
    expect(run.usage).toEqual({ costUsd: 0.25, inputTokens: 1234, outputTokens: 56, cacheReadTokens: 0, cacheCreationTokens: 0 });
    expect(run.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(run.logPath).toBe(req.logPath);
    expect(run.durationMs).toBeGreaterThan(0);
    expect(activity).toContain('Write src/a.ts');

    const [start, end] = readJournal(journal);
    expect(start?.event).toBe('start');
    expect(end?.event).toBe('end');
    expect(start?.taskMarker).toBe(`t${req.taskIndex}`);
    expect(start?.args).toEqual(buildWorkerArgs(req));
    expect(start?.args).toEqual([
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--model',
      'sonnet',
      '--permission-mode',
      'dontAsk',
      '--setting-sources',
      '',
      '--settings',
      JSON.stringify({ permissions: { allow: ['Read', 'Edit', 'Write', 'Bash(npm test *)'], deny: [] } }),
      '--max-budget-usd',
      '1.5',
      '--append-system-prompt',
      'be brief',
    ]);

    const log = await readFile(req.logPath, 'utf8');
    expect(log).toContain(`session ${run.sessionId} (resume with: claude --resume ${run.sessionId})`);
    expect(log).toContain('→ Write src/a.ts');
    expect(log).toMatch(/= result: success .*cost \$0\.25 .*tokens in 1234 out 56/);
    expect(log).toContain('==== outcome: reported COMPLETED: wrote a');
  });

  it('appends attempts to one log and picks the behaviour for the attempt', async () => {
    const { req } = await setup({ attempts: [{ status: 'FAILED: first' }, { status: 'COMPLETED: second' }] });
    const first = await runWorker(req);
    const second = await runWorker({ ...req, attempt: 2, prompt: `${req.prompt}\nThis is attempt 2 of 3.` });
    expect(first.outcome).toMatchObject({ statusLine: { status: 'FAILED', text: 'first' } });
    expect(second.outcome).toMatchObject({ statusLine: { status: 'COMPLETED', text: 'second' } });
    const log = await readFile(req.logPath, 'utf8');
    expect(log.match(/^==== task \d+ · attempt/gm)).toHaveLength(2);
  });

  it('no status line → reported with a null status line; exit code ignored when reported', async () => {
    const { req } = await setup({ status: null, resultText: 'I did some things.', exitCode: 3 });
    const run = await runWorker(req);
    expect(run.outcome).toEqual({ kind: 'reported', resultText: 'I did some things.', statusLine: null });
  });

  it('does not wait for a worker that lingers after its result', async () => {
    const { req } = await setup({ status: 'COMPLETED: lingered', lingerMs: 30_000 }, { postResultGraceMs: 300, killGraceMs: 300 });
    const t = Date.now();
    const run = await runWorker(req);
    expect(run.outcome).toMatchObject({ kind: 'reported', statusLine: { status: 'COMPLETED', text: 'lingered' } });
    expect(Date.now() - t).toBeLessThan(5000);
  });

  it('crash → no-result with exit code and stderr tail', async () => {
    const { req } = await setup({ crash: true });
    const f = failureOf(await runWorker(req));
    expect(f).toMatchObject({ reason: 'no-result', exitCode: 1 });
    expect(f.reason === 'no-result' && f.stderrTail).toContain('crashing on purpose');
    expect(await readFile(req.logPath, 'utf8')).toContain('stderr| fake-worker: crashing on purpose');
  });

  it('garbage → garbage-output, lines logged verbatim', async () => {
    const { req } = await setup({ garbage: true });
    const f = failureOf(await runWorker(req));
    expect(f).toEqual({ reason: 'garbage-output', sample: 'Error: something went terribly wrong' });
    expect(await readFile(req.logPath, 'utf8')).toContain('stdout| this is not json either');
  });

  it('timeout kills the whole process group, the spawned child included', async () => {
    const { req, journal } = await setup({ spawnChild: true, hang: true }, { timeoutMs: 1500, killGraceMs: 500 });
    const t = Date.now();
    const run = await runWorker(req);
    expect(failureOf(run)).toEqual({ reason: 'timed-out', timeoutMs: 1500 });
    expect(Date.now() - t).toBeLessThan(1500 + 500 + 3000);
    const child = readJournal(journal).find((e) => e.event === 'child');
    const leader = readJournal(journal).find((e) => e.event === 'start');
    expect(child?.childPid).toBeGreaterThan(0);
    expect(isAlive(child!.childPid!)).toBe(false);
    expect(isAlive(leader!.pid)).toBe(false);
    expect(await readFile(req.logPath, 'utf8')).toContain("killing the worker's process group (timed out after 1500 ms)");
  });

  it('abort → interrupted, group killed', async () => {
    const controller = new AbortController();
    const { req, journal } = await setup(
      { spawnChild: true, hang: true },
      {
        signal: controller.signal,
        onActivity: (a) => {
          if (a.text.startsWith('CHILD-PID:')) controller.abort();
        },
      },
    );
    const t = Date.now();
    const run = await runWorker(req);
    expect(failureOf(run)).toEqual({ reason: 'interrupted' });
    expect(Date.now() - t).toBeLessThan(5000);
    const child = readJournal(journal).find((e) => e.event === 'child');
    expect(isAlive(child!.childPid!)).toBe(false);
  });

  it('an already aborted signal → interrupted without spawning', async () => {
    const { req, journal } = await setup({}, { signal: AbortSignal.abort() });
    expect(failureOf(await runWorker(req))).toEqual({ reason: 'interrupted' });
    expect(readJournal(journal)).toEqual([]);
  });

  it('kills what a worker leaves behind when it exits on its own', async () => {
    const { req, journal } = await setup({ spawnChild: true });
    const run = await runWorker(req);
    expect(run.outcome.kind).toBe('reported');
    const child = readJournal(journal).find((e) => e.event === 'child');
    expect(isAlive(child!.childPid!)).toBe(false);
  });

  it('escalates to SIGKILL for a leftover that ignores SIGTERM and holds the pipes open', async () => {
    for (const extra of [{}, { hang: true }]) {
      const { req, journal } = await setup({ spawnChild: 'stubborn', ...extra }, { timeoutMs: 800, killGraceMs: 500 });
      const t = Date.now();
      const run = await runWorker(req);
      expect(run.outcome.kind === 'reported' || failureOf(run).reason === 'timed-out').toBe(true);
      expect(Date.now() - t).toBeLessThan(5000);
      const child = readJournal(journal).find((e) => e.event === 'child');
      expect(isAlive(child!.childPid!)).toBe(false);
    }
  });

  it('delivers a prompt over 200 KiB intact on stdin', async () => {
    const filler = `${Array.from({ length: 4000 }, (_, i) => `line ${i}: ${'é·x'.repeat(20)}`).join('\n')}\n`;
    const { req, journal } = await setup({ echoPromptHash: true }, {}, filler);
    expect(Buffer.byteLength(req.prompt)).toBeGreaterThan(200 * 1024);
    const run = await runWorker(req);
    const text = run.outcome.kind === 'reported' ? run.outcome.resultText : '';
    expect(text).toContain(`PROMPT-BYTES: ${Buffer.byteLength(req.prompt)}`);
    expect(text).toContain(`PROMPT-SHA256: ${createHash('sha256').update(req.prompt).digest('hex')}`);
    // Not in argv:
    expect(readJournal(journal)[0]?.args.join(' ').length).toBeLessThan(1000);
  });

  it('echoes the prompt when asked', async () => {
    const { req } = await setup({ echoPrompt: true, status: 'COMPLETED: echoed' });
    const run = await runWorker(req);
    expect(run.outcome.kind === 'reported' && run.outcome.resultText).toContain(`TASK-MARKER: t${req.taskIndex}\nDo the thing.`);
    expect(run.outcome).toMatchObject({ statusLine: { status: 'COMPLETED', text: 'echoed' } });
  });

  it.each([
    ['not-logged-in', { reason: 'not-authenticated', message: 'Not logged in · Please run /login' }],
    ['401', { reason: 'not-authenticated' }],
    ['403', { reason: 'not-authenticated' }],
    ['429', { reason: 'rate-limited', retryAfterMs: 500 }],
    ['529', { reason: 'overloaded' }],
    ['max-turns', { reason: 'max-turns', message: 'Reached maximum number of turns (1)' }],
    ['max-budget', { reason: 'max-budget', message: 'Reached maximum budget ($0.5)' }],
  ])('error %s → %o', async (error, expected) => {
    const { req } = await setup({ error, write: { 'f.txt': 'x' } }, { maxBudgetUsd: 0.5 });
    expect(failureOf(await runWorker(req))).toMatchObject(expected);
  });

  it('kills the worker at the first 401 retry instead of sitting through the retries', async () => {
    const { req } = await setup({ error: '401', retryDelayMs: 30_000 });
    const t = Date.now();
    const run = await runWorker(req);
    expect(failureOf(run).reason).toBe('not-authenticated');
    expect(Date.now() - t).toBeLessThan(5000);
    expect(await readFile(req.logPath, 'utf8')).toContain('(authentication failed)');
  });

  it('carries permission denials through', async () => {
    const denial = { tool_name: 'Bash', tool_input: { command: 'rm -rf /', description: 'oops' } };
    const { req } = await setup({ permissionDenials: [denial] });
    const run = await runWorker(req);
    expect(run.outcome.kind).toBe('reported');
    expect(run.permissionDenials).toEqual([{ tool: 'Bash', input: { command: 'rm -rf /', description: 'oops' } }]);
    expect(await readFile(req.logPath, 'utf8')).toContain('! permission denied: Bash');
  });

  it('a missing or non-executable binary → agent-missing', async () => {
    const { req } = await setup({}, { claudeBin: join(dir, 'no-such-claude') });
    expect(failureOf(await runWorker(req))).toMatchObject({ reason: 'agent-missing', bin: join(dir, 'no-such-claude') });
    const notExec = join(dir, 'not-executable');
    writeFileSync(notExec, '#!/bin/sh\necho hi\n');
    await chmod(notExec, 0o644);
    expect(failureOf(await runWorker({ ...req, claudeBin: notExec }))).toMatchObject({ reason: 'agent-missing' });
    expect(await readFile(req.logPath, 'utf8')).toContain('could not start the worker');
  });

  it('rejects a working directory that does not exist (a programming error)', async () => {
    const { req } = await setup({});
    await expect(runWorker({ ...req, cwd: join(dir, 'nope') })).rejects.toThrow(/cwd does not exist/);
  });

  it('streams 50 MB of output with flat memory and a readable log', async () => {
    const { req, cwd } = await setup({});
    const script = join(dir, 'mem.mts');
    await writeFile(
      script,
      `import { runWorker } from ${JSON.stringify(join(ROOT, 'src/adapters/worker/worker.ts'))};
const base = process.memoryUsage().heapUsed;
let peak = base;
const iv = setInterval(() => { peak = Math.max(peak, process.memoryUsage().heapUsed); }, 2);
const run = await runWorker({ taskIndex: 0, attempt: 1, prompt: 'FAKE-WORKER: {"hugeOutputMB": 50}', model: 'sonnet',
  cwd: ${JSON.stringify(cwd)}, claudeBin: ${JSON.stringify(FAKE)}, permissionMode: 'acceptEdits', allowedTools: [],
  timeoutMs: 60000, logPath: ${JSON.stringify(req.logPath)} });
clearInterval(iv);
peak = Math.max(peak, process.memoryUsage().heapUsed);
console.log(JSON.stringify({ kind: run.outcome.kind, growthMB: (peak - base) / 2 ** 20, maxRssMB: process.resourceUsage().maxRSS / 1024 }));
`,
    );
    const { stdout } = await execa(process.execPath, ['--import', 'tsx', script], { cwd: ROOT });
    const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { kind: string; growthMB: number; maxRssMB: number };
    expect(r.kind).toBe('reported');
    expect(r.growthMB).toBeLessThan(30);
    const log = await readFile(req.logPath, 'utf8');
    expect(log).toContain('assistant: chunk 0');
    expect(log).toContain('assistant: chunk 799');
    expect(log.length).toBeLessThan(10 * 2 ** 20); // each 64 KiB text is cut in the log
    expect(log).toContain('==== outcome: reported COMPLETED: done');
  });
});

const LOUD = join(ROOT, 'test/fixtures/loud-worker.mjs');
const CUT_MARKER =
  /^==== log cut: (\d+) bytes \([\d.]+ MiB, (\d+) whole lines\) of this attempt's log omitted here; the log keeps the first [\d.]+ MiB and the last [\d.]+ MiB of each attempt ====$/;

/** The noise line numbers in `lines`, in order. */
const noiseIndices = (lines: string[]): number[] =>
  lines.flatMap((l) => {
    const m = / stdout\| noise (\d+) x/.exec(l);
    return m ? [Number(m[1])] : [];
  });
const consecutive = (xs: number[]): boolean => xs.every((x, i) => i === 0 || x === xs[i - 1]! + 1);

describe('the worker log bound', () => {
  it('keeps the head and the real tail with a line saying what was cut, while the parser sees every line', async () => {
    const activity: string[] = [];
    const { req } = await setup(
      {},
      {
        claudeBin: LOUD,
        env: { ...process.env, LOUD_LINES: '2000', LOUD_LINE_BYTES: '100' },
        logLimit: { headBytes: 20_000, tailBytes: 10_000 },
        onActivity: (a) => activity.push(a.text),
      },
    );
    const run = await runWorker(req);
    // The result and the Write in the middle of the noise reached the parser, though the log cut them.
    expect(run.outcome).toEqual({ kind: 'reported', resultText: 'COMPLETED: loud', statusLine: { status: 'COMPLETED', text: 'loud' } });
    expect(run.usage.costUsd).toBe(0.42);
    expect(activity).toContain('Write middle.txt');

    const log = await readFile(req.logPath, 'utf8');
    expect(Buffer.byteLength(log)).toBeLessThanOrEqual(20_000 + 10_000 + 300);
    expect(log).not.toContain('middle.txt');
    const lines = log.split('\n');
    expect(lines.at(-1)).toBe('');
    const markers = lines.flatMap((l, i) => (CUT_MARKER.test(l) ? [i] : []));
    expect(markers).toHaveLength(1);
    const at = markers[0]!;
    const [, cutBytes, cutLines] = CUT_MARKER.exec(lines[at]!)!;
    const head = noiseIndices(lines.slice(0, at));
    const tail = noiseIndices(lines.slice(at + 1));
    expect(lines[0]).toMatch(/^==== task \d+ · attempt 1 · /);
    expect(head[0]).toBe(0);
    expect(consecutive(head)).toBe(true);
    // The tail is the real end: every noise line up to the last, then the last line, the result, the outcome.
    expect(tail.at(-1)).toBe(1999);
    expect(consecutive(tail)).toBe(true);
    const missing = tail[0]! - head.at(-1)! - 1;
    expect(missing).toBeGreaterThan(1000);
    expect(Number(cutLines)).toBeGreaterThanOrEqual(missing);
    expect(Number(cutBytes)).toBeGreaterThanOrEqual(missing * 100);
    expect(lines.slice(at + 1).some((l) => l.endsWith('stdout| last noise line'))).toBe(true);
    expect(lines.at(-2)).toMatch(/^==== outcome: reported COMPLETED: loud · /);
  });

  it('a worker printing 150 MB leaves a log of at most 8 MiB + 2 MiB, in bounded memory', async () => {
    const { req, cwd } = await setup({});
    const script = join(dir, 'loud.mts');
    await writeFile(
      script,
      `import { runWorker } from ${JSON.stringify(join(ROOT, 'src/adapters/worker/worker.ts'))};
const run = await runWorker({ taskIndex: 0, attempt: 1, prompt: 'be loud', model: 'sonnet',
  cwd: ${JSON.stringify(cwd)}, claudeBin: ${JSON.stringify(LOUD)}, permissionMode: 'dontAsk', allowedTools: [],
  env: { ...process.env, LOUD_LINES: '150000', LOUD_LINE_BYTES: '1000' },
  timeoutMs: 300000, logPath: ${JSON.stringify(req.logPath)} });
console.log(JSON.stringify({ outcome: run.outcome }));
`,
    );
    // A heap of 64 MB: keeping the output (150 MB) or an unbounded tail would run out of memory.
    const { stdout } = await execa(process.execPath, ['--max-old-space-size=64', '--import', 'tsx', script], { cwd: ROOT });
    const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { outcome: WorkerRun['outcome'] };
    expect(r.outcome).toMatchObject({ kind: 'reported', resultText: 'COMPLETED: loud' });
    const log = await readFile(req.logPath, 'utf8');
    expect(Buffer.byteLength(log)).toBeLessThanOrEqual(8 * 2 ** 20 + 2 * 2 ** 20 + 1024);
    const lines = log.split('\n');
    const at = lines.findIndex((l) => CUT_MARKER.test(l));
    expect(at).toBeGreaterThan(0);
    const [, cutBytes] = CUT_MARKER.exec(lines[at]!)!;
    expect(Number(cutBytes)).toBeGreaterThan(130 * 10 ** 6);
    expect(noiseIndices(lines.slice(0, at))[0]).toBe(0);
    const tail = noiseIndices(lines.slice(at + 1));
    expect(tail.at(-1)).toBe(149_999);
    expect(consecutive(tail)).toBe(true);
    expect(log).toContain('stdout| last noise line');
    expect(lines.at(-2)).toMatch(/^==== outcome: reported COMPLETED: loud · /);
  });
});

describe('runWorker with the real Claude Code CLI', () => {
  it.skipIf(!existsSync(REAL_CLAUDE))('without credentials → not-authenticated', async () => {
    const home = await mkdtemp(join(tmpdir(), 'foreman-home-'));
    try {
      const { req } = await setup(
        {},
        {
          claudeBin: REAL_CLAUDE,
          model: 'haiku',
          permissionMode: 'dontAsk',
          allowedTools: ['Read'],
          env: {
            PATH: process.env['PATH'],
            HOME: home,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
            CLAUDE_CODE_MAX_RETRIES: '0',
          },
        },
      );
      const run = await runWorker(req);
      expect(failureOf(run)).toMatchObject({ reason: 'not-authenticated' });
      expect(run.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      const log = await readFile(req.logPath, 'utf8');
      expect(log).toContain('claude --resume');
      expect(log).toContain('Not logged in');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
