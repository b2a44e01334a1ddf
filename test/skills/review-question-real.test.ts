// A person's review of work awaiting approval, in-session, as a person meets it: the REAL Claude
// Code CLI in an interactive terminal (tmux), with the built plugin, in the default permission
// mode, the scripted model playing the lead of /foreman:execute (as skills/execute/SKILL.md says)
// and the revision's subagent. A task's work is parked for approval; the lead shows its change and
// asks; the person types the changes they want; the lead writes them to a file and runs the
// pre-approved `plan revise`; `plan next` hands the task out again and the subagent finds its
// parked work in its worktree (put there by foreman's hook when it reads its prompt file) and the
// person's words in its prompt; its revision parks again; the person approves (Claude Code asks
// to allow `plan approve`); the whole change lands.

import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempGitRepo } from '../support/git-repo.ts';
import { type ContentBlock, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { tempHome } from '../support/real-claude.ts';
import { agentCall, bash, interactiveClaude, json, leadPlace, tmuxFor } from './real-session.ts';
import { checkedStep, isolatedSubagent, step } from './support.ts';

const tmux = tmuxFor('the interactive review');
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const FIRST = 'export const greet = (name) => `hello ${name}`;\n';
const REVISED = "export const greet = (name) => `hello ${name}`;\nexport const greetOrWorld = (name) => (name === '' ? 'hello world' : greet(name));\n";
const FEEDBACK = "Also handle the empty string: greet of '' says hello world.";

/** The text of a background agent's `<task-notification>`, when the request's last user message is one. */
function notification(req: ScriptedRequest): string | null {
  const last = [...req.messages].reverse().find((m) => m.role === 'user');
  const content = typeof last?.content === 'string' ? last.content : (last?.content ?? []).map((b) => String(b['text'] ?? b['content'] ?? '')).join('\n');
  return content.includes('<task-notification>') ? content : null;
}

/** The lead, as skills/execute/SKILL.md tells it, from setup to the end; `said` gets its final text. */
function playLead(
  req: ScriptedRequest,
  repo: string,
  seen: { questions: string[]; answers: string[]; steps: Array<{ step: string; result: string }>; agentCalls: number },
): ContentBlock[] {
  const { launcher, calls, first, step } = leadPlace(req);
  if (req.assistantTurns === 0) return [bash(`${launcher} plan setup --sandbox on`)];
  // Interactively, Claude Code runs the Agent call in the background even with `run_in_background:
  // false` (CLI-NOTES.md): the lead waits for its notification, as the skill says (step c).
  const notified = notification(req);
  if (notified !== null) {
    const status = [...notified.matchAll(/^\s*(?:COMPLETED|FAILED|BLOCKED):[^<\n]*/gm)].at(-1)?.[0].trim() ?? '';
    const worktree = /<worktreePath>(.+?)<\/worktreePath>/.exec(notified)?.[1];
    return [
      toolUse('Write', {
        file_path: join(repo, '.design/prompts/results.json'),
        content: JSON.stringify([{ task: 0, output: status, ...(worktree ? { worktree } : {}) }]),
      }),
    ];
  }
  if (first === undefined) return [text('The scripted lead lost its place.')];
  if (first.name === 'Bash' && step !== undefined) seen.steps.push({ step, result: first.result });
  if (first.name === 'Bash' && step === 'setup') return [bash(`${launcher} plan next`)];
  if (first.name === 'Bash' && step === 'next') {
    const next = json(first.result);
    if (next?.stall === 'awaiting_approval' && next.review?.length === 1) {
      const [task] = next.review;
      const question = `Task ${task.index} (${task.subject}) waits for your review: ${task.summary}. Approve it, request changes, or reject it?`;
      seen.questions.push(question);
      return [
        toolUse('AskUserQuestion', {
          questions: [
            {
              question,
              header: 'Review',
              multiSelect: false,
              options: [
                { label: 'Approve', description: 'integrate it and land it on the branch' },
                { label: 'Request changes', description: 'type what to change instead of picking: the worker revises its work' },
                { label: 'Reject', description: 'drop the work; the tasks that depend on it are skipped' },
              ],
            },
          ],
        }),
      ];
    }
    if (next?.stall === 'done') return [text('LEAD-DONE: every task completed')];
    if (!next || next.tasks.length === 0) return [text(`LEAD-STUCK: next said ${first.result}`)];
    seen.agentCalls += next.tasks.length;
    return next.tasks.map(agentCall);
  }
  if (first.name === 'AskUserQuestion') {
    // `…"="<label>". You can now continue…` for an option picked, `…"="<text>". Read the answers carefully…` for words typed.
    const answer = /\?"="([\s\S]*)"\.\s+(?:You can now continue|Read the answers carefully)/.exec(first.result)?.[1] ?? '';
    seen.answers.push(answer);
    if (answer === 'Approve') return [bash(`${launcher} plan approve 0`)];
    if (answer === 'Reject' || answer === '' || answer === 'Request changes') return [text(`LEAD-STUCK: answer ${JSON.stringify(first.result)}`)];
    // The person typed the changes: their words go in the file, never in the command line.
    return [toolUse('Write', { file_path: join(repo, '.design/prompts/feedback.md'), content: `${answer}\n` })];
  }
  if (first.name === 'Write' && String(first.input.file_path).endsWith('feedback.md'))
    return [bash(`${launcher} plan revise 0 --feedback-file .design/prompts/feedback.md`)];
  if (first.name === 'Bash' && (step === 'revise' || step === 'approve')) return [bash(`${launcher} plan next`)];
  if (first.name === 'Agent') {
    if (/Async agent launched|agentId: /.test(first.result) && !/^worktreePath: /m.test(first.result)) return [text('Waiting for the worker to report back.')];
    const results = calls.map((c) => {
      const status = [...c.result.matchAll(/^\s*(COMPLETED|FAILED|BLOCKED):.*$/gm)].at(-1)?.[0].trim() ?? '';
      const worktree = /^worktreePath: (.+)$/m.exec(c.result)?.[1];
      return { task: 0, output: status, ...(worktree ? { worktree } : {}) };
    });
    return [toolUse('Write', { file_path: join(repo, '.design/prompts/results.json'), content: JSON.stringify(results) })];
  }
  if (first.name === 'Write') return [bash(`${launcher} plan finalize --results .design/prompts/results.json --sandbox on`)];
  if (first.name === 'Bash' && step === 'finalize') return [bash(`${launcher} plan commit --sandbox on`)];
  if (first.name === 'Bash' && step === 'commit') return [bash(`${launcher} plan next`)];
  return [text(`LEAD-STUCK: after ${first.name} ${step ?? ''}`)];
}

describe.runIf(tmux !== null)('/foreman:execute reviews parked work with the person, in an interactive session', () => {
  it('request changes → plan revise → the subagent revises its parked work in its worktree → parked again → approve → the whole change lands', async () => {
    const repo = await tempGitRepo({ 'README.md': '# sample\n', 'src/greet.js': 'export {};\n', '.gitignore': '.design/\n' });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true, maxRetries: 5 }));
    await writePlan(
      repo.dir,
      makePlan([
        {
          ...fakeTask('greet', {
            subject: 'greet by name',
            modify: ['src/greet.js'],
            acceptance: [{ criterion: 'greet is exported', check: 'grep -q "export const greet" src/greet.js' }],
            fake: { write: { 'src/greet.js': FIRST } },
          }),
          gate: 'human-approval',
          agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'greet is exported', check: 'grep -q "export const greet" src/greet.js' }] },
        },
      ]),
    );
    // The first attempt, with the plain steps: its work parked for approval.
    expect((await checkedStep(step, repo.dir, ['setup'])).code).toBe(0);
    const first = await checkedStep(step, repo.dir, ['next']);
    const ran = await isolatedSubagent(repo.dir, first.json.tasks[0].promptFile, 'haiku');
    await writeFile(
      join(repo.dir, '.design/prompts/results.json'),
      JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
    );
    expect((await checkedStep(step, repo.dir, ['finalize', '--results', '.design/prompts/results.json'])).json.results[0].outcome).toBe('awaiting_approval');
    await checkedStep(step, repo.dir, ['commit']);
    const parkedBase = (await repo.git(['rev-parse', 'HEAD'])).trim();
    // The branch moves on while the work waits (the person commits): the revision still starts from the parked work's base.
    await repo.write({ 'README.md': '# sample\nmore of the person’s\n' });
    await repo.git(['commit', '-q', '-am', 'the person goes on']);

    const seen = { questions: [] as string[], answers: [] as string[], steps: [] as Array<{ step: string; result: string }>, agentCalls: 0 };
    /** What the revision's subagent saw: its prompt, and each tool result in turn. */
    const subagent = { prompt: '', cwd: '', results: [] as string[] };
    const server = await startModelServer({
      respond: (req) => {
        if (req.prompt.startsWith('First read the file ')) {
          const promptFile = /First read the file (\S+?),/.exec(req.prompt)?.[1] ?? '';
          subagent.cwd = req.cwd ?? '';
          if (req.assistantTurns > 0) subagent.results.push(req.toolResults[0]?.content ?? '');
          const file = join(subagent.cwd, 'src/greet.js');
          const turns: ContentBlock[][] = [
            [toolUse('Read', { file_path: promptFile })],
            [toolUse('Read', { file_path: file })],
            [toolUse('Edit', { file_path: file, old_string: FIRST, new_string: REVISED })],
            [text('Added greetOrWorld for the empty string.\nCOMPLETED: greet handles the empty string')],
          ];
          if (req.assistantTurns === 1) subagent.prompt = subagent.results[0] ?? '';
          return turns[req.assistantTurns] ?? [text('COMPLETED: done')];
        }
        if (!req.promptRaw.includes('Base directory for this skill')) return [text('ok')];
        return playLead(req, repo.dir, seen);
      },
    });
    cleanups.push(() => server.close());
    const terminal = await interactiveClaude(tmux!, { cwd: repo.dir, home, serverUrl: server.url, name: 'review' }, '/foreman:execute');
    cleanups.push(() => terminal.close());
    const { keys } = terminal;
    const leadSteps = () => `lead steps:\n${seen.steps.map((s) => `${s.step}: ${s.result.slice(0, 400)}`).join('\n')}`;
    /** What Claude Code asked the person to allow, each prompt's text, in order, and how many subagents the lead had started then: the person allowed each. */
    const asked: Array<{ prompt: string; agentCalls: number }> = [];
    const PROMPT = /\n([^\n]*\n(?:(?!Do you want to)[^\n]*\n){0,12}?)\s*Do you want to (?:proceed|create|make this edit)[^\n]*\?/;
    /** The screen once `pattern` is on it; a permission prompt met on the way is allowed, as the person would (its text kept in `asked`). */
    const until = async (pattern: RegExp, what: string) => {
      for (;;) {
        const now = await terminal.waitFor(new RegExp(`${pattern.source}|${PROMPT.source}`), what, 90, leadSteps);
        if (pattern.test(now)) return now;
        const prompt = PROMPT.exec(now)![0];
        asked.push({ prompt, agentCalls: seen.agentCalls });
        // A key sent while the dialog is still being drawn is lost, and the same prompt then shows
        // again: the answer waits until the screen has settled (two reads alike), as a person's would.
        let last = '';
        for (let i = 0; i < 20; i++) {
          const screen = await terminal.screen();
          if (screen === last) break;
          last = screen;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        await keys('Enter');
        // The prompt goes once answered: its box, from the rule above it (the lines above the rule
        // hold a spinner whose frame changes while the prompt is still there, and must not make the
        // same prompt look gone, then asked again).
        const rule = prompt.indexOf('──');
        const box = (rule === -1 ? prompt : prompt.slice(rule)).trim();
        for (let i = 0; i < 240 && (await terminal.screen()).includes(box); i++) await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };

    // 1. The question, with the parked work's change; the person types what to change.
    await until(/waits for your review: 1 file: src\/greet\.js \(\+1 −1\)/, 'review question');
    await keys('Down', 'Down', 'Down');
    await keys('-l', FEEDBACK);
    await keys('Enter');
    // 2. The revision runs, parks again, and the lead asks again: the person approves (the first option).
    await until(/waits for your review: 1 file: src\/greet\.js \(\+2 −1\)/, 'second review question');
    await keys('Enter');
    await until(/LEAD-DONE/, 'the lead finishing');

    expect(seen.answers).toEqual([FEEDBACK, 'Approve']);
    // `plan approve` is not pre-approved: Claude Code asked the person to allow it. Writing their
    // words and `plan revise` are: nothing asked about them.
    const approvals = asked.filter((a) => /plan approve 0/.test(a.prompt));
    if (approvals.length !== 1)
      console.log(
        `review-question-real: asked to allow plan approve ${approvals.length} times:\n${asked.map((a) => a.prompt).join('\n---\n')}\n${leadSteps()}`,
      );
    expect(approvals).toHaveLength(1);
    expect(asked.filter((a) => /feedback\.md|plan revise/.test(a.prompt))).toEqual([]);
    // Nor did anything before the revision's subagent was started: the question, the words, revise, next, the Agent call.
    expect(asked.filter((a) => a.agentCalls === 0)).toEqual([]);
    console.log(`review-question-real: Claude Code asked the person ${asked.length} times:\n${asked.map((a) => a.prompt).join('\n---\n')}`);
    // The revise step ran with no prompt, the person's words in the file, not in the command line.
    const revised = seen.steps.find((s) => s.step === 'revise');
    expect(revised?.result).toMatch(/task 0/);
    // The revision's prompt carried the words and the work so far; its worktree held the parked work, at the parked base.
    expect(subagent.prompt).toContain(FEEDBACK);
    expect(subagent.prompt).toContain('+export const greet = (name) => `hello ${name}`;');
    expect(subagent.results[1]).toContain('export const greet = (name) => `hello ${name}`;');
    const handedAgain = seen.steps
      .filter((s) => s.step === 'next')
      .map((s) => json(s.result))
      .find((n) => n?.tasks?.length === 1);
    expect(handedAgain.tasks[0]).toMatchObject({ index: 0, base: parkedBase });
    // Landed whole: the first attempt's change and the revision's, on top of the person's commit.
    expect(await readFile(join(repo.dir, 'src/greet.js'), 'utf8')).toBe(REVISED);
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('# sample\nmore of the person’s\n');
    // Finished and landed, the plan went to .design/history/.
    const archived = (await readdir(join(repo.dir, '.design/history'))).find((f) => f.endsWith('-plan.json'));
    const plan = await readPlan(join(repo.dir, '.design/history', archived ?? 'none'));
    expect(plan.tasks[0]).toMatchObject({ status: 'completed', attempts: 1 });
    expect(plan.tasks[0]!.reviews).toEqual([expect.objectContaining({ feedback: FEEDBACK, outcome: 'parked' })]);
    expect((await repo.git(['status', '--porcelain'])).trim()).toBe('');
  }, 240_000);
});
