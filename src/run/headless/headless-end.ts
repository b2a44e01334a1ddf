// How a headless run (run/headless/headless.ts) ends, whatever stopped it: what was integrated lands (when
// nothing of the person's is in its way), the plan is finished, the run's last event says how it
// ended, and the person is told why a gate failing on the starting commit refused the run and how
// to go on.

import { type Git, gitProcessCount } from '../../adapters/index.ts';
import { baselineRefusal, type Layout, nextSteps, type Plan, type RunEventBody, runFinishedEvent, type UsageFigure } from '../../core/index.ts';
import type { Clock } from '../adapters.ts';
import type { EngineResult } from './engine.ts';
import { finishPlan, type lander } from '../lifecycle.ts';
import type { RunSettings } from '../settings.ts';
import type { RunPlaces } from '../setup.ts';

/** How the run ended. */
export interface HeadlessEnd {
  plan: Plan;
  usage: UsageFigure;
  /** The run's last event: its exit code is the run's. */
  finished: Extract<RunEventBody, { type: 'run-finished' }>;
  /** The gate failed on the starting commit: why the run was refused, for the person; else null. */
  refusal: string[] | null;
  /** The way to go on, one step a line (the Summary repeats it); empty when nothing is left to do. */
  next: string[];
}

/**
 * The end of a run the engine stopped (`result`): what was integrated lands, the plan is finished
 * (saved with `write`), the run-finished event is emitted, with the git processes this process
 * started since the run began (the run's, one run at a time); then why a failing baseline refused
 * the run, and the way to go on.
 */
export async function endRun(
  result: EngineResult,
  places: RunPlaces,
  settings: Pick<RunSettings, 'planPath' | 'gate'>,
  run: {
    landing: ReturnType<typeof lander>;
    layout: Layout;
    /** When the run began, on `clock`. */
    startedAt: number;
    /** This process's count of git processes when the run began. */
    gitProcessesBefore: number;
    clock: Pick<Clock, 'now'>;
    git: Pick<Git, 'headCommit'>;
    emit: (event: RunEventBody) => void;
    write: (plan: Plan) => Promise<string | null>;
  },
): Promise<HeadlessEnd> {
  const { landing, layout, emit } = run;
  const { integration } = places;
  const plan = result.plan;
  // Whatever stopped the run, what was integrated lands now (when nothing of the person's is in its way).
  const after = await landing.land();
  if (after !== null) emit(after);
  const finishedPlan = await finishPlan(result, plan, places, { planPath: settings.planPath, landed: landing.landed, save: run.write });
  if (finishedPlan.notice !== null) emit(finishedPlan.notice);
  const finished = runFinishedEvent(
    plan,
    { ...result, durationMs: run.clock.now() - run.startedAt },
    { layout, planPath: settings.planPath, landing: { landed: landing.landed, advice: landing.advice() }, archived: finishedPlan.archived },
  );
  emit({ ...finished, gitProcesses: gitProcessCount() - run.gitProcessesBefore });
  const refusal =
    result.baselineFailure === undefined
      ? null
      : baselineRefusal(
          settings.gate?.command ?? '',
          { tip: integration.tip, ref: integration.ref, head: await run.git.headCommit() },
          result.baselineFailure.output,
        );
  const next = nextSteps(plan, layout, {
    landingAdvice: landing.landed ? null : landing.advice(),
    refused: refusal !== null,
    ...(finished.resumeAfter !== undefined ? { resumeAfter: finished.resumeAfter } : {}),
  });
  return { plan, usage: result.usage, finished, refusal, next };
}
