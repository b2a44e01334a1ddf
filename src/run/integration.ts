// The plan's integration: the ref verified work is committed onto, the work parked beside it
// (awaiting approval, held for the merge queue, set aside), where each attempt starts, the gate's
// runs, and landing that ref on the person's branch. Always on this machine, wherever attempts
// work (workspace/). The headless engine and the in-session plan tool share it; the git adapters
// do the I/O.
//
// The person's working tree, index and branch are touched in one place only: `land`, which moves
// them to the integration tip when, and only when, no path it would update has a change of theirs.

import { realpath } from 'node:fs/promises';
import {
  asideRef,
  clearLeftovers,
  commitOf,
  deletePlanRefs,
  dropParked,
  type Integration as IntegrationCommit,
  integrationFailure,
  integrationRef,
  Integrator,
  isAncestor,
  land,
  landedBase,
  landingIntentPath,
  moveRef,
  parkedTasks,
  parkedTrailers,
  parkedWork,
  type ParkKind,
  readRef,
  recordLandedBase,
  resolveCommit,
  startIntegrationRef,
  workDiff,
} from '../adapters/index.ts';
import {
  type AttemptStart,
  type CapturedWork,
  describeGitFailure,
  describeTimeLimitHit,
  ensurePlanId,
  err,
  failureOf,
  type GateRequest,
  type GateRun,
  type GitFailure,
  type HeldCandidate,
  type Landed,
  type LandingProblem,
  type LandMode,
  ok,
  type Plan,
  type RecordRequest,
  type Result,
  taskAt,
  type TimeLimit,
  type TrailerList,
} from '../core/index.ts';
import { roundMessage, stackOfTrailer, stackTrailer } from './commit.ts';
import { LIMIT_FLAGS } from './settings.ts';
import type { Workspaces } from './workspace/index.ts';

export interface IntegrationOptions {
  repo: string;
  /** Where the landing intent is recorded (`<plan dir>/landing.json`). */
  planPath: string;
  /**
   * `gate`: for the in-session gate process only (`plan gate --serve`), which runs beside the plan
   * tool's steps: the integration ref only read (never made), and nothing a live step may hold (a
   * ref lock) cleared.
   */
  role?: 'run' | 'gate';
}

/**
 * Where an attempt's workspace is made: at `commit`, its work read from `base` when that differs;
 * `workSoFar`, the diff of the earlier work it starts from (a review round, a blamed candidate), for its prompt.
 */
export interface WorkspaceStart {
  commit: string;
  base?: string;
  workSoFar?: string;
}

/** The plan's integration ref and the work parked beside it, as runs and steps use them (`GitIntegration`, or a test's). */
export interface Integration {
  readonly repo: string;
  readonly planId: string;
  readonly ref: string;
  /** The integration tip: what new attempts start from. */
  readonly tip: string;
  knows: GitIntegration['knows'];
  startOf: GitIntegration['startOf'];
  record: GitIntegration['record'];
  keepAside: GitIntegration['keepAside'];
  holdApproved: GitIntegration['holdApproved'];
  park: GitIntegration['park'];
  heldCandidates: GitIntegration['heldCandidates'];
  gate: GitIntegration['gate'];
  land: GitIntegration['land'];
  followHead: GitIntegration['followHead'];
  removeRefs: GitIntegration['removeRefs'];
}

/** The integration on git refs of the person's repository. */
export class GitIntegration implements Integration {
  /** Integrations, stacks and parked work: its tree builder's git processes last as long as this process. */
  private readonly integrator: Integrator;

  private constructor(
    readonly repo: string,
    readonly planId: string,
    readonly ref: string,
    private current: string,
    private readonly options: IntegrationOptions,
  ) {
    this.integrator = new Integrator(repo);
  }

  /** The plan's integration ref (made at HEAD when it does not exist). `plan` gets its planId if it has none. */
  static async open(plan: Plan, options: IntegrationOptions): Promise<Result<GitIntegration, GitFailure>> {
    const planId = ensurePlanId(plan);
    const repo = await realpath(options.repo);
    const ref = integrationRef(planId);
    const gateOnly = options.role === 'gate';
    if (!gateOnly) await clearLeftovers(repo, planId);
    const found = await readRef(repo, ref);
    if (!found.ok) return found;
    let tip = found.value;
    if (tip === null && gateOnly) return err({ step: 'rev-parse', exitCode: 1, stderr: `the plan's integration ref ${ref} does not exist` });
    if (tip === null) {
      const started = await startIntegrationRef(repo, ref);
      if (!started.ok) return started;
      tip = started.value;
    }
    return ok(new GitIntegration(repo, planId, ref, tip, options));
  }

