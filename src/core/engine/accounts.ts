// The limiter is per account (core/hosts/accounts.ts): with hosts logged in to more than one
// account, each account has a limiter of its own (`EngineState.limiters`, the run's own account's
// `limiter`), hears only the refusals and responses of the workers on its hosts, and holds and
// narrows only the slots of its hosts; `--concurrency` still caps the workers across every host.
// Without hosts, or with hosts of one account, the run has one limiter and nothing here differs
// from it: every attempt's account is the run's (`undefined`).

import { allowed, holding, type Limiter, type LimiterSettings, newLimiter, overdue } from '../limits/index.ts';
import { freePlaces } from '../hosts/index.ts';
import { type Attempt, IN_FLIGHT } from './attempt.ts';
import { takenPlaces } from './hosts.ts';
import type { EngineConfig, EngineState } from './state.ts';

/** An account's key (`HostSlots.account`); `undefined`: the run's own account, whose limiter is `EngineState.limiter`. */
export type Account = string | undefined;

type Accounts = Pick<EngineState, 'config' | 'limiters'>;

/** The accounts the hosts are logged in to, each once, in the order of their first host; null with one account or none (no hosts). */
function accountsOfHosts(config: EngineConfig): Account[] | null {
  const keys = [...new Set((config.hosts ?? []).map((host) => host.account))];
  return keys.length > 1 ? keys : null;
}

/** The run's own first limiter: at most `--concurrency` at once, and with more than one account, its hosts' slots. */
export const firstLimiter = (config: EngineConfig): Limiter =>
  newLimiter(accountsOfHosts(config) === null ? config.concurrency : ceilingOf({ config, limiters: new Map() }, undefined));

/** Each other account's first limiter, when the hosts are logged in to more than one account (none otherwise). */
export function otherLimiters(config: EngineConfig): Pick<EngineState, 'limiters'> {
  const accounts = accountsOfHosts(config);
  if (accounts === null) return {};
  const many = { config, limiters: new Map() };
  return { limiters: new Map(accounts.flatMap((account) => (account === undefined ? [] : [[account, newLimiter(ceilingOf(many, account))] as const]))) };
}

/** The accounts of the run's limiters: the run's own only, without more than one. */
export const accountsOf = (state: Accounts): Account[] => (state.limiters === undefined ? [undefined] : (accountsOfHosts(state.config) ?? [undefined]));

/** The account of a host's attempts. */
export const accountOfHost = (state: Accounts, host: string | undefined): Account =>
  state.limiters === undefined || host === undefined ? undefined : state.config.hosts?.find((slots) => slots.name === host)?.account;

/** The account of an attempt: its host's. */
export const accountOfAttempt = (state: Accounts, attempt: Attempt | undefined): Account => accountOfHost(state, attempt?.place?.host);

/** The names of the hosts of `account`, in the order given. */
export const hostsOfAccount = (state: Accounts, account: Account): string[] =>
  (state.config.hosts ?? []).filter((host) => accountOfHost(state, host.name) === account).map((host) => host.name);

/** An account's limiter. */
export function limiterOf(state: Pick<EngineState, 'limiter' | 'limiters'>, account: Account): Limiter {
  if (account === undefined) return state.limiter;
  const limiter = state.limiters?.get(account);
  if (limiter === undefined) throw new Error(`engine: no limiter for the account ${account}`);
  return limiter;
}

/** Sets an account's limiter in the state being built. */
export function setLimiter(draft: { limiter: Limiter; limiters?: ReadonlyMap<string, Limiter> }, account: Account, limiter: Limiter): void {
  if (account === undefined) draft.limiter = limiter;
  else draft.limiters = new Map(draft.limiters).set(account, limiter);
}

/** The most workers an account may have at once: `--concurrency`, and with more than one account, no more than its hosts' slots. */
export function ceilingOf(state: Accounts, account: Account): number {
  const concurrency = state.config.concurrency;
  if (state.limiters === undefined) return concurrency;
  const slots = (state.config.hosts ?? []).filter((host) => host.account === account).reduce((sum, host) => sum + host.slots, 0);
  return Math.max(1, Math.min(concurrency, slots));
}

/** An account's limiter settings. */
export const accountSettings = (state: Accounts, account: Account): LimiterSettings => ({
  ceiling: ceilingOf(state, account),
  backoffMs: state.config.backoffMs,
  maxWaitMs: state.config.limitWaitMs,
});

/** Attempts in flight (running or verifying) on an account's hosts. */
export const inFlightOn = (state: Pick<EngineState, 'attempts' | 'config' | 'limiters'>, account: Account): number =>
  [...state.attempts.values()].filter((attempt) => IN_FLIGHT.has(attempt.stage) && accountOfAttempt(state, attempt) === account).length;

/** Workers an account may have at once now. */
export const allowedOn = (state: Pick<EngineState, 'limiter' | 'limiters' | 'config'>, account: Account): number =>
  allowed(limiterOf(state, account), ceilingOf(state, account));

/**
 * How many more attempts may start on an account's hosts now: none while its limiter holds, else
 * what it allows beyond those in flight there, and no more than its hosts' free slots (any number
 * when the state has no hosts: what would start but for them).
 */
export function roomOn(state: EngineState, account: Account): number {
  if (holding(limiterOf(state, account), state.now)) return 0;
  const hosts = state.hosts?.filter((host) => accountOfHost(state, host.name) === account);
  const free = hosts === undefined ? Number.POSITIVE_INFINITY : freePlaces(hosts, takenPlaces(state), state.now);
  return Math.max(0, Math.min(allowedOn(state, account) - inFlightOn(state, account), free));
}

/** Some account's limiter holds new starts now. */
export const anyHold = (state: EngineState): boolean => accountsOf(state).some((account) => holding(limiterOf(state, account), state.now));

/**
 * With more than one account: `account` would wait longer than `--limit-wait` for its limit while
 * another would not. The run goes on on the others' hosts rather than wait for it.
 */
export function givenUp(state: EngineState, account: Account): boolean {
  if (state.limiters === undefined) return false;
  const late = (other: Account) => overdue(limiterOf(state, other), state.now, accountSettings(state, other)) !== null;
  return late(account) && accountsOf(state).some((other) => !late(other));
}
