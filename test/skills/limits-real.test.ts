// Limits in a session, as a person meets them: the REAL Claude Code CLI with the built plugin,
// `/foreman:execute` typed in the default permission mode, the scripted model playing the lead as
// skills/execute/SKILL.md tells it and the Task subagents — and the scripted API refusing
// subagents' requests as the real one does: 429 `rate_limit_error` with a `retry-after` past the
// minute a CLI waits, 529 `overloaded_error`, and a subscription's usage limit (a 429 with the
// account's `anthropic-ratelimit-unified-*` headers; the session signs in through an
// organization's gateway, whose token makes Claude Code read them as it does for a claude.ai
// login: "You've hit your 5-hour limit · resets 9:40pm (UTC)"). What must hold: a refused
// subagent's task is handed back with no attempt spent, the next round hands out no more tasks
// than the last got through, and a usage limit's reset stops the hand-outs and is told to the person.

import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKTREE_NOT_MADE } from '../../src/run/session/driver.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ContentBlock, httpError, type ModelServer, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, gatewayToken, parseStreamJson, repoRoot, type StreamEvent, tempHome } from '../support/real-claude.ts';
import { agentCall, bash, json, lastCalls, leadPlace, taskOfPrompt, worktreesOneAtATime } from './real-session.ts';

const pluginRoot = join(repoRoot, 'plugin');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Claude Code's line for a failed Agent call, or the subagent's status line (as the skill's step c says). */
function outputOf(result: string): string {
  const status = [...result.matchAll(/^\s*((?:COMPLETED|FAILED|BLOCKED):.*)$/gm)].at(-1)?.[1];
  if (status !== undefined) return status;
  const first = result.split('\n')[0]!.trim();
  if (WORKTREE_NOT_MADE.test(result) || /^Agent terminated early due to an API error/.test(first)) return first;
  return result.trim().split('\n').at(-1) ?? '';
}

/** The lead, as skills/execute/SKILL.md tells it: set up, then rounds of next, Agent calls, results, finalize, commit. */
function playLead(req: ScriptedRequest, repo: string): ContentBlock[] {
  const { launcher, calls, first, step } = leadPlace(req);
  if (req.assistantTurns === 0) return [bash(`${launcher} plan setup --sandbox on`)];
  if (first === undefined) return [text('The scripted lead lost its place.')];
  if (first.name === 'Bash' && (step === 'setup' || step === 'commit')) return [bash(`${launcher} plan next`)];
  if (first.name === 'Bash' && step === 'next') {
    const next = json(first.result);
    // Step a: a usage limit holds the hand-outs; tell the user when, and stop.
    if (next?.stall === 'limit') return [text(`Stopped for now: ${next.limit.message}`)];
    if (!next || next.tasks.length === 0) return [text(`next said: ${first.result}`)];
    return next.tasks.map(agentCall);
  }
  if (first.name === 'Agent') {
    const results = calls.map((c) => {
      const worktree = /^worktreePath: (.+)$/m.exec(c.result)?.[1];
      return { task: taskOfPrompt(c.input.prompt), output: outputOf(c.result), ...(worktree ? { worktree } : {}) };
    });
    return [toolUse('Write', { file_path: join(repo, '.design/prompts/results.json'), content: JSON.stringify(results) })];
  }
  if (first.name === 'Write') return [bash(`${launcher} plan finalize --results .design/prompts/results.json --sandbox on`)];
  if (first.name === 'Bash' && step === 'finalize') return [bash(`${launcher} plan commit --sandbox on`)];
  return [text(`The scripted lead does not know what to do after ${first.name} ${step ?? ''}.`)];
}

/** Each task's subagent: read its prompt file, write its file, report. */
function playWorker(req: ScriptedRequest, task: number): ContentBlock[] {
  const promptFile = /First read the file (\S+?),/.exec(req.prompt)?.[1] ?? '';
  const steps = [[toolUse('Read', { file_path: promptFile })], [toolUse('Write', { file_path: join(req.cwd!, `t${task}.txt`), content: `t${task}\n` })]];
  return steps[req.assistantTurns] ?? [text(`Wrote t${task}.txt.\nCOMPLETED: wrote t${task}.txt`)];
}

describe('/foreman:execute when the API refuses subagents (the real CLI, the plugin, the default permission mode)', () => {
  let repo: TempGitRepo;
  let server: ModelServer;
  let run: { exitCode: number | undefined; events: StreamEvent[]; stderr: string };
  const resetsAt = Math.floor(Date.now() / 1000) + 3 * 3600;
  /** The API's answers to each task's subagents' first requests, in order. */
  const refusals: Array<[number, string]> = [];

  beforeAll(async () => {
    repo = await tempGitRepo({ 'README.md': '# sample\n', '.gitignore': '.design/\n' });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await writePlan(
      repo.dir,
      makePlan(
        Array.from({ length: 5 }, (_, i) => ({
          subject: `write t${i}.txt`,
          prompt: `Write t${i}.txt holding "t${i}".`,
          blockedBy: [],
          metadata: { files: { create: [`t${i}.txt`], modify: [] } },
          agent: { model: 'haiku', acceptanceCriteria: [{ criterion: `t${i}.txt is there`, check: `grep -q t${i} t${i}.txt` }] },
        })),
      ),
    );
    // Round 1 (tasks 0–3): 1 and 3 get a 429 asking for two minutes (the CLI gives up at once), 2 a 529.
    // Round 3 (tasks 2 and 3): 2 meets the account's usage limit. Every other request is served.
    const script = new Map<number, ReturnType<typeof httpError>[]>([
      [1, [httpError(429, { message: "This request would exceed your account's rate limit. Please try again later.", headers: { 'retry-after': '120' } })]],
      [
        2,
        [
          httpError(529, { message: 'Overloaded' }),
          httpError(429, {
            message: "This request would exceed your account's rate limit.",
            headers: {
              'retry-after': '10800',
              'anthropic-ratelimit-unified-status': 'rejected',
              'anthropic-ratelimit-unified-reset': String(resetsAt),
              'anthropic-ratelimit-unified-representative-claim': 'five_hour',
            },
          }),
        ],
      ],
      [3, [httpError(429, { message: "This request would exceed your account's rate limit. Please try again later.", headers: { 'retry-after': '120' } })]],
    ]);
    const subagents = new Map<number, number>();
    // A subagent is its worktree: its first request is the first from there (the CLI's retries of it come from there too).
    const seen = new Set<string>();
    const inTurn = await worktreesOneAtATime(join(home, 'agent-calls'));
    server = await startModelServer({
      respond: async (req) => {
        if (!req.prompt.startsWith('First read the file ')) return playLead(req, repo.dir);
        const task = taskOfPrompt(req.prompt);
        if (req.assistantTurns === 0 && !seen.has(req.cwd ?? '')) {
          seen.add(req.cwd ?? '');
          await inTurn.started();
          const round = (subagents.get(task) ?? 0) + 1;
          subagents.set(task, round);
          const refusal = script.get(task)?.[round === 1 ? 0 : 1];
          // Task 2's second subagent is its second refusal: the usage limit.
          if (refusal !== undefined && (round === 1 || task === 2)) {
            refusals.push([task, `${refusal.status} ${refusal.errorType}`]);
            return refusal;
          }
        }
        return playWorker(req, task);
      },
    });
    cleanups.push(() => server.close());
    const r = await execa(
      claudeBin,
      [
        '-p',
        '--output-format',
        'stream-json',
        '--verbose',
        '--model',
        'haiku',
        '--plugin-dir',
        pluginRoot,
        '--permission-mode',
        'default',
        '--settings',
        JSON.stringify(inTurn.settings),
      ],
      {
        cwd: repo.dir,
        // Signed in through a gateway (no API key): the account's limit headers are read.
        env: { ...claudeEnv(server.url, home, { ANTHROPIC_API_KEY: undefined, ANTHROPIC_AUTH_TOKEN: gatewayToken() }), TZ: 'UTC' },
        extendEnv: false,
        input: '/foreman:execute',
        reject: false,
        timeout: 420_000,
      },
    );
    run = { exitCode: r.exitCode, events: parseStreamJson(String(r.stdout)), stderr: String(r.stderr) };
  }, 480_000);

  /** The JSON each `plan <step>` printed, in order. */
  const steps = (name: string): any[] =>
    server
      .turns()
      .flatMap((r) => lastCalls(r as ScriptedRequest))
      .filter((c) => c.name === 'Bash' && String(c.input.command).includes(` plan ${name}`))
      .map((c) => json(c.result));

  it('hands a refused subagent’s task back with no attempt spent, and the next round out no wider than the last got through', async () => {
    expect(run.exitCode, run.stderr).toBe(0);
    // Round 1's three refusals come as their subagents start; the usage limit, in round 3.
    expect(refusals.slice(0, 3).sort()).toEqual([
      [1, '429 rate_limit_error'],
      [2, '529 overloaded_error'],
      [3, '429 rate_limit_error'],
    ]);
    expect(refusals[3]).toEqual([2, '429 rate_limit_error']);
    const [first, second, third] = steps('finalize');
    expect(first.results.map((r: { index: number; outcome: string; attempt: number }) => [r.index, r.outcome])).toEqual([
      [0, 'completed'],
      [1, 'requeued'],
      [2, 'requeued'],
      [3, 'requeued'],
    ]);
    expect(first.limit).toMatchObject({ handOut: 1, resetAt: null });
    expect(second.results.map((r: { index: number; outcome: string }) => [r.index, r.outcome])).toEqual([[1, 'completed']]);
    expect(second.limit).toBeUndefined();
    expect(third.results.map((r: { index: number; outcome: string }) => [r.index, r.outcome])).toEqual([
      [2, 'requeued'],
      [3, 'completed'],
    ]);
    // Round by round: four, then the one that got through, then one more.
    expect(steps('next').map((n) => n.tasks.map((t: { index: number }) => t.index))).toEqual([[0, 1, 2, 3], [1], [2, 3], []]);
    const plan = await readPlan(join(repo.dir, '.design/plan.json'));
    expect(plan.tasks.map((t) => [t.status ?? 'pending', t.attempts ?? 0])).toEqual([
      ['completed', 1],
      ['completed', 1],
      ['pending', 0],
      ['completed', 1],
      ['pending', 0],
    ]);
    for (const i of [0, 1, 3]) expect(await readFile(join(repo.dir, `t${i}.txt`), 'utf8')).toBe(`t${i}\n`);
  });

  it('a usage limit’s reset, from the subagent’s reply, holds the hand-outs, and the person is told when to run again', async () => {
    const third = steps('finalize')[2];
    // Claude Code writes the reset to the minute: foreman waits until that minute has passed.
    const reset = Date.parse(third.limit.resetAt);
    expect(reset).toBeGreaterThanOrEqual(resetsAt * 1000);
    expect(reset).toBeLessThanOrEqual(resetsAt * 1000 + 60_000);
    const next = steps('next').at(-1);
    expect([next.stall, next.limit.resetAt, next.limit.handOut]).toEqual(['limit', third.limit.resetAt, 0]);
    const final = String([...run.events].reverse().find((e) => e.type === 'result')?.result);
    // The time on the person's clock; with the day when it is not today (three hours on may be tomorrow).
    const at = new Date(reset);
    const pad = (n: number) => String(n).padStart(2, '0');
    const day = at.toDateString() === new Date().toDateString() ? '' : `${at.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} `;
    expect(final).toContain(`waiting for the usage limit to reset at ${day}${pad(at.getHours())}:${pad(at.getMinutes())}`);
    expect(final).toContain('Run /foreman:execute again after');
    // Nothing the run needed was refused by a permission.
    expect([...run.events].reverse().find((e) => e.type === 'result')?.permission_denials).toEqual([]);
  });
});
