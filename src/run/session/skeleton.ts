// The skeleton every in-session step follows, written once: read (the plan's writes, the session
// and what the step opens, or why it stops before anything changed), run (post the step's events
// to the step function and carry out their effects), record (finish the plan once the run is
// done and landed, journal the step's events and the run's end), report (the step's output, from
// what it saw), write (the session file, what the worker hook is told). Each step (session/setup-step.ts,
// next-step.ts, finalize-step.ts, commit-step.ts) is an object that supplies what differs: what it opens, what
// it posts, what it says.

import { readFile } from 'node:fs/promises';
import { newRunId, ownLayout } from '../../adapters/index.ts';
import {
  type EngineEvent,
  type EngineState,
  initialState,
  landingProblemSentence,
  type LandingState,
  type Notice,
  type Plan,
  type Result,
  type RunEventBody,
  runFinishedEvent,
  type RunNotice,
  runStartedEvent,
  tasksIn,
} from '../../core/index.ts';
import type { PlanWriter } from '../adapters.ts';
import { realSessionIo, type SessionIo, type SessionPlace } from './io.ts';
import type { Integration } from '../integration.ts';
import type { RunPlaces } from '../setup.ts';
import { finishPlan, lander } from '../lifecycle.ts';
import { landedEvents, post, type RunEnd, type StepEffects, StepRun } from './driver.ts';
import { promptPathFor, withPlan, writeSession } from './file.ts';
import { type Session, sessionConfig } from './session-state.ts';

export interface SessionContext extends SessionPlace {
  /** The plan file as the step read it: a person's edit made while the step holds the plan is kept aside. */
  planText?: string;
  /** The steps' I/O a test replaces (run/session/io.ts); the rest is the real one. */
  io?: Partial<SessionIo>;
}

/** A step's context with its I/O. */
export type StepContext = SessionContext & { io: SessionIo };
const withIo = (context: SessionContext): StepContext => ({ ...context, io: { ...realSessionIo(context), ...context.io } });

/** The step, as the plan tool names it (`plan <name>`). */
export type StepName = 'setup' | 'next' | 'finalize' | 'commit';

/** What a step read before it ran. */
export interface Opened {
  /** The session it works in: the one on file, or the new one setup starts. */
  session: Session;
  /** The step function's state it starts from. */
  state: EngineState;
  effects: StepEffects;
}

/** What a step's run leaves to record. */
export interface Ran {
  state: EngineState;
  /** How the run ended in this step (for a step that lands: or before it), else null. */
  end: RunEnd | null;
  /** Whether everything integrated is on the branch, and what blocks it when not. */
  landing: Pick<LandingState, 'landed' | 'problem'>;
  /** A step that lands (setup, commit): the integration ref and workspaces of the plan, finished once the run is all done and landed. */
  finishing?: RunPlaces;
}

/** What recording a step did. */
export interface Recorded {
  /** Where the finished plan went, or null. */
  archived: string | null;
  /** What finishing the plan said (an edit kept aside, refs git could not remove), or null. */
  notice: RunNotice | null;
  /** The person's edits of the plan this step kept aside, said once. */
  kept: Notice[];
}

/**
 * One in-session step: what it opens (`S`), what its run leaves (`R`), what it reports (`O`) or
 * why it stops (`E`). The skeleton (`performStep`) calls these in order.
 */
export interface SessionStep<S extends Opened, R extends Ran, O, E> {
  readonly name: StepName;
  /** Read the session and open what the step works with; an error stops the step there, before it posts anything to the step function. */
  open(context: StepContext, plan: Plan, writes: PlanWrites): Promise<Result<S, E>>;
  /** Post the step's events to the step function, its effects carried out through `scope.run`. */
  run(scope: StepScope, opened: S): Promise<R>;
  /** The step's output, or why it stops, from what it opened, ran and recorded. */
  report(scope: StepScope, opened: S, ran: R, recorded: Recorded): Result<O, E>;
}

/**
 * Read, run the step, record, report, write: `step` supplies what differs. A step whose report is
 * why it stops (commit refused by a red baseline, or stopped by git) still records and writes:
 * what it did stands, and the next step finds it.
 */
