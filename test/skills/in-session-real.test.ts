// The in-session path as a person runs it: the REAL Claude Code CLI with the built plugin
// (`--plugin-dir plugin`), in the default permission mode, nothing pre-approved, `/foreman:execute`
// typed. The scripted model plays the lead, following skills/execute/SKILL.md step by step (it
// reads each step's JSON from the tool results), and the Task subagents, two of them at once.
// What must hold: the run completes a plan with a dependency and not one call it needs is refused
// (the skill pre-approves the lead's steps; the plugin's hook allows each worker its declared
// files and runs its Bash in the sandbox); a worker's undeclared write is denied when it is made,
// while its declared work lands; a worker's Bash that writes outside its worktree changes nothing
// of the person's. And the same for `/foreman:design`'s plan-tool steps. And the other side of
// the skills' exact rules: a step with other flags (`--sandbox off`, a `--gate` of its own), behind
// an assignment, or joined to another command is not pre-approved (in -p mode: refused).

import { cp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ContentBlock, type ModelServer, rendezvous, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, parseStreamJson, repoRoot, type StreamEvent, tempHome } from '../support/real-claude.ts';
import { WORKTREE_NOT_MADE } from '../../src/run/session/driver.ts';
import { agentCall, bash, json, lastCalls, leadPlace, skillDir, taskOfPrompt, worktreesOneAtATime } from './real-session.ts';
import { readmeHookSettings } from '../support/docs.ts';

const pluginRoot = join(repoRoot, 'plugin');

/** What the README tells a project-skill install to put in `.claude/settings.json`, read from it. */
const PROJECT_HOOK_SETTINGS = readmeHookSettings();
const support = await sandboxSupport();

const cleanups: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

// ---------------------------------------------------------------------------------------------
// The lead, as skills/execute/SKILL.md tells it

function playLead(req: ScriptedRequest, repo: string): ContentBlock[] {
  const { launcher, calls, first, step } = leadPlace(req);
  if (req.assistantTurns === 0) return [bash(`${launcher} plan setup --sandbox on`)];
  if (first === undefined) return [text('The scripted lead lost its place.')];
  if (first.name === 'Bash' && step === 'setup') {
    const setup = json(first.result);
    if (setup?.error) return [text(`setup failed: ${first.result}`)];
    // The gate still checks the starting commit: `plan commit` waits for it.
    return [bash(setup?.gate?.baseline === 'running' ? `${launcher} plan commit --sandbox on` : `${launcher} plan next`)];
  }
  if (first.name === 'Bash' && step === 'next') {
    const next = json(first.result);
    if (next?.stall === 'gate') return [bash(`${launcher} plan commit --sandbox on`)];
    if (next?.stall === 'done')
      return [text(`Done: ${next.complete ? 'every task completed' : 'incomplete'}${next.archived ? `, archived at ${next.archived}` : ''}.`)];
    if (!next || next.tasks.length === 0) return [text(`next said: ${first.result}`)];
    // One Agent call per task, all in one message: they run at once.
    return next.tasks.map(agentCall);
  }
  if (first.name === 'Agent') {
    const results = calls.map((c) => {
      const task = Number(/TASK-NUMBER (\d+)/.exec(String(c.input.prompt))?.[1] ?? /task-(\d+)\.md/.exec(String(c.input.prompt))?.[1]);
      // As the skill says: the status line as the worker wrote it (bold or backticks included), or
      // the first line of Claude Code's own failure to make the worktree.
      const status =
        [...c.result.matchAll(/^\s*([*_`>\s-]*(?:COMPLETED|FAILED|BLOCKED)[*_`]*:.*)$/gm)].at(-1)?.[1] ??
        (WORKTREE_NOT_MADE.test(c.result) ? c.result.split('\n')[0]! : '');
      const worktree = /^worktreePath: (.+)$/m.exec(c.result)?.[1];
      return { task, output: status, ...(worktree ? { worktree } : {}) };
    });
    return [toolUse('Write', { file_path: join(repo, '.design/prompts/results.json'), content: JSON.stringify(results) })];
  }
  if (first.name === 'Write') return [bash(`${launcher} plan finalize --results .design/prompts/results.json --sandbox on`)];
  if (first.name === 'Bash' && step === 'finalize') return [bash(`${launcher} plan commit --sandbox on`)];
  if (first.name === 'Bash' && step === 'commit') {
    const commit = json(first.result);
    if (commit?.gate?.state === 'running') return [bash(`${launcher} plan commit --sandbox on`)];
    return [bash(`${launcher} plan next`)];
  }
  return [text(`The scripted lead does not know what to do after ${first.name} ${step ?? ''}.`)];
}

