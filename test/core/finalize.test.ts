import { describe, expect, it } from 'vitest';
import { err, ok } from '../../src/core/result.ts';
import type { PermissionDenial, StatusLine, WorkerFailure, WorkerRun } from '../../src/core/attempt/worker-run.ts';
import {
  type CheckedWork,
  decide,
  type DecideInput,
  type Decision,
  type Judgement,
  judgeRun,
  trimCompleted,
  type Verification,
  verificationFailure,
  verificationWarnings,
} from '../../src/core/attempt/finalize.ts';
import { applyCascade } from '../../src/core/plan/cascade-skips.ts';
import { type AcceptanceResult, describeAttemptFailure, describeCheckEnd } from '../../src/core/attempt/attempt-failure.ts';
import { breaker, stall } from '../../src/core/plan/graph.ts';
import type { Plan, Task, TaskStatus } from '../../src/core/plan/plan.ts';
import { emptyUsage } from '../../src/core/plan/usage.ts';

// ---------------------------------------------------------------------------------------------
// Builders

const reported = (resultText: string, statusLine: StatusLine | null): WorkerRun => ({
  usage: emptyUsage(),
  durationMs: 1000,
  permissionDenials: [],
  logPath: '/tmp/worker.log',
  outcome: { kind: 'reported', resultText, statusLine },
});

const failedRun = (failure: WorkerFailure): WorkerRun => ({
  usage: emptyUsage(),
  durationMs: 1000,
  permissionDenials: [],
  logPath: '/tmp/worker.log',
  outcome: { kind: 'failed', failure },
});

const task = (over: Partial<Task> = {}): Task => ({
  subject: 'Write src/a.ts',
  prompt: 'Write it.',
  blockedBy: [],
  metadata: { files: { create: ['src/a.ts'], modify: ['src/b.ts'] } },
  ...over,
});

const BASE = 'b'.repeat(40);
/** The declared files as a worker that did the task (`task()`) leaves them: src/a.ts created, src/b.ts modified. */
const didTask = {
  base: BASE,
  entries: [
    { path: 'src/a.ts', mode: '100644', object: 'a'.repeat(40) },
    { path: 'src/b.ts', mode: '100644', object: 'c'.repeat(40) },
  ],
};
/** What a worker that changed none of its declared files leaves. */
const changedNothing = { base: BASE, entries: [] };
/** What verification finds of a worker that did the task, with no acceptance checks. */
const checks: CheckedWork = { missingCreated: [], unchangedModified: [], outsideChanges: [], acceptance: [], work: didTask };
const passing: Verification = ok(checks);

const acceptance = (over: Partial<AcceptanceResult> = {}): AcceptanceResult => ({
  criterion: 'tests pass',
  check: 'npx vitest run test/a.test.ts',
  passed: false,
  exitCode: 1,
  timedOut: false,
  timeLimit: { ms: 300_000, flag: '--check-timeout' },
  output: 'FAIL test/a.test.ts > greets\nexpected "Hello" to be "Hi"',
  ...over,
});

const input = (judgement: Judgement, over: Partial<DecideInput> = {}): DecideInput => ({
  task: task(),
  judgement,
  permissionDenials: [],
  maxAttempts: 3,
  ...over,
});

const verify: Judgement = { kind: 'verify', summary: 'wrote src/a.ts', claimed: true };
const failedAttempt: Judgement = { kind: 'attempt-failed', failure: { reason: 'reported-failed', text: 'the API changed' } };

function failureText(d: Decision): string {
  if (d.kind === 'retry' || d.kind === 'failed') return d.failure;
  throw new Error(`expected retry or failed, got ${d.kind}`);
}

// ---------------------------------------------------------------------------------------------

