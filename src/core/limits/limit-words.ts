// What the run says of the limit it waits for, pure: one wording for the journal's `limit` events,
// the live view, `plan status` and the run's end ("rate-limited: 2 of 8 workers until 14:05:07",
// "waiting for the usage limit to reset at 22:00", "waiting for the API to answer (out of reach
// since 14:02:11): one worker tries again at 14:05:07"). Times are the machine's local wall clock.

import { formatDuration } from '../format.ts';
import { allowed, holding, type Limiter, type LimitKind, outage, settleRound } from './limiter.ts';

/** The limiter's state as events carry it (times as ISO strings). */
export interface LimitState {
  limit: LimitKind | null;
  working: number;
  concurrency: number;
  /** Nothing new starts before this (ISO), or null. */
  until: string | null;
  /** When the usage limit resets (ISO), or null. */
  resetAt: string | null;
  /** While the API is out of reach: since when nothing was served (ISO); null (absent in journals from before) otherwise. */
  since?: string | null;
}

const LABELS: Record<LimitKind, string> = {
  'rate-limit': 'rate-limited',
  overloaded: 'the API is overloaded',
  'usage-limit': 'usage limit',
  'api-unreachable': 'the API is out of reach',
};

const pad = (n: number) => String(n).padStart(2, '0');

