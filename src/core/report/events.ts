// Run events: what the orchestrator reports as it works. The same values feed the live view,
// the `--json` stream on stdout and the journal `.design/events.jsonl` (schema:
// schemas/event.schema.json). Every event carries the run id and an ISO timestamp.

import { type PlanWarning, type Skip, type Task, taskAt, type UsageFigure } from '../plan/index.ts';
import type { HostCheckResult, IncludedFile } from '../hosts/index.ts';
import type { LimitKind } from '../limits/index.ts';
import type { SandboxUse } from '../sandbox/index.ts';

export type TaskOutcome =
  | 'completed'
  | 'awaiting_approval'
  /** The attempt failed; another attempt follows. */
  | 'retry'
  | 'failed'
  | 'blocked'
  /** Rate limited or overloaded: queued again after a pause, no attempt counted. */
  | 'requeued'
  /** The run stopped (Ctrl-C, or an infrastructure failure elsewhere): back to pending. */
  | 'interrupted'
  /** Speculative work whose stack lost a candidate (blamed by the gate): dropped, back to pending, no attempt counted. */
  | 'cancelled';

export type RunOutcome = 'completed' | 'incomplete' | 'interrupted' | 'cannot-run';

export type StopReason =
  | 'all-done'
  | 'breaker'
  | 'deadlock'
  | 'awaiting_approval'
  | 'budget'
  | 'failures'
  | 'interrupted'
  | 'agent-unavailable'
  /** A git step (an integration) failed: the run stopped; the person's branch and files untouched. */
  | 'git-failed'
  /** A worktree could not be made ready (the plan's setup command failed): no attempt was spent. */
  | 'setup-failed'
  /** Asked to drain (`plan drain`, SIGTERM): what was running finished, nothing new started; resumable. */
  | 'drained'
  /**
   * A rate or usage limit would have held the run longer than `--limit-wait`: it drained (what ran
   * finished, nothing new started) and stopped, resumable after the time `run-finished` names.
   */
  | 'limited'
  /**
   * The API was out of reach (no answer: refused, reset, DNS, TLS, timeouts) for longer than
   * `--limit-wait`: the run drained and stopped, resumable when the API answers.
   */
  | 'api-unreachable'
  /**
   * With hosts: every host was down for longer than `--limit-wait` (held as the API out of reach
   * is): the run drained and stopped, resumable once a host is back.
   */
  | 'hosts-down';