describe('judgeRun', () => {
  it('COMPLETED → verify with the summary', () => {
    expect(judgeRun(reported('done\nCOMPLETED: wrote it', { status: 'COMPLETED', text: 'wrote it' }))).toEqual({
      kind: 'verify',
      summary: 'wrote it',
      claimed: true,
    });
  });

  it('BLOCKED → blocked with the reason', () => {
    expect(judgeRun(reported('BLOCKED: need a key', { status: 'BLOCKED', text: 'need a key' }))).toEqual({ kind: 'blocked', reason: 'need a key' });
  });

  it('FAILED → a failed attempt', () => {
    expect(judgeRun(reported('FAILED: nope', { status: 'FAILED', text: 'nope' }))).toEqual({
      kind: 'attempt-failed',
      failure: { reason: 'reported-failed', text: 'nope' },
    });
  });

  it('no status line after a successful run → verify unclaimed, carrying the last line (its checks decide)', () => {
    expect(judgeRun(reported('I did some work.\nThen I stopped.\n\n', null))).toEqual({
      kind: 'verify',
      summary: 'Then I stopped.',
      claimed: false,
      tail: 'Then I stopped.',
    });
    expect(judgeRun(reported('', null))).toEqual({ kind: 'verify', summary: 'completed (no status line)', claimed: false, tail: '' });
  });

  it.each<[WorkerFailure, Judgement['kind'], string?]>([
    [{ reason: 'agent-missing', bin: 'claude', message: 'ENOENT' }, 'not-an-attempt', 'infrastructure'],
    [{ reason: 'not-authenticated', message: 'run claude login' }, 'not-an-attempt', 'infrastructure'],
    [{ reason: 'rate-limited', message: '429', retryAfterMs: 30_000 }, 'not-an-attempt', 'transient'],
    [{ reason: 'overloaded', message: '529' }, 'not-an-attempt', 'transient'],
    [{ reason: 'interrupted' }, 'not-an-attempt', 'interrupted'],
    [{ reason: 'timed-out', timeoutMs: 600_000 }, 'attempt-failed'],
    [{ reason: 'max-turns', message: 'turn limit' }, 'attempt-failed'],
    [{ reason: 'max-budget', message: '$2' }, 'attempt-failed'],
    [{ reason: 'api-error', message: 'bad request', status: 400 }, 'attempt-failed'],
    [{ reason: 'no-result', exitCode: 1, stderrTail: 'boom' }, 'attempt-failed'],
    [{ reason: 'garbage-output', sample: 'hello' }, 'attempt-failed'],
  ])('worker failure %j → %s %s', (failure, kind, cls) => {
    const j = judgeRun(failedRun(failure));
    expect(j.kind).toBe(kind);
    if (j.kind === 'not-an-attempt') {
      expect(j.class).toBe(cls);
      expect(j.failure).toEqual(failure);
    }
    if (j.kind === 'attempt-failed') expect(j.failure).toEqual({ reason: 'worker', failure });
  });
});

