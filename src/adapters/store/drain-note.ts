// A drain asked of the run that holds the lock (`plan drain`): a note beside the plan, so that of
// several drains asked at once only one signals the run. The run's lock release removes it
// (run-lock.ts).

import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { err, ok, type Result } from '../../core/index.ts';
import { createExclusive, enterGuard, readRaw } from './atomic-file.ts';

export const DRAIN_FILE_NAME = 'plan.drain';
const drainPathFor = (planPath: string): string => path.join(path.dirname(planPath), DRAIN_FILE_NAME);
/** The run that holds the lock, as its lock names it (run-lock.ts's LockInfo): its pid, and the time it took the lock. */
export interface LockHolder {
  pid: number;
  startedAt: string;
}

/** The same run: its pid, and the time it took the lock (a later run may get the same pid). */
const sameHolder = (a: LockHolder, b: LockHolder) => a.pid === b.pid && a.startedAt === b.startedAt;

/** Whether `holder` was asked to drain already (and when), or this call asked it: then the caller signals it, once. */
export type DrainAsk = { kind: 'asked' } | { kind: 'asked-already'; at: string };

/** When the drain note `text` says its run was asked, if it names `holder`; null otherwise (another run's, or not a note). */
function drainNoteFor(text: string, holder: LockHolder): string | null {
  try {
    const asked = JSON.parse(text) as { pid?: unknown; startedAt?: unknown; at?: unknown };
    return typeof asked.pid === 'number' &&
      typeof asked.startedAt === 'string' &&
      typeof asked.at === 'string' &&
      sameHolder({ pid: asked.pid, startedAt: asked.startedAt }, holder)
      ? asked.at
      : null;
  } catch {
    return null;
  }
}

/** How long `askDrain` keeps at it while other drains replace a stale note at the same moment. */
const DRAIN_ASK_LIMIT_MS = 5_000;

/**
 * Notes that `holder` is asked to drain (`plan drain`, before it signals), unless it was asked
 * already: a second SIGTERM would stop the run at once, so of two drains asked at the same
 * moment only the one that created the note sends it. The note is created exclusively; one that
 * names `holder` means asked already. One that names another run (left by a run that did not
 * release its lock) is replaced under a guard, so that of several drains finding it one removes
 * it, and they try again. The holder's lock release removes the note.
 */
export async function askDrain(planPath: string, holder: LockHolder): Promise<Result<DrainAsk, string>> {
  const file = drainPathFor(planPath);
  const text = `${JSON.stringify({ pid: holder.pid, startedAt: holder.startedAt, at: new Date().toISOString() })}\n`;
  const deadline = Date.now() + DRAIN_ASK_LIMIT_MS;
  while (Date.now() < deadline) {
    if (await createExclusive(file, text)) return ok({ kind: 'asked' });
    const note = await readRaw(file);
    if (note === null) continue; // removed meanwhile: try again
    const at = drainNoteFor(note.text, holder);
    if (at !== null) return ok({ kind: 'asked-already', at });
    const guard = await enterGuard(`${file}.takeover`);
    if (guard === null) continue; // another drain is replacing it
    try {
      const again = await readRaw(file);
      if (again !== null && again.text === note.text) await unlink(file).catch(() => undefined);
    } finally {
      await guard.leave();
    }
  }
  return err(`could not note the drain in ${file}: it kept changing (other drains were asking at the same time)`);
}

/** Withdraws the note (the signal could not be sent). */
export const forgetDrainAsked = (planPath: string): Promise<void> => unlink(drainPathFor(planPath)).catch(() => undefined);
