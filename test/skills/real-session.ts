// What the real-CLI session tests share: reading the conversation the CLI sends the scripted
// model (the lead's last tool calls and their results), making the subagents' worktrees one at a
// time while the subagents run at once, and the CLI in an interactive terminal.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { findExecutable } from '../../src/adapters/sandbox/executables.ts';
import { type ScriptedRequest, toolUse } from '../support/model-server.ts';
import { alive } from '../support/processes.ts';
import { claudeBin, claudeEnv, repoRoot } from '../support/real-claude.ts';

// ---------------------------------------------------------------------------------------------
// Reading the conversation the CLI sends

export interface ToolUseSeen {
  id: string;
  name: string;
  input: Record<string, any>;
}

/** The tool calls of the last assistant message and the text of each one's result. */
export function lastCalls(req: ScriptedRequest): Array<ToolUseSeen & { result: string }> {
  const assistant = [...req.messages].reverse().find((m) => m.role === 'assistant');
  const uses = Array.isArray(assistant?.content) ? (assistant.content.filter((b) => b['type'] === 'tool_use') as unknown as ToolUseSeen[]) : [];
  return uses.map((u) => ({ ...u, result: req.toolResults.find((r) => r.tool_use_id === u.id)?.content ?? '' }));
}

export const json = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
};

/** `Base directory for this skill: <dir>`: where the skill's launcher is. */
export const skillDir = (req: ScriptedRequest) => /Base directory for this skill: (\S+)/.exec(req.promptRaw)?.[1] ?? '';
/** Where the scripted lead is: the launcher its skill names, its last tool calls, the first of them and the plan step that one ran. */
export function leadPlace(req: ScriptedRequest) {
  const calls = lastCalls(req);
  const first = calls[0];
  return { launcher: `"${skillDir(req)}/../../bin/foreman"`, calls, first, step: / plan (\w+)/.exec(String(first?.input.command ?? ''))?.[1] };
}

/** The lead's Agent call for a task `plan next` handed out, as skills/execute/SKILL.md words it (step b). */
export const agentCall = (t: { subject: string; promptFile: string }) =>
  toolUse('Agent', {
    description: t.subject,
    subagent_type: 'general-purpose',
    isolation: 'worktree',
    run_in_background: false,
    prompt: `First read the file ${t.promptFile}, then do the task it describes, exactly as it says, in your current working directory (a git worktree made for you; do not cd elsewhere). Until you have read it you may not change files or run commands. Do not stage or commit anything. The last line of your final reply must be the status line the file asks for (COMPLETED: / FAILED: / BLOCKED:).`,
  });

export const bash = (command: string) => toolUse('Bash', { command, description: command.split(' plan ')[1] ?? command });

// ---------------------------------------------------------------------------------------------
// Worktrees one at a time, workers at once

/**
 * Claude Code makes the worktrees of the Agent calls of one message at the same time, and two
 * `git worktree add` at once can fail (`fatal: failed to read …/commondir`, CLI-NOTES.md): that
 * agent never runs, and nothing ran beside its partner. This PreToolUse hook of the test's own
 * (beside foreman's; it answers nothing, so it decides nothing) makes each of the lead's Agent calls
 * wait until the subagents of the calls before it have sent their first request, so the worktrees
 * are made one after the other; the subagents still run at once (each one's first answer waits for
 * the others of its hand-out). `started()` is told each subagent's first request.
 */
export async function worktreesOneAtATime(dir: string): Promise<{ settings: object; started: () => Promise<void> }> {
  await mkdir(dir, { recursive: true });
  const script = join(dir, 'agent-calls-in-turn.mjs');
  await writeFile(
    script,
    `import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
const dir = ${JSON.stringify(dir)};
const call = JSON.parse(readFileSync(0, 'utf8'));
if (!call.agent_id) {
  // This call's place among the lead's Agent calls: the first ticket free.
  let ticket = 0;
  for (;; ticket++) {
    try { mkdirSync(dir + '/ticket-' + ticket); break; } catch (e) { if (e.code !== 'EEXIST') throw e; }
  }
  const deadline = Date.now() + 60000;
  while (readdirSync(dir).filter((f) => f.startsWith('started-')).length < ticket && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}
`,
  );
  let count = 0;
  return {
    settings: { hooks: { PreToolUse: [{ matcher: 'Agent|Task', hooks: [{ type: 'command', command: `node ${JSON.stringify(script)}`, timeout: 120 }] }] } },
    started: () => writeFile(join(dir, `started-${count++}`), ''),
  };
}