  /** The integration tip: what new attempts start from. */
  get tip(): string {
    return this.current;
  }

  /** Whether `commit` is known to exist without asking git: the tip, or a commit this process made (an integration, a stack) or built on. */
  knows(commit: string): boolean {
    return commit === this.current || this.integrator.knows(commit);
  }

  /** Where a re-check of the work set aside at `commit` (an attempt's whole work) starts: its workspace at `commit`, its work read from the commit's parent. */
  private async recheckStart(task: number, commit: string): Promise<Result<WorkspaceStart, string>> {
    const parent = await commitOf(this.repo, `${commit}^`);
    if (!parent.ok)
      return err(
        `the work task ${task}'s last attempt set aside (commit ${commit.slice(0, 12)}) cannot be read: ${describeGitFailure(failureOf(parent.error))}`,
      );
    return ok({ commit, base: parent.value });
  }

  /**
   * Integrate verified work onto the ref (one commit, trailers naming every task) and park work
   * awaiting approval on refs of its own. The integration commit, or null when nothing changed.
   */
  async record(plan: Plan, request: RecordRequest): Promise<Result<string | null, GitFailure>> {
    const parking: Array<[ParkKind, ReadonlyArray<{ task: number; work: CapturedWork; stack?: readonly number[] }>]> = [
      ['awaiting', request.park],
      ['candidate', request.hold ?? []],
    ];
    for (const [kind, items] of parking) {
      for (const item of items) {
        const { message } = roundMessage(plan, request.round, [item.task]);
        // A candidate says what it was built on: a resumed run gates it on the same stack, or drops it.
        const made = await this.park(item.task, item.work, message, kind, kind === 'candidate' ? [stackTrailer(item.stack ?? [])] : undefined);
        if (!made.ok) return made;
      }
    }
    let commit: string | null = null;
    if (request.integrate.length > 0) {
      const integrated = await this.integrateWork(plan, request.round, request.integrate);
      if (!integrated.ok) return integrated;
      commit = integrated.value;
    }
    // Candidates that integrated, or broke the build, leave the merge queue.
    for (const task of request.drop) await dropParked(this.repo, this.planId, task, 'candidate');
    return ok(commit);
  }

  /**
   * Approved tasks' parked work becomes candidates: it moves to a candidate ref (before anything
   * says so: a crash leaves it there, for the next setup to find as held), built on the tip as its
   * stack says, so the next setup finds it held whatever the tip's history. The tasks that had
   * parked work to hold.
   */
  async holdApproved(tasks: readonly number[]): Promise<Result<number[], GitFailure>> {
    const held: number[] = [];
    for (const task of tasks) {
      const work = await parkedWork(this.repo, this.planId, task);
      if (!work.ok) return work;
      if (work.value === null) continue;
      const parked = await this.integrator.park(this.planId, task, work.value, `foreman: task ${task} approved, waiting to be integrated`, 'candidate', [
        stackTrailer([]),
      ]);
      if (!parked.ok) return parked;
      await dropParked(this.repo, this.planId, task);
      held.push(task);
    }
    return ok(held);
  }

  /** Keeps an attempt's whole work, part of which was set aside, on the task's aside ref. */
  async keepAside(plan: Plan, task: number, work: CapturedWork): Promise<Result<{ commit: string; ref: string }, GitFailure>> {
    const message = `foreman: task ${task} (${taskAt(plan.tasks, task).subject}): an attempt's work with what it changed outside its declared files`;
    const parked = await this.park(task, work, message, 'aside');
    return parked.ok ? ok({ commit: parked.value, ref: asideRef(this.planId, task) }) : parked;
  }

  /** Parks `work` of `task` on its own ref (`Integrator.park`), with this run's integrator. */
  park(task: number, work: CapturedWork, message: string, kind: ParkKind, trailers?: TrailerList): Promise<Result<string, GitFailure>> {
    return this.integrator.park(this.planId, task, work, message, kind, trailers);
  }

