// The headless engine: carries out what the pure state machine (`core/engine/step.ts`) decides.
// Events come in one at a time — a worker finished (or a limit refused it, or the API served
// it), a verification finished, the lane recorded something, a gate run finished, a back-off
// ended, a drain, Ctrl-C — and each goes through `step` in the one loop (core/engine/driver.ts),
// whose effects the carrier here carries out in order. Each attempt gets a workspace of its own,
// made where the integration says it starts (the tip, candidates stacked on it, or the work set
// aside for a re-check; a paused attempt resumes in the one it kept), where its worker and its
// checks run; starting workers and verifying run in parallel; the lane runs, one at a time, what
// must be serialized: recording (foreman's refs move) and the gate's runs (which test what the
// integration ref holds). The engine decides nothing itself: what it works with is passed in
// (`EngineAdapters`), so tests give it fakes and a fake clock.

import {
  gatedEvent,
  hostFaultEvent,
  recordedEvent,
  verifiedEvent,
  workerFinishedEvent,
  workerRefusedEvent,
  workerServedEvent,
  workspaceFailedEvent,
} from '../core/engine/effect-results.ts';
import type { EngineEffect } from '../core/engine/effects.ts';
import type { EngineEvent } from '../core/engine/events.ts';
import type { EngineConfig, EngineState, EngineStop } from '../core/engine/state.ts';
import { type EffectCarrier, drive } from '../core/engine/driver.ts';
import { type Result, err, ok, recheckRun } from '../core/failure.ts';
import { Lane } from '../core/lane.ts';
import { type Plan, type UsageFigure, modelOf } from '../core/plan.ts';
import { resumePrompt, workerPrompt } from '../core/prompt.ts';
import { DEFAULTS, type RunSettings } from './settings.ts';
import type { WorkerJob, Workspace } from './workspace/index.ts';
import { type EngineAdapters, planWrites } from './engine-carrier.ts';
import { Inbox } from './engine-inbox.ts';

export interface EngineResult extends EngineStop {
  usage: UsageFigure;
  /** The plan as the run left it (also saved). */
  plan: Plan;
}

/** Where workers started with `env` reach the API, as a person would look for it. */
export function apiUrlOf(env: NodeJS.ProcessEnv): string {
  const base = env['ANTHROPIC_BASE_URL']?.trim();
  if (base) return base;
  if (env['CLAUDE_CODE_USE_BEDROCK'] === '1') return 'Amazon Bedrock';
  if (env['CLAUDE_CODE_USE_VERTEX'] === '1') return 'Google Vertex AI';
  return 'https://api.anthropic.com';
}

export const engineConfig = (settings: RunSettings, logDir: string, env: NodeJS.ProcessEnv = {}): EngineConfig => ({
  concurrency: settings.concurrency,
  maxAttempts: settings.maxAttempts,
  schedule: settings.schedule,
  backoffMs: settings.backoffMs,
  limitWaitMs: settings.limitWaitMs,
  apiUrl: apiUrlOf(env),
  ...(settings.maxCostUsd !== undefined ? { maxCostUsd: settings.maxCostUsd } : {}),
  logDir,
  ...(settings.strictScope === true ? { strictScope: true } : {}),
  ...(settings.widen !== undefined && settings.widen.length > 0 ? { widen: settings.widen } : {}),
  gate: settings.gate === null ? null : { batchSize: settings.gate.batchSize, command: settings.gate.command },
  speculate: settings.gate === null ? 0 : (settings.speculate ?? DEFAULTS.speculate),
  driver: 'headless',
  ...(settings.hosts !== undefined ? { hosts: settings.hosts.map(({ name, slots }) => ({ name, slots })), hostBackoffMs: DEFAULTS.hostBackoffMs } : {}),
});

/**
 * Run the plan until it stops. `signal` interrupts (Ctrl-C: workers stopped now); `drain` asks the
 * run to start nothing new and stop once what is under way has finished and integrated.
 */
