// The run's one limiter for rate and usage limits, pure. Every refusal the API gives any worker (a
// 429 or 529: an `api_retry` in its stream while it runs, or how it ended) and every response it
// serves go through it; it says how many workers the run may have at once (its working
// concurrency) and until when nothing new may start (a hold). As TCP shares a link:
//
// - a refusal that finds no hold in force halves the working concurrency (multiplicative
//   decrease) and holds new starts for the back-off the API asked for (`retry-after`, or the CLI's
//   own delay, which honours it), or until a usage limit resets; the refusals of one burst (they
//   arrive while that hold is in force) change nothing more but the hold's end;
// - responses served raise it by one per `working × patience` of them (additive increase), up to
//   `--concurrency`; patience doubles (to 2 at most) each time a burst comes at a level no higher
//   than the last burst came at, and starts over at 1 once the working concurrency passes that
//   level: a level the API refused is probed again less and less often;
// - a usage limit (a reset time) holds until the reset and lowers nothing: past it the account
//   serves as before;
// - refusals in a row with nothing served between: each new hold backs off twice as long as the
//   last (from `FOREMAN_BACKOFF_MS`), never shorter than what the API asked for; a response served
//   lifts a hold of the limiter's own (the API serves), and a response to a worker the hold's
//   refusals refused lifts any (it waited what it was told, and the API serves it again: the CLIs
//   add jitter to the delay, and the hold is the longest of a burst's);
// - the API out of reach (`api-unreachable`: its requests get no answer at all — refused, reset,
//   DNS, TLS, a timeout) is an outage, not a limit on the rate: it lowers nothing, and holds new
//   starts for the limiter's own back-off (doubling, at most `MAX_PROBE_MS`: a probe costs a
//   worker's start and one request, nothing the API bills); until a response is served again only
//   one worker runs at once (`allowed`), the probe;
// - the run waits at most `--limit-wait` for a limit (0: never): `overdue` says when it would wait
//   longer, and until when.
//
// In a session the lead hands out rounds: a round in which a limit refused a subagent leaves the
// next one no more tasks than it got through (at least one); a round with none refused gives the
// next one task more, up to the lead's concurrency.

export type LimitKind = 'rate-limit' | 'overloaded' | 'usage-limit' | 'api-unreachable';

/** One refusal by the API (or, for `api-unreachable`, a request it never answered). */
export interface Refusal {
  kind: LimitKind;
  /** How long the API (or the CLI, honouring its `retry-after`) asked to wait, in ms. */
  delayMs?: number;
  /** When a usage limit resets (epoch ms). */
  resetAt?: number;
  /** The CLI's words for it, when it said any ("API Error: Connection refused … (ECONNREFUSED)"). */
  message?: string;
}

export interface LimiterSettings {
  /** `--concurrency`: the most workers at once. */
  ceiling: number;
  /** The back-off when a refusal names none, doubled per hold in a row with nothing served between (ms). */
  backoffMs: number;
  /** `--limit-wait`: the longest the run waits for a limit (ms); 0: never. */
  maxWaitMs: number;
}

export interface Limiter {
  /** Workers the run may have at once now: 1 to the ceiling. */
  readonly working: number;
  /** Nothing new starts before this time (ms); 0: no hold. */
  readonly holdUntil: number;
  /** The hold's end is the limiter's own back-off, longer than anything the API asked for. */
  readonly ownHold: boolean;
  /** What the last hold was for (null before any refusal). */
  readonly kind: LimitKind | null;
  /** When the usage limit that holds resets (ms), when one does. */
  readonly resetAt: number | null;
  /** While the API is out of reach: the CLI's last words for it, when it said any. */
  readonly unreachable: string | null;
  /** Holds in a row with nothing served between. */
  readonly strikes: number;
  /** The first refusal since a response was last served (ms), or null. */
  readonly refusedSince: number | null;
  /** Responses served since the working concurrency last changed. */
  readonly served: number;
  /** Additive increase waits for `working × patience` responses served. */
  readonly patience: number;
  /** The working concurrency the last burst came at (before it halved it), or null. */
  readonly refusedAt: number | null;
  /** Every refusal seen. */
  readonly refusals: number;
  /** In a session: the open round's results, got through and refused by a limit. */
  readonly round: { readonly through: number; readonly refused: number };
}