describe('decide', () => {
  it('COMPLETED with passing verification → completed with the summary as result', () => {
    expect(decide(input(verify, { verification: passing }))).toEqual({ kind: 'completed', result: 'wrote src/a.ts' });
  });

  it('with --strict-scope, changes outside the declared files fail the attempt, naming them (each attempt has a worktree of its own: they are its own)', () => {
    const decision = decide(
      input(verify, {
        strictScope: true,
        verification: ok({
          ...checks,
          outsideChanges: ['other.ts', 'junk/x'],
          setAside: { paths: ['other.ts', 'junk/x'], tracked: [], kept: { commit: 'c'.repeat(40), ref: 'refs/foreman-aside/p/0' } },
        }),
      }),
    );
    expect(decision.kind).toBe('retry');
    expect(decision.kind === 'retry' && decision.failure).toContain(
      'does not declare (only the declared files may change; these were set aside, not kept): other.ts, junk/x',
    );
  });

  describe('changes outside the declared files, set aside (the default)', () => {
    const aside = { paths: ['package-lock.json'], tracked: ['package-lock.json'], kept: { commit: 'a'.repeat(40), ref: 'refs/foreman-aside/p/0' } };
    const declaredWork = { base: 'b'.repeat(40), entries: [{ path: 'src/a.ts', mode: '100644', object: 'c'.repeat(40) }] };

    it('checks pass → completed with its declared work, and a warning names each file set aside and where it is kept', () => {
      const verification: Verification = ok({
        ...checks,
        work: declaredWork,
        outsideChanges: aside.paths,
        setAside: aside,
        acceptance: [acceptance({ passed: true })],
      });
      const decision = decide(input(verify, { verification }));
      expect(decision).toEqual({ kind: 'completed', result: 'wrote src/a.ts' });
      expect(verificationWarnings(verification, decision, verify)).toEqual([
        `changed files its task does not declare: package-lock.json (set aside, not integrated; kept in refs/foreman-aside/p/0, commit ${'a'.repeat(12)}): \`git show --stat ${'a'.repeat(12)}\` lists them with the attempt's other files, \`git restore --source=${'a'.repeat(12)} -- <path>\` brings one back into your files`,
      ]);
    });

    it('a check fails → the failure names the check and the files set aside; the retry is told to leave them or answer BLOCKED', () => {
      const verification: Verification = ok({ ...checks, work: declaredWork, outsideChanges: aside.paths, setAside: aside, acceptance: [acceptance()] });
      const decision = decide(input(verify, { verification }));
      expect(decision.kind).toBe('retry');
      if (decision.kind !== 'retry') return;
      expect(decision.failure).toMatch(
        /^acceptance check failed \(tests pass\): .*; changed files its task does not declare: package-lock\.json \(set aside, not integrated; kept in refs\/foreman-aside\/p\/0/s,
      );
      // The next attempt's prompt quotes the failure: it never tells a worker how to bring the files back.
      expect(decision.failure).not.toContain('git restore');
      expect(decision.advice).toContain('changed or tried to change package-lock.json, which this task does not declare');
      expect(decision.advice).toContain('BLOCKED: needs to change <path>, which the task does not declare');
    });

    it('an attempt that changes an undeclared file an earlier attempt changed (or was refused) ends the task blocked, naming it', () => {
      const checked: CheckedWork = {
        ...checks,
        work: declaredWork,
        outsideChanges: ['src/index.ts'],
        setAside: { ...aside, paths: ['src/index.ts'] },
        acceptance: [acceptance()],
      };
      const verification = ok(checked);
      const decision = decide(input(verify, { verification, task: task({ attempts: 1, undeclaredWrites: ['src/index.ts'] }) }));
      expect(decision.kind).toBe('blocked');
      expect(decision.kind === 'blocked' && decision.reason).toMatch(
        /^the task needs src\/index\.ts, which it does not declare: its attempts changed or tried to change it more than once\. Declare it/,
      );
      // A refused write counts as much as a change: a FAILED report after a refusal of the same file.
      const refused: PermissionDenial = { tool: 'Edit', input: { file_path: '/w/src/index.ts' }, path: 'src/index.ts' };
      const again = decide(input(failedAttempt, { permissionDenials: [refused], task: task({ attempts: 1, undeclaredWrites: ['src/index.ts'] }) }));
      expect(again.kind).toBe('blocked');
      // The first time, a retry told what to do.
      const first = decide(input(failedAttempt, { permissionDenials: [refused] }));
      expect(first.kind === 'retry' && first.advice).toContain('src/index.ts, which this task does not declare');
      // Passing checks still complete, the file set aside.
      expect(
        decide(
          input(verify, {
            verification: ok({ ...checked, acceptance: [acceptance({ passed: true })] }),
            task: task({ attempts: 1, undeclaredWrites: ['src/index.ts'] }),
          }),
        ).kind,
      ).toBe('completed');
    });
  });

  describe('no status line', () => {
    const unclaimed: Judgement = { kind: 'verify', summary: 'all wired up', claimed: false, tail: 'all wired up' };
    const declaredWork = { base: 'b'.repeat(40), entries: [{ path: 'src/a.ts', mode: '100644', object: 'c'.repeat(40) }] };

    it('completes when it changed a declared file and every one of at least one check passed, with a warning', () => {
      const verification: Verification = ok({ ...checks, work: declaredWork, acceptance: [acceptance({ passed: true })] });
      const decision = decide(input(unclaimed, { verification }));
      expect(decision).toEqual({ kind: 'completed', result: 'all wired up' });
      expect(verificationWarnings(verification, decision, unclaimed)).toEqual([
        expect.stringMatching(/^its reply had no COMPLETED\/FAILED\/BLOCKED line; it completed because/),
      ]);
    });

    it('fails as before without a check, without a changed declared file, or with a failing check, and the retry says what to write', () => {
      const noChecks = decide(input(unclaimed, { verification: ok({ ...checks, work: declaredWork }) }));
      expect(noChecks.kind === 'retry' && noChecks.failure).toBe('the worker ended without a COMPLETED/FAILED/BLOCKED line (its last words: "all wired up")');
      expect(noChecks.kind === 'retry' && noChecks.advice).toContain('Your previous reply did not end with a status line (its last line was: "all wired up")');
      const nothingChanged = decide(
        input(unclaimed, {
          task: task({ metadata: { files: { create: [], modify: [] } } }),
          verification: ok({ ...checks, work: changedNothing, acceptance: [acceptance({ passed: true })] }),
        }),
      );
      expect(nothingChanged.kind).toBe('retry');
      const failing = decide(input(unclaimed, { verification: ok({ ...checks, work: declaredWork, acceptance: [acceptance()] }) }));
      expect(failing.kind === 'retry' && failing.failure).toMatch(
        /^the worker ended without a COMPLETED\/FAILED\/BLOCKED line .*; and acceptance check failed \(tests pass\)/s,
      );
    });
  });

  it('a declared modify left unchanged fails the attempt only when it changed none of its declared files; else it is a warning', () => {
    const declaredWork = { base: 'b'.repeat(40), entries: [{ path: 'src/a.ts', mode: '100644', object: 'c'.repeat(40) }] };
    const some: Verification = ok({ ...checks, work: declaredWork, unchangedModified: ['src/b.ts'], acceptance: [acceptance({ passed: true })] });
    const decision = decide(input(verify, { verification: some }));
    expect(decision.kind).toBe('completed');
    expect(verificationWarnings(some, decision, verify)).toEqual(['left declared files unchanged: src/b.ts']);
    const none = decide(input(verify, { verification: ok({ ...checks, work: { ...declaredWork, entries: [] }, unchangedModified: ['src/b.ts'] }) }));
    expect(none.kind === 'retry' && none.failure).toBe('the worker reported COMPLETED but declared files were not modified: src/b.ts');
  });

  it('a task that needs approval with verified work → awaiting_approval', () => {
    expect(decide(input(verify, { task: task({ gate: 'human-approval' }), verification: passing }))).toEqual({
      kind: 'awaiting_approval',
      result: 'wrote src/a.ts',
    });
  });

  it('a task that needs approval whose verification fails is retried, not sent for approval', () => {
    expect(decide(input(verify, { task: task({ gate: 'human-approval' }), verification: ok({ ...checks, missingCreated: ['src/a.ts'] }) })).kind).toBe('retry');
  });

  it('COMPLETED but a declared created file is missing → retry, then failed on the last attempt', () => {
    const v: Verification = ok({ ...checks, missingCreated: ['src/a.ts'] });
    const first = decide(input(verify, { verification: v }));
    expect(first.kind).toBe('retry');
    expect(failureText(first)).toBe('the worker reported COMPLETED but declared files were not created: src/a.ts');
    expect(decide(input(verify, { verification: v, task: task({ attempts: 1 }) })).kind).toBe('retry');
    const last = decide(input(verify, { verification: v, task: task({ attempts: 2 }) }));
    expect(last.kind).toBe('failed');
    expect(failureText(last)).toContain('declared files were not created: src/a.ts');
  });

  it('names unmodified files too, and both lists together', () => {
    const d = decide(
      input(verify, { verification: ok({ ...checks, work: changedNothing, missingCreated: ['src/a.ts', 'src/c.ts'], unchangedModified: ['src/b.ts'] }) }),
    );
    expect(failureText(d)).toBe(
      'the worker reported COMPLETED but declared files were not created: src/a.ts, src/c.ts; declared files were not modified: src/b.ts',
    );
  });

  it('an acceptance failure names the criterion, the command, how it ended and its output', () => {
    const d = decide(
      input(verify, { verification: ok({ ...checks, acceptance: [acceptance({ passed: true, criterion: 'builds', check: 'tsc' }), acceptance()] }) }),
    );
    const text = failureText(d);
    expect(text).toContain('acceptance check failed (tests pass)');
    expect(text).toContain('`npx vitest run test/a.test.ts` exited 1');
    expect(text).toContain('expected "Hello" to be "Hi"');
    expect(text).not.toContain('builds');
  });

  it('a timed-out acceptance check says so, with its limit and the flag that sets it; long output is clipped', () => {
    const text = describeAttemptFailure({
      reason: 'acceptance',
      failures: [acceptance({ timedOut: true, exitCode: null, timeLimit: { ms: 1000, flag: '--check-timeout' }, output: 'x'.repeat(5000) })],
    });
    expect(text).toContain(
      'acceptance check failed (tests pass): `npx vitest run test/a.test.ts` timed out after 1s (the limit set by --check-timeout); its whole process group was ended',
    );
    expect(text.length).toBeLessThan(2300);
    // The end is kept (where a command prints its error); the cut is marked at the start.
    expect(text).toMatch(/its whole process group was ended:\n…x+$/);
  });

  it("a check the sandbox refused its network says so on its first line, where the run's one-line view keeps it", () => {
    const refusal =
      'the sandbox refused the connection to registry.npmjs.org, which the plan\'s context.checkNetwork does not list: add "registry.npmjs.org" to context.checkNetwork to allow it';
    const text = describeAttemptFailure({
      reason: 'acceptance',
      failures: [acceptance({ check: 'npx uvu', output: 'npm error 403 403 Forbidden - GET https://registry.npmjs.org/uvu\n', sandboxRefusal: refusal })],
    });
    expect(text.split('\n')[0]).toBe(`acceptance check failed (tests pass): \`npx uvu\` exited 1 (${refusal}):`);
    expect(describeCheckEnd(acceptance({ check: 'npx uvu' }))).toBe('`npx uvu` exited 1');
  });

  it('a spot-check failure is reported before acceptance (which did not run)', () => {
    const v: Verification = ok({ ...checks, missingCreated: ['src/a.ts'], acceptance: [acceptance()] });
    expect(verificationFailure(v, false)?.reason).toBe('spot-check');
    expect(verificationFailure(passing, false)).toBeNull();
    expect(verificationFailure(ok({ ...checks, acceptance: [acceptance({ passed: true })] }), false)).toBeNull();
  });

  it('FAILED → retry while attempts remain, then failed', () => {
    expect(decide(input(failedAttempt))).toEqual({ kind: 'retry', failure: 'the worker reported FAILED: the API changed' });
    expect(decide(input(failedAttempt, { task: task({ attempts: 2 }) }))).toEqual({ kind: 'failed', failure: 'the worker reported FAILED: the API changed' });
    expect(decide(input(failedAttempt, { maxAttempts: 1 })).kind).toBe('failed');
  });

  it('BLOCKED → blocked, never retried, whatever the attempts left', () => {
    for (const attempts of [0, 1, 2]) {
      expect(decide(input({ kind: 'blocked', reason: 'needs an API key' }, { task: task({ attempts }), maxAttempts: 10 }))).toEqual({
        kind: 'blocked',
        reason: 'needs an API key',
      });
    }
  });

  it('no status line → a failed attempt quoting the last words', () => {
    const d = decide(input({ kind: 'attempt-failed', failure: { reason: 'no-status-line', tail: 'I ran out of ideas' } }));
    expect(d).toEqual({ kind: 'retry', failure: 'the worker ended without a COMPLETED/FAILED/BLOCKED line (its last words: "I ran out of ideas")' });
    const bare = decide(input({ kind: 'attempt-failed', failure: { reason: 'no-status-line', tail: '' } }, { task: task({ attempts: 2 }) }));
    expect(bare).toEqual({ kind: 'failed', failure: 'the worker ended without a COMPLETED/FAILED/BLOCKED line' });
  });

  it('a worker failure that is an attempt (timeout) is retried with its description', () => {
    const d = decide(input(judgeRun(failedRun({ reason: 'timed-out', timeoutMs: 90_000 }))));
    expect(d).toEqual({ kind: 'retry', failure: 'the worker timed out after 90s (the limit set by --task-timeout); its whole process group was ended' });
  });

  it('infrastructure failure → abort the run, no attempt counted', () => {
    const failure: WorkerFailure = { reason: 'agent-missing', bin: 'claude', message: 'spawn claude ENOENT' };
    expect(decide(input(judgeRun(failedRun(failure))))).toEqual({ kind: 'abort-run', failure });
    const auth: WorkerFailure = { reason: 'not-authenticated', message: 'log in' };
    expect(decide(input(judgeRun(failedRun(auth)), { task: task({ attempts: 2 }) }))).toEqual({ kind: 'abort-run', failure: auth });
  });

  it('rate limit → requeue after the delay the API asked for, else the back-off', () => {
    expect(decide(input(judgeRun(failedRun({ reason: 'rate-limited', message: 'slow down', retryAfterMs: 42_000 })), { backoffMs: 5000 }))).toEqual({
      kind: 'requeued',
      reason: 'rate limited: slow down',
      delayMs: 42_000,
    });
    expect(decide(input(judgeRun(failedRun({ reason: 'overloaded', message: '529' })), { backoffMs: 5000 }))).toEqual({
      kind: 'requeued',
      reason: 'the API is overloaded: 529',
      delayMs: 5000,
    });
    // Even on what would be the last attempt: a rate limit is not an attempt.
    expect(decide(input(judgeRun(failedRun({ reason: 'rate-limited', message: 'x' })), { task: task({ attempts: 2 }) })).kind).toBe('requeued');
  });

  it('interrupted → interrupted', () => {
    expect(decide(input(judgeRun(failedRun({ reason: 'interrupted' }))))).toEqual({ kind: 'interrupted' });
  });

  it('permission denials are appended to failure and blocked texts, each tool once', () => {
    const denials: PermissionDenial[] = [
      { tool: 'Bash', input: { command: 'git commit -am wip' } },
      { tool: 'Bash', input: { command: 'git commit -am wip' } },
      { tool: 'Write', input: { file_path: '/etc/hosts' } },
      { tool: 'WebFetch' },
    ];
    const expected = '(permission denied for: Bash(git commit -am wip), Write(/etc/hosts), WebFetch)';
    expect(failureText(decide(input(failedAttempt, { permissionDenials: denials })))).toBe(`the worker reported FAILED: the API changed ${expected}`);
    const blocked = decide(input({ kind: 'blocked', reason: 'cannot commit' }, { permissionDenials: denials }));
    expect(blocked).toEqual({ kind: 'blocked', reason: `cannot commit ${expected}` });
    expect(failureText(decide(input(verify, { verification: ok({ ...checks, missingCreated: ['x'] }), permissionDenials: denials })))).toContain(expected);
    // Success stays clean.
    expect(decide(input(verify, { verification: passing, permissionDenials: denials }))).toEqual({ kind: 'completed', result: 'wrote src/a.ts' });
  });

  it('a long denied path keeps its end (the file), a long denied command its start', () => {
    const worktree = `/tmp/foreman-worktrees/${'repo-0123456789/'.repeat(4)}3e689208-3216-4c5c-b4a1-000000000000/slot-0`;
    const command = `npm test -- ${'--flag '.repeat(20)}`;
    const text = failureText(
      decide(
        input(failedAttempt, {
          permissionDenials: [
            { tool: 'Write', input: { file_path: `${worktree}/src/forbidden.txt` } },
            { tool: 'Bash', input: { command } },
          ],
        }),
      ),
    );
    expect(text).toMatch(/permission denied for: Write\(…[^)]*\/slot-0\/src\/forbidden\.txt\), Bash\(npm test -- --flag [^)]*…\)/);
  });

  it('work that could not be read from its worktree fails the attempt, saying why, with or without a status line; no check is judged', () => {
    const capture = err('git write-tree failed: fatal: unable to write new index file');
    const claimed = decide(input(verify, { verification: capture }));
    expect(claimed).toEqual({
      kind: 'retry',
      failure: "the attempt's work could not be read from its worktree: git write-tree failed: fatal: unable to write new index file",
    });
    expect(verificationFailure(capture, true)).toEqual({ reason: 'capture', message: 'git write-tree failed: fatal: unable to write new index file' });
    expect(verificationWarnings(capture, claimed, verify)).toEqual([]);
    const unclaimed = decide(input({ kind: 'verify', summary: 'done', claimed: false, tail: 'done' }, { verification: capture }));
    expect(failureText(unclaimed)).toMatch(
      /^the worker ended without a COMPLETED\/FAILED\/BLOCKED line .*; and the attempt's work could not be read from its worktree/,
    );
  });

  it('refuses to decide a COMPLETED report without a verification', () => {
    expect(() => decide(input(verify))).toThrow(/verification/);
  });
});

