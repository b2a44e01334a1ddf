// The plugin's PreToolUse hook (hooks/hooks.json → hooks/pre-tool-use → dist/hook.mjs): reads
// the tool call Claude Code sends on stdin, looks up what the decision needs and prints the
// decision of core/sandbox/worker-hook.ts as the hook's JSON answer — or nothing, which leaves the call
// to the person's settings. It runs on every tool call of every session that has the plugin, so
// it reads no more than the call needs: the lead's own calls end after parsing, and a session
// running no plan after one missing file.

import { readFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import {
  bindWorker,
  describeAgentWorktreeProblem,
  handOutRoot,
  type ParkedStart,
  personRules,
  readBinding,
  readHandOut,
  realTarget,
  realTargets,
  recordDeniedWrite,
  sandboxCliPath,
  startFromParked,
  workerFiles,
  writeSandboxSettings,
} from '../adapters/index.ts';
import {
  type Binding,
  type CallFacts,
  classifyTool,
  currentBinding,
  decideToolCall,
  err,
  type HandOut,
  type HookVerdict,
  ok,
  pathsToResolve,
  promptFileRead,
  type Result,
  ruleRootsOf,
  safeId,
  settingsFolders,
  type ToolCall,
  within,
  workerWorktree,
  workerWritable,
  writePath,
  type WriteTarget,
} from '../core/index.ts';

/** The call in the hook's input, or null when it is not a tool call the hook can read. */
export function toolCallOf(input: unknown): ToolCall | null {
  const v = input as { session_id?: unknown; agent_id?: unknown; cwd?: unknown; tool_name?: unknown; tool_input?: unknown } | null;
  if (!v || typeof v !== 'object' || typeof v.session_id !== 'string' || typeof v.cwd !== 'string' || typeof v.tool_name !== 'string') return null;
  const toolInput = v.tool_input !== null && typeof v.tool_input === 'object' ? (v.tool_input as Record<string, unknown>) : {};
  return {
    sessionId: v.session_id,
    agentId: typeof v.agent_id === 'string' && v.agent_id !== '' ? v.agent_id : null,
    cwd: v.cwd,
    toolName: v.tool_name,
    toolInput,
  };
}

/** Where an Edit, Write or NotebookEdit of `call` lands, relative to `worktree` when inside it. */
async function writeTarget(call: ToolCall, worktree: string, home: string): Promise<WriteTarget> {
  const written = writePath(call, home);
  if (written === null) return { kind: 'missing' };
  if (written.kind === 'user-home') return { kind: 'outside', path: written.path };
  const named = written.path;
  const real = await realTarget(named);
  const top = await realpath(worktree).catch(() => worktree);
  return real !== top && within(real, top) ? { kind: 'inside', path: path.relative(top, real).split(path.sep).join('/') } : { kind: 'outside', path: named };
}

/** Put a revision's parked work in its worker's worktree, or say why it could not be. */
async function parkedWorkPut(repo: string, worktree: string, parked: ParkedStart): Promise<Result<void, string>> {
  const put = await startFromParked(repo, worktree, parked);
  return put.ok ? put : err(describeAgentWorktreeProblem(put.error));
}

/** What the decision on `call` needs, looked up (and the worker bound when it reads its prompt file). */
async function lookUp(call: ToolCall & { agentId: string }, handOut: HandOut, root: string, env: NodeJS.ProcessEnv): Promise<CallFacts> {
  const worktree = workerWorktree(handOut.repo, call.agentId);
  let binding: Binding | null = currentBinding(handOut, await readBinding(root, handOut.session, call.agentId));
  const kind = classifyTool(call.toolName);
  let unready: string | undefined;
  if (kind === 'read' && binding === null) {
    const task = promptFileRead(call, handOut);
    const { parked } = task ?? {};
    // A revision starts from its parked work: put in the worktree before the worker reads a thing.
    const prepare = parked === undefined ? undefined : () => parkedWorkPut(handOut.repo, worktree, parked);
    const bound = task === null ? ok(null) : await bindWorker(root, handOut, call.agentId, task, worktree, prepare);
    if (bound.ok) binding = bound.value;
    else unready = bound.error;
  }
  const facts: CallFacts = { handOut, binding, ...(unready !== undefined ? { unready } : {}) };
  if (binding === null) return facts;
  if (kind === 'write') facts.target = await writeTarget(call, worktree, env.HOME || homedir());
  if (kind === 'bash' && handOut.sandbox.available) {
    const projectDir = env.CLAUDE_PROJECT_DIR ? await realTarget(path.resolve(env.CLAUDE_PROJECT_DIR)) : handOut.repo;
    // The person's settings: the session's project folder's and the repository's, never the
    // worktree's, which the worker's own commands may write (a rule it wrote there would make
    // the hook step aside, and the command run unsandboxed under an allow rule of the person's).
    facts.personRules = await personRules(env, settingsFolders(projectDir, handOut.repo, worktree));
    const files = workerFiles(root, handOut.session, call.agentId);
    const home = env.HOME || homedir();
    const ruleRoots = { home, roots: ruleRootsOf(projectDir, handOut.repo, worktree) };
    // The runtime resolves deny paths through symlinks: the decision compares real paths.
    const real = await realTargets(pathsToResolve(facts.personRules.deny, { ...ruleRoots, writable: workerWritable(worktree, files.tmpdir, home) }));
    facts.ruleRoots = { ...ruleRoots, real };
    facts.runner = { node: process.execPath, cli: sandboxCliPath(), settingsFile: files.settingsFile, tmpdir: files.tmpdir };
  }
  return facts;
}

/** The verdict on the call in `input` (the hook's stdin, parsed). */
export async function judgeHookInput(input: unknown, env: NodeJS.ProcessEnv): Promise<HookVerdict> {
  const call = toolCallOf(input);
  // The lead's own calls (no agent id): nothing to decide, nothing to read.
  if (call === null || call.agentId === null || !safeId(call.sessionId) || !safeId(call.agentId)) return { kind: 'none' };
  const root = handOutRoot(env);
  const handOut = await readHandOut(root, call.sessionId);
  if (handOut === null) return { kind: 'none' };
  const cwd = await realpath(call.cwd).catch(() => path.resolve(call.cwd));
  const worker = { ...call, agentId: call.agentId, cwd };
  if (!within(cwd, workerWorktree(handOut.repo, call.agentId))) return { kind: 'none' };
  const facts = await lookUp(worker, handOut, root, env);
  const verdict = decideToolCall(worker, facts);
  // A refused undeclared write is kept for `finalize`: the task wanted that file.
  if (verdict.kind === 'deny' && verdict.undeclared !== undefined && facts.binding !== null) {
    await recordDeniedWrite(root, handOut.session, facts.binding.task, facts.binding.attempt, verdict.undeclared).catch(() => undefined);
  }
  // The rewritten command reads its sandbox's settings when it runs: they are written first. A
  // failure is not "no decision", which could let the command run unconfined under an allow rule
  // of the person's: the call is denied, saying why.
  if (verdict.kind === 'allow' && verdict.sandboxSettings !== undefined && facts.runner !== undefined) {
    const file = facts.runner.settingsFile;
    try {
      await writeSandboxSettings(file, verdict.sandboxSettings);
    } catch (e) {
      return {
        kind: 'deny',
        reason: `foreman: this command cannot run in the sandbox, and does not run outside it: its sandbox settings could not be written (${file}: ${(e as Error).message}). Tell the person running the plan.`,
      };
    }
  }
  return verdict;
}

/** The hook's answer for Claude Code: empty for no decision. */
export function hookAnswer(verdict: HookVerdict): string {
  if (verdict.kind === 'none') return '';
  return JSON.stringify({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: verdict.kind,
      permissionDecisionReason: verdict.reason,
      ...(verdict.kind === 'allow' && verdict.updatedInput ? { updatedInput: verdict.updatedInput } : {}),
    },
  });
}

/** Run the hook on `stdin`; what to print. An input that is not JSON gets no decision. */
export async function preToolUse(stdin: string, env: NodeJS.ProcessEnv): Promise<string> {
  let input: unknown;
  try {
    input = JSON.parse(stdin);
  } catch {
    return '';
  }
  return hookAnswer(await judgeHookInput(input, env));
}

/** The entry point: stdin in, the answer out. A failure is not a decision: Claude Code goes on as without the hook (exit 1 is a non-blocking error). */
export async function runHook(): Promise<void> {
  try {
    const stdin = readFileSync(0, 'utf8');
    const answer = await preToolUse(stdin, process.env);
    if (answer !== '') process.stdout.write(answer);
  } catch (e) {
    process.stderr.write(`foreman hook: ${(e as Error).message}\n`);
    process.exitCode = 1;
  }
}