export async function performStep<S extends Opened, R extends Ran, O, E>(
  given: SessionContext,
  plan: Plan,
  step: SessionStep<S, R, O, E>,
): Promise<Result<O, E>> {
  const context = withIo(given);
  try {
    const writes = await PlanWrites.of(context, step.name);
    const opened = await step.open(context, plan, writes);
    if (!opened.ok) return opened;
    const scope = new StepScope(context, opened.value.session, writes, opened.value.effects);
    const ran = await step.run(scope, opened.value);
    const recorded = await scope.record(ran);
    const output = step.report(scope, opened.value, ran, recorded);
    await scope.write(ran.state.plan, recorded.archived);
    return output;
  } finally {
    // What the step journaled is on the disk before the lead reads its output.
    await context.io.journal.close();
  }
}

/** The session's step-function state with the plan as this step read it (a new run's first state when there is none). */
export function stateOf(context: StepContext, session: Session, plan: Plan): EngineState {
  return session.engine !== null ? withPlan(session.engine, plan) : initialState(plan, sessionConfig(session, context.planPath), context.io.clock.now());
}

/** Keep `state` in the session file now (`session` with it): a step killed after loses nothing done before. */
export async function keepState(context: StepContext, session: Session, state: EngineState): Promise<void> {
  session.engine = state;
  await writeSession(context.planPath, session);
}

/** Whether this session's checks, gate runs and workers' Bash commands run in the sandbox (`auto` asked now for a session file of an earlier version). */
export const sandboxedIn = async (session: Session, io: SessionIo): Promise<boolean> => (session.sandbox ?? (await io.sandbox())).sandboxed;

// ---------------------------------------------------------------------------------------------
// What a step works with while it runs

/** One step at work: its place and I/O, the session, the plan's writes, its dealings with the step function. */
export class StepScope {
  readonly run: StepRun;
  /** The journal of the session's run. */
  readonly journal: RunJournal;

  constructor(
    readonly context: StepContext,
    readonly session: Session,
    readonly writes: PlanWrites,
    effects: StepEffects,
  ) {
    this.run = new StepRun(writes.save, effects, context.io.clock.now);
    this.journal = new RunJournal(context, session);
  }

  /** Post `events` to the step function, carrying out their effects. */
  readonly post = (state: EngineState, events: readonly EngineEvent[]): Promise<EngineState> => post(state, events, this.run);

  /** Keep `state` in the session file now: a step killed after loses nothing done before. */
  keep(state: EngineState): Promise<void> {
    return keepState(this.context, this.session, state);
  }

  /** Land the integration tip on the session's branch (as commits, never over a change of the person's), and tell the step function. */
  async land(state: EngineState, integration: Integration): Promise<{ state: EngineState; landing: LandingState; notices: Notice[] }> {
    const landing = lander(integration, { branch: this.session.branch, commit: true, planPath: this.context.planPath, layout: ownLayout() });
    const notice = await landing.land();
    const report: LandingState = { ...landing.state };
    const next = await this.post(state, landedEvents(landing.landed ? [] : [...state.unlanded], this.context.io.clock.now()));
    return { state: next, landing: report, notices: notice === null ? [] : [{ level: notice.level, message: notice.message }] };
  }

  /**
   * Record what the step did: the state for the session file; for a step that landed, a run that
   * ended finishes its plan (archived once all is done); the step's events journaled (with the
   * edits of the plan it kept aside), and the run's end.
   */
  async record(ran: Ran): Promise<Recorded> {
    this.session.engine = ran.state;
    const { archived, notice } =
      ran.finishing === undefined
        ? { archived: null, notice: null }
        : await finishPlan(ran.end, ran.state.plan, ran.finishing, {
            planPath: this.context.planPath,
            landed: ran.landing.landed,
            save: this.writes.write,
            endGate: this.context.io.gate.end,
          });
    if (notice !== null) this.run.note(notice);
    const kept = this.writes.report(this.run);
    this.journal.append(this.run);
    if (ran.end !== null)
      this.journal.finish(ran.state.plan, ran.end, { landed: ran.landing.landed, advice: landingProblemSentence(ran.landing.problem), archived });
    return { archived, notice, kept };
  }

  /** Write the session file (unless the plan went to history, and its session with it), and tell the worker hook what is handed out now. */
  async write(plan: Plan, archived: string | null): Promise<void> {
    if (archived === null) await writeSession(this.context.planPath, this.session);
    await this.syncHandOut(plan);
  }