describe('trimCompleted', () => {
  const full: Task = {
    subject: 'Add the bucket',
    description: 'long description',
    activeForm: 'Adding the bucket',
    status: 'completed',
    result: 'added it',
    attempts: 2,
    blockedBy: [0, 1],
    metadata: { type: 'implementation', files: { create: ['src/b.ts'], modify: [] }, reads: ['src/'] },
    agent: { role: 'engineer', model: 'opus', approach: 'carefully', fallback: 'other', contextFiles: [{ path: 'x' }] },
    prompt: 'a very long prompt',
    fileOverlaps: [3],
    gate: 'human-approval',
    usage: { costUsd: 0.5, inputTokens: 10, outputTokens: 20, cacheReadTokens: 30, cacheCreationTokens: 40 },
    commit: 'abc123',
    skippedBy: 0,
    notes: 'an unknown field',
  };

  it('keeps exactly subject, status, result, attempts, blockedBy, metadata, agent role/model, usage, commit, gate', () => {
    const trimmed = JSON.parse(JSON.stringify(trimCompleted(full))) as Task;
    expect(Object.keys(trimmed).sort()).toEqual(['agent', 'attempts', 'blockedBy', 'commit', 'gate', 'metadata', 'result', 'status', 'subject', 'usage']);
    expect(trimmed).toEqual({
      subject: 'Add the bucket',
      status: 'completed',
      result: 'added it',
      attempts: 2,
      blockedBy: [0, 1],
      metadata: full.metadata,
      agent: { role: 'engineer', model: 'opus' },
      usage: full.usage,
      commit: 'abc123',
      gate: 'human-approval',
    });
  });

  it('drops the agent when it has neither role nor model, and omits absent optional fields', () => {
    const trimmed = JSON.parse(
      JSON.stringify(trimCompleted({ ...task({ status: 'completed', result: 'ok', attempts: 1 }), agent: { approach: 'x' } })),
    ) as Task;
    expect(Object.keys(trimmed).sort()).toEqual(['attempts', 'blockedBy', 'metadata', 'result', 'status', 'subject']);
    const modelOnly = trimCompleted({ ...full, agent: { model: 'haiku', approach: 'x' } });
    expect(modelOnly.agent).toEqual({ model: 'haiku' });
  });
});

