// The files the in-session steps and the plugin's worker hook share, one folder per Claude Code
// session that runs a plan (`CLAUDE_CODE_SESSION_ID`, which Claude Code gives the lead's Bash
// commands; its hooks receive the same id as `session_id`):
//
//   <root>/<session>/hand-out.json              the tasks handed out now (written by the steps)
//   <root>/<session>/claims/<task>-<attempt>    which subagent took a task's attempt (created once)
//   <root>/<session>/agents/<agent>.json        that subagent's binding (written by the hook)
//   <root>/<session>/agents/<agent>.sandbox.json  its commands' sandbox settings
//   <root>/<session>/tmp/<agent>/               its commands' TMPDIR
//   <root>/<session>/denied/<task>-<attempt>    the undeclared paths the hook refused that attempt's worker, a line each
//
// `<root>` is `$XDG_CACHE_HOME/foreman/sessions`, else `~/.cache/foreman/sessions`, outside every
// repository and outside what a worker's sandboxed command may write. It exists only while some
// session runs a plan, so the hook's launcher (hooks/pre-tool-use) costs one `test -d` elsewhere.

import { appendFile, mkdir, open, readFile, readdir, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ownCacheDir } from '../layout.ts';
import { type Binding, type HandedOutTask, type HandOut, ok, type Result, safeId } from '../../core/index.ts';

/** Where every session's hand-out lives (see above). */
export const handOutRoot = (env: NodeJS.ProcessEnv): string => path.join(ownCacheDir(env), 'sessions');

const sessionDir = (root: string, session: string) => path.join(root, session);
const handOutFile = (root: string, session: string) => path.join(sessionDir(root, session), 'hand-out.json');
const bindingFile = (root: string, session: string, agent: string) => path.join(sessionDir(root, session), 'agents', `${agent}.json`);
const deniedFile = (root: string, session: string, task: number, attempt: number) => path.join(sessionDir(root, session), 'denied', `${task}-${attempt}`);
const claimFile = (root: string, session: string, task: number, attempt: number) => path.join(sessionDir(root, session), 'claims', `${task}-${attempt}`);

/** Write `text` to `file` whole: readers see the old content or the new one, never a part. */
async function replaceFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await rename(tmp, file);
}

const readJson = async (file: string): Promise<unknown> => {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch {
    return null;
  }
};

const isTask = (t: unknown): t is HandedOutTask => {
  const v = t as Partial<HandedOutTask> | null;
  return (
    !!v &&
    Number.isInteger(v.index) &&
    Number.isInteger(v.attempt) &&
    typeof v.subject === 'string' &&
    typeof v.promptFile === 'string' &&
    Array.isArray(v.files) &&
    v.files.every((f) => typeof f === 'string') &&
    (v.parked === undefined || (isObjectId(v.parked.base) && isObjectId(v.parked.commit)))
  );
};

const isObjectId = (id: unknown): id is string => typeof id === 'string' && /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(id);

/** The hand-out of `session`, or null when it runs no plan (or the file is damaged: then the hook stays out). */
export async function readHandOut(root: string, session: string): Promise<HandOut | null> {
  if (!safeId(session)) return null;
  const data = (await readJson(handOutFile(root, session))) as Partial<HandOut> | null;
  if (data?.version !== 1 || data.session !== session || typeof data.repo !== 'string' || typeof data.planPath !== 'string') return null;
  const sandbox = data.sandbox as HandOut['sandbox'] | undefined;
  const sandboxOk = !!sandbox && (sandbox.available === true ? Array.isArray(sandbox.network) : typeof sandbox.reason === 'string');
  if (!sandboxOk || !Array.isArray(data.tasks) || !data.tasks.every(isTask)) return null;
  return data as HandOut;
}

/**
 * Publish what `handOut.session` has handed out now, and forget the claims and bindings of
 * attempts no longer in it (finalized, or handed out again), with their workers' files.
 */
export async function writeHandOut(root: string, handOut: HandOut): Promise<void> {
  if (!safeId(handOut.session)) return;
  await replaceFile(handOutFile(root, handOut.session), `${JSON.stringify(handOut, null, 2)}\n`);
  const live = new Set(handOut.tasks.map((t) => `${t.index}-${t.attempt}`));
  const dir = sessionDir(root, handOut.session);
  for (const claim of await readdir(path.join(dir, 'claims')).catch(() => [])) {
    if (live.has(claim)) continue;
    const agent = (await readFile(path.join(dir, 'claims', claim), 'utf8').catch(() => '')).trim();
    await rm(path.join(dir, 'claims', claim), { force: true });
    if (safeId(agent)) await forgetAgent(root, handOut.session, agent);
  }
}

async function forgetAgent(root: string, session: string, agent: string): Promise<void> {
  const dir = sessionDir(root, session);
  await rm(path.join(dir, 'agents', `${agent}.json`), { force: true });
  await rm(path.join(dir, 'agents', `${agent}.sandbox.json`), { force: true });
  await rm(path.join(dir, 'tmp', agent), { recursive: true, force: true });
}

