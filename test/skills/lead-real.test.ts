// The in-session path with the REAL Claude Code CLI as the lead, driven by the scripted model:
// the lead's Agent tool call with `isolation: "worktree"` gives a subagent a worktree of its own
// under `.claude/worktrees/`, the tool result names it (`worktreePath: …`), and `plan finalize`
// verifies the subagent's work there, removes it, and `plan commit` lands it on the branch.
// From the top of the repository and from a subfolder of it alike.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, headlessArgs, parseStreamJson, tempHome } from '../support/real-claude.ts';
import { agentLeftovers, checkedStep, step } from './support.ts';

let server: ModelServer;
const cleanups: Array<() => Promise<void>> = [];
/** Where each subagent turn said it was working (the CLI's `Primary working directory`). */
const subagentCwds: string[] = [];

beforeAll(async () => {
  server = await startModelServer({
    respond: (req: ScriptedRequest) => {
      // The subagent: the skill's dispatch prompt names the prompt file.
      if (req.prompt.startsWith('Read the file ')) {
        subagentCwds.push(req.cwd ?? '');
        if (req.assistantTurns === 0) return [toolUse('Write', { file_path: join(req.cwd ?? '.', 'greet.txt'), content: 'hello\n' })];
        // As real agents do, though told not to: commit the work (when its Bash is allowed).
        if (req.assistantTurns === 1 && req.prompt.includes('COMMIT-IT'))
          return [toolUse('Bash', { command: 'git add greet.txt && git commit -q -m wip && git status --porcelain && echo COMMITTED', description: 'commit' })];
        return [text('Wrote greet.txt.\nCOMPLETED: greet.txt says hello')];
      }
      // The lead: one Agent call per task, as skills/execute/SKILL.md says, then it stops.
      if (req.assistantTurns === 0) {
        const promptFile = /PROMPT-FILE: (\S+)/.exec(req.prompt)?.[1] ?? '';
        return [
          toolUse('Agent', {
            description: 'greet',
            subagent_type: 'general-purpose',
            isolation: 'worktree',
            run_in_background: false,
            prompt: `Read the file ${promptFile} and do the task it describes, exactly as it says, in your current working directory.${req.prompt.includes('COMMIT-IT') ? ' COMMIT-IT' : ''} Do not stage or commit anything. The last line of your final reply must be the status line the file asks for (COMPLETED: / FAILED: / BLOCKED:).`,
          }),
        ];
      }
      return [text('Round dispatched.')];
    },
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

describe('a lead session with the real CLI', () => {
  // '': the session and the steps at the repository's top; 'sub': in a subfolder of it, as git
  // is run from anywhere (the steps find the plan at the top and work there).
  it.each(['', 'sub'])(
    'dispatches with isolation "worktree" (session in %j): the subagent writes in its own worktree, finalize verifies it there and removes it, commit lands it',
    async (folder) => {
      const repo: TempGitRepo = await tempGitRepo({ 'README.md': '# sample\n', 'sub/keep.txt': 'k\n' });
      const cwd = join(repo.dir, folder);
      subagentCwds.length = 0;
      cleanups.push(repo.cleanup);
      const home = await tempHome();
      cleanups.push(() => execa('rm', ['-rf', home]).then(() => undefined));
      await writePlan(
        repo.dir,
        makePlan([
          {
            subject: 'greet',
            prompt: 'Write greet.txt saying hello.',
            blockedBy: [],
            metadata: { files: { create: ['greet.txt'], modify: [] } },
            agent: { model: 'haiku' },
          },
        ]),
      );
      expect((await checkedStep(step, cwd, ['setup'])).code).toBe(0);
      const next = await checkedStep(step, cwd, ['next']);
      const [task] = next.json.tasks;
      expect(task).toMatchObject({ index: 0, isolation: 'worktree' });

      const run = await execa(claudeBin, headlessArgs({ permissionMode: 'dontAsk', allowedTools: 'Read Edit Write Glob Grep Agent' }), {
        cwd,
        env: claudeEnv(server.url, home),
        extendEnv: false,
        input: `Run the round.\nPROMPT-FILE: ${task.promptFile}\n`,
        reject: false,
        timeout: 90_000,
      });
      expect(run.exitCode, run.stderr).toBe(0);
      // The Agent tool's result, as the lead sees it, names the worktree and its branch.
      const agentResult = parseStreamJson(run.stdout)
        .filter((e) => e.type === 'user' && e.parent_tool_use_id === null)
        .flatMap((e) => (Array.isArray(e.message?.content) ? e.message.content : []))
        .filter((c: any) => c.type === 'tool_result')
        .map((c: any) => (Array.isArray(c.content) ? c.content.map((p: any) => p.text ?? '').join('\n') : String(c.content)))
        .find((t: string) => t.includes('worktreePath:'));
      expect(agentResult).toBeDefined();
      const worktree = /^worktreePath: (.+)$/m.exec(agentResult!)?.[1];
      const branch = /^worktreeBranch: (.+)$/m.exec(agentResult!)?.[1];
      expect(worktree).toMatch(new RegExp(`^${repo.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\.claude/worktrees/agent-[0-9a-f]+$`));
      expect(branch).toBe(`worktree-agent-${worktree!.split('agent-').at(-1)}`);
      // The subagent worked there, from the session's HEAD; the person's tree is untouched.
      expect(
        subagentCwds.every((dir) => dir === worktree),
        subagentCwds.join(', '),
      ).toBe(true);
      expect(await readFile(join(worktree!, 'greet.txt'), 'utf8')).toBe('hello\n');
      await expect(readFile(join(repo.dir, 'greet.txt'))).rejects.toThrow();
      expect((await execa('git', ['rev-parse', 'HEAD'], { cwd: worktree! })).stdout).toBe(task.base);

      const status = /COMPLETED: .*/.exec(agentResult!)?.[0] ?? '';
      await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify([{ task: 0, output: status, worktree }]));
      const finalize = await checkedStep(step, cwd, ['finalize', '--results', join(repo.dir, '.design/prompts/results.json')]);
      expect(finalize.json.results).toEqual([expect.objectContaining({ index: 0, outcome: 'completed', result: 'greet.txt says hello' })]);
      expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
      const commit = await checkedStep(step, cwd, ['commit']);
      expect(commit.json).toMatchObject({ tasks: [0], complete: true, landing: { landed: true, files: 1 } });
      expect(await readFile(join(repo.dir, 'greet.txt'), 'utf8')).toBe('hello\n');
    },
  );

  it("a subagent that commits its own work (its Bash allowed, no sandbox): Claude Code keeps its worktree, finalize takes the committed work, and only foreman's commit lands", async () => {
    const repo: TempGitRepo = await tempGitRepo({ 'README.md': '# sample\n' });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => execa('rm', ['-rf', home]).then(() => undefined));
    await writeFile(join(home, '.gitconfig'), '[user]\n\tname = Agent\n\temail = agent@example.com\n');
    await writePlan(
      repo.dir,
      makePlan([
        {
          subject: 'greet',
          prompt: 'Write greet.txt saying hello.',
          blockedBy: [],
          metadata: { files: { create: ['greet.txt'], modify: [] } },
          agent: { model: 'haiku' },
        },
      ]),
    );
    expect((await checkedStep(step, repo.dir, ['setup', '--sandbox', 'off'])).code).toBe(0);
    const next = await checkedStep(step, repo.dir, ['next']);
    const [task] = next.json.tasks;
    const run = await execa(claudeBin, headlessArgs({ permissionMode: 'dontAsk', allowedTools: 'Read Edit Write Glob Grep Agent Bash' }), {
      cwd: repo.dir,
      env: claudeEnv(server.url, home),
      extendEnv: false,
      input: `Run the round. COMMIT-IT\nPROMPT-FILE: ${task.promptFile}\n`,
      reject: false,
      timeout: 90_000,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const events = parseStreamJson(run.stdout);
    const texts = events
      .flatMap((e) => (e.type === 'user' && Array.isArray(e.message?.content) ? e.message.content : []))
      .map((c: any) => (Array.isArray(c.content) ? c.content.map((p: any) => p.text ?? '').join('\n') : String(c.content ?? '')));
    expect(texts.some((t) => t.includes('COMMITTED'))).toBe(true);
    // With a clean status but a commit on its branch, Claude Code keeps the worktree and names it.
    const agentResult = texts.find((t) => t.includes('worktreePath:'));
    expect(agentResult).toBeDefined();
    const worktree = /^worktreePath: (.+)$/m.exec(agentResult!)?.[1];
    expect((await execa('git', ['log', '-1', '--format=%s'], { cwd: worktree! })).stdout).toBe('wip');
    await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify([{ task: 0, output: 'COMPLETED: greet.txt says hello', worktree }]));
    const finalize = await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json']);
    expect(finalize.json.results).toEqual([expect.objectContaining({ index: 0, outcome: 'completed' })]);
    const commit = await checkedStep(step, repo.dir, ['commit']);
    expect(commit.json).toMatchObject({ tasks: [0], complete: true, landing: { landed: true, files: 1 } });
    expect(await readFile(join(repo.dir, 'greet.txt'), 'utf8')).toBe('hello\n');
    expect((await execa('git', ['log', '--format=%s', '--all'], { cwd: repo.dir })).stdout).not.toContain('wip');
    expect(await agentLeftovers(repo.dir)).toEqual({ worktrees: [], branches: [] });
  });
});