  /**
   * Candidates an earlier run held for the merge queue, for tasks still in progress, with the
   * stack each was built on: they rejoin it first (`admitHeld`). One an earlier foreman held names
   * no stack: built on the tip when its base is in the integration ref's history; else on
   * candidates nothing names, and it is dropped (it runs again).
   */
  async heldCandidates(plan: Plan, inProgress: (task: number) => boolean): Promise<Result<HeldCandidate[], GitFailure>> {
    const held: HeldCandidate[] = [];
    const parked = await parkedTasks(this.repo, this.planId, 'candidate');
    if (!parked.ok) return parked;
    for (const task of parked.value) {
      const planned = plan.tasks[task];
      const found = planned !== undefined && inProgress(task) ? await parkedWork(this.repo, this.planId, task, 'candidate') : ok(null);
      if (!found.ok) return found;
      const stack = found.value === null ? null : await this.heldStack(task, found.value);
      if (stack !== null && !stack.ok) return stack;
      if (planned === undefined || found.value === null || stack === null || stack.value === null) {
        await dropParked(this.repo, this.planId, task, 'candidate');
        continue;
      }
      held.push({ task, work: found.value, result: planned.result ?? 'completed', stack: stack.value });
    }
    return ok(held);
  }

  /** The stack a held candidate names (its trailer); one an earlier foreman held names none: the tip when its base is in the integration ref's history, else null. */
  private async heldStack(task: number, work: CapturedWork): Promise<Result<number[] | null, GitFailure>> {
    const trailers = await parkedTrailers(this.repo, this.planId, task, 'candidate');
    if (!trailers.ok) return trailers;
    return ok(stackOfTrailer(trailers.value) ?? ((await isAncestor(this.repo, work.base, this.current)) ? [] : null));
  }

  /**
   * Where an attempt of `task` starts: at the integration tip; or (speculative) at `stack`'s
   * candidates stacked on it in order, as the gate will stack them beneath this task's own; or
   * (`recheck`) at the work its last attempt set aside, read from that commit's parent; or
   * (`from`) at earlier work (`fromEarlier`).
   */
  startOf(start: {
    task: number;
    stack: ReadonlyArray<{ task: number; work: CapturedWork }>;
    recheck?: string;
    from?: AttemptStart;
  }): Promise<Result<WorkspaceStart, string>> {
    if (start.recheck !== undefined) return this.recheckStart(start.task, start.recheck);
    if (start.from !== undefined) return this.fromEarlier(start.task, start.from);
    return this.stacked(start.stack).then((made) => (made.ok ? ok({ commit: made.value }) : made));
  }

  /**
   * Where an attempt holding earlier work starts, with that work's diff for the worker's prompt:
   * `commit`, a commit foreman kept, the attempt starting at `base`, where that work started; or
   * `work`, a blamed candidate's, committed on the integration tip as it is now (what the gate
   * tested it on), the attempt starting at the tip. A candidate's work that no longer goes on the
   * tip (another change reached its files) is not put back: the attempt starts at the tip, with
   * no work so far.
   */
  private async fromEarlier(task: number, from: AttemptStart): Promise<Result<WorkspaceStart, string>> {
    const base = 'work' in from ? this.current : from.base;
    const start = 'work' in from ? await this.stacked([{ task, work: from.work }]) : ok(from.commit);
    if (!start.ok) return ok({ commit: base });
    const diff = await workDiff(this.repo, base, start.value);
    if (!diff.ok) return err(`task ${task}'s earlier work (commit ${start.value.slice(0, 12)}) cannot be read: ${describeGitFailure(diff.error)}`);
    return ok({ commit: start.value, base, workSoFar: diff.value });
  }

  /** `stack`'s works committed in order on the integration tip (the tip itself when empty): a commit no ref holds; the ref does not move. */
  private async stacked(stack: ReadonlyArray<{ task: number; work: CapturedWork }>): Promise<Result<string, string>> {
    // A candidate that changed nothing has nothing to stack.
    const changing = stack.filter((item) => item.work.entries.length > 0);
    if (changing.length === 0) return ok(this.current);
    const tasks = changing.map((item) => item.task);
    const made = await this.integrator.integrate(null, this.current, {
      tasks,
      message: `foreman: candidates ${tasks.join(', ')} stacked`,
      trailers: [],
      works: changing.map((item) => item.work),
    });
    return made.ok ? made : err(describeGitFailure(integrationFailure(made.error)));
  }

