// How a headless run (run/headless.ts) ends, whatever stopped it: what was integrated lands (when
// nothing of the person's is in its way), the plan is finished, the run's last event says how it
// ended, and the person is told why a gate failing on the starting commit refused the run and how
// to go on.

import type { RunEventBody } from '../core/events.ts';
import type { Plan, UsageFigure } from '../core/plan.ts';

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