// ---------------------------------------------------------------------------------------------

function planOf(statuses: TaskStatus[], blockedBy: number[][]): Plan {
  return {
    schemaVersion: 3,
    goal: 'g',
    tasks: statuses.map((status, i) => ({
      subject: `T${i}`,
      prompt: 'p',
      status,
      blockedBy: blockedBy[i] ?? [],
      metadata: { files: { create: [`f${i}.ts`], modify: [] } },
    })),
  };
}

describe('applyCascade', () => {
  it('skips dependants of a failed task, naming the root cause and the task in between', () => {
    // 0 failed ← 1 ← 2 ; 3 independent ; 4 blocked ← 5
    const plan = planOf(['failed', 'pending', 'pending', 'pending', 'blocked', 'pending'], [[], [0], [1], [], [], [4]]);
    const { skips } = applyCascade(plan);
    expect(skips.map((s) => [s.index, s.rootCause, s.via])).toEqual([
      [1, 0, 0],
      [2, 0, 1],
      [5, 4, 4],
    ]);
    const t = plan.tasks;
    expect(t.map((x) => x.status)).toEqual(['failed', 'skipped', 'skipped', 'pending', 'blocked', 'skipped']);
    expect(t[1]!.skippedBy).toBe(0);
    expect(t[2]!.skippedBy).toBe(0);
    expect(t[5]!.skippedBy).toBe(4);
    expect(t[3]!.skippedBy).toBeUndefined();
    expect(t[1]!.result).toBe('skipped: depends on task 0 (T0), which is failed');
    expect(t[2]!.result).toBe('skipped: depends on task 0 (T0), which is failed (through task 1)');
    expect(t[5]!.result).toBe('skipped: depends on task 4 (T4), which is blocked');
  });

  it('a task already skipped by cascade passes on its root cause; one skipped by a person is its own', () => {
    const plan = planOf(['failed', 'skipped', 'pending', 'skipped', 'pending'], [[], [0], [1], [], [3]]);
    plan.tasks[1]!.skippedBy = 0;
    applyCascade(plan);
    expect(plan.tasks[2]!.skippedBy).toBe(0);
    expect(plan.tasks[2]!.result).toBe('skipped: depends on task 0 (T0), which is failed (through task 1)');
    expect(plan.tasks[4]!.skippedBy).toBe(3);
    expect(plan.tasks[4]!.result).toBe('skipped: depends on task 3 (T3), which was skipped');
  });

  it('leaves running, completed and awaiting tasks alone, and is idempotent', () => {
    const plan = planOf(['failed', 'in_progress', 'completed', 'awaiting_approval', 'pending'], [[], [], [], [], [2, 3]]);
    expect(applyCascade(plan).skips).toEqual([]);
    expect(plan.tasks.map((t) => t.status)).toEqual(['failed', 'in_progress', 'completed', 'awaiting_approval', 'pending']);
    const failing = planOf(['failed', 'pending'], [[], [0]]);
    applyCascade(failing);
    const snapshot = structuredClone(failing);
    expect(applyCascade(failing).skips).toEqual([]);
    expect(failing).toEqual(snapshot);
  });

  it('circuit breaker: 3 tasks never trip', () => {
    const plan = planOf(['failed', 'pending', 'pending'], [[], [0], [0]]);
    const { skips, breaker: b } = applyCascade(plan);
    expect(skips).toHaveLength(2);
    expect(b).toEqual({ trip: false, totalTasks: 3, pendingCount: 2, wouldBeSkipped: 2 });
  });

  it('circuit breaker: 2 of 4 pending skipped trips; 1 of 4 does not', () => {
    const trips = planOf(['failed', 'pending', 'pending', 'pending', 'pending'], [[], [0], [0], [], []]);
    expect(applyCascade(trips).breaker).toEqual({ trip: true, totalTasks: 5, pendingCount: 4, wouldBeSkipped: 2 });
    const holds = planOf(['failed', 'pending', 'pending', 'pending', 'pending'], [[], [0], [], [], []]);
    expect(applyCascade(holds).breaker).toEqual({ trip: false, totalTasks: 5, pendingCount: 4, wouldBeSkipped: 1 });
  });

  it('breaker thresholds', () => {
    expect(breaker(3, 3, 3).trip).toBe(false);
    expect(breaker(4, 4, 2).trip).toBe(true);
    expect(breaker(4, 4, 1).trip).toBe(false);
    expect(breaker(4, 3, 2).trip).toBe(true);
    expect(breaker(4, 5, 2).trip).toBe(false);
    expect(breaker(10, 0, 0).trip).toBe(false);
    expect(breaker(10, 1, 1).trip).toBe(true);
  });
});

