// The merge queue's gate process as a step drives it (setup, commit). The process outlives the
// step; its queue is the step function's: the step starts the run the step function asks for,
// collects a finished run's verdict and posts it, and waits for a run at most until a deadline.

import { ownLayout } from '../../adapters/index.ts';
import { clipTail, commandHint, type EngineEvent, type EngineState, tasksIn } from '../../core/index.ts';
import type { Integration } from '../integration.ts';
import { gateVerdictEvents, type StepEffects } from './driver.ts';
import type { GateRunRecord, Session } from './session-state.ts';
import { keepState, sandboxedIn, type StepContext } from './skeleton.ts';

/** How long a step waits for a gate run before it returns `running` (`--wait`): well inside the Bash tool's two minutes. */
export const DEFAULT_GATE_WAIT_MS = 90_000;

/** The gate failed on the starting commit: what it said, and the integration tip it ran on. */
export interface BaselineFailed {
  output: string;
  tip: string;
}

/** Posts events to the step function through the step's carrier (StepScope.post). */
export type Post = (state: EngineState, events: readonly EngineEvent[]) => Promise<EngineState>;

/** Driving the gate process from one step, in `session`, on the plan's integration ref (`integration`). */
export class GateDriver {
  /** What the step says of gate runs it started again or could not start (its output's `gate.notices`). */
  readonly notices: string[] = [];

  constructor(
    private readonly context: StepContext,
    private readonly session: Session,
    private readonly integration: Integration,
  ) {}

  /** The step's effects that record verified work (integrate, park, hold) and start the gate process. */
  readonly effects: Pick<StepEffects, 'record' | 'gate'> = {
    record: (state, request) => this.integration.record(state.plan, request),
    gate: async (tasks, state) => {
      await this.launch(tasks, state);
    },
  };

  /**
   * Start the gate process on `tasks` stacked on the integration tip (none: the baseline), `state`
   * being the step function's with those tasks being gated; false when it did not start.
   */
  async launch(tasks: number[], state: EngineState): Promise<boolean> {
    const { context, session, integration } = this;
    const record: GateRunRecord = {
      id: `${context.io.clock.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      tasks,
      tip: integration.tip,
      startedAt: new Date(context.io.clock.now()).toISOString(),
    };
    session.gate.current = record;
    // Saved before it starts, with the state that gates these tasks: a step killed now finds the run and starts it again.
    await keepState(context, session, state);
    const started = await context.io.gate.launch(
      {
        repo: integration.repo,
        planPath: context.planPath,
        env: context.env ?? process.env,
        config: session.gate.config!,
        sandbox: await sandboxedIn(session, context.io),
      },
      record,
    );
    if (started.ok) return true;
    session.gate.current = null;
    this.notices.push(
      `could not start the gate process (\`plan gate --serve\`): ${started.error}; run \`${commandHint('plan', 'commit', ownLayout())}\` again`,
    );
    return false;
  }

  /**
   * Drive the gate for at most `waitMs` (default DEFAULT_GATE_WAIT_MS): collect the background
   * run's result and post its verdict to the step function (which integrates what passed and
   * blames a culprit), start the next run it asks for (the baseline first), and wait for it. A run
   * still going at the deadline goes on in the background; the next `commit` collects it. Returns
   * the state after (the same without a gate).
   */
  async drive(state: EngineState, waitMs: number | undefined, post: Post): Promise<{ state: EngineState; baselineFailed?: BaselineFailed }> {
    const { context, session, integration } = this;
    if (session.gate.config === null) return { state };
    const deadline = context.io.clock.now() + (waitMs ?? DEFAULT_GATE_WAIT_MS);
    let current = state;
    for (;;) {
      const out = session.gate.current;
      if (out === null) {
        // The step function asked for a run (the baseline: none gating) whose process never started.
        const gating = tasksIn(current, new Set(['gating']));
        if (gating.length > 0 || current.baseline === 'testing') {
          if (!(await this.launch(gating, current))) return { state: current };
          continue;
        }
        return { state: current };
      }
      const gateState = await context.io.gate.read();
      if (gateState !== null && gateState.id === out.id && gateState.state === 'finished') {
        session.gate.current = null;
        const baseline = out.tasks.length === 0;
        // A baseline run the state no longer waits for tells nothing.
        if (baseline && current.baseline !== 'testing') continue;
        // Nothing was tested on the tip as it is now: work integrated since it started (a person's
        // `plan approve`), or a candidate it could not read. The same stack runs again. (A baseline
        // stale on the same tip could not open the integration ref: that is its verdict.)
        if (integration.tip !== out.tip || (gateState.stale && !baseline)) {
          const what = baseline ? 'the starting commit' : `tasks ${out.tasks.join(', ')}`;
          this.notices.push(`the gate run on ${what} is run again: ${gateState.stale ? gateState.output : 'the integration tip moved while it ran'}`);
          if (!(await this.launch(out.tasks, current))) return { state: current };
          continue;
        }
        if (baseline) {
          // The starting commit's verdict: the step function opens the gate, or refuses the run.
          current = await post(current, gateVerdictEvents([], gateState, context.io.clock.now()));
          if (current.stop?.baselineFailure !== undefined)
            return { state: current, baselineFailed: { output: clipTail(gateState.output.trim(), 2000), tip: out.tip } };
          continue;
        }
        // A run the state does not know (a step killed before it saved the state gating it) tells nothing.
        if (!out.tasks.every((t) => current.attempts.get(t)?.stage === 'gating')) continue;
        current = await post(current, gateVerdictEvents(out.tasks, gateState, context.io.clock.now()));
        continue;
      }
      if (gateState !== null && gateState.id === out.id && gateState.state === 'running' && context.io.gate.alive(gateState)) {
        const left = deadline - context.io.clock.now();
        if (left <= 0) return { state: current };
        await context.io.clock.sleep(Math.min(200, left));
        continue;
      }
      // The process is gone. It may have written its result and exited between the read above and
      // the check that it runs (a fast gate on a busy machine): read once more, now that it is gone.
      const after = await context.io.gate.read();
      if (after !== null && after.id === out.id && after.state === 'finished') continue;
      // Gone without a result (killed): its stack is tested again.
      this.notices.push(
        `the gate process for ${out.tasks.length === 0 ? 'the starting commit' : `tasks ${out.tasks.join(', ')}`} ended without a result: it runs again`,
      );
      if (!(await this.launch(out.tasks, current))) return { state: current };
    }
  }
}