  /** Tell the worker hook what this session hands out now; once its run has finished, nothing. */
  private async syncHandOut(plan: Plan): Promise<void> {
    const { io } = this.context;
    const session = this.session;
    if (session.runFinished || session.runId === null) return io.handOut.withdraw();
    const sandbox = session.sandbox ?? (await io.sandbox());
    await io.handOut.publish(plan, {
      running: session.engine === null ? [] : tasksIn(session.engine, new Set(['running'])),
      sandbox: sandbox.sandboxed
        ? { available: true, network: plan.context?.checkNetwork ?? [] }
        : { available: false, reason: sandbox.unavailable ?? '--sandbox off' },
      promptFile: (index) => promptPathFor(this.context.planPath, index),
      parked: (index) => {
        const handed = session.handedOut[String(index)];
        return handed?.parked === undefined ? undefined : { base: handed.base, commit: handed.parked };
      },
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The run's journal

/**
 * A session's run as its journal (`.design/events.jsonl`) tells it: started with a new id, each
 * step's events, finished once. What the plan tool cannot see it records as unknown, never as
 * zero: a Task subagent's cost, tokens and permission denials (see docs/skills.md).
 */
export class RunJournal {
  constructor(
    private readonly context: StepContext,
    private readonly session: Session,
  ) {}

  /** Append events: a step's, each stamped when it happened (`run.times`), or a list stamped now. */
  append(source: readonly RunEventBody[] | StepRun): void {
    const runId = this.session.runId;
    const events = source instanceof StepRun ? source.events : source;
    if (runId === null || events.length === 0) return;
    const now = this.context.io.clock.now();
    this.context.io.journal.append(
      events.map((e, k) => ({ ...e, runId, at: new Date(source instanceof StepRun ? (source.times[k] ?? now) : now).toISOString() })),
    );
  }

  /** Start a run in the session (a new id, `run-started`); the step saves the session. */
  start(plan: Plan, resumed: boolean): void {
    const session = this.session;
    session.runId = newRunId();
    session.runFinished = false;
    session.startedAt = new Date(this.context.io.clock.now()).toISOString();
    this.append([runStartedEvent(plan, { planPath: this.context.planPath, resumed, concurrency: session.concurrency, schedule: 'rounds', mode: 'session' })]);
  }

  /**
   * End the run (`run-finished`), once, as the lifecycle words it: whether its work landed (and
   * how to land it by hand), where the plan went, and when it was last seen working (`lastMs`, else now).
   */
  finish(plan: Plan, end: RunEnd, after: { landed: boolean; advice: string; archived: string | null; lastMs?: number }): void {
    const session = this.session;
    const lastMs = after.lastMs ?? this.context.io.clock.now();
    if (session.runId === null || session.runFinished) return;
    session.runFinished = true;
    const durationMs = Math.max(0, lastMs - Date.parse(session.startedAt));
    this.append([
      runFinishedEvent(
        plan,
        { ...end, durationMs: Number.isFinite(durationMs) ? durationMs : 0 },
        {
          layout: ownLayout(),
          planPath: this.context.planPath,
          landing: { landed: after.landed, advice: after.advice },
          archived: after.archived,
          resumeHint: `/foreman:execute again`,
        },
      ),
    ]);
  }
}

// ---------------------------------------------------------------------------------------------
// The plan's writes

/**
 * A step's writes of the plan: through the plan store (run/adapters.ts), as a headless run's, so
 * an edit a person makes while the step holds the plan is kept aside, byte for byte, never written
 * over. The step says where (`report`).
 */
export class PlanWrites {
  private readonly kept: string[] = [];

  private constructor(
    private readonly keeper: PlanWriter,
    private readonly planPath: string,
    private readonly step: StepName,
  ) {}

  /** `context.planText`: the file as the step read it (else as it is now). */
  static async of(context: StepContext, step: StepName): Promise<PlanWrites> {
    const text = context.planText ?? (await readFile(context.planPath, 'utf8').catch(() => ''));
    return new PlanWrites(context.io.planStore.open(text), context.planPath, step);
  }

  /** Write `plan`: where an edit found in the file was kept, or null. */
  readonly write = async (plan: Plan): Promise<string | null> => {
    const kept = await this.keeper.save(plan);
    if (kept !== null) this.kept.push(kept);
    return kept;
  };

  readonly save = async (plan: Plan): Promise<void> => {
    await this.write(plan);
  };

  /** The edits kept aside by this step, said once: journaled with `run`'s events, and for the step's output. */
  report(run: StepRun): Notice[] {
    const notices = this.kept.splice(0).map(
      (kept): Notice => ({
        level: 'warning',
        message: `${this.planPath} was changed while \`plan ${this.step}\` held it: the step did not take the change in, and kept it, byte for byte, in ${kept}. To use it, copy ${kept} over ${this.planPath}: the next step works with it`,
      }),
    );
    for (const notice of notices) run.note({ type: 'notice', ...notice });
    return notices;
  }
}
