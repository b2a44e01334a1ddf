// The headless engine: carries out what the pure state machine (`core/engine/step.ts`) decides.
// Events come in one at a time — a worker finished (or a limit refused it, or the API served
// it), a verification finished, the lane recorded something, a gate run finished, a back-off
// ended, a drain, Ctrl-C — and each goes through `step` in the one loop (core/engine/driver.ts),
// whose effects the carrier (run/headless/engine-carrier.ts) carries out in order. Each attempt gets a
// workspace of its own, made where the integration says it starts (the tip, candidates stacked on
// it, or the work set aside for a re-check; a paused attempt resumes in the one it kept), where its
// worker and its checks run; starting workers and verifying run in parallel; the lane runs, one at
// a time, what must be serialized: recording (foreman's refs move) and the gate's runs (which test
// what the integration ref holds). The engine decides nothing itself: what it works with is passed
// in (`EngineAdapters`), so tests give it fakes and a fake clock.

import { drive, type EngineConfig, type EngineState, type EngineStop, hostFaultEvent, type HostSlots, type Plan, type UsageFigure } from '../../core/index.ts';
import { DEFAULTS, type RunSettings } from '../settings.ts';
import { type EngineAdapters, HeadlessCarrier } from './engine-carrier.ts';
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

/** A host as the engine has it: its slots, and another account's key when it is logged in to one. */
function hostSlots(name: string, slots: number, accounts: ReadonlyMap<string, string> | undefined): HostSlots {
  const account = accounts?.get(name);
  return { name, slots, ...(account !== undefined ? { account } : {}) };
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
  ...(settings.hosts !== undefined
    ? { hosts: settings.hosts.map(({ name, slots }) => hostSlots(name, slots, settings.hostAccounts)), hostBackoffMs: DEFAULTS.hostBackoffMs }
    : {}),
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
  const carrier = new HeadlessCarrier(inbox, settings, adapters, signal);
  const onAbort = () => inbox.post({ type: 'interrupt', now: clock.now() });
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const onDrain = () => inbox.post({ type: 'drain', now: clock.now() });
  if (drain.aborted) onDrain();
  else drain.addEventListener('abort', onDrain, { once: true });

  // A host's failure loses its attempts (no attempt spent): told before the event their end brings.
  adapters.workspaces.onHostFault?.((host, reason) => inbox.post(hostFaultEvent(host, reason, clock.now())));
  inbox.post({ type: 'tick', now: clock.now() });
  try {
    const driven = await drive(start, inbox, carrier);
    // The headless inbox never runs dry: the loop ends when the run finishes.
    if (driven.finish === null) throw new Error('engine: the loop ended before the run finished');
    return { ...driven.finish.stop, usage: driven.finish.usage, plan: driven.state.plan };
  } finally {
    carrier.stopWaking();
    signal.removeEventListener('abort', onAbort);
    drain.removeEventListener('abort', onDrain);
  }
}
