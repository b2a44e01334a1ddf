// What the plugin's PreToolUse hook decides for a tool call of an in-session worker (a Task
// subagent of `/foreman:execute`), as a pure function of the call and what the hook looked up.
//
// The in-session steps publish the tasks they hand out (the hand-out, keyed by the Claude Code
// session); a subagent working in its worktree `<repo>/.claude/worktrees/agent-<id>` binds to its
// task when it reads that task's prompt file. Then, for that worker only:
// - Edit, Write and NotebookEdit of a path its task declares, inside its worktree: allowed; any
//   other path: denied, naming the files it may change (as a headless worker's exact Edit rules);
// - Bash: allowed, rewritten to run in the sandbox runtime (writes only in the worktree and the
//   worker's own TMPDIR, no network but the plan's `context.checkNetwork`, nothing the person's
//   Read and Edit deny rules name); left to the person where the sandbox cannot run, where a deny
//   or ask rule of theirs may match the command, or where the sandbox cannot hold one of their
//   Read or Edit deny rules exactly;
// - reads: left alone (the prompt file is allowed, so binding never waits for the person);
// - tools a headless worker does not get (the web, MCP servers, subagents, leaving the
//   worktree…): denied with a reason, never prompted for.
// A subagent in such a worktree that has not bound yet may read but not write or run anything;
// while a revision is handed out (a task whose attempt starts from its parked work, put in the
// worktree at binding), it may read nothing but a prompt file, so it never reads the files as
// they were before that work was put in.
// Everything else — the lead's own calls, subagents outside a worktree, sessions running no
// plan — gets no decision at all: the person's settings apply as if the hook were not there.
// An `allow` never skips the person's deny or ask rules (Claude Code applies them after the
// hook, checked on 2.1.330); the Bash rewrite would hide the command from them, so it is only
// made when no such rule of theirs may match.

import { posix } from 'node:path';
import { coveredBy } from '../plan/index.ts';
import { type FileDenies, runtimeWritable, sandboxDenies } from './sandbox-denies.ts';

/** A tool call as the hook receives it: the fields it reads. */
export interface ToolCall {
  sessionId: string;
  /** Present on a subagent's call; the lead's own calls carry none. */
  agentId: string | null;
  /** The subagent's working directory: its worktree, for a worker. */
  cwd: string;
  toolName: string;
  toolInput: Record<string, unknown>;
}

/** A task handed out to a subagent by `plan next` and not finalized yet. */
export interface HandedOutTask {
  index: number;
  attempt: number;
  subject: string;
  /** The absolute path of the prompt file its worker reads first. */
  promptFile: string;
  /** What it may change: its declared files, repository-relative (`dir/` covers a folder). */
  files: string[];
  /**
   * A revision of work parked for approval (`plan revise`): the parked commit and its base. The
   * hook puts that work in the worker's worktree when the worker binds (reads its prompt file),
   * before it does anything else there.
   */
  parked?: { base: string; commit: string };
}

/** What the in-session steps publish for the hook of one Claude Code session. */
export interface HandOut {
  version: 1;
  /** The Claude Code session running the plan (the `CLAUDE_CODE_SESSION_ID` of its steps). */
  session: string;
  /** The repository's real path: a worker's worktree is `<repo>/.claude/worktrees/agent-<agent id>`. */
  repo: string;
  planPath: string;
  /** Whether a worker's Bash command can run in the sandbox, as `plan setup` found it. */
  sandbox: { available: true; network: string[] } | { available: false; reason: string };
  tasks: HandedOutTask[];
}

/** A worker bound to a task: the subagent that read the task's prompt file in its worktree. */
export interface Binding {
  agent: string;
  task: number;
  attempt: number;
  worktree: string;
}

/** Where the path of an Edit, Write or NotebookEdit lies, through symlinks. */
export type WriteTarget = { kind: 'inside'; path: string } | { kind: 'outside'; path: string } | { kind: 'missing' };

export type HookVerdict =
  /** No decision: the person's settings and Claude Code's own checks apply. */
  | { kind: 'none' }
  /** `sandboxSettings`: what the rewritten Bash command's sandbox settings file must hold before it runs. */
  | { kind: 'allow'; reason: string; updatedInput?: Record<string, unknown>; sandboxSettings?: Record<string, unknown> }
  /** `undeclared`: the repository path of a write the worker's task does not declare (recorded for `finalize`). */
  | { kind: 'deny'; reason: string; undeclared?: string };

/** How the hook treats a tool. */
export type ToolClass = 'read' | 'write' | 'bash' | 'neutral' | 'refused';