export type RunEventBody =
  | {
      type: 'run-started';
      goal: string;
      planPath: string;
      taskCount: number;
      maxDepth: number;
      resumed: boolean;
      concurrency: number;
      schedule: string;
      pid: number;
      /** `session`: the in-session path (`plan.ts setup|next|finalize|commit`), whose steps run one at a time; absent: headless. */
      mode?: 'headless' | 'session';
    }
  /** `sandbox`: the run's sandbox line (its message), described (core/sandbox/sandbox-words.ts). */
  | { type: 'notice'; level: 'info' | 'warning'; message: string; sandbox?: SandboxUse }
  | { type: 'assumption-checked'; task: number; claim: string; severity: 'blocking' | 'warning'; passed: boolean; output: string }
  /**
   * `stack`: started speculatively, on these candidates of the merge queue (in queue order) stacked
   * on the integration tip. `host`, `slot`: with hosts, where the attempt works. `review`: a review
   * round's attempt, starting from the work a person asked changes to (their words);
   * `fromCandidate`: a retry starting from its own candidate work, which the gate blamed.
   */
  | {
      type: 'task-started';
      task: number;
      subject: string;
      attempt: number;
      model: string;
      logPath: string;
      stack?: number[];
      host?: string;
      slot?: number;
      review?: { round: number; feedback: string };
      fromCandidate?: true;
    }
  /** A review round ended: `parked`, its revision awaits approval; `failed`, its attempts ran out and the earlier work awaits approval again. */
  | { type: 'review-ended'; task: number; subject: string; round: number; outcome: 'parked' | 'failed'; attempts: number; failure?: string }
  /** A speculative attempt is cancelled: a candidate of its stack left the merge queue without integrating; `stage` is where it was. */
  | { type: 'speculation-cancelled'; task: number; subject: string; attempt: number; stack: number[]; stage: string; reason: string }
  /**
   * The run's limiter changed what the run may do. `hold`: a refusal holds new starts until
   * `until`; `lowered`: a refusal lowered the workers it may have at once (`working`); `serving`:
   * the API serves again after refusals; `raised`: responses served raised `working`. `task`: whose
   * refusal it was. `limit`: what the last hold was for; `resetAt`: a usage limit's reset; `since`:
   * while the API is out of reach (`api-unreachable`: requests never answered), since when.
   * With hosts of more than one account, each account has its limiter: `hosts` names its hosts.
   */
  | {
      type: 'limit';
      change: 'hold' | 'lowered' | 'serving' | 'raised';
      limit: LimitKind | null;
      working: number;
      concurrency: number;
      until: string | null;
      resetAt: string | null;
      /** While the API is out of reach (`limit` `api-unreachable`): since when nothing was served (ISO); null otherwise. */
      since?: string | null;
      refusals: number;
      task: number | null;
      message: string;
      /** With hosts logged in to more than one account: the hosts of the account whose limiter this is (absent otherwise). */
      hosts?: string[];
    }
  /** A limit ended the task's worker after it had done something: the attempt keeps its worktree and conversation, and resumes. */
  | { type: 'task-paused'; task: number; subject: string; attempt: number; reason: string; sessionId: string }
  /** A paused attempt goes on: its worker continues its conversation (`claude -p --resume`) in the worktree it kept (`host`, `slot`: on that host). */
  | { type: 'task-resumed'; task: number; subject: string; attempt: number; logPath: string; host?: string; slot?: number }
  /**
   * A host fault: `host` gets no attempt until `until` (ISO), then it is tried again; `faults` in a
   * row so far; `lost`: its attempts, back to pending with no attempt spent.
   */
  | { type: 'host-down'; host: string; reason: string; until: string; faults: number; lost: number[]; message: string }
  /** A host marked down works again: an attempt's worker finished there. */
  | { type: 'host-up'; host: string; message: string }
  /** Live only (not journaled): the worker's latest tool use or message. */
  | { type: 'task-activity'; task: number; text: string; costUsd: number }
  | {
      type: 'task-finished';
      task: number;
      subject: string;
      attempt: number;
      outcome: TaskOutcome;
      reason?: string;
      result?: string;
      /** Headless: the worker's run. In-session: from the plan tool's `next` to its `finalize`. */
      durationMs: number;
      /** `unknown` for a Task subagent (in-session): nothing measured it. */
      usage: UsageFigure;
      sessionId?: string;
      logPath: string;
      permissionDenials: number | 'unknown';
      /** What the attempt's verification (or its clean-up) found worth saying beside the outcome: undeclared changes, a worktree not removed. */
      warnings?: string[];
      /** What the attempt changed outside its task's declared files, set aside (never integrated), and the commit keeping its whole work (absent: not kept). */
      setAside?: { paths: string[]; commit?: string };
    }
  | { type: 'task-skipped'; task: number; subject: string; rootCause: number; reason: string }
  /** `--widen`: the run added files an attempt showed the task needs to its declared files; it runs again (`recheck`: first re-checking the work it set aside). */
  | { type: 'task-widened'; task: number; subject: string; paths: string[]; recheck: boolean }
  | { type: 'round-committed'; round: number; tasks: number[]; commit: string | null }
  /** The gate (the plan's test command) starts on these candidates, stacked in order on the integration tip. */
  | { type: 'gate-started'; tasks: number[]; waiting: number }
  | {
      type: 'gate-finished';
      tasks: number[];
      passed: boolean;
      durationMs: number;
      /** Integrated by this run (its stack passed; or an earlier, known-red rest was found). */
      integrated: number[];
      /** A candidate that failed on its own twice: its attempt fails. */
      culprit: number | null;
      /** A candidate that passed when tested again after failing: the failure blamed no task. */
      flake: boolean;
      /** The end of the test command's output, when it failed. */
      output?: string;
    }
  | { type: 'breaker'; pendingCount: number; wouldBeSkipped: number }
  | { type: 'budget-reached'; costUsd: number; limitUsd: number }
  | { type: 'stalled'; kind: 'deadlock' | 'awaiting_approval'; tasks: number[] }
  | { type: 'interrupted'; signal: string }
  /** Asked to drain: the attempts in `running` finish (and are verified, gated, integrated), nothing new starts, then the run stops. */
  | { type: 'draining'; running: number[] }
  | {
      type: 'run-finished';
      outcome: RunOutcome;
      reason: StopReason;
      exitCode: number;
      counts: Record<string, number>;
      usage: UsageFigure;
      durationMs: number;
      message: string;
      /** Headless: the git processes the run started, as its one git runner counted them. */
      gitProcesses?: number;
      /** For `limited`: the run had to wait until then; running it again after that goes on. */
      resumeAfter?: string;
    };

export type RunEvent = RunEventBody & { runId: string; at: string };
export type RunEventType = RunEvent['type'];