/** The most patience: additive increase waits at most 2 × working responses. */
export const MAX_PATIENCE = 2;
/** A back-off of the limiter's own never exceeds an hour (the API's own word may). */
export const MAX_BACKOFF_MS = 3_600_000;
/** The API out of reach is tried again at least once a minute: a probe is one worker's start and one request. */
export const MAX_PROBE_MS = 60_000;

export const newLimiter = (ceiling: number): Limiter => ({
  working: Math.max(1, ceiling),
  holdUntil: 0,
  ownHold: false,
  kind: null,
  resetAt: null,
  unreachable: null,
  strikes: 0,
  refusedSince: null,
  served: 0,
  patience: 1,
  refusedAt: null,
  refusals: 0,
  round: { through: 0, refused: 0 },
});

/** A hold is in force at `now`. */
export const holding = (limiter: Limiter, now: number): boolean => now < limiter.holdUntil;

/** The API is out of reach: nothing was served since requests began going unanswered. */
export const outage = (limiter: Limiter): boolean => limiter.kind === 'api-unreachable' && limiter.refusedSince !== null;

/** Workers the run may have at once: the working concurrency, never above `ceiling`; one (the probe) while the API is out of reach. */
export const allowed = (limiter: Limiter, ceiling: number): number => (outage(limiter) ? 1 : Math.max(1, Math.min(ceiling, limiter.working)));

/**
 * A refusal at `now`. In a session (`session`), only the round's count changes (and a usage
 * limit's reset holds): the lead settles the round at its next hand-out.
 */
export function refused(limiter: Limiter, refusal: Refusal, now: number, settings: LimiterSettings, session = false): Limiter {
  const counted = { ...limiter, refusals: limiter.refusals + 1, refusedSince: limiter.refusedSince ?? now };
  if (session) {
    const held =
      refusal.resetAt !== undefined && refusal.resetAt > now
        ? { holdUntil: Math.max(limiter.holdUntil, refusal.resetAt), kind: 'usage-limit' as const, resetAt: refusal.resetAt }
        : {};
    return { ...counted, ...held, round: { ...limiter.round, refused: limiter.round.refused + 1 } };
  }
  const usage = refusal.resetAt !== undefined && refusal.resetAt > now;
  const burst = holding(limiter, now);
  const strikes = burst ? limiter.strikes : limiter.strikes + 1;
  if (refusal.kind === 'api-unreachable') return unanswered(limiter, counted, refusal, now, settings, burst, strikes);
  const named = usage ? refusal.resetAt! - now : (refusal.delayMs ?? 0);
  // The first hold of a streak waits what the API asked for (the limiter's own back-off when it named nothing); later ones back off too.
  const own =
    strikes <= 1 ? (refusal.delayMs === undefined && !usage ? settings.backoffMs : 0) : Math.min(MAX_BACKOFF_MS, settings.backoffMs * 2 ** (strikes - 1));
  const holdUntil = Math.max(limiter.holdUntil, now + Math.max(named, own));
  const ownHold = holdUntil > limiter.holdUntil ? own > named : limiter.ownHold;
  const kind: LimitKind = usage ? 'usage-limit' : burst && limiter.kind === 'usage-limit' ? 'usage-limit' : refusal.kind;
  const resetAt = usage ? Math.max(refusal.resetAt!, limiter.resetAt ?? 0) : burst ? limiter.resetAt : null;
  if (usage || burst) return { ...counted, strikes, holdUntil, ownHold, kind, resetAt };
  // A new burst halves the working concurrency; refused again at a level already refused, patience grows.
  const working = Math.max(1, Math.ceil(limiter.working / 2));
  const patience = limiter.refusedAt !== null && limiter.working <= limiter.refusedAt ? Math.min(MAX_PATIENCE, limiter.patience * 2) : 1;
  return {
    ...counted,
    strikes,
    holdUntil,
    ownHold,
    kind,
    resetAt,
    working,
    patience,
    refusedAt: limiter.working,
    served: working !== limiter.working ? 0 : limiter.served,
  };
}

