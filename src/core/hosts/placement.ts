// Placement: which host, and which of its slots, a starting attempt gets; and the hosts' state as
// faults mark one down and its back-off ends. Pure: the step function keeps the state
// (`EngineState.hosts`) and asks here. A run without hosts has none of it and places nothing.
//
// - An attempt holds its place from its start until its worktree there is released (running,
//   verifying, and paused: a paused attempt keeps its worktree to resume in). Never more attempts
//   on a host than its slots.
// - A host fault (foreman's remote side or the channel failing) marks the host down: it gets
//   nothing until its back-off ends (`backoffMs`, doubled per fault in a row, at most
//   `MAX_HOST_BACKOFF_MS`); then it is tried again, and an attempt's worker finishing there
//   clears its faults.
// - A free slot is taken on the host with the most free slots, the host given first on a tie, and
//   the lowest free slot number there.

/** A host as the run's configuration has it: its name (core/hosts/url.ts) and slots. */
export interface HostSlots {
  readonly name: string;
  readonly slots: number;
  /** Logged in to another account than this machine's (core/hosts/accounts.ts): that account's key. Absent: the run's. */
  readonly account?: string;
}

/** Why and since when a host is down, and when it is tried again. */
export interface HostDown {
  readonly reason: string;
  /** The first fault of the streak (ms): the host has been of no use since. */
  readonly since: number;
  /** Its back-off ends (ms): from then it may be given attempts again. */
  readonly until: number;
  /** An attempt was placed on it since its back-off ended: a fault now is one more of the same streak. */
  readonly tried: boolean;
}

export interface HostState extends HostSlots {
  /** Null: up (or tried again once its back-off ended and nothing failed since). */
  readonly down: HostDown | null;
  /** Faults in a row, none of its attempts' workers finishing between: its back-off doubles with each. */
  readonly faults: number;
}

/** Where an attempt works: a host and one of its slots (1 to its slots). */
export interface Place {
  readonly host: string;
  readonly slot: number;
}

/** A host's first back-off after a fault (`EngineConfig.hostBackoffMs` when the run sets none). */
export const DEFAULT_HOST_BACKOFF_MS = 30_000;

/** The longest a host's back-off grows to. */
export const MAX_HOST_BACKOFF_MS = 15 * 60_000;

export const newHosts = (hosts: readonly HostSlots[]): HostState[] => hosts.map((host) => ({ name: host.name, slots: host.slots, down: null, faults: 0 }));

/** Whether the host may be given an attempt now: up, or its back-off is over. */
export const usable = (host: HostState, now: number): boolean => host.down === null || host.down.until <= now;

/** The free slots of each usable host, in the hosts' order (a host down has none). */
function freeSlots(hosts: readonly HostState[], taken: readonly Place[], now: number): Array<{ host: HostState; free: number[] }> {
  return hosts.map((host) => {
    const used = new Set(taken.filter((place) => place.host === host.name).map((place) => place.slot));
    const free = usable(host, now) ? Array.from({ length: host.slots }, (_, i) => i + 1).filter((slot) => !used.has(slot)) : [];
    return { host, free };
  });
}

/** How many more attempts the hosts can take now. */
export const freePlaces = (hosts: readonly HostState[], taken: readonly Place[], now: number): number =>
  freeSlots(hosts, taken, now).reduce((sum, { free }) => sum + free.length, 0);

/** The place a starting attempt gets, or null when every usable host's slots are taken. */
export function place(hosts: readonly HostState[], taken: readonly Place[], now: number): Place | null {
  let best: { host: HostState; free: number[] } | null = null;
  for (const candidate of freeSlots(hosts, taken, now)) if (candidate.free.length > (best?.free.length ?? 0)) best = candidate;
  return best === null ? null : { host: best.host.name, slot: best.free[0]! };
}

/**
 * A fault on `name`: it is down from `now` until its back-off ends. A fault while it is down
 * already and not yet tried again (another slot's channel telling the same) changes nothing. The
 * streak it has been down since goes on when the fault comes from its being tried again; a fault
 * on a host left idle after its back-off starts a new one.
 */
export function hostFault(hosts: readonly HostState[], name: string, reason: string, now: number, backoffMs: number): HostState[] {
  return hosts.map((host) => {
    if (host.name !== name || (host.down !== null && host.down.until > now)) return host;
    const faults = host.faults + 1;
    const wait = Math.min(MAX_HOST_BACKOFF_MS, backoffMs * 2 ** Math.min(faults - 1, 20));
    const since = host.down?.tried === true ? host.down.since : now;
    return { ...host, faults, down: { reason, since, until: now + wait, tried: false } };
  });
}

/** An attempt was placed on `name`: a host down whose back-off ended is being tried again. */
export const hostTried = (hosts: readonly HostState[], name: string): HostState[] =>
  hosts.map((host) => (host.name === name && host.down !== null && !host.down.tried ? { ...host, down: { ...host.down, tried: true } } : host));

/** An attempt's worker finished on `name`: the host works, its faults are forgotten. */
export const hostWorks = (hosts: readonly HostState[], name: string): HostState[] =>
  hosts.map((host) => (host.name === name && (host.down !== null || host.faults > 0) ? { ...host, down: null, faults: 0 } : host));

/** When a host down is next tried again (null: none is down). */
export function nextRetry(hosts: readonly HostState[], now: number): number | null {
  const waits = hosts.flatMap((host) => (host.down !== null && host.down.until > now ? [host.down.until] : []));
  return waits.length === 0 ? null : Math.min(...waits);
}

/** Since when every host has been down (null: one at least is usable now). */
export function allDownSince(hosts: readonly HostState[], now: number): number | null {
  if (hosts.length === 0 || hosts.some((host) => usable(host, now))) return null;
  return Math.max(...hosts.map((host) => host.down!.since));
}