/** Tools that change files, and the input field naming the file. */
const WRITE_TOOLS: Record<string, string> = { Edit: 'file_path', Write: 'file_path', NotebookEdit: 'notebook_path' };
/** Tools that only look. */
const READ_TOOLS = new Set(['Read', 'Glob', 'Grep', 'LS']);
/**
 * Tools that neither change files nor reach outside the session and never ask the person (the
 * CLI's own bookkeeping): left alone. Anything not named here or above is refused to a worker.
 */
const NEUTRAL_TOOLS = new Set([
  'TodoWrite',
  'ToolSearch',
  'TaskOutput',
  'TaskStop',
  'BashOutput',
  'KillShell',
  'KillBash',
  'ListAgents',
  'ReportFindings',
  'CronList',
]);

export function classifyTool(name: string): ToolClass {
  if (name in WRITE_TOOLS) return 'write';
  if (name === 'Bash') return 'bash';
  if (READ_TOOLS.has(name)) return 'read';
  if (NEUTRAL_TOOLS.has(name)) return 'neutral';
  return 'refused';
}

/**
 * Where the path an Edit, Write or NotebookEdit call names lands: absolute, or relative to `cwd`,
 * and a leading `~` or `~/` in `home`, as Claude Code reads it (seen on 2.1.330: `~/x` wrote in the
 * home folder). `~user/…` is another user's home to a shell (Claude Code 2.1.330 wrote it as a
 * folder named `~user` in its working directory): never a path of the worker's, so `user-home`.
 * Null when the call names no path.
 */
export type NamedPath = { kind: 'path'; path: string } | { kind: 'user-home'; path: string };

export function writePath(call: Pick<ToolCall, 'toolName' | 'toolInput' | 'cwd'>, home: string): NamedPath | null {
  const field = WRITE_TOOLS[call.toolName];
  const value = field === undefined ? undefined : call.toolInput[field];
  if (typeof value !== 'string' || value === '') return null;
  if (value === '~' || value.startsWith('~/')) return { kind: 'path', path: posix.join(home, value.slice(1)) };
  if (value.startsWith('~')) return { kind: 'user-home', path: value };
  return { kind: 'path', path: posix.resolve(call.cwd, value) };
}

/** Where Claude Code puts a subagent's worktree: `<repo>/.claude/worktrees/agent-<agent id>`. */
export const workerWorktree = (repo: string, agentId: string): string => posix.join(repo, '.claude', 'worktrees', `agent-${agentId}`);

/** True when `path` is `dir` or inside it (both absolute and normalised). */
export const within = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

/**
 * The folders whose `.claude/settings.json` and `settings.local.json` hold the person's rules for a
 * worker's call: the session's project folder and the repository, never a folder inside the
 * worker's worktree, whose files the worker's own commands may write.
 */
export const settingsFolders = (projectDir: string, repo: string, worktree: string): string[] =>
  [...new Set([projectDir, repo])].filter((dir) => !within(dir, worktree));

/**
 * The folders a relative path of the person's rules is read against for a worker: the session's
 * project folder, the repository, the worktree, and — when the project folder is a subfolder of
 * the repository — the same subfolder in the worktree (the worker's copy of what the rule names).
 */
export function ruleRootsOf(projectDir: string, repo: string, worktree: string): string[] {
  const sub = projectDir !== repo && within(projectDir, repo) && !within(projectDir, worktree) ? [posix.join(worktree, posix.relative(repo, projectDir))] : [];
  return [...new Set([projectDir, repo, worktree, ...sub])];
}

/** A session or agent id that can name a file: letters, digits, `-` and `_`. */
export const safeId = (id: unknown): id is string => typeof id === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(id);

/** The handed-out task whose prompt file a Read call names, or null. */
export function promptFileRead(call: Pick<ToolCall, 'toolName' | 'toolInput' | 'cwd'>, handOut: HandOut): HandedOutTask | null {
  if (call.toolName !== 'Read' || typeof call.toolInput.file_path !== 'string') return null;
  const path = posix.resolve(call.cwd, call.toolInput.file_path);
  return handOut.tasks.find((t) => t.promptFile === path) ?? null;
}

/** The binding as it stands now: null when its task's attempt is no longer handed out (finalized, or handed out again). */
export function currentBinding(handOut: HandOut, binding: Binding | null): Binding | null {
  if (binding === null) return null;
  return handOut.tasks.some((t) => t.index === binding.task && t.attempt === binding.attempt) ? binding : null;
}

const list = (files: readonly string[]) => (files.length === 0 ? 'none (this task declares no files)' : files.join(', '));