describe('stall', () => {
  it('deadlock: work remains, nothing is ready and nothing runs', () => {
    const plan = planOf(['failed', 'pending', 'completed'], [[], [0], []]);
    expect(stall(plan.tasks)).toEqual({ kind: 'deadlock', pending: [1] });
    // Not a stall while something runs.
    expect(stall(plan.tasks, new Set([2]))).toEqual({ kind: 'none' });
  });

  it('awaiting approval: everything left waits (directly or not) on an approval', () => {
    const plan = planOf(['awaiting_approval', 'pending', 'pending', 'completed'], [[], [0], [1], []]);
    expect(stall(plan.tasks)).toEqual({ kind: 'awaiting_approval', awaitingApproval: [0], waiting: [1, 2] });
  });

  it('a pending task stuck on something other than a gate makes it a deadlock', () => {
    const plan = planOf(['awaiting_approval', 'pending', 'failed', 'pending'], [[], [0], [], [2]]);
    expect(stall(plan.tasks)).toEqual({ kind: 'deadlock', pending: [1, 3] });
  });

  it('none when finished or when something is ready', () => {
    expect(stall(planOf(['completed', 'failed'], [[], []]).tasks)).toEqual({ kind: 'none' });
    expect(stall(planOf(['completed', 'pending'], [[], [0]]).tasks)).toEqual({ kind: 'none' });
  });
});
