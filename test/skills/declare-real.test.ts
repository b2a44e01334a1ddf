// The in-session question about a task's needed files, as a person meets it: the REAL Claude Code
// CLI in an interactive terminal (tmux), with the built plugin, in the default permission mode,
// the scripted model playing the lead of /foreman:execute. The lead asks with AskUserQuestion
// (the person answers in the terminal), runs `plan declare --needed N`, which the skill
// pre-approves and which widens exactly that task; any other form of `plan declare` asks the
// person. And under `claude -p`, where AskUserQuestion does not exist, what the lead is told.

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { blockedOnUndeclared, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, parseStreamJson, repoRoot, tempHome } from '../support/real-claude.ts';
import { interactiveClaude, tmuxFor } from './real-session.ts';

const tmux = tmuxFor('the interactive case');
const pluginRoot = join(repoRoot, 'plugin');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const blockedPlan = (): Plan => makePlan([blockedOnUndeclared()]);

const skillDir = (req: ScriptedRequest) => /Base directory for this skill: (\S+)/.exec(req.promptRaw)?.[1] ?? '';
const lastResult = (req: ScriptedRequest) => req.toolResults.at(-1)?.content ?? '';

async function place(): Promise<{ repo: TempGitRepo; home: string }> {
  const repo = await tempGitRepo({ 'README.md': '# sample\n', 'src/index.js': 'export {};\n', '.gitignore': '.design/\n' });
  cleanups.push(repo.cleanup);
  const home = await tempHome();
  cleanups.push(() => rm(home, { recursive: true, force: true, maxRetries: 5 }));
  await writePlan(repo.dir, blockedPlan());
  return { repo, home };
}

describe.runIf(tmux !== null)("/foreman:execute asks about a task's needed files, in an interactive session", () => {
  it('the person answers in the terminal; the pre-approved `plan declare --needed N` runs with no prompt and widens that task; another form of declare asks', async () => {
    const { repo, home } = await place();
    const seen: string[] = [];
    const server: ModelServer = await startModelServer({
      respond: (req) => {
        if (!req.prompt.includes('/foreman:execute') && !req.promptRaw.includes('Base directory for this skill')) return [text('ok')];
        const launcher = `"${skillDir(req)}/../../bin/foreman"`;
        seen.push(lastResult(req));
        switch (req.assistantTurns) {
          case 0:
            return [
              toolUse('AskUserQuestion', {
                questions: [
                  {
                    question: 'Task 0 (export the feature) needs src/index.js, which it does not declare. Declare it and put the task back?',
                    header: 'Declare',
                    multiSelect: false,
                    options: [
                      { label: 'Declare and retry', description: 'plan declare --needed 0' },
                      { label: 'Leave it', description: 'the task stays blocked' },
                    ],
                  },
                ],
              }),
            ];
          case 1:
            return lastResult(req).includes('="Declare and retry"')
              ? [toolUse('Bash', { command: `${launcher} plan declare --needed 0`, description: 'declare what task 0 needs' })]
              : [text('NOT-ANSWERED')];
          case 2:
            // Not the pre-approved form: Claude Code asks the person.
            return [toolUse('Bash', { command: `${launcher} plan declare 0 src/other.js`, description: 'declare another file' })];
          default:
            return [text('LEAD-DONE')];
        }
      },
    });
    cleanups.push(() => server.close());
    const terminal = await interactiveClaude(tmux!, { cwd: repo.dir, home, serverUrl: server.url, name: 'declare' }, '/foreman:execute');
    // Its home is removed only once it has gone (it writes there as it exits).
    cleanups.push(() => terminal.close());
    const waitFor = (pattern: RegExp, what: string) => terminal.waitFor(pattern, what);
    await waitFor(/Declare it and put the task back\?/, 'question');
    // The first option is the selected one: the person presses Enter.
    await terminal.keys('Enter');
    // The declare ran with no prompt; the other form stops at a permission prompt.
    const asked = await waitFor(/This command requires approval\s+Do you want to proceed\?/, 'permission prompt for the other form');
    expect(asked).toMatch(/plan declare 0 src\/other\.js/);
    expect(seen.some((r) => /task 0 \(export the feature\): blocked → pending — declares src\/index\.js now/.test(r))).toBe(true);
    const after = await readPlan(join(repo.dir, '.design/plan.json'));
    expect(after.tasks[0]).toMatchObject({ status: 'pending', attempts: 0, metadata: { files: { create: ['src/feature.js'], modify: ['src/index.js'] } } });
    expect(JSON.stringify(after)).not.toContain('src/other.js');
  }, 120_000);
});

describe('under claude -p, where AskUserQuestion does not exist', () => {
  it('the lead is told the tool is not available, so the skill tells the person the command instead', async () => {
    const { repo, home } = await place();
    const results: string[] = [];
    const server = await startModelServer({
      respond: (req) => {
        if (req.assistantTurns === 0)
          return [
            toolUse('AskUserQuestion', {
              questions: [
                {
                  question: 'Declare src/index.js for task 0?',
                  header: 'Declare',
                  multiSelect: false,
                  options: [
                    { label: 'Declare and retry', description: 'd' },
                    { label: 'Leave it', description: 'l' },
                  ],
                },
              ],
            }),
          ];
        results.push(lastResult(req));
        return [text('told the person')];
      },
    });
    cleanups.push(() => server.close());
    const r = await execa(
      claudeBin,
      ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'haiku', '--plugin-dir', pluginRoot, '--permission-mode', 'default'],
      { cwd: repo.dir, env: claudeEnv(server.url, home), extendEnv: false, input: '/foreman:execute', reject: false, timeout: 60_000 },
    );
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(parseStreamJson(String(r.stdout)).find((e) => e.type === 'result')?.is_error).toBe(false);
    expect(results[0]).toMatch(/No such tool available: AskUserQuestion\. AskUserQuestion is disabled for this session/);
  }, 90_000);
});
