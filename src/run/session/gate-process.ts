// The merge queue's gate process in a Claude Code session. The step function decides what the gate
// tests (`core/engine/gate.ts`, as headless); its state lives in the session file. A gate run can take longer
// than the Bash tool allows one call, so it runs in a detached process of its own (`plan gate
// --serve`), which only runs the plan's test command on the stack and writes what it found to
// `.design/gate.json` (atomically). The plan tool's steps, holding the plan's lock, do everything
// else: they start it, wait for it at most `--wait` seconds, and apply its verdict (integrate and
// land what passed, blame a culprit, report a flake). Only one gate process runs per plan; it is
// recorded in `.design/gate-workers.json` (the steps' own `workers.json` is ended by every step,
// and this process must outlive them), so `plan setup` after a killed session ends it.

import {
  killOrphans,
  ownLauncherPath,
  parkedWork,
  processAlive,
  ProcessRegistry,
  shellCommands,
  terminateGroup,
  writeFileAtomic,
} from '../../adapters/index.ts';
import {
  type CapturedWork,
  clipMiddle,
  describeGitFailure,
  describeTimeLimitHit,
  err,
  listIndices,
  ok,
  type Plan,
  type Result,
  type TimeLimit,
} from '../../core/index.ts';
import { noWorkers } from '../adapters.ts';
import { GitIntegration } from '../integration.ts';
import { openLocalWorkspaces } from '../workspace/index.ts';
import type { GateRunRecord, SessionGateConfig } from './session-state.ts';
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const taskList = (value: unknown): number[] | null => (Array.isArray(value) && value.every((t) => Number.isInteger(t) && t >= 0) ? (value as number[]) : null);

// ---------------------------------------------------------------------------------------------
// The gate process's files

/** Where the gate process writes its progress and result, next to the plan. */
export const gateStatePathFor = (planPath: string): string => join(dirname(planPath), 'gate.json');
/** Where the gate process records itself and the test command's process group. */
export const gateRegistryPathFor = (planPath: string): string => join(dirname(planPath), 'gate-workers.json');

/** What the gate process wrote: running (with its pid), or its result. `stale`: the tip moved or a candidate is gone; nothing was tested. */
export type GateState =
  | { id: string; state: 'running'; pid: number; tasks: number[] }
  | { id: string; state: 'finished'; pid: number; tasks: number[]; passed: boolean; stale: boolean; output: string; durationMs: number };

export async function readGateState(planPath: string): Promise<GateState | null> {
  try {
    const data = JSON.parse(await readFile(gateStatePathFor(planPath), 'utf8')) as Record<string, unknown>;
    const tasks = taskList(data.tasks);
    if (typeof data.id !== 'string' || !Number.isInteger(data.pid) || tasks === null) return null;
    if (data.state === 'running') return { id: data.id, state: 'running', pid: data.pid as number, tasks };
    if (data.state === 'finished' && typeof data.passed === 'boolean' && typeof data.output === 'string' && typeof data.durationMs === 'number') {
      return {
        id: data.id,
        state: 'finished',
        pid: data.pid as number,
        tasks,
        passed: data.passed,
        stale: data.stale === true,
        output: data.output,
        durationMs: data.durationMs,
      };
    }
    return null;
  } catch {
    return null;
  }
}

const writeGateState = (planPath: string, state: GateState): Promise<void> => writeFileAtomic(gateStatePathFor(planPath), `${JSON.stringify(state)}\n`);