export async function runEngine(
  start: EngineState,
  settings: RunSettings,
  adapters: EngineAdapters,
  signal: AbortSignal,
  drain: AbortSignal = new AbortController().signal,
): Promise<EngineResult> {
  const clock = adapters.clock;
  const inbox = new Inbox();
  const serialized = new Lane();
  const workers = new Map<number, AbortController>();
  /** Each running worker's `stopIfIdle`: the limiter stops one the API has served nothing yet. */
  const idle = new Map<number, AbortController>();
  /** Each running, paused or verifying attempt's workspace. */
  const workspaces = new Map<number, Workspace>();
  const wake: { current: { at: number; cancel: () => void } | null } = { current: null };
  const write = planWrites(adapters.save);
  /** The plan of the last step that changed it, on disk: a worker starts, and the run ends, only after. */
  let written: Promise<void> = Promise.resolve();

  const onAbort = () => inbox.post({ type: 'interrupt', now: clock.now() });
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const onDrain = () => inbox.post({ type: 'drain', now: clock.now() });
  if (drain.aborted) onDrain();
  else drain.addEventListener('abort', onDrain, { once: true });

  /** Runs `work`, posting its event; a rejection is a bug and stops the engine. */
  const later = <T>(work: Promise<T>, toEvent: (value: T) => EngineEvent) => {
    work.then(
      (value) => inbox.post(toEvent(value)),
      (error: unknown) => inbox.fail(error),
    );
  };

  const startWorker = (effect: Extract<EngineEffect, { type: 'start-worker' }>, current: EngineState) => {
    const controller = new AbortController();
    workers.set(effect.task, controller);
    idle.set(effect.task, new AbortController());
    if (signal.aborted) controller.abort();
    // Its workspace is made ready while the plan that says it started is written; a resumed attempt kept its own.
    const saved = written;
    const kept = workspaces.get(effect.task);
    const recheck = effect.recheck;
    const ready: Promise<Result<{ workspace: Workspace; workSoFar?: string }, string>> =
      effect.resume !== undefined
        ? Promise.resolve(kept !== undefined ? ok({ workspace: kept }) : err(`task ${effect.task}'s paused attempt has no workspace to resume in`))
        : makeWorkspace(effect, controller.signal);
    const started = ready.then(async (prepared): Promise<EngineEvent> => {
      if (!prepared.ok) return workspaceFailedEvent(effect.task, prepared.error, clock.now());
      const { workspace, workSoFar } = prepared.value;
      workspaces.set(effect.task, workspace);
      // No worker: the work its last attempt set aside is verified as this attempt's.
      if (recheck !== undefined) return workerFinishedEvent(effect.task, recheckRun(effect.logPath), clock.now());
      // A crash once the worker runs leaves the task in progress on disk, and a resume cleans up after it.
      await saved;
      const run = await workspace.runWorker(workerJob(effect, current, workSoFar, controller.signal));
      return workerFinishedEvent(effect.task, run, clock.now());
    });
    later(started, (event) => event);
  };

  /** The workspace of an attempt, where the integration says it starts, and the diff of the earlier work it holds (for its prompt). */
  const makeWorkspace = async (
    effect: Extract<EngineEffect, { type: 'start-worker' }>,
    stop: AbortSignal,
  ): Promise<Result<{ workspace: Workspace; workSoFar?: string }, string>> => {
    const start = await adapters.integration.startOf({
      task: effect.task,
      stack: effect.stack ?? [],
      ...(effect.recheck !== undefined ? { recheck: effect.recheck } : {}),
      ...(effect.from !== undefined ? { from: effect.from } : {}),
    });
    if (!start.ok) return start;
    const { workSoFar, ...at } = start.value;
    const made = await adapters.workspaces.make({ task: effect.task, ...at, signal: stop, ...(effect.place !== undefined ? { place: effect.place } : {}) });
    return made.ok ? ok({ workspace: made.value, ...(workSoFar !== undefined ? { workSoFar } : {}) }) : made;
  };

  const workerJob = (
    effect: Extract<EngineEffect, { type: 'start-worker' }>,
    current: EngineState,
    workSoFar: string | undefined,
    stop: AbortSignal,
  ): WorkerJob => {
    const task = current.plan.tasks[effect.task]!;
    // A resumed worker has what the attempt's earlier workers left of --task-timeout (their waits on limits not counted).
    const resumed = effect.resume !== undefined ? current.attempts.get(effect.task) : undefined;
    const before = resumed?.stage === 'running' ? resumed.run : undefined;
    const worked = before === undefined ? 0 : Math.max(0, before.durationMs - (before.waitedMs ?? 0));
    const post = (event: EngineEvent) => inbox.post(event);
    return {
      taskIndex: effect.task,
      attempt: effect.attempt,
      prompt:
        effect.resume !== undefined
          ? resumePrompt(effect.resume.reason)
          : workerPrompt(current.plan, effect.task, { maxAttempts: settings.maxAttempts, ...(workSoFar !== undefined ? { workSoFar } : {}) }),
      ...(effect.resume !== undefined ? { resume: effect.resume.sessionId } : {}),
      onRefused: (refusal, progressed) => post(workerRefusedEvent(effect.task, refusal, progressed, clock.now())),
      onServed: () => post(workerServedEvent(effect.task, clock.now())),
      stopIfIdle: idle.get(effect.task)?.signal ?? new AbortController().signal,
      model: modelOf(task),
      plan: current.plan,
      claudeBin: settings.claudeBin,
      permissionMode: settings.permissionMode,
      allowedTools: settings.allowedTools,
      maxBudgetUsd: task.agent?.maxBudgetUsd ?? settings.taskBudgetUsd,
      timeoutMs: Math.max(1, settings.taskTimeoutMs - worked),
      logPath: effect.logPath,
      signal: stop,
      onActivity: (activity) => adapters.emit({ type: 'task-activity', task: effect.task, text: activity.text, costUsd: activity.costUsd }),
    };
  };

  const none: readonly EngineEvent[] = [];
  // What the effects lead to is posted to the inbox as it comes: workers and checks run in parallel, the lane's jobs one at a time.
  const carrier: EffectCarrier = {
    save: (_effect, current) => {
      written = write(current.plan);
      // A write that fails stops the run, as an adapter's bug does.
      written.catch((error: unknown) => inbox.fail(error));
      return none;
    },
    emit: (effect) => {
      adapters.emit(effect.event);
      return none;
    },
    startWorker: (effect, current) => {
      startWorker(effect, current);
      return none;
    },
    verify: (effect, current) => {
      const controller = workers.get(effect.task) ?? new AbortController();
      if (signal.aborted) controller.abort();
      const workspace = workspaces.get(effect.task);
      if (workspace === undefined) throw new Error(`engine: task ${effect.task} has no workspace to verify in`);
      later(workspace.verify(current.plan, effect.task, controller.signal), (verification) => verifiedEvent(effect.task, verification, clock.now()));
      return none;
    },
    releaseWorkspace: (effect) => {
      workers.delete(effect.task);
      idle.delete(effect.task);
      workspaces.get(effect.task)?.release();
      workspaces.delete(effect.task);
      return none;
    },
    record: (effect, current) => {
      const { type: _type, ...request } = effect;
      later(
        serialized.run(() => adapters.integration.record(current.plan, request)),
        (recorded) => recordedEvent(effect.tasks, recorded, clock.now()),
      );
      return none;
    },
    gate: (effect, current) => {
      const { type: _type, ...request } = effect;
      later(
        serialized.run(() => adapters.integration.gate(current.plan, request, signal)),
        (run) => gatedEvent(effect.tasks, run, clock.now()),
      );
      return none;
    },
    wake: (effect) => {
      // One timer, for the earliest back-off; the tick it sends asks again for any later one.
      if (wake.current !== null && wake.current.at <= effect.at) return none;
      wake.current?.cancel();
      wake.current = {
        at: effect.at,
        cancel: clock.wakeAt(effect.at, () => {
          wake.current = null;
          inbox.post({ type: 'tick', now: clock.now() });
        }),
      };
      return none;
    },
    abortWorkers: () => {
      for (const controller of workers.values()) controller.abort();
      return none;
    },
    cancelWorker: (effect) => {
      // Its worker and checks stop; the event they end with concludes the cancelled attempt.
      workers.get(effect.task)?.abort();
      return none;
    },
    stopWorker: (effect) => {
      // Ended if the API has still served it nothing (the adapter looks); its event follows as usual.
      idle.get(effect.task)?.abort();
      return none;
    },
    // The run ends once the plan that says so is on disk.
    finish: async () => {
      await written;
      return none;
    },
  };

  // A host's failure loses its attempts (no attempt spent): told before the event their end brings.
  adapters.workspaces.onHostFault?.((host, reason) => inbox.post(hostFaultEvent(host, reason, clock.now())));
  inbox.post({ type: 'tick', now: clock.now() });
  try {
    const driven = await drive(start, inbox, carrier);
    // The headless inbox never runs dry: the loop ends when the run finishes.
    if (driven.finish === null) throw new Error('engine: the loop ended before the run finished');
    return { ...driven.finish.stop, usage: driven.finish.usage, plan: driven.state.plan };
  } finally {
    wake.current?.cancel();
    signal.removeEventListener('abort', onAbort);
    drain.removeEventListener('abort', onDrain);
  }
}