/**
 * A request the API never answered: an outage holds new starts for the limiter's own back-off
 * (the CLI's delays between its tries are its own, not the API's word), doubling per try that
 * finds no hold, at most `MAX_PROBE_MS`; a usage limit's hold outranks it. It lowers nothing.
 */
function unanswered(limiter: Limiter, counted: Limiter, refusal: Refusal, now: number, settings: LimiterSettings, burst: boolean, strikes: number): Limiter {
  const wait = Math.min(MAX_PROBE_MS, settings.backoffMs * 2 ** Math.max(0, strikes - 1));
  const holdUntil = Math.max(limiter.holdUntil, now + wait);
  const usageHolds = burst && limiter.kind === 'usage-limit';
  return {
    ...counted,
    strikes,
    holdUntil,
    ownHold: holdUntil > limiter.holdUntil ? true : limiter.ownHold,
    kind: usageHolds ? 'usage-limit' : 'api-unreachable',
    resetAt: usageHolds ? limiter.resetAt : null,
    unreachable: refusal.message ?? limiter.unreachable,
  };
}

/**
 * A response served at `now`: the streak of refusals is over, and a hold of the limiter's own is
 * lifted (the API serves), any hold when `refusedBefore` (the worker served was refused in it);
 * enough responses raise the working concurrency.
 */
export function served(limiter: Limiter, now: number, settings: LimiterSettings, session = false, refusedBefore = false): Limiter {
  const lifted = (limiter.ownHold || refusedBefore) && holding(limiter, now) ? { holdUntil: now, ownHold: false } : {};
  const base = {
    ...limiter,
    ...lifted,
    strikes: 0,
    refusedSince: null,
    unreachable: null,
    resetAt: holding({ ...limiter, ...lifted }, now) ? limiter.resetAt : null,
  };
  if (session) return { ...base, round: { ...limiter.round, through: limiter.round.through + 1 } };
  if (limiter.working >= settings.ceiling) return { ...base, working: settings.ceiling, served: 0 };
  const count = limiter.served + 1;
  if (count < limiter.working * limiter.patience) return { ...base, served: count };
  const working = limiter.working + 1;
  // Past the level the last burst came at: that level holds, patience starts over.
  return { ...base, working, served: 0, patience: limiter.refusedAt !== null && working > limiter.refusedAt ? 1 : limiter.patience };
}

/**
 * In a session, the lead asks for the next round: a round a limit refused some of leaves the next
 * no more tasks than it got through (at least one); a round with none refused, one task more.
 */
export function settleRound(limiter: Limiter, ceiling: number): Limiter {
  const { through, refused: refusals } = limiter.round;
  if (through === 0 && refusals === 0) return { ...limiter, working: Math.min(limiter.working, Math.max(1, ceiling)) };
  const working = refusals > 0 ? Math.max(1, Math.min(limiter.working, through)) : Math.min(Math.max(1, ceiling), limiter.working + 1);
  return { ...limiter, working, round: { through: 0, refused: 0 } };
}

/**
 * Whether the run would wait longer than `--limit-wait` for the limit that holds it: a usage limit
 * resetting later than that from now, or refusals (nothing served between) that began longer ago
 * than that, counting the hold still to come; the API out of reach for longer than that. Then:
 * until when the run would have had to wait.
 */
export function overdue(limiter: Limiter, now: number, settings: LimiterSettings): { until: number } | null {
  // The API out of reach counts from its first unanswered request, held or not (a back-off of 0 holds nothing).
  if (limiter.refusedSince === null || !(holding(limiter, now) || outage(limiter))) return null;
  const until = Math.max(limiter.holdUntil, now);
  const waited = until - (limiter.kind === 'usage-limit' ? now : limiter.refusedSince);
  return waited > settings.maxWaitMs ? { until } : null;
}