/** Ends a gate process a killed session left running (and the test command it started); forgets its files. */
export async function endGateProcess(planPath: string): Promise<string[]> {
  const killed = await killOrphans(gateRegistryPathFor(planPath));
  await rm(gateStatePathFor(planPath), { force: true });
  // The gate process and the test command it runs are a process group each: one gate, said once
  // with the groups ended (a process killed as it was spawned was recorded by its marker alone).
  const groupsByCommand = new Map<string, number[]>();
  for (const k of killed) {
    const command = k.kind === 'worker' ? '' : k.command;
    groupsByCommand.set(command, [...(groupsByCommand.get(command) ?? []), ...(k.pgid === undefined ? [] : [k.pgid])]);
  }
  return [...groupsByCommand].map(
    ([command, groups]) => `the gate \`${command}\`${groups.length === 0 ? '' : ` (process group${groups.length === 1 ? '' : 's'} ${listIndices(groups)})`}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Starting it, and the process itself

export interface GateLaunch {
  repo: string;
  planPath: string;
  env: NodeJS.ProcessEnv;
  config: SessionGateConfig;
  sandbox: boolean;
}

/**
 * How long the gate process has to record itself: a fixed bound, since it only starts node and
 * writes a file before anything of the plan runs (its test command then has --gate-timeout).
 */
const GATE_START_LIMIT: TimeLimit = { ms: 30_000, flag: null };

/**
 * Start `plan gate --serve` detached (a process group of its own, outliving the step) on `run`,
 * and wait until it has recorded itself (so a later `plan setup` can end it). Why not, when it
 * did not start: it exited first, or it did not record itself in time (its group is ended then,
 * so no second gate process runs beside the next one).
 */
export async function launchGate(launch: GateLaunch, run: GateRunRecord): Promise<Result<void, string>> {
  await rm(gateStatePathFor(launch.planPath), { force: true });
  // Through foreman's own launcher: the bundle in the plugin, the sources in a checkout.
  const args = [
    'plan',
    'gate',
    '--serve',
    '--repo',
    launch.repo,
    '--plan',
    launch.planPath,
    '--id',
    run.id,
    '--tip',
    run.tip,
    '--tasks',
    run.tasks.join(','),
    '--command',
    launch.config.command,
    '--timeout-ms',
    String(launch.config.timeoutMs),
    ...(launch.sandbox ? ['--sandbox'] : []),
  ];
  // Its limits: GATE_START_LIMIT to record itself; then its test command, and the setup command
  // of its worktree, each have --gate-timeout (`timeoutMs`). git's own commands are bounded apart.
  const child = spawn(ownLauncherPath(), args, { cwd: launch.repo, env: { ...process.env, ...launch.env }, detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  child.unref();
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const recorded = async () => (await readGateState(launch.planPath))?.id === run.id;
  for (const deadline = Date.now() + GATE_START_LIMIT.ms; Date.now() < deadline; ) {
    if (await recorded()) return ok(undefined);
    if (gone) return (await recorded()) ? ok(undefined) : err('it exited before it recorded itself');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (child.pid !== undefined) await terminateGroup(child.pid, 2000);
  return err(`it did not record itself in time: ${describeTimeLimitHit('plan gate --serve', GATE_START_LIMIT)}`);
}

export interface ServeRequest {
  repo: string;
  planPath: string;
  plan: Plan;
  env: NodeJS.ProcessEnv;
  id: string;
  tip: string;
  tasks: number[];
  command: string;
  timeoutMs: number;
  sandbox: boolean;
}

/**
 * The gate process: the test command on the candidates (read from their refs) stacked on `tip`,
 * in a worktree of its own pool, the result written to `gate.json`. It never writes the plan, the
 * session or a ref: the step that collects the result does.
 */
export async function serveGate(request: ServeRequest): Promise<void> {
  const registry = new ProcessRegistry(gateRegistryPathFor(request.planPath));
  // Started detached, this process leads its own group: ending the group ends the gate.
  registry.add({ kind: 'gate', task: -1, command: request.command }, process.pid);
  const base = { id: request.id, pid: process.pid, tasks: request.tasks };
  await writeGateState(request.planPath, { ...base, state: 'running' });
  const started = Date.now();
  const finish = (result: { passed: boolean; stale: boolean; output: string }) =>
    writeGateState(request.planPath, { ...base, state: 'finished', ...result, output: clipMiddle(result.output, 16_000), durationMs: Date.now() - started });
  try {
    const opened = await GitIntegration.open(request.plan, { repo: request.repo, planPath: request.planPath, role: 'gate' });
    if (!opened.ok) return await finish({ passed: false, stale: true, output: `could not open the plan's integration ref: ${opened.error.stderr}` });
    const integration = opened.value;
    // The tip moved (the person committed, an approval integrated): this stack is not what the step meant to test.
    if (integration.tip !== request.tip)
      return await finish({
        passed: false,
        stale: true,
        output: `the integration tip moved from ${request.tip.slice(0, 12)} to ${integration.tip.slice(0, 12)}`,
      });
    const works: Array<{ task: number; work: CapturedWork }> = [];
    for (const task of request.tasks) {
      const work = await parkedWork(request.repo, integration.planId, task, 'candidate');
      // Nothing was tested: the step runs the stack again.
      if (!work.ok)
        return await finish({ passed: false, stale: true, output: `could not read the candidate of task ${task}: ${describeGitFailure(work.error)}` });
      if (work.value === null) return await finish({ passed: false, stale: true, output: `the candidate of task ${task} is gone` });
      works.push({ task, work: work.value });
    }
    // A pool of its own (`gatePoolId`): it never takes a slot from the steps running beside it.
    const workspaces = await openLocalWorkspaces(
      request.plan,
      {
        repo: integration.repo,
        planId: integration.planId,
        env: request.env,
        commands: shellCommands(request.env, registry),
        workers: noWorkers,
        keepAside: (plan, task, work) => integration.keepAside(plan, task, work),
        knows: (commit) => integration.knows(commit),
      },
      {
        sandbox: request.sandbox,
        setupTimeoutMs: request.timeoutMs,
        checkTimeoutMs: request.timeoutMs,
        strictScope: false,
        logDir: null,
        markTracked: false,
        role: 'gate',
      },
    );
    const run = await integration.gate(workspaces, { tasks: request.tasks, works }, { command: request.command, timeoutMs: request.timeoutMs });
    await finish({ passed: run.passed === true, stale: run.passed === null, output: run.output });
  } finally {
    await registry.clear();
  }
}

/** Whether the process that wrote `state` still runs. */
export const gateAlive = (state: GateState): boolean => processAlive(state.pid);
