// The headless engine: schedules workers as the plan allows, verifies what they did, applies the
// finalizer's decisions, commits, and stops on the breaker, a budget, a deadlock, an interrupt or
// an agent that cannot run. The engine decides nothing itself that the pure core can decide.

import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import type { Git } from '../adapters/git.ts';
import { type GitFailure, describeGitFailure } from '../core/git-text.ts';
import { type ProcessRegistry, recorded } from '../adapters/orphans.ts';
import type { WorkerRequest } from '../adapters/worker.ts';
import type { RunEventBody, StopReason } from '../core/events.ts';
import { type WorkerFailure, type WorkerRun, assertNever, describeWorkerFailure, ok } from '../core/failure.ts';
import { formatCost } from '../core/format.ts';
import { type Decision, type Verification, decide, judgeRun } from '../core/finalize.ts';
import { countByStatus, depsOf, longestRemainingPath, readySet, stall } from '../core/graph.ts';
import { computeOverlaps, overlapSets } from '../core/overlap.ts';
import { type Plan, type Usage, addUsage, attemptsOf, emptyUsage, modelOf, statusOf } from '../core/plan.ts';
import { workerPrompt } from '../core/prompt.ts';
import { type WorkerPermissions, explicitPermissions, workerPermissions } from '../core/scope.ts';
import { type SchedulePolicy, holdingTasks, pickStarts } from '../core/schedule.ts';
import { applyDecision, markStarted } from '../core/transition.ts';
import { commitTasks } from './commit.ts';
import { settleAttempt } from './settle.ts';
import { dirtyByOthers, verifyTask } from './verify.ts';

export interface EngineOptions {
  repo: string;
  planPath: string;
  git: Git;
  claudeBin: string;
  concurrency: number;
  taskTimeoutMs: number;
  maxAttempts: number;
  permissionMode: string;
  /** Explicit tool list for every worker; when absent, computed per task (see `toolsFor`). */
  allowedTools?: string[];
  commit: boolean;
  schedule: SchedulePolicy;
  checkTimeoutMs: number;
  /** Stop starting work once the run's cost reaches this. */
  maxCostUsd?: number;
  /** Per-worker spend cap when the task sets none. */
  taskBudgetUsd?: number;
  /** First back-off after a rate limit; doubles per requeue of the same task. */
  backoffMs: number;
  /** Requeues of one task after rate limits before it counts as a failed attempt. */
  maxRequeues: number;
  env?: NodeJS.ProcessEnv;
  baselineDirty: ReadonlySet<string>;
  signal: AbortSignal;
  emit: (e: RunEventBody) => void;
  save: (plan: Plan) => Promise<void>;
  runWorker: (req: WorkerRequest) => Promise<WorkerRun>;
  /** Records live worker and check groups on disk so a run after a crash can kill the orphans. */
  registry?: ProcessRegistry;
}

export interface EngineResult {
  reason: StopReason;
  usage: Usage;
  /** For `agent-unavailable`: what failed. */
  agentFailure?: WorkerFailure;
  message: string;
}

interface Finished {
  index: number;
  /** Tasks running when this one was verified: an undeclared change may be theirs. */
  beside?: number[];
  attempt: number;
  run: WorkerRun;
  decision: Decision;
  verification?: Verification;
}

/**
 * A worker's permission rules: the explicit `--allowed-tools` list when given, else read anywhere,
 * edit exactly the task's declared files, run exactly the commands it is judged by.
 * `root` is the repository's real path (rules are anchored there).
 */
