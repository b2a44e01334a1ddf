// Archives and history, projections: which run an archived plan came from, and the rows of
// `plan history`.

import type { StopReason } from './events.ts';
import { formatCount, isoSeconds, plural } from '../format.ts';
import { type Plan, tallyCostUsd, tallyOf, UNKNOWN, type UsageTally } from '../plan/index.ts';
import { type RunRecord, startOf } from './journal.ts';
import { type RunState, summarizeRun, type SummaryOptions } from './runs.ts';

// ---------------------------------------------------------------------------------------------
// Archives and history

/**
 * The time in an archive name `<timestamp>-plan.json`: epoch seconds or milliseconds, ISO
 * (`2026-11-22T01:02:03Z`, or with `-` for `:` as file names need), or compact
 * (`20261122T010203Z`, `20261122-010203`). null when the name holds no recognisable time.
 */
export function parseArchiveStamp(fileName: string): number | null {
  const base = fileName.replace(/^.*[\\/]/, '').replace(/-?plan\.json$/, '');
  if (/^\d{13}$/.test(base)) return Number(base);
  if (/^\d{10}$/.test(base)) return Number(base) * 1000;
  let m = /^(\d{4}-\d{2}-\d{2})[T_ ](\d{2})[-:](\d{2})[-:](\d{2})(?:[.,-](\d{1,3}))?(Z|[+-]\d{2}:?\d{2})?$/.exec(base);
  if (m) {
    const t = Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}.${(m[5] ?? '0').padEnd(3, '0')}${m[6] ?? 'Z'}`);
    return Number.isFinite(t) ? t : null;
  }
  m = /^(\d{4})(\d{2})(\d{2})[T_-]?(\d{2})(\d{2})(\d{2})(\d{3})?Z?$/.exec(base);
  if (m) {
    const t = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7] ?? '000'}Z`);
    return Number.isFinite(t) ? t : null;
  }
  return null;
}

export interface Archive {
  path: string;
  plan: Plan;
  /** From the file name, else the file's modification time. */
  archivedMs: number;
}

/**
 * The run an archived plan records: the run whose run-finished message names the archive file,
 * else, among runs that started before it was archived (names hold whole seconds), the latest
 * with the same goal (or, failing that, the latest whose goal is unknown); else null.
 */
export function runForArchive(archive: Archive, runs: readonly RunRecord[]): RunRecord | null {
  const name = archive.path.replace(/^.*[\\/]/, '');
  const named = runs.filter((r) => r.finished?.message.includes(name));
  if (named.length) return named[named.length - 1]!;
  const before = runs.filter((r) => startOf(r) <= archive.archivedMs + 999);
  const sameGoal = before.filter((r) => r.started?.goal === archive.plan.goal);
  const pool = sameGoal.length ? sameGoal : before.filter((r) => r.started?.goal === undefined);
  return pool.length ? pool.reduce((a, b) => (startOf(b) >= startOf(a) ? b : a)) : null;
}

export interface HistoryEntry {
  /** null for an archive with no matching run in the journal. */
  runId: string | null;
  startedAt: string;
  goal: string | null;
  outcome: RunState | 'archived';
  reason: StopReason | null;
  durationMs: number | null;
  /** The measured cost (a lower bound when `costUnknownFor > 0`), or `unknown` when nothing was measured. */
  costUsd: number | typeof UNKNOWN;
  /** How many attempts (for an archive no run accounts for: tasks) have an unknown cost. */
  costUnknownFor: number;
  /** The figures behind `costUsd`. */
  usage: UsageTally;
  archive: string | null;
}

/** What the plan's tasks cost, each task's usage summed over its attempts (unknown if any attempt was). */
export const planTally = (plan: Plan): UsageTally => tallyOf(plan.tasks.map((t) => t.usage));

/** `12,345 input, … cache write`, `unknown`, or `at least …` when some figures are unknown. */
export function formatTokens(tally: UsageTally, unit = 'attempt'): string {
  if (tally.unknown > 0 && tally.measuredCount === 0) return UNKNOWN;
  const u = tally.measured;
  const figures = `${formatCount(u.inputTokens)} input, ${formatCount(u.outputTokens)} output, ${formatCount(u.cacheReadTokens)} cache read, ${formatCount(u.cacheCreationTokens)} cache write`;
  return tally.unknown > 0 ? `at least ${figures} (${plural(tally.unknown, unit)} unknown)` : figures;
}

/** Past runs, oldest first: every run in the journal, plus archives no journal run accounts for. */
export function historyEntries(runs: readonly RunRecord[], archives: readonly Archive[], options: SummaryOptions = {}): HistoryEntry[] {
  const archiveOf = new Map<string, string>();
  const loose: Archive[] = [];
  for (const a of archives) {
    const run = runForArchive(a, runs);
    if (run && !archiveOf.has(run.runId)) archiveOf.set(run.runId, a.path);
    else loose.push(a);
  }
  const entries: Array<HistoryEntry & { sortMs: number }> = runs.map((r) => {
    const s = summarizeRun(r, options);
    return {
      runId: r.runId,
      startedAt: s.startedAt,
      goal: s.goal,
      outcome: s.outcome,
      reason: s.reason,
      durationMs: s.durationMs,
      costUsd: s.costUsd,
      costUnknownFor: s.usage.unknown,
      usage: s.usage,
      archive: archiveOf.get(r.runId) ?? null,
      sortMs: startOf(r),
    };
  });
  for (const a of loose) {
    const usage = planTally(a.plan);
    entries.push({
      runId: null,
      startedAt: isoSeconds(a.archivedMs),
      goal: a.plan.goal,
      outcome: 'archived',
      reason: null,
      durationMs: null,
      costUsd: tallyCostUsd(usage),
      costUnknownFor: usage.unknown,
      usage,
      archive: a.path,
      sortMs: a.archivedMs,
    });
  }
  return entries.sort((a, b) => a.sortMs - b.sortMs).map(({ sortMs: _, ...e }) => e);
}
