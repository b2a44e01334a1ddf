// The in-session steps tell the plugin's worker hook what they handed out (adapters/worker/hand-out.ts):
// after `setup`, `next` and `finalize`, the tasks in progress whose workers may be running, with
// their prompt files and declared files, and whether a worker's Bash can run in the sandbox. It
// is keyed by the Claude Code session the steps run in (`CLAUDE_CODE_SESSION_ID`, which Claude
// Code gives the lead's Bash commands); run from a terminal, there is no session and nothing to
// publish. When the run ends, the session's folder goes.

import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { attemptBound, deniedWrites, handOutRoot, removeHandOut, sessionsOfPlan, writeHandOut } from '../../adapters/index.ts';
import { attemptsOf, type HandedOutTask, type HandOut, type Plan, safeId, statusOf, writesOf } from '../../core/index.ts';

/** Whether a worker's Bash commands can run in the sandbox in this session, as `setup` decided. */
export type WorkerSandbox = HandOut['sandbox'];

/** What the publisher needs of the session: where it runs, and the tasks `next` handed out. */
export interface HandOutSource {
  repo: string;
  planPath: string;
  env: NodeJS.ProcessEnv;
  /** The tasks handed out whose workers have not been finalized: their attempts are running. */
  running: readonly number[];
  sandbox: WorkerSandbox;
  promptFile: (index: number) => string;
  /** A revision's parked work (`plan revise`), which its worker starts from; undefined for any other attempt. */
  parked: (index: number) => HandedOutTask['parked'];
}

/** The Claude Code session the steps run in, or null outside one. */
export const claudeSession = (env: NodeJS.ProcessEnv): string | null => (safeId(env.CLAUDE_CODE_SESSION_ID) ? env.CLAUDE_CODE_SESSION_ID : null);

/** The tasks whose workers may be working now: in progress, handed out, not finalized. */
export function handedOutTasks(plan: Plan, source: Pick<HandOutSource, 'running' | 'promptFile' | 'parked'>): HandedOutTask[] {
  return plan.tasks.flatMap((task, index) => {
    if (statusOf(task) !== 'in_progress' || !source.running.includes(index)) return [];
    const parked = source.parked(index);
    return [
      {
        index,
        attempt: attemptsOf(task) + 1,
        subject: task.subject,
        promptFile: source.promptFile(index),
        files: writesOf(task),
        ...(parked !== undefined ? { parked } : {}),
      },
    ];
  });
}

/** Publish what this session has handed out now (nothing outside a Claude Code session). */
export async function publishHandOut(plan: Plan, source: HandOutSource): Promise<void> {
  const session = claudeSession(source.env);
  if (session === null) return;
  const repo = await realpath(source.repo);
  await writeHandOut(handOutRoot(source.env), {
    version: 1,
    session,
    repo,
    planPath: source.planPath,
    sandbox: source.sandbox,
    tasks: handedOutTasks(plan, source),
  });
}

/** The undeclared paths the worker hook refused the worker of `task`'s attempt `attempt` in this session (none outside one). */
export async function deniedWritesOf(env: NodeJS.ProcessEnv, task: number, attempt: number): Promise<string[]> {
  const session = claudeSession(env);
  return session === null ? [] : deniedWrites(handOutRoot(env), session, task, attempt);
}

/** Whether the worker hook bound a subagent to `task`'s attempt `attempt` in this session (never outside one). */
export async function attemptBoundIn(env: NodeJS.ProcessEnv, task: number, attempt: number): Promise<boolean> {
  const session = claudeSession(env);
  return session !== null && attemptBound(handOutRoot(env), session, task, attempt);
}

/** The run ended: this session hands nothing out any more. */
export async function withdrawHandOut(env: NodeJS.ProcessEnv): Promise<void> {
  const session = claudeSession(env);
  if (session !== null) await removeHandOut(handOutRoot(env), session);
}

/** How long a hand-out no step rewrote is kept: its session is long gone. */
const STALE_MS = 2 * 24 * 3600 * 1000;

/**
 * At `setup`: the hand-outs earlier sessions left for this plan (their workers are gone: setup
 * puts their tasks back to pending), and any left unwritten for two days, are removed.
 */
export async function removeStaleHandOuts(planPath: string, env: NodeJS.ProcessEnv): Promise<void> {
  const root = handOutRoot(env);
  const current = claudeSession(env);
  const stale = new Set((await sessionsOfPlan(root, planPath)).filter((s) => s !== current));
  for (const session of await readdir(root).catch(() => [])) {
    const written = await stat(join(root, session, 'hand-out.json')).catch(() => null);
    if (session !== current && (written === null || Date.now() - written.mtimeMs > STALE_MS)) stale.add(session);
  }
  for (const session of stale) await removeHandOut(root, session);
}