/** Whether a bound worker may write `target`: inside its worktree, at a path its task declares. */
export function judgeWrite(task: HandedOutTask, target: WriteTarget): HookVerdict {
  switch (target.kind) {
    case 'missing':
      return { kind: 'deny', reason: `foreman: this call names no file path. Task ${task.index} may change only: ${list(task.files)}.` };
    case 'outside':
      return {
        kind: 'deny',
        reason: `foreman: ${target.path} is outside your worktree. Task ${task.index} may change only these files, in your worktree: ${list(task.files)}. Carry on with them.`,
      };
    case 'inside':
      return coveredBy(target.path, task.files)
        ? { kind: 'allow', reason: `foreman: ${target.path} is declared by task ${task.index}` }
        : {
            kind: 'deny',
            undeclared: target.path,
            reason: `foreman: task ${task.index} does not declare ${target.path}, so its worker may not change it (a change to it is set aside, never kept, and a second attempt that changes it ends the task blocked). It may change only: ${list(task.files)}. Leave ${target.path} as it is and finish the declared work; if the task cannot be done without changing it, end with: BLOCKED: needs to change ${target.path}, which the task does not declare`,
          };
  }
}

// ---------------------------------------------------------------------------------------------
// Bash: the person's rules, and the sandboxed form of a command