  /**
   * The gate: `command` in a workspace of the candidates stacked, in order, on the integration tip
   * (the tip itself when there are none: the baseline). The ref does not move. `passed` is null
   * when `signal` stopped it first (its process group is ended).
   */
  async gate(workspaces: Workspaces, request: GateRequest, gate: { command: string; timeoutMs: number }, signal?: AbortSignal): Promise<GateRun> {
    const started = Date.now();
    // The same stack a speculative attempt starts from; work that cannot even be stacked
    // (another change reached its files) fails like a red test.
    const stacked = await this.stacked(request.works);
    if (!stacked.ok) return { passed: false, output: stacked.error, durationMs: Date.now() - started };
    const made = await workspaces.make({ task: -1, commit: stacked.value, ...(signal ? { signal } : {}) });
    if (!made.ok) return { passed: signal?.aborted ? null : false, output: made.error, durationMs: Date.now() - started };
    const workspace = made.value;
    try {
      // Headless and in-session alike (`plan setup --gate-timeout`), --gate-timeout sets it.
      const timeLimit: TimeLimit = { ms: gate.timeoutMs, flag: LIMIT_FLAGS.gate };
      const run = await workspace.runCheck(gate.command, {
        timeoutMs: timeLimit.ms,
        role: { kind: 'gate', task: -1, command: gate.command },
        ...(signal ? { signal } : {}),
      });
      if (run.aborted) return { passed: null, output: run.output, durationMs: run.durationMs };
      const passed = run.exitCode === 0 && !run.timedOut;
      // The first line says how it ended: what shows the output keeps it (`clipMiddle`).
      const ended = run.timedOut ? describeTimeLimitHit(gate.command, timeLimit) : `\`${gate.command}\` exited ${run.exitCode ?? 'without a code'}`;
      const how = run.sandboxRefusal === null ? ended : `${ended} (${run.sandboxRefusal})`;
      return { passed, output: passed ? run.output : `${how}:\n${run.output}`, durationMs: Date.now() - started };
    } finally {
      workspace.release();
    }
  }

  /** Commit `items` onto the integration tip. */
  private async integrateWork(
    plan: Plan,
    round: number,
    items: ReadonlyArray<{ task: number; work: CapturedWork }>,
  ): Promise<Result<string | null, GitFailure>> {
    const tasks = items.map((item) => item.task);
    const { message, trailers } = roundMessage(plan, round, tasks);
    const integration: IntegrationCommit = { tasks, message, trailers, works: items.map((item) => item.work) };
    const integrated = await this.integrator.integrate(this.ref, this.current, integration);
    if (!integrated.ok) return err(integrationFailure(integrated.error));
    const changed = integrated.value !== this.current;
    this.current = integrated.value;
    return ok(changed ? integrated.value : null);
  }

  /**
   * Land the integration tip on the person's branch (or, `worktree` mode, in their files only, from
   * what an earlier such landing of this plan left there; which commit that was is recorded beside
   * the plan).
   */
  async land(options: { branch: string | null; mode: LandMode }): Promise<Result<Landed, LandingProblem>> {
    const { planPath } = this.options;
    const base = options.mode === 'worktree' ? await landedBase(planPath, this.planId) : null;
    const landed = await land({
      repo: this.repo,
      to: this.current,
      branch: options.branch,
      mode: options.mode,
      intentPath: landingIntentPath(planPath),
      ...(base !== null ? { base } : {}),
    });
    if (landed.ok && options.mode === 'worktree') await recordLandedBase(planPath, this.planId, landed.value.to);
    return landed;
  }

  /** The integration tip moves on to HEAD when HEAD holds all of it (the person committed on top). */
  async followHead(): Promise<void> {
    const commit = await resolveCommit(this.repo);
    if (commit === null || commit === this.current) return;
    if (!(await isAncestor(this.repo, this.current, commit))) return;
    const moved = await moveRef(this.repo, this.ref, commit, this.current, 'foreman: follow the branch');
    if (moved.ok) this.current = commit;
  }

  /** Remove the plan's refs (integration and parked work): only once everything on them has landed. */
  removeRefs(): Promise<Result<void, GitFailure>> {
    return deletePlanRefs(this.repo, this.planId);
  }
}