/** `14:05` (with seconds when it is less than an hour away), `Nov 28 22:00` on another day. */
export function clockTime(at: number, now: number): string {
  const date = new Date(at);
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}${at - now < 3_600_000 ? `:${pad(date.getSeconds())}` : ''}`;
  if (new Date(now).toDateString() === date.toDateString()) return time;
  return `${date.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} ${time}`;
}

/** What the run waits for at `now`, or null when no limit holds it back. */
export function waitWords(state: LimitState, now: number): string | null {
  const until = state.until === null ? null : Date.parse(state.until);
  const held = until !== null && until > now;
  if (state.limit === 'usage-limit' && held)
    return `waiting for the usage limit to reset at ${clockTime(state.resetAt === null ? until : Date.parse(state.resetAt), now)}`;
  if (state.limit === 'api-unreachable' && typeof state.since === 'string') {
    const since = `waiting for the API to answer (out of reach since ${clockTime(Date.parse(state.since), now)})`;
    return held ? `${since}: one worker tries again at ${clockTime(until, now)}` : `${since}: one worker tries it`;
  }
  // Past an outage or a usage limit, what narrows the run is the rate the API allowed.
  const label = LABELS[state.limit === null || state.limit === 'usage-limit' || state.limit === 'api-unreachable' ? 'rate-limit' : state.limit];
  const workers = `${state.working} of ${state.concurrency} worker${state.concurrency === 1 ? '' : 's'}`;
  if (held) return `${label}: ${workers} until ${clockTime(until, now)}`;
  return state.working < state.concurrency ? `${label}: ${workers}` : null;
}

/**
 * What the run's limiters hold it back for at `now`, each by the hosts of its account (`''`: the
 * run's one limiter, without hosts of more than one account), named by them when there is more
 * than one; null when none does.
 */
export function accountsWaitWords(limits: ReadonlyMap<string, LimitState>, now: number): string | null {
  const words = [...limits].flatMap(([hosts, limit]) => {
    const held = waitWords(limit, now);
    return held === null ? [] : [hosts === '' ? held : `${hosts}: ${held}`];
  });
  return words.length === 0 ? null : words.join('; ');
}

/** The limits events said last, by the hosts of their account: what `accountsWaitWords` reads. */
export function lastLimits(limits: Map<string, LimitState>, event: LimitState & { hosts?: readonly string[] }): void {
  limits.set((event.hosts ?? []).join(', '), event);
}

/** The limiter's state as an event carries it. */
export function limitState(limiter: Limiter, concurrency: number, now: number): LimitState {
  const held = holding(limiter, now);
  return {
    limit: limiter.kind,
    working: allowed(limiter, concurrency),
    concurrency,
    until: held ? new Date(limiter.holdUntil).toISOString() : null,
    resetAt: held && limiter.resetAt !== null ? new Date(limiter.resetAt).toISOString() : null,
    since: outage(limiter) ? new Date(limiter.refusedSince!).toISOString() : null,
  };
}

/** The words for the limiter's state, and for the run's stop when it would wait too long. */
export function limitWords(limiter: Limiter, concurrency: number, now: number) {
  const state = limitState(limiter, concurrency, now);
  return {
    state,
    /** What holds the run now ("rate-limited: 2 of 8 workers until 14:05:07"), or that it runs at full width. */
    now: (): string => waitWords(state, now) ?? `${state.working} of ${concurrency} workers`,
    /** The API serves again after refusals. */
    serving: (): string => `the API serves again: ${waitWords({ ...state, until: null, since: null }, now) ?? `${state.working} of ${concurrency} workers`}`,
    /** The run stops rather than wait until `until`, past `--limit-wait`. */
    stop: (until: number, limitWaitMs: number): string => {
      const what =
        limiter.kind === 'usage-limit'
          ? `the usage limit resets at ${clockTime(until, now)}`
          : `the API has refused every request since ${clockTime(limiter.refusedSince ?? now, now)} and asks to wait until ${clockTime(until, now)}`;
      return `${what}; ${allowance(limitWaitMs)}: ${STOPPED}. Run the same command again after ${clockTime(until, now)} to go on (or with a longer --limit-wait)`;
    },
    /** The run stops rather than wait longer for the API out of reach (at `apiUrl`), past `--limit-wait`. */
    unreachable: (limitWaitMs: number, apiUrl = 'the API'): string => {
      const said = limiter.unreachable === null ? 'its requests got no answer' : limiter.unreachable;
      return (
        `could not reach ${apiUrl} since ${clockTime(limiter.refusedSince ?? now, now)} (${said}); ${allowance(limitWaitMs)}: ${STOPPED}. ` +
        `Check the network, a proxy (HTTPS_PROXY) and ANTHROPIC_BASE_URL, then run the same command again when the API answers (or with a longer --limit-wait)`
      );
    },
  };
}

const STOPPED = 'nothing new started, and the run stopped once what ran had finished';

/** How long `--limit-wait` let the run wait, in the words of a run that stopped. */
const allowance = (limitWaitMs: number): string =>
  limitWaitMs === 0 ? '--limit-wait 0 waits for no limit' : `that is longer than --limit-wait (${formatDuration(limitWaitMs)}) lets the run wait`;

/** What a session's lead is told of a limit (`plan finalize`, `plan next`): how many the next round may hand out, and a usage limit's reset. */
export interface SessionLimit {
  message: string;
  /** Tasks the next `plan next` hands out at most (0 while a usage limit holds). */
  handOut: number;
  /** When the usage limit resets (ISO), when a subagent's reply said. */
  resetAt: string | null;
}

/**
 * After a round (`plan finalize`): what the limits that refused its subagents mean for the next
 * round, or null when none did. `limiter` is the round's, not settled yet.
 */
export function roundLimit(limiter: Limiter, concurrency: number, now: number): SessionLimit | null {
  const { refused, through } = limiter.round;
  if (refused === 0) return null;
  const who = `a limit refused ${refused} of this round's subagent${refused + through === 1 ? '' : 's'} (handed back, no attempt spent)`;
  if (holding(limiter, now) && limiter.resetAt !== null) {
    const at = clockTime(limiter.resetAt, now);
    return {
      message: `${who}: the usage limit resets at ${at}; \`plan next\` hands out nothing before then. Run /foreman:execute again after ${at}`,
      handOut: 0,
      resetAt: new Date(limiter.resetAt).toISOString(),
    };
  }
  const handOut = settleRound(limiter, concurrency).working;
  return {
    message: `${who}: the next round hands out at most ${handOut} task${handOut === 1 ? '' : 's'}, as many as this one got through`,
    handOut,
    resetAt: null,
  };
}

/** At a hand-out (`plan next`): the limit that holds the session back or narrows its rounds, or null. */
export function handOutLimit(limiter: Limiter, concurrency: number, now: number): SessionLimit | null {
  if (holding(limiter, now) && limiter.resetAt !== null) {
    const at = clockTime(limiter.resetAt, now);
    return {
      message: `waiting for the usage limit to reset at ${at}: nothing is handed out before then. Run /foreman:execute again after ${at}`,
      handOut: 0,
      resetAt: new Date(limiter.resetAt).toISOString(),
    };
  }
  const working = allowed(limiter, concurrency);
  if (working >= concurrency) return null;
  return {
    message: `rate-limited: rounds of at most ${working} of ${concurrency} tasks, one more after each round no limit refused`,
    handOut: working,
    resetAt: null,
  };
}