/** A command a plan runs on the machine: a task's check, the setup command, or the gate. */
export type PlannedCommand =
  | { kind: 'assumption'; task: number; command: string; claim: string; severity: 'blocking' | 'warning' }
  | { kind: 'acceptance'; task: number; command: string; criterion: string }
  /** `context.setupCommand`: in each new worktree, and in the probe's checkout. */
  | { kind: 'setup'; task: null; command: string }
  /** The merge queue's gate: on the starting commit, then on each batch of verified work. */
  | { kind: 'gate'; task: null; command: string };

/**
 * What `execute --dry-run --json` prints, one per line, instead of running: the plan and the
 * settings, then every command the plan runs, then each pending task's permission rules, then the
 * plan lint's warnings left, then the run's own warnings of the repository (`notice`). Never
 * journaled (nothing ran); the lines of one dry run share an id of their own.
 */
export type DryRunEventBody =
  | {
      type: 'dry-run-plan';
      goal: string;
      planPath: string;
      taskCount: number;
      counts: Record<string, number>;
      maxDepth: number;
      /**
       * Where an attempt works: its worktree, `<pool>/slot-<n>` (`<planId>` for a plan that never
       * ran), which `//<worktree>` in the permission rules stands for (as its real path).
       */
      worktree: string;
      settings: {
        concurrency: number;
        schedule: string;
        maxAttempts: number;
        permissionMode: string;
        taskTimeoutMs: number;
        checkTimeoutMs: number;
        land: string;
        commit: boolean;
        /** The mode asked for (`auto`, `on`, `off`); what it comes to here is `sandbox`, beside the settings. */
        sandbox: string;
        probe: boolean;
        probeTimeoutMs: number;
        /** `--strict`: a vacuous task refuses the run. */
        strict: boolean;
        /** `--strict-scope`: a change outside a task's declared files fails its attempt (else it is set aside). */
        strictScope: boolean;
        limitWaitMs: number;
        /** `--widen`: the patterns within which the run may add files a task needs; empty: never. */
        widen: string[];
        /** Levels of candidates in the merge queue a task may start on (0: it waits for its blockers to integrate). */
        speculate: number;
        maxCostUsd: number | null;
        taskBudgetUsd: number | null;
        gate: { command: string; batchSize: number; timeoutMs: number } | null;
        /** `--allowed-tools`: the rules every worker gets instead of its task's; null: computed per task. */
        allowedTools: string[] | null;
      };
      /** The rounds if every task succeeds: in each, groups of task indices; a group overlapping one before it runs after it. */
      rounds: number[][][];
      /** What the sandbox mode comes to on this machine, as the run would find it: the sandbox line, described. */
      sandbox: SandboxUse;
    }
  | ({ type: 'dry-run-command' } & PlannedCommand)
  /** A task the run would start, and the permission rules its worker would get. */
  | { type: 'dry-run-permissions'; task: number; allow: string[]; deny: string[] }
  /** A task in a review round (plan revise): its next attempt starts from its parked work (`commit`, begun at `base`) with the reviewer's words. */
  | { type: 'dry-run-review'; task: number; round: number; feedback: string; commit: string; base: string }
  /** A warning of the plan lint the plan neither fixes nor accepts. */
  | ({ type: 'dry-run-warning' } & PlanWarning)
  /**
   * With `--host`: a host the run would place attempts on (core/report/host-listing.ts), its slots, the
   * `.worktreeinclude` files it would get (`include`: its URL says `include=1`; `local` copies them
   * as always) and, when they ran, the host checks' results.
   */
  | {
      type: 'dry-run-host';
      host: string;
      url: string;
      kind: 'local' | 'ssh';
      slots: number;
      workDir?: string;
      programs?: { claude: string; node: string; git: string };
      include: boolean;
      included: IncludedFile[];
      checks?: HostCheckResult[];
    }
  /** A warning the run's start would give of the repository (uncommitted changes), as the run words it. */
  | Extract<RunEventBody, { type: 'notice' }>;

export type DryRunEvent = DryRunEventBody & { runId: string; at: string };

/** Events that go to the journal (everything but live activity). */
export const isJournaled = (event: RunEventBody): boolean => event.type !== 'task-activity';

/** The `task-skipped` events of a cascade's skips, once `tasks` records them. */
export const skippedEvents = (tasks: readonly Task[], skips: readonly Skip[]): RunEventBody[] =>
  skips.map((skip) => ({
    type: 'task-skipped',
    task: skip.index,
    subject: taskAt(tasks, skip.index).subject,
    rootCause: skip.rootCause,
    reason: taskAt(tasks, skip.index).result ?? '',
  }));