/** The task of an Agent call's prompt (`…/task-<i>.md`), or NaN. */
export const taskOfPrompt = (prompt: unknown): number => Number(/task-(\d+)\.md/.exec(String(prompt))?.[1]);

// ---------------------------------------------------------------------------------------------
// The CLI in an interactive terminal, as a person meets it

/** Where tmux is, or null (then the caller skips `what`, saying so once). */
export function tmuxFor(what: string): string | null {
  const tmux = findExecutable('tmux', process.env, process.cwd());
  if (tmux === null) console.warn(`tmux is missing, so ${what} is skipped (Debian: apt-get install tmux)`);
  return tmux;
}

/** Claude Code running in a tmux session: what is on its screen, keys typed into it, its end. */
export interface Terminal {
  screen(): Promise<string>;
  /** `tmux send-keys` arguments: key names (`Enter`, `Down`), or `-l` and text typed as it is. */
  keys(...keys: string[]): Promise<void>;
  /** The screen once `pattern` is on it (checked every 250 ms, up to `seconds`); else throws with the screen and `context()`. */
  waitFor(pattern: RegExp, what: string, seconds?: number, context?: () => string): Promise<string>;
  /** Ends the session and waits up to 15 s for Claude Code to exit (it writes in its home as it does). */
  close(): Promise<void>;
}

/**
 * Start the interactive CLI with the built plugin, in the default permission mode, `command`
 * typed, in `cwd` in a tmux session of 220×60, its environment `claudeEnv`'s for the scripted
 * server at `serverUrl`, as a person who has used Claude Code there: onboarding done, the folder
 * trusted and the API key accepted (written to `home`'s `.claude.json`; CLI-NOTES.md).
 */
export async function interactiveClaude(
  tmux: string,
  place: { cwd: string; home: string; serverUrl: string; name: string },
  command: string,
): Promise<Terminal> {
  const { cwd, home, name } = place;
  const env = claudeEnv(place.serverUrl, home);
  await writeFile(
    join(home, '.claude.json'),
    JSON.stringify({
      hasCompletedOnboarding: true,
      customApiKeyResponses: { approved: [String(env.ANTHROPIC_API_KEY).slice(-20)], rejected: [] },
      projects: { [cwd]: { hasTrustDialogAccepted: true } },
    }),
  );
  const session = `foreman-${name}-${process.pid}`;
  const envArgs = Object.entries(env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
  const claude = [claudeBin, '--model', 'haiku', '--plugin-dir', join(repoRoot, 'plugin'), '--permission-mode', 'default', command];
  await execa(tmux, ['new-session', '-d', '-s', session, '-x', '220', '-y', '60', '-c', cwd, 'env', '-i', ...envArgs, ...claude]);
  // The session's process is Claude Code itself (env execs it): it goes with the session.
  const pid = Number((await execa(tmux, ['display-message', '-p', '-t', session, '#{pane_pid}'])).stdout);
  const screen = async () => (await execa(tmux, ['capture-pane', '-p', '-t', session])).stdout;
  return {
    screen,
    keys: async (...keys) => {
      await execa(tmux, ['send-keys', '-t', session, ...keys]);
    },
    async waitFor(pattern, what, seconds = 60, context = () => '') {
      for (let i = 0; i < seconds * 4; i++) {
        const now = await screen();
        if (pattern.test(now)) return now;
        await sleep(250);
      }
      throw new Error(`no ${what} on the screen:\n${await screen()}\n${context()}`);
    },
    async close() {
      await execa(tmux, ['kill-session', '-t', session], { reject: false });
      // A pid is not signalled again: by then it may be another's.
      for (let i = 0; i < 150 && alive(pid); i++) await sleep(100);
    },
  };
}