/** The session runs no plan any more: its folder goes, and the root too when it was the last. */
export async function removeHandOut(root: string, session: string): Promise<void> {
  if (!safeId(session)) return;
  await rm(sessionDir(root, session), { recursive: true, force: true });
  await rmdir(root).catch(() => undefined);
}

/** Every session folder whose hand-out names `planPath` (sessions that ran the same plan before). */
export async function sessionsOfPlan(root: string, planPath: string): Promise<string[]> {
  const found: string[] = [];
  for (const session of await readdir(root).catch(() => [])) {
    const handOut = await readHandOut(root, session);
    if (handOut?.planPath === planPath) found.push(session);
  }
  return found;
}

/** The binding of `agent`, or null. */
export async function readBinding(root: string, session: string, agent: string): Promise<Binding | null> {
  if (!safeId(session) || !safeId(agent)) return null;
  const b = (await readJson(bindingFile(root, session, agent))) as Partial<Binding> | null;
  return b && b.agent === agent && Number.isInteger(b.task) && Number.isInteger(b.attempt) && typeof b.worktree === 'string' ? (b as Binding) : null;
}

/** Where a bound worker's commands keep their sandbox settings and temporary files. */
export interface WorkerFiles {
  settingsFile: string;
  tmpdir: string;
}

export const workerFiles = (root: string, session: string, agent: string): WorkerFiles => ({
  settingsFile: path.join(sessionDir(root, session), 'agents', `${agent}.sandbox.json`),
  tmpdir: path.join(sessionDir(root, session), 'tmp', agent),
});

/** Write the sandbox settings a worker's rewritten Bash command runs with (they follow the person's rules at each call). */
export async function writeSandboxSettings(file: string, settings: Record<string, unknown>): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await replaceFile(file, JSON.stringify(settings));
}

/**
 * Bind `agent` (working in `worktree`) to a handed-out task's attempt: the first subagent to read
 * its prompt file takes it (the claim is created exclusively, so two cannot), and gets its
 * TMPDIR (its sandbox settings are written at each Bash call). `prepare` makes its worktree ready
 * first (a revision's parked work put in); when it cannot, the agent holds the claim unbound, and
 * the error says why. Returns the binding, or null when another subagent took it first.
 */
export async function bindWorker(
  root: string,
  handOut: HandOut,
  agent: string,
  task: HandedOutTask,
  worktree: string,
  prepare?: () => Promise<Result<void, string>>,
): Promise<Result<Binding | null, string>> {
  if (!safeId(agent)) return ok(null);
  const claim = claimFile(root, handOut.session, task.index, task.attempt);
  await mkdir(path.dirname(claim), { recursive: true });
  try {
    const handle = await open(claim, 'wx', 0o600);
    await handle.writeFile(agent);
    await handle.close();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const holder = (await readFile(claim, 'utf8').catch(() => '')).trim();
    if (holder !== agent) return ok(null);
  }
  const ready = prepare === undefined ? ok(undefined) : await prepare();
  if (!ready.ok) return ready;
  const files = workerFiles(root, handOut.session, agent);
  await mkdir(files.tmpdir, { recursive: true, mode: 0o700 });
  const binding: Binding = { agent, task: task.index, attempt: task.attempt, worktree };
  await replaceFile(bindingFile(root, handOut.session, agent), JSON.stringify(binding));
  return ok(binding);
}

/**
 * Whether a subagent is bound to `task`'s attempt `attempt`: it read the prompt file, and its
 * worktree was made ready then (a revision's parked work put in, which binding waits for).
 */
export async function attemptBound(root: string, session: string, task: number, attempt: number): Promise<boolean> {
  if (!safeId(session)) return false;
  const agent = (await readFile(claimFile(root, session, task, attempt), 'utf8').catch(() => '')).trim();
  const binding = safeId(agent) ? await readBinding(root, session, agent) : null;
  return binding !== null && binding.task === task && binding.attempt === attempt;
}

/** The hook refused the worker of `task`'s attempt a write of `repoPath`, which its task does not declare: recorded for `finalize`. */
export async function recordDeniedWrite(root: string, session: string, task: number, attempt: number, repoPath: string): Promise<void> {
  const file = deniedFile(root, session, task, attempt);
  await mkdir(path.dirname(file), { recursive: true });
  await appendFile(file, `${JSON.stringify(repoPath)}\n`, { mode: 0o600 });
}

/** The undeclared paths the hook refused the worker of `task`'s attempt `attempt`, each once, in order. */
export async function deniedWrites(root: string, session: string, task: number, attempt: number): Promise<string[]> {
  if (!safeId(session)) return [];
  const text = await readFile(deniedFile(root, session, task, attempt), 'utf8').catch(() => '');
  const paths = text.split('\n').flatMap((line) => {
    try {
      const value: unknown = JSON.parse(line);
      return typeof value === 'string' ? [value] : [];
    } catch {
      return [];
    }
  });
  return [...new Set(paths)];
}
