import { describe, expect, it } from 'vitest';
import { emptyUsage } from '../../src/core/plan/usage.ts';
import { classifyOutcome, type ExitInfo, type ResultInfo, type StreamFacts } from '../../src/core/attempt/worker-outcome.ts';

const facts = (extra: Partial<StreamFacts> = {}): StreamFacts => ({
  usage: emptyUsage(),
  permissionDenials: [],
  retryStatuses: new Set(),
  retryErrors: new Set(),
  authFailure: false,
  progressed: false,
  validEvents: 3,
  nonJsonLines: 0,
  initSeen: true,
  ...extra,
});
const exit = (extra: Partial<ExitInfo> = {}): ExitInfo => ({ exitCode: 1, timedOut: false, aborted: false, stderrTail: '', ...extra });
const result = (extra: Partial<ResultInfo> = {}): ResultInfo => ({
  subtype: 'success',
  isError: false,
  resultText: '',
  permissionDenials: [],
  errors: [],
  ...extra,
});
const failureOf = (seen: StreamFacts, ended: ExitInfo) => {
  const outcome = classifyOutcome(seen, ended).outcome;
  return outcome.kind === 'failed' ? outcome.failure : outcome;
};

describe('classifyOutcome', () => {
  it('a process that could not start is a missing agent (ENOENT, EACCES) or ended without a result', () => {
    expect(failureOf(facts(), exit({ spawnError: { code: 'ENOENT', message: 'spawn claude ENOENT' }, bin: '/no/claude' }))).toEqual({
      reason: 'agent-missing',
      bin: '/no/claude',
      message: 'spawn claude ENOENT',
    });
    expect(failureOf(facts(), exit({ spawnError: { code: 'EMFILE', message: 'too many files' }, stderrTail: 'more' }))).toEqual({
      reason: 'no-result',
      stderrTail: 'too many files\nmore',
    });
  });

  it('a result that arrived wins over the timeout; an abort wins over everything but a failed start', () => {
    const done = facts({ result: result({ resultText: 'done\nCOMPLETED: wrote it' }), sessionId: 's-1' });
    const classified = classifyOutcome(done, exit({ timedOut: true, timeoutMs: 5000 }));
    expect(classified.outcome).toEqual({ kind: 'reported', resultText: 'done\nCOMPLETED: wrote it', statusLine: { status: 'COMPLETED', text: 'wrote it' } });
    expect(classified.sessionId).toBe('s-1');
    expect(failureOf(done, exit({ aborted: true }))).toEqual({ reason: 'interrupted' });
    expect(failureOf(facts(), exit({ timedOut: true, timeoutMs: 5000 }))).toEqual({ reason: 'timed-out', timeoutMs: 5000 });
  });

  it('an error result is classified by subtype, terminal reason, status and message', () => {
    const failed = (extra: Partial<ResultInfo>, seen: Partial<StreamFacts> = {}) =>
      failureOf(facts({ ...seen, result: result({ isError: true, ...extra }) }), exit());
    expect(failed({ subtype: 'error_max_turns', errors: ['Reached maximum number of turns (1)'] })).toEqual({
      reason: 'max-turns',
      message: 'Reached maximum number of turns (1)',
    });
    expect(failed({ terminalReason: 'budget_exhausted', resultText: 'over' })).toEqual({ reason: 'max-budget', message: 'over' });
    expect(failed({ resultText: 'Not logged in · Please run /login' })).toEqual({ reason: 'not-authenticated', message: 'Not logged in · Please run /login' });
    expect(failed({ apiErrorStatus: 429, resultText: 'slow down' }, { lastApiRetry: { retryDelayMs: 2216 } })).toEqual({
      reason: 'rate-limited',
      message: 'slow down',
      retryAfterMs: 2216,
    });
    expect(failed({ resultText: 'API Error: 529 Overloaded' })).toEqual({ reason: 'overloaded', message: 'API Error: 529 Overloaded' });
    expect(failed({ apiErrorStatus: 400, resultText: 'bad request' })).toEqual({ reason: 'api-error', message: 'bad request', status: 400 });
    expect(failed({ subtype: 'error_during_execution' })).toEqual({ reason: 'api-error', message: 'error_during_execution' });
  });

  it('without a result: retries and error flags say transient or unauthenticated, else garbage or no result', () => {
    expect(failureOf(facts({ retryStatuses: new Set([401]) }), exit())).toEqual({ reason: 'not-authenticated', message: 'unknown' });
    expect(
      failureOf(
        facts({ retryErrors: new Set(['overloaded']), lastApiRetry: { attempt: 2, errorStatus: 529, error: 'overloaded', retryDelayMs: 900 } }),
        exit(),
      ),
    ).toEqual({
      reason: 'overloaded',
      message: 'API retry 2: 529 overloaded',
      retryAfterMs: 900,
    });
    expect(failureOf(facts({ validEvents: 0, nonJsonLines: 2, initSeen: false, garbageSample: 'Segmentation fault' }), exit())).toEqual({
      reason: 'garbage-output',
      sample: 'Segmentation fault',
    });
    expect(failureOf(facts(), exit({ exitCode: undefined, signal: 'SIGKILL', stderrTail: 'killed' }))).toEqual({
      reason: 'no-result',
      signal: 'SIGKILL',
      stderrTail: 'killed',
    });
  });
});