export function toolsFor(plan: Plan, index: number, root: string, allowedTools: string[] | undefined): WorkerPermissions {
  if (allowedTools) return explicitPermissions(allowedTools);
  const permissions = workerPermissions(plan, index, root);
  // Plan validation and execute's setup refuse what no rule can express, so this is a bug.
  if (!permissions.ok) throw new Error(`no exact permission rules for ${permissions.error.join('; ')}`);
  return permissions.value;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export async function runEngine(plan: Plan, o: EngineOptions): Promise<EngineResult> {
  // The CLI matches edit rules against real paths: a rule through a symlink matches nothing.
  const root = await realpath(o.repo);
  const overlaps = overlapSets(computeOverlaps(plan.tasks));
  const priority = longestRemainingPath(depsOf(plan.tasks));
  const running = new Map<number, Promise<Finished>>();
  const controllers = new Map<number, AbortController>();
  const notBefore = new Map<number, number>();
  const requeues = new Map<number, number>();
  /** Verified tasks whose commit has not landed yet: still `in_progress` on disk. */
  const verified: Array<{ index: number; decision: Decision & { kind: 'completed' }; usage: Usage }> = [];
  /** Stray changes already reported once: not blamed again on every later task. */
  const reportedOutside = new Set<string>();
  let usage = emptyUsage();
  let round = 0;
  let admitted: Set<number> | undefined;
  let stop: StopReason | null = null;
  let agentFailure: WorkerFailure | undefined;
  let stopMessage = '';

  const stopWith = (reason: StopReason, message: string) => {
    if (stop !== null) return;
    stop = reason;
    stopMessage = message;
  };
  const onAbort = () => {
    stopWith('interrupted', 'interrupted');
    for (const c of controllers.values()) c.abort();
  };
  if (o.signal.aborted) onAbort();
  o.signal.addEventListener('abort', onAbort, { once: true });

  const start = async (index: number): Promise<void> => {
    const task = plan.tasks[index]!;
    const attempt = attemptsOf(task) + 1;
    const prompt = workerPrompt(plan, index, { maxAttempts: o.maxAttempts });
    const tools = toolsFor(plan, index, root, o.allowedTools);
    markStarted(plan, index);
    await o.save(plan);
    const logPath = join(o.planPath, '..', `worker-${index}.log`);
    o.emit({ type: 'task-started', task: index, subject: task.subject, attempt, model: modelOf(task), logPath });
    const controller = new AbortController();
    controllers.set(index, controller);
    const budget = task.agent?.maxBudgetUsd ?? o.taskBudgetUsd;
    const work = (async (): Promise<Finished> => {
      const run = await recorded(o.registry, { kind: 'worker', task: index }, (onSpawn) => o.runWorker({
        taskIndex: index,
        attempt,
        prompt,
        model: modelOf(task),
        cwd: o.repo,
        claudeBin: o.claudeBin,
        permissionMode: o.permissionMode,
        allowedTools: tools.allow,
        deniedTools: tools.deny,
        maxBudgetUsd: budget,
        timeoutMs: o.taskTimeoutMs,
        logPath,
        env: o.env,
        signal: controller.signal,
        onActivity: (a) => o.emit({ type: 'task-activity', task: index, text: a.text, costUsd: a.costUsd }),
        onSpawn,
      }));
      const judgement = judgeRun(run);
      let verification: Verification | undefined;
      let beside: number[] | undefined;
      if (judgement.kind === 'verify') {
        beside = [...running.keys()].filter((r) => r !== index).sort((a, b) => a - b);
        verification = await verifyTask(plan.tasks[index]!, {
          repo: o.repo,
          git: o.git,
          checkTimeoutMs: o.checkTimeoutMs,
          env: o.env,
          signal: controller.signal,
          declaredElsewhere: dirtyByOthers(plan, index),
          baselineDirty: new Set([...o.baselineDirty, ...reportedOutside]),
          record: o.registry ? { registry: o.registry, task: index } : undefined,
        });
        // An interrupt during the acceptance checks makes their verdict meaningless.
        if (controller.signal.aborted) return { index, attempt, run, decision: { kind: 'interrupted' } };
      }
      const decision = decide({
        task: plan.tasks[index]!,
        judgement,
        verification,
        permissionDenials: run.permissionDenials,
        maxAttempts: o.maxAttempts,
        backoffMs: o.backoffMs * 2 ** (requeues.get(index) ?? 0),
      });
      return { index, attempt, run, decision, verification, beside };
    })();
    running.set(index, work);
  };

  // Git mutations (restores and commits) take the index lock: one at a time. Everything else —
  // starting workers, verifying, judging — goes on while a commit runs.
  const exclusive = serialQueue();
  const inflight: { commit: Promise<void> | null } = { commit: null };

  const commitVerified = async () => {
    if (verified.length === 0) return;
    round++;
    const batch = verified.splice(0, verified.length);
    const indices = batch.map((v) => v.index).sort((a, b) => a - b);
    // Results go into the commit trailers, so record them on the tasks before committing.
    for (const v of batch) plan.tasks[v.index]!.result = v.decision.result;
    const committed = o.commit ? await exclusive(() => commitTasks(o.git, plan, round, indices)) : ok(null);
    const hash = committed.ok ? committed.value : null;
    // A failed commit keeps the verified work on disk, uncommitted and unstaged; the tasks are
    // recorded as completed without a commit, and the next run's setup commits them.
    for (const v of batch) {
      applyDecision(plan, v.index, v.decision, v.usage);
      if (hash) plan.tasks[v.index]!.commit = hash;
    }
    await o.save(plan);
    if (committed.ok) {
      o.emit({ type: 'round-committed', round, tasks: indices, commit: hash });
      return;
    }
    const why = `could not commit the verified work of tasks ${indices.join(', ')}: ${describeGitFailure(committed.error)}`;
    o.emit({ type: 'notice', level: 'warning', message: `${why}; it is left uncommitted, nothing staged` });
    stopWith('git-failed', `${why}. Their work is left uncommitted and nothing is staged; once git can commit again, run the same command to commit it and go on`);
  };

  /** Continuous policy: commit what is verified without holding up the loop; one commit in flight. */
  const commitInBackground = () => {
    if (inflight.commit !== null || verified.length === 0) return;
    inflight.commit = commitVerified().finally(() => {
      inflight.commit = null;
    });
  };

  const finish = async (f: Finished) => {
    running.delete(f.index);
    controllers.delete(f.index);
    const task = plan.tasks[f.index]!;
    const runUsage = f.run.usage;
    usage = addUsage(usage, runUsage);
    let decision = f.decision;

    if (decision.kind === 'requeue') {
      const n = (requeues.get(f.index) ?? 0) + 1;
      requeues.set(f.index, n);
      if (n > o.maxRequeues) {
        decision = attemptsOf(task) + 1 < o.maxAttempts ? { kind: 'retry', failure: `${decision.reason} (${n - 1} back-offs did not help)` } : { kind: 'failed', failure: decision.reason };
      } else {
        notBefore.set(f.index, Date.now() + (decision.delayMs ?? o.backoffMs));
      }
    }
    if (stop === 'interrupted' && decision.kind !== 'completed' && decision.kind !== 'awaiting_approval') decision = { kind: 'interrupted' };

    const reason = describeDecision(decision, f);
    const base = {
      type: 'task-finished' as const,
      task: f.index,
      subject: task.subject,
      attempt: f.attempt,
      durationMs: f.run.durationMs,
      usage: runUsage,
      sessionId: f.run.sessionId,
      logPath: f.run.logPath,
      permissionDenials: f.run.permissionDenials.length,
    };
    if (f.verification && f.verification.outsideChanges.length > 0) {
      for (const p of f.verification.outsideChanges) reportedOutside.add(p);
      const maybe = f.beside && f.beside.length > 0 ? ` (tasks ${f.beside.join(', ')} were running too: it may be theirs)` : '';
      o.emit({ type: 'notice', level: 'warning', message: `task ${f.index} changed files it did not declare: ${f.verification.outsideChanges.join(', ')}${maybe}` });
    }

    switch (decision.kind) {
      case 'completed':
        verified.push({ index: f.index, decision, usage: runUsage });
        o.emit({ ...base, outcome: 'completed', result: decision.result });
        break;
      case 'awaiting_approval':
        applyDecision(plan, f.index, decision, runUsage);
        await o.save(plan);
        o.emit({ ...base, outcome: 'awaiting_approval', result: decision.result });
        break;
      case 'retry':
      case 'failed': {
        // Only the task's own declared files: overlapping tasks never run beside it.
        const applied = await exclusive(() => settleAttempt(o.git, plan, f.index, decision, runUsage));
        await o.save(plan);
        if (!applied.ok) {
          restoreFailed(f.index, applied.error, base);
          break;
        }
        o.emit({ ...base, outcome: decision.kind, reason });
        reportCascade(applied.value.cascade);
        break;
      }
      case 'blocked': {
        const applied = applyDecision(plan, f.index, decision, runUsage);
        await o.save(plan);
        o.emit({ ...base, outcome: 'blocked', reason });
        reportCascade(applied.cascade);
        break;
      }
      case 'requeue':
        applyDecision(plan, f.index, decision, runUsage);
        await o.save(plan);
        o.emit({ ...base, outcome: 'requeued', reason });
        break;
      case 'interrupted':
      case 'abort-run':
        const settled = await exclusive(() => settleAttempt(o.git, plan, f.index, decision, runUsage));
        await o.save(plan);
        if (!settled.ok) restoreFailed(f.index, settled.error, base);
        else o.emit({ ...base, outcome: 'interrupted', reason });
        if (decision.kind === 'abort-run') {
          agentFailure = decision.failure;
          stopWith('agent-unavailable', describeWorkerFailure(decision.failure));
          for (const c of controllers.values()) c.abort();
        }
        break;
      default:
        assertNever(decision, 'decision');
    }

    if (o.maxCostUsd !== undefined && usage.costUsd >= o.maxCostUsd && stop === null) {
      o.emit({ type: 'budget-reached', costUsd: usage.costUsd, limitUsd: o.maxCostUsd });
      stopWith('budget', `the run's cost reached ${formatCost(usage.costUsd)} (limit ${formatCost(o.maxCostUsd)})`);
    }
  };

  /** The task's files could not be put back: it stays in progress (the next run restores it) and the run stops. */
  const restoreFailed = (index: number, failure: GitFailure, base: Omit<Extract<RunEventBody, { type: 'task-finished' }>, 'outcome'>) => {
    const why = `could not restore the files of task ${index}: ${describeGitFailure(failure)}`;
    o.emit({ ...base, outcome: 'interrupted', reason: why });
    stopWith('git-failed', `${why}. The task stays in progress; once git works again, run the same command: it restores the task's files and runs it again`);
  };

  const reportCascade = (c: ReturnType<typeof applyDecision>['cascade']) => {
    if (!c) return;
    for (const s of c.skips) {
      o.emit({ type: 'task-skipped', task: s.index, subject: plan.tasks[s.index]!.subject, rootCause: s.rootCause, reason: plan.tasks[s.index]!.result ?? '' });
    }
    if (c.breaker.trip) {
      o.emit({ type: 'breaker', pendingCount: c.breaker.pendingCount, wouldBeSkipped: c.breaker.wouldBeSkipped });
      stopWith('breaker', `circuit breaker: ${c.breaker.wouldBeSkipped} of ${c.breaker.pendingCount} pending tasks were skipped because of failures`);
    }
  };

  /** What the policy lets start now. */
  const startable = () => {
    const busy = new Set(running.keys());
    // Verified tasks stay in_progress until their commit is recorded, so they are held too.
    return pickStarts({ tasks: plan.tasks, running: busy, overlaps, concurrency: o.concurrency, priority, notBefore, admitted, holding: holdingTasks(plan.tasks, busy) });
  };

  try {
    for (;;) {
      // Work verified while the previous commit was in flight goes into the next one.
      if (o.schedule === 'continuous' || !o.commit) commitInBackground();
      if (stop === null) {
        if (o.schedule === 'rounds' && admitted === undefined) {
          const ready = readySet(plan.tasks);
          if (ready.length > 0) admitted = new Set(ready);
        }
        for (const i of startable()) await start(i);
      }

      if (running.size === 0) {
        // Dependants of the tasks being committed become ready only once the commit is recorded.
        if (inflight.commit !== null) {
          await inflight.commit;
          continue;
        }
        if (admitted !== undefined) {
          // The round is over when none of its tasks runs or can still start.
          const waiting = [...admitted].some((i) => statusOf(plan.tasks[i]!) === 'pending' && notBefore.has(i));
          if (!waiting || stop !== null) {
            await commitVerified();
            admitted = undefined;
            if (stop === null) continue;
          }
        }
        if (stop !== null) break;
        const backingOff = [...notBefore.entries()].filter(([i]) => statusOf(plan.tasks[i]!) === 'pending');
        if (startable().length > 0) continue;
        if (backingOff.length > 0) {
          const until = Math.min(...backingOff.map(([, t]) => t));
          await sleep(Math.max(0, until - Date.now()), o.signal);
          for (const [i, t] of backingOff) if (t <= Date.now()) notBefore.delete(i);
          continue;
        }
        break;
      }

      // Wait for the first worker to finish, or for a back-off to expire so its task can start.
      const wake = [...notBefore.values()].filter((t) => t > Date.now());
      const timer = new AbortController();
      const races: Array<Promise<Finished | null>> = [...running.values()];
      if (wake.length > 0 && stop === null) races.push(sleep(Math.min(...wake) - Date.now(), timer.signal).then(() => null));
      if (inflight.commit !== null) races.push(inflight.commit.then(() => null));
      const first = await Promise.race(races);
      timer.abort();
      for (const [i, t] of notBefore) if (t <= Date.now()) notBefore.delete(i);
      if (first) await finish(first);
    }
    if (inflight.commit !== null) await inflight.commit;
    await commitVerified();
  } finally {
    o.signal.removeEventListener('abort', onAbort);
  }

  if (stop === null) {
    const counts = countByStatus(plan);
    const s = stall(plan.tasks);
    if (s.kind === 'deadlock') {
      o.emit({ type: 'stalled', kind: 'deadlock', tasks: s.pending });
      stopWith('deadlock', `deadlock: tasks ${s.pending.join(', ')} are pending but none can become ready`);
    } else if (s.kind === 'awaiting-approval') {
      o.emit({ type: 'stalled', kind: 'awaiting-approval', tasks: s.gates });
      stopWith('awaiting-approval', `waiting for approval: ${s.gates.map((g) => `task ${g}`).join(', ')} (run \`plan.ts approve N\` or \`plan.ts reject N\`, then run again)`);
    } else if (counts.completed === plan.tasks.length) {
      stopWith('all-done', `all ${plan.tasks.length} tasks completed`);
    } else if (counts.awaiting_approval > 0) {
      stopWith('awaiting-approval', `waiting for approval: ${plan.tasks.flatMap((t, i) => (statusOf(t) === 'awaiting_approval' ? [`task ${i}`] : [])).join(', ')}`);
    } else {
      stopWith('failures', `${counts.completed} of ${plan.tasks.length} tasks completed`);
    }
  }
  return { reason: stop!, usage, agentFailure, message: stopMessage };
}

function describeDecision(d: Decision, f: Finished): string | undefined {
  switch (d.kind) {
    case 'completed':
    case 'awaiting_approval':
      return undefined;
    case 'retry':
    case 'failed':
      return d.failure;
    case 'blocked':
      return d.reason;
    case 'requeue':
      return d.reason;
    case 'interrupted':
      return 'interrupted';
    case 'abort-run':
      return describeWorkerFailure(d.failure);
    default:
      return assertNever(d, `decision of task ${f.index}`);
  }
}

/** Runs the functions given to it one after another, in call order. */
function serialQueue() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const next = tail.then(fn);
    tail = next.catch(() => undefined);
    return next;
  };
}