// ---------------------------------------------------------------------------------------------
// The workers: each reads its prompt file first, then does what its task's script says

/** What each task's worker does after reading its prompt file, by task index. */
type WorkerScript = (cwd: string) => ContentBlock[][];

function playWorker(req: ScriptedRequest, repo: string, scripts: Record<number, WorkerScript>): ContentBlock[] {
  const promptFile = /First read the file (\S+?),/.exec(req.prompt)?.[1] ?? '';
  const task = Number(/task-(\d+)\.md$/.exec(promptFile)?.[1]);
  const cwd = req.cwd ?? repo;
  const steps = [[toolUse('Read', { file_path: promptFile })], ...(scripts[task]?.(cwd) ?? [])];
  return steps[req.assistantTurns] ?? [text(`Did task ${task}.\nCOMPLETED: task ${task} done`)];
}

// ---------------------------------------------------------------------------------------------

const readme = '# sample\nthe person’s own text\n';

/**
 * How foreman is installed: the plugin (`--plugin-dir`, its hook from hooks/hooks.json), or project
 * skills copied into `.claude/` with the hook added to `.claude/settings.json` as the README says.
 */
const installs = [
  { name: 'the plugin', command: '/foreman:execute', args: ['--plugin-dir', pluginRoot], install: async (_repo: string) => undefined },
  {
    name: 'project skills with the README’s hook settings',
    command: '/execute',
    args: [],
    install: async (repo: string) => {
      await cp(pluginRoot, join(repo, '.claude'), { recursive: true, filter: (src) => !src.includes('.claude-plugin') });
      await writeFile(join(repo, '.claude/settings.json'), JSON.stringify(PROJECT_HOOK_SETTINGS, null, 2));
    },
  },
];