/** A permission rule split into its tool and its specifier (`Bash(npm test:*)` → Bash, `npm test:*`). */
function parseRule(rule: string): { tool: string; spec: string | null } {
  const m = /^\s*([^(\s]+)\s*(?:\((.*)\))?\s*$/s.exec(rule);
  return m === null ? { tool: rule.trim(), spec: null } : { tool: m[1]!, spec: m[2] ?? null };
}

/** The command as rules see it, roughly: no quotes or backslashes, runs of blanks as one space. */
const loosened = (text: string) =>
  text
    .replace(/["'\\]/g, '')
    .replace(/\s+/g, ' ')
    .trim();

/**
 * The first of `rules` (the person's deny and ask rules) that may apply to a Bash `command`, or
 * null. It errs towards "may": a rule for every Bash command, or one whose literal words (the
 * parts between its wildcards) all occur in the command, counts. Then the hook makes no
 * decision and Claude Code applies the rule to the command as it is.
 */
export function bashRuleMayMatch(rules: readonly string[], command: string): string | null {
  const text = loosened(command);
  for (const rule of rules) {
    const { tool, spec } = parseRule(rule);
    if (tool !== 'Bash' && tool !== '*') continue;
    if (spec === null) return rule;
    const fragments = loosened(spec.replace(/:\*\s*$/, ''))
      .split('*')
      .map((f) => f.trim())
      .filter((f) => f !== '');
    if (fragments.every((f) => text.includes(f))) return rule;
  }
  return null;
}

/** `text` as one single-quoted shell word. */
export const shellQuote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

/** How to run a worker's command in the sandbox runtime: its CLI, its settings file, the worker's own TMPDIR. */
export interface SandboxRunner {
  node: string;
  cli: string;
  settingsFile: string;
  tmpdir: string;
}

/** The command line that runs `command` in the sandbox runtime (`srt -c`), with the worker's own TMPDIR. */
export function sandboxedCommand(command: string, runner: SandboxRunner): string {
  // The runtime sets the command's TMPDIR from CLAUDE_CODE_TMPDIR.
  return `CLAUDE_CODE_TMPDIR=${shellQuote(runner.tmpdir)} ${shellQuote(runner.node)} ${shellQuote(runner.cli)} --settings ${shellQuote(runner.settingsFile)} -c ${shellQuote(command)}`;
}

/** Where a worker's sandboxed commands may write: its worktree, its TMPDIR, and the runtime's own folders. */
export const workerWritable = (worktree: string, tmpdir: string, home: string): string[] => [worktree, tmpdir, ...runtimeWritable(home)];

/**
 * What a worker's commands may never write in its worktree: the `.git` link, and the two
 * settings files Claude Code reads rules from (`.claude/settings.json`, `.claude/settings.local.json`),
 * as Claude Code's own sandbox protects its settings files. Not the whole `.claude` folder: a
 * task may declare files there.
 */
export const guardedInWorktree = (worktree: string): string[] =>
  ['.git', '.claude/settings.json', '.claude/settings.local.json'].map((name) => posix.join(worktree, name));

/**
 * The sandbox runtime's settings for a worker's commands: writes in its worktree and TMPDIR only
 * (not `guardedInWorktree`), and nothing the person's Read and Edit deny rules name (`denies`,
 * from core/sandbox/sandbox-denies.ts).
 */
export function workerSandboxSettings(
  worktree: string,
  tmpdir: string,
  network: readonly string[],
  denies: FileDenies = { denyRead: [], denyWrite: [] },
): Record<string, unknown> {
  return {
    filesystem: { allowWrite: [worktree, tmpdir], denyWrite: [...guardedInWorktree(worktree), ...denies.denyWrite], denyRead: [...denies.denyRead] },
    network: { allowedDomains: [...network], deniedDomains: [] },
  };
}

// ---------------------------------------------------------------------------------------------
// The decision

/** What the hook looked up for a call. Only what the call's tool needs is given. */
export interface CallFacts {
  /** The session's hand-out; null: this session runs no plan. */
  handOut: HandOut | null;
  /** This agent's binding, as it stands now (see `currentBinding`). */
  binding: Binding | null;
  /** Binding to a revision failed: its parked work could not be put in the worktree, and why. */
  unready?: string;
  /** Edit, Write, NotebookEdit: where the named path lies. */
  target?: WriteTarget;
  /** Bash: the person's deny and ask rules. */
  personRules?: { deny: readonly string[]; ask: readonly string[] };
  /**
   * Bash: what a rule's path is read against: the home folder (`~/`), and the folders a relative
   * path may be under; and the real paths of the rules' folders and of `workerWritable`
   * (core/sandbox/sandbox-denies.ts `pathsToResolve`).
   */
  ruleRoots?: { home: string; roots: readonly string[]; real?: ReadonlyMap<string, string> };
  /** Bash: how to run it in the sandbox. */
  runner?: SandboxRunner;
}

/** The prompt files handed out, as a worker is told to read one. */
function promptList(handOut: HandOut): string {
  const prompts = handOut.tasks.map((t) => t.promptFile);
  return prompts.length === 1 ? prompts[0]! : `one of ${prompts.join(', ')}`;
}

const NOT_FOR_WORKERS = 'A foreman worker reads, edits its declared files and runs commands in its worktree, as a headless worker does';

/** The verdict on `call`. Pure: every lookup is in `facts`. */
export function decideToolCall(call: ToolCall, facts: CallFacts): HookVerdict {
  const { handOut } = facts;
  // The lead's own calls, and sessions running no plan: nothing to decide.
  if (call.agentId === null || handOut === null || handOut.session !== call.sessionId) return { kind: 'none' };
  const worktree = workerWorktree(handOut.repo, call.agentId);
  // A subagent outside a worktree of the plan's repository is not a worker.
  if (!within(posix.resolve(call.cwd), worktree)) return { kind: 'none' };
  const binding = facts.binding !== null && facts.binding.agent === call.agentId && facts.binding.worktree === worktree ? facts.binding : null;
  const task = binding === null ? undefined : handOut.tasks.find((t) => t.index === binding.task && t.attempt === binding.attempt);
  const kind = classifyTool(call.toolName);
  if (kind === 'read') {
    const prompt = promptFileRead(call, handOut);
    if (prompt !== null && task === undefined && facts.unready !== undefined)
      return {
        kind: 'deny',
        reason: `foreman: task ${prompt.index} revises its earlier work, which could not be put in your worktree (${facts.unready}). Do nothing else; end with: FAILED: the earlier work of task ${prompt.index} could not be put in the worktree`,
      };
    if (prompt !== null && (task === undefined || prompt.index === task.index))
      return { kind: 'allow', reason: `foreman: the prompt file of task ${prompt.index}` };
    if (task === undefined && handOut.tasks.some((t) => t.parked !== undefined))
      return { kind: 'deny', reason: `foreman: read your task's prompt file first (${promptList(handOut)}); your task's files are made ready when you do.` };
    return { kind: 'none' };
  }
  if (kind === 'neutral') return { kind: 'none' };
  if (kind === 'refused')
    return { kind: 'deny', reason: `foreman: ${call.toolName} is not available to a worker. ${NOT_FOR_WORKERS}; finish the task with those.` };
  if (task === undefined) {
    return {
      kind: 'deny',
      reason: `foreman: read your task's prompt file first (${promptList(handOut)}): until you have, you may not change files or run commands. A task already taken by another worker cannot be taken again.`,
    };
  }
  if (kind === 'write') return facts.target === undefined ? { kind: 'none' } : judgeWrite(task, facts.target);
  // Bash.
  const { runner, personRules, ruleRoots } = facts;
  if (!handOut.sandbox.available || runner === undefined || personRules === undefined || ruleRoots === undefined) return { kind: 'none' };
  const command = call.toolInput.command;
  if (typeof command !== 'string' || command.trim() === '') return { kind: 'none' };
  if (bashRuleMayMatch([...personRules.deny, ...personRules.ask], command) !== null) return { kind: 'none' };
  // The person's Read and Edit deny rules hold in the sandbox too; one it cannot hold exactly leaves the command to the person.
  const denies = sandboxDenies(personRules.deny, { ...ruleRoots, writable: workerWritable(worktree, runner.tmpdir, ruleRoots.home) });
  if (!denies.ok) return { kind: 'none' };
  return {
    kind: 'allow',
    reason: `foreman: runs in the sandbox (writes only in the worktree of task ${task.index} and its own TMPDIR)`,
    updatedInput: { ...call.toolInput, command: sandboxedCommand(command, runner) },
    sandboxSettings: workerSandboxSettings(worktree, runner.tmpdir, handOut.sandbox.network, denies.value),
  };
}
