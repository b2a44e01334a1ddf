// What a worker is asked to do (`WorkerRequest`) and the command line it becomes where it runs:
// the permission rules in `--settings` JSON with `--setting-sources ""`, so only the rules given
// here apply; the person's deny rules carried over, so they still narrow them.

import { type Refusal, type WorkerSandbox, workerSettings } from '../../core/index.ts';
import type { LogLimit } from './log-writer.ts';
import { workerPersonDenies } from '../sandbox/index.ts';
import type { OwnTmp, WorkerPlace } from './worker-place.ts';
import type { SpawnHooks } from '../processes/index.ts';

export interface WorkerRequest extends SpawnHooks {
  taskIndex: number;
  attempt: number;
  prompt: string;
  model: string;
  cwd: string;
  claudeBin: string;
  permissionMode: string;
  /** Permission rules allowed (`permissions.allow`): tools, `Edit(<path>)`, `Bash(<command>)`. */
  allowedTools: string[];
  /** Permission rules denied (`permissions.deny`); deny wins over allow. */
  deniedTools?: string[];
  maxBudgetUsd?: number;
  timeoutMs: number;
  logPath: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  extraArgs?: string[];
  onActivity?: (a: { text: string; costUsd: number }) => void;
  /**
   * Run its Bash commands in Claude Code's sandbox: writes only in `cwd` and a temporary directory
   * of the attempt's own (its TMPDIR), network only to these hosts. Absent: no sandbox.
   */
  sandbox?: { allowedDomains: readonly string[] };
  /**
   * The repository whose person's deny rules hold for the worker (adapters/sandbox/person-denies.ts
   * `workerPersonDenies`): `--setting-sources ""` drops them with the rest of their settings.
   */
  rulesOf?: string;
  /** Between SIGTERM and SIGKILL of the worker's group. Default 3000 ms. */
  killGraceMs?: number;
  /** How long a worker may linger after its `result` event before its group is killed. Default 10 000 ms. */
  postResultGraceMs?: number;
  /** How much of this attempt's output the log keeps. Default 8 MiB head + 2 MiB tail. */
  logLimit?: LogLimit;
  /** Continue this Claude Code session (`--resume`) instead of starting one: the prompt follows its conversation. */
  resume?: string;
  /** The API refused it (429/529) and its CLI will retry; `progressed`: it had been served a response before. */
  onRefused?: (refusal: Refusal, progressed: boolean) => void;
  /** The API served it a response. */
  onServed?: () => void;
  /** Aborted: end the worker if the API has served it nothing yet (it has done nothing); otherwise let it be. */
  stopIfIdle?: AbortSignal;
  /** Where its process runs: this machine when absent (`localWorkerPlace`), or a host's slot (run/workspace/host.ts). */
  place?: WorkerPlace;
}

/**
 * The worker's argv (the prompt is not in it: it goes on stdin). Only the rules given here apply:
 * `--setting-sources ""` drops the user, project and local settings (their allow rules and hooks),
 * and `inherited` carries the person's login settings over (see `readLoginSettings`).
 */
export function buildWorkerArgs(
  req: Pick<WorkerRequest, 'model' | 'permissionMode' | 'allowedTools' | 'deniedTools' | 'maxBudgetUsd' | 'extraArgs' | 'resume'>,
  inherited: Readonly<Record<string, unknown>> = {},
  sandbox?: WorkerSandbox,
): string[] {
  const settings = workerSettings({ allow: req.allowedTools, deny: req.deniedTools ?? [] }, inherited, sandbox);
  const args = ['-p', '--output-format', 'stream-json', '--verbose', '--model', req.model, '--permission-mode', req.permissionMode];
  args.push('--setting-sources', '', '--settings', JSON.stringify(settings));
  if (req.maxBudgetUsd !== undefined) args.push('--max-budget-usd', String(req.maxBudgetUsd));
  if (req.resume !== undefined) args.push('--resume', req.resume);
  if (req.extraArgs) args.push(...req.extraArgs);
  return args;
}

/** The login settings as the log shows them: which keys were carried over, never their values. */
const redacted = (inherited: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.keys(inherited).map((k) => [k, '<from your Claude Code user settings>']));

export const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** What a worker is started with, made from its request where it runs. */
export interface WorkerLaunch {
  args: string[];
  /** `args` as the log shows them: which login settings were carried over, never their values. */
  loggedArgs: string[];
  /** A sandboxed attempt's own TMPDIR, writable by its Bash commands, removed when it ends. */
  ownTmp: OwnTmp | undefined;
  /** Variables of the attempt's own (its TMPDIR), set wherever it runs. */
  ownEnv: Record<string, string>;
}

/**
 * The worker's command line where it runs: the login settings there carried over, the person's
 * deny rules (`rulesOf`) added to the request's, and for a sandboxed attempt a TMPDIR of its own,
 * writable beside its worktree.
 */
export async function prepareLaunch(request: WorkerRequest, place: WorkerPlace): Promise<WorkerLaunch> {
  const env = request.env ?? process.env;
  const inherited = await place.loginSettings(env);
  const personDenies = request.rulesOf === undefined ? [] : await workerPersonDenies(request.rulesOf, request.cwd, env);
  const ruled = personDenies.length === 0 ? request : { ...request, deniedTools: [...(request.deniedTools ?? []), ...personDenies] };
  const ownTmp = request.sandbox ? await place.ownTmp(request.taskIndex) : undefined;
  const sandbox: WorkerSandbox | undefined =
    request.sandbox && ownTmp ? { writable: [await place.realCwd(request.cwd), ownTmp.realPath], allowedDomains: request.sandbox.allowedDomains } : undefined;
  return {
    args: buildWorkerArgs(ruled, inherited, sandbox),
    loggedArgs: buildWorkerArgs(ruled, redacted(inherited), sandbox),
    ownTmp,
    ownEnv: ownTmp ? { TMPDIR: ownTmp.path, CLAUDE_CODE_TMPDIR: ownTmp.path } : {},
  };
}