describe.each(installs)('$command in the default permission mode, nothing pre-approved, with $name', ({ command, args, install }) => {
  let repo: TempGitRepo;
  let home: string;
  let server: ModelServer;
  let run: { exitCode: number | undefined; events: StreamEvent[]; stderr: string };
  const workerResults: Array<{ task: number; tool: string; result: string }> = [];

  beforeAll(async () => {
    repo = await tempGitRepo({ 'README.md': readme, '.gitignore': '.design/\n' });
    cleanups.push(repo.cleanup);
    await install(repo.dir);
    home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await writeFile(join(home, '.gitconfig'), '[user]\n\tname = Agent\n\temail = agent@example.com\n');
    await writePlan(
      repo.dir,
      makePlan(
        [
          {
            subject: 'write a.txt',
            prompt: 'Write a.txt holding "alpha".\nCOMPLETED: / FAILED: / BLOCKED:',
            blockedBy: [],
            metadata: { files: { create: ['a.txt'], modify: [] } },
            agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'a.txt says alpha', check: 'grep -q alpha a.txt' }] },
          },
          {
            subject: 'write b.txt',
            prompt: 'Write b.txt holding "beta".',
            blockedBy: [],
            metadata: { files: { create: ['b.txt'], modify: [] } },
            agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'b.txt says beta', check: 'grep -q beta b.txt' }] },
          },
          {
            subject: 'write c.txt after a.txt',
            prompt: 'Write c.txt holding "gamma", after reading a.txt.',
            blockedBy: [0],
            metadata: { files: { create: ['c.txt'], modify: [] } },
            agent: {
              model: 'haiku',
              acceptanceCriteria: [{ criterion: 'a.txt is there and c.txt says gamma', check: 'grep -q alpha a.txt && grep -q gamma c.txt' }],
            },
          },
        ],
        { context: { testCommand: 'test -f README.md' } },
      ),
    );
    const scripts: Record<number, WorkerScript> = {
      0: (cwd) => [
        [toolUse('Write', { file_path: join(cwd, 'a.txt'), content: 'alpha\n' })],
        // Undeclared: denied by the hook when it is made.
        [toolUse('Write', { file_path: join(cwd, 'stray.txt'), content: 'not declared\n' })],
        // Outside the worktree, through Bash: the sandbox refuses it.
        [toolUse('Bash', { command: `echo escaped >> ${join(repo.dir, 'README.md')}`, description: 'try the person’s file' })],
        [toolUse('Bash', { command: 'cat a.txt && echo "tmp: $TMPDIR" && touch "$TMPDIR/scratch"', description: 'check' })],
      ],
      1: (cwd) => [
        [toolUse('Write', { file_path: join(cwd, 'b.txt'), content: 'beta\n' })],
        [toolUse('Bash', { command: 'mkdir -p build && echo ok > build/out.txt && rm -r build', description: 'build' })],
        // A tool's side effect on a tracked file it does not declare, written by the shell in its worktree: set aside.
        [toolUse('Bash', { command: 'echo "appended by a tool" >> README.md', description: 'a tool rewrites README.md' })],
        // And its claim in bold, as models write it.
        [text('Wrote b.txt.\n\n**COMPLETED:** task 1 done')],
      ],
      2: (cwd) => [
        [toolUse('Read', { file_path: join(cwd, 'a.txt') })],
        [toolUse('Write', { file_path: join(cwd, 'c.txt'), content: 'gamma\n' })],
        // As real agents do, though told not to: it commits its own work (after task 0 has landed).
        [toolUse('Bash', { command: 'git status --porcelain; git add c.txt && git commit -q -m wip; echo "commit exit $?"', description: 'commit my work' })],
      ],
    };
    // The tasks of one hand-out meet: each one's first answer waits for the others' first requests.
    const meets = new Map<number, (task: number) => Promise<void>>();
    const inTurn = await worktreesOneAtATime(join(home, 'agent-calls'));
    server = await startModelServer({
      respond: async (req) => {
        if (req.prompt.startsWith('First read the file ')) {
          const task = taskOfPrompt(req.prompt);
          if (req.assistantTurns === 0) {
            await inTurn.started();
            const meet = meets.get(task);
            meets.delete(task);
            await meet?.(task);
          }
          for (const c of lastCalls(req)) workerResults.push({ task, tool: `${c.name} ${JSON.stringify(c.input).slice(0, 400)}`, result: c.result });
          return playWorker(req, repo.dir, scripts);
        }
        const blocks = playLead(req, repo.dir);
        const handedOut = blocks.flatMap((b) => (b.type === 'tool_use' && b.name === 'Agent' ? [taskOfPrompt(b.input.prompt)] : []));
        if (handedOut.length > 1) {
          const meet = rendezvous(handedOut, 30_000);
          for (const t of handedOut) meets.set(t, meet);
        }
        return blocks;
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
        ...args,
        '--permission-mode',
        'default',
        '--settings',
        JSON.stringify(inTurn.settings),
      ],
      {
        cwd: repo.dir,
        env: claudeEnv(server.url, home),
        extendEnv: false,
        input: command,
        reject: false,
        timeout: 240_000,
      },
    );
    run = { exitCode: r.exitCode, events: parseStreamJson(String(r.stdout)), stderr: String(r.stderr) };
  }, 300_000);

  const result = () => [...run.events].reverse().find((e) => e.type === 'result');

  it('completes the plan: every task landed on the branch, the plan archived', async () => {
    expect(run.exitCode, run.stderr).toBe(0);
    expect(String(result()?.result)).toMatch(/Done: every task completed, archived at /);
    expect(await readFile(join(repo.dir, 'a.txt'), 'utf8')).toBe('alpha\n');
    expect(await readFile(join(repo.dir, 'b.txt'), 'utf8')).toBe('beta\n');
    expect(await readFile(join(repo.dir, 'c.txt'), 'utf8')).toBe('gamma\n');
    const tracked = (await execa('git', ['ls-files'], { cwd: repo.dir })).stdout.split('\n');
    expect(tracked).toEqual(expect.arrayContaining(['a.txt', 'b.txt', 'c.txt']));
    expect(tracked).not.toContain('stray.txt');
    expect((await readdir(join(repo.dir, '.design/history'))).some((f) => f.endsWith('-plan.json'))).toBe(true);
    // The worker's view of task 2 held its blocker's work.
    expect(workerResults.find((w) => w.task === 2 && w.tool.startsWith('Read') && w.tool.includes('a.txt'))?.result).toContain('alpha');
  });

  it("a worker's shell change to a file it does not declare is set aside, named in finalize's warnings, and its bold claim counts", async () => {
    const finalized = server
      .turns()
      .map((r) => r as ScriptedRequest)
      .flatMap((r) => lastCalls(r))
      .filter((c) => c.name === 'Bash' && String(c.input.command).includes(' plan finalize'))
      .flatMap((c) => (json(c.result)?.results ?? []) as Array<{ index: number; outcome: string; warnings: string[] }>);
    expect(finalized.find((r) => r.index === 1)).toMatchObject({
      outcome: 'completed',
      warnings: [expect.stringMatching(/^changed files its task does not declare: README\.md \(set aside, not integrated/)],
    });
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe(readme);
  });

  it('refuses not one call the run needs: the only denial is the undeclared write, made by the hook at write time', () => {
    const denials = (result()?.permission_denials ?? []) as Array<{ tool_name: string; tool_input: Record<string, unknown> }>;
    expect(denials.map((d) => `${d.tool_name} ${String(d.tool_input.file_path ?? d.tool_input.command)}`)).toEqual([
      expect.stringMatching(/^Write .*\/stray\.txt$/),
    ]);
    const stray = workerResults.find((w) => w.tool.includes('stray.txt'));
    expect(stray?.result).toContain('task 0 does not declare stray.txt');
    expect(stray?.result).toContain('may change only: a.txt');
  });

  it.runIf(support.ok)(
    "a worker's Bash that writes outside its worktree changes nothing of the person's; inside, and in its own TMPDIR, it works",
    async () => {
      expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe(readme);
      expect(workerResults.find((w) => w.tool.includes('escaped'))?.result).toMatch(/Read-only file system/);
      const check = workerResults.find((w) => w.tool.includes('cat a.txt'));
      expect(check?.result).toContain('alpha');
      expect(check?.result).not.toMatch(/Read-only|denied|approval/i);
      expect(workerResults.find((w) => w.tool.includes('mkdir -p build'))?.result).not.toMatch(/Read-only|denied|approval/i);
    },
  );

  it.runIf(support.ok)(
    "a worker that commits its own work: the commit cannot write your repository's git directory, the sandbox's placeholders are not its changes, and only foreman's commits reach the branch",
    async () => {
      const committing = workerResults.find((w) => w.task === 2 && w.tool.includes('git commit'));
      // Its git directory is in the person's .git, which its sandbox keeps read-only: `git add` and
      // `git commit` fail there (README: What happens when things go wrong). Its `git status` lists
      // the sandbox's placeholder files: Claude Code refuses a worktree agent's command that sets
      // GIT_CONFIG_* (CLI-NOTES.md), so nothing can hide them from it without writing the person's
      // .git/info/exclude.
      expect(committing?.result).toMatch(/index\.lock': Read-only file system/);
      expect(committing?.result).toContain('commit exit 128');
      expect(committing?.result).toMatch(/^\?\? \.bashrc$/m);
      // The placeholders are not its changes: the task completed with exactly its declared file.
      const log = (await execa('git', ['log', '--format=%s', '--all'], { cwd: repo.dir })).stdout;
      expect(log).not.toContain('wip');
      expect(await readFile(join(repo.dir, 'c.txt'), 'utf8')).toBe('gamma\n');
      const tracked = (await execa('git', ['ls-files'], { cwd: repo.dir })).stdout.split('\n');
      expect(tracked).not.toContain('.bashrc');
    },
  );

  it('ran two workers at once (and, had Claude Code failed to make a worktree, handed that task out again with no attempt spent)', async () => {
    // The lead's Agent calls went through the test's hook, one ticket each.
    expect(await readdir(join(home, 'agent-calls'))).toEqual(expect.arrayContaining(['ticket-0', 'ticket-1', 'started-0', 'started-1']));
    const requests = server.turns().map((r) => r as ScriptedRequest);
    const leadCalls = requests.filter((r) => !r.prompt.startsWith('First read the file ')).flatMap((r) => lastCalls(r));
    // What the server saw, in order, to tell a run of the two one after the other from a late start.
    const t0 = Math.min(...requests.map((r) => r.receivedAt));
    const seen = requests
      .map(
        (r) =>
          `${r.receivedAt - t0}ms ${/task-(\d+)\.md/.exec(r.prompt)?.[0] ?? r.prompt.slice(0, 30)} turn ${r.assistantTurns} ${lastCalls(r)
            .map((c) => c.result.slice(0, 400))
            .join(' | ')}`,
      )
      .join('; ');
    // The worktrees are made one at a time (worktreesOneAtATime), so each is made; were one not,
    // foreman would owe the task again, as the same attempt, and its partners would meet the retry.
    const notMade = leadCalls.filter((c) => c.name === 'Agent' && WORKTREE_NOT_MADE.test(c.result)).map((c) => taskOfPrompt(c.input.prompt));
    const finalized = leadCalls
      .filter((c) => c.name === 'Bash' && String(c.input.command).includes(' plan finalize'))
      .flatMap((c) => (json(c.result)?.results ?? []) as Array<{ index: number; outcome: string }>);
    for (const task of notMade) {
      expect(finalized, seen).toContainEqual(expect.objectContaining({ index: task, outcome: 'requeued' }));
      for (const p of workerResults.filter((w) => w.task === task && w.tool.startsWith('Read') && w.tool.includes(`task-${task}.md`)))
        expect(p.result).not.toContain('This is attempt 2');
    }
    // Each subagent (one worktree each) from its first request to its last: two of them overlap.
    const bySubagent = new Map<string, ScriptedRequest[]>();
    for (const r of requests.filter((q) => q.prompt.startsWith('First read the file ')))
      bySubagent.set(r.cwd ?? '', [...(bySubagent.get(r.cwd ?? '') ?? []), r]);
    const spans = [...bySubagent.values()].map((rs) => ({
      task: taskOfPrompt(rs[0]!.prompt),
      start: Math.min(...rs.map((r) => r.receivedAt)),
      end: Math.max(...rs.map((r) => r.receivedAt)),
    }));
    const overlapping = spans.flatMap((a, i) =>
      spans
        .slice(i + 1)
        .filter((b) => a.task !== b.task && a.start < b.end && b.start < a.end)
        .map((b) => [a.task, b.task].sort().join(' and ')),
    );
    expect(overlapping.length, seen).toBeGreaterThan(0);
    // As scripted, with every worktree made: the two handed out first.
    if (notMade.length === 0) expect(overlapping, seen).toContain('0 and 1');
  });

  it('leaves no hand-out behind once the run has finished, so the hook costs one `test -d` again', async () => {
    await expect(readdir(join(home, '.cache/foreman/sessions'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('/foreman:design in the default permission mode, nothing pre-approved, with the plugin', () => {
  it("runs the plan tool's steps, fixes the plan's warning and writes the plan with 0 refusals", async () => {
    const repo = await tempGitRepo({ 'README.md': readme });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    // The first draft's prompt names README.md, which its task does not declare: a warning.
    const plan = makePlan([
      {
        subject: 'add greet.txt',
        prompt:
          'Write greet.txt saying hello, in the tone of README.md.\nThe last line of your reply: COMPLETED: <summary>, FAILED: <what> or BLOCKED: <what>.',
        blockedBy: [],
        metadata: { files: { create: ['greet.txt'], modify: [] } },
        agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'greet.txt says hello', check: 'grep -q hello greet.txt' }] },
      },
    ]);
    const fixed = structuredClone(plan);
    fixed.tasks[0]!.metadata.reads = ['README.md'];
    const planFile = join(repo.dir, '.design/plan.json');
    const local = await startModelServer({
      respond: (req) => {
        const launcher = `"${skillDir(req)}/../../bin/foreman"`;
        const steps: ContentBlock[][] = [
          [bash(`${launcher} plan status --json`)],
          [toolUse('Write', { file_path: planFile, content: JSON.stringify(plan, null, 2) })],
          [bash(`${launcher} plan check --fix`)],
          // The skill's loop: the fix the warning names, then the check again.
          [toolUse('Read', { file_path: planFile })],
          [toolUse('Write', { file_path: planFile, content: JSON.stringify(fixed, null, 2) })],
          [bash(`${launcher} plan check --fix`)],
          [bash(`${launcher} plan probe --json --sandbox on`)],
          [bash(`${launcher} plan summary`)],
        ];
        return steps[req.assistantTurns] ?? [text(`Designed. ${lastCalls(req)[0]?.result.split('\n')[0] ?? ''}`)];
      },
    });
    cleanups.push(() => local.close());
    const r = await execa(
      claudeBin,
      ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'haiku', '--plugin-dir', pluginRoot, '--permission-mode', 'default'],
      {
        cwd: repo.dir,
        env: claudeEnv(local.url, home),
        extendEnv: false,
        input: '/foreman:design add a greeting',
        reject: false,
        timeout: 180_000,
      },
    );
    const events = parseStreamJson(String(r.stdout));
    const final = [...events].reverse().find((e) => e.type === 'result');
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(final?.permission_denials).toEqual([]);
    const results = local
      .turns()
      .map((t) => (t as ScriptedRequest).toolResults[0]?.content ?? '')
      .filter(Boolean);
    // status: no plan yet; check: valid, with the warning and its fix; check again: valid, nothing
    // left; probe: the check fails before the work (exit 0: nothing to fix).
    const checks = results.filter((t) => /: valid \(/.test(t));
    expect(checks).toHaveLength(2);
    expect(checks[0]).toMatch(/: valid \(1 tasks?\); defaults and file overlaps written, with 1 warning:/);
    expect(checks[0]).toContain(
      'tasks[0].prompt names README.md, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
    );
    // Claude Code adds a line of its own after the output: the command rewrote the plan the model had read.
    expect(checks[1]!.split('\n')[0]).toMatch(/: valid \(1 tasks?\); defaults and file overlaps written$/);
    expect(checks[1]).not.toContain('warning');
    expect(JSON.parse(await readFile(join(repo.dir, '.design/probe.json'), 'utf8'))).toMatchObject({ verdict: 'ok' });
    expect(JSON.parse(await readFile(planFile, 'utf8')).tasks[0]).toMatchObject({ fileOverlaps: [], metadata: { reads: ['README.md'] } });
  }, 240_000);
});

describe('what the skills do not pre-approve, in the default permission mode with the plugin', () => {
  /** Runs `skill` with a scripted model that makes each Bash call of `commands` (`L` the launcher) in turn; the result event. */
  async function attempt(repo: string, skill: string, commands: string[]) {
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    const local = await startModelServer({
      respond: (req) => {
        const launcher = `"${skillDir(req)}/../../bin/foreman"`;
        const command = commands[req.assistantTurns];
        return command === undefined ? [text('Stopped.')] : [toolUse('Bash', { command: command.replaceAll('L', launcher), description: 'a step' })];
      },
    });
    cleanups.push(() => local.close());
    const r = await execa(
      claudeBin,
      ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'haiku', '--plugin-dir', pluginRoot, '--permission-mode', 'default'],
      {
        cwd: repo,
        env: claudeEnv(local.url, home),
        extendEnv: false,
        input: skill,
        reject: false,
        timeout: 180_000,
      },
    );
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const events = parseStreamJson(String(r.stdout));
    const denied = (([...events].reverse().find((e) => e.type === 'result')?.permission_denials ?? []) as Array<{ tool_input: { command?: string } }>).map(
      (d) => String(d.tool_input.command).replace(/"[^"]*\/bin\/foreman"/, 'L'),
    );
    const results = local
      .turns()
      .map((t) => (t as ScriptedRequest).toolResults[0]?.content ?? '')
      .filter(Boolean);
    return { denied, results };
  }

  it('/foreman:execute: a step with --sandbox off, with a --gate of its own, behind an assignment, or joined to another command asks; the exact steps run', async () => {
    const repo = await tempGitRepo({ 'README.md': readme, '.gitignore': '.design/\n' });
    cleanups.push(repo.cleanup);
    await writePlan(
      repo.dir,
      makePlan([{ subject: 'write a.txt', prompt: 'Write a.txt.\nCOMPLETED:', blockedBy: [], metadata: { files: { create: ['a.txt'], modify: [] } } }]),
    );
    const unsafe = [
      'L plan setup --sandbox off',
      "L plan setup --sandbox on --gate 'touch gate-ran.txt'",
      'L plan status && touch joined.txt',
      'FOREMAN_SANDBOX=off L plan next',
      'L plan finalize --results .design/prompts/results.json',
    ];
    const { denied, results } = await attempt(repo.dir, '/foreman:execute', [...unsafe, 'L plan setup --sandbox on', 'L plan status']);
    // In -p mode a call that would ask is refused: each unsafe form, and nothing else.
    expect(denied).toEqual(unsafe);
    for (const file of ['gate-ran.txt', 'joined.txt']) await expect(readFile(join(repo.dir, file))).rejects.toMatchObject({ code: 'ENOENT' });
    // The exact forms ran: setup's JSON (sandboxed or, without the sandbox, its refusal), then the status table.
    expect(results.filter((t) => /requires approval|needs approval|multiple operations/.test(t))).toHaveLength(unsafe.length);
    expect(json(results.at(-2)!)).toMatchObject(support.ok ? { sandbox: { mode: 'on', sandboxed: true } } : { error: { kind: 'sandbox-unavailable' } });
    expect(results.at(-1)).toMatch(/write a\.txt/);
  }, 240_000);

  it('/foreman:design: the probe unsandboxed, or a step joined to another command, asks; the exact steps run', async () => {
    const repo = await tempGitRepo({ 'README.md': readme });
    cleanups.push(repo.cleanup);
    await writePlan(
      repo.dir,
      makePlan([
        {
          subject: 'add greet.txt',
          prompt: 'Write greet.txt.\nCOMPLETED:',
          blockedBy: [],
          metadata: { files: { create: ['greet.txt'], modify: [] } },
          agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'greet.txt', check: `touch ${join(repo.dir, 'probe-ran.txt')}; test -f greet.txt` }] },
        },
      ]),
    );
    const unsafe = ['L plan probe --json --sandbox off', 'L plan probe --json', 'L plan check --fix && touch joined.txt'];
    const { denied, results } = await attempt(repo.dir, '/foreman:design add a greeting', [...unsafe, 'L plan check --fix', 'L plan status --json']);
    expect(denied).toEqual(unsafe);
    for (const file of ['probe-ran.txt', 'joined.txt', '.design/probe.json'])
      await expect(readFile(join(repo.dir, file))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(results.at(-2)).toMatch(/valid/);
    expect(json(results.at(-1)!)).toMatchObject({ goal: expect.any(String) });
  }, 240_000);
});
