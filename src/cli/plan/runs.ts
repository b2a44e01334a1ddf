// What `report` and `history` read: the journal next to the plan, the archived plans in
// `<plan dir>/history/*-plan.json`, and the lock (to tell a running run from a dead one).

import { readdir, stat } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { journalPathFor, readJournal, readLock, readPlanFile } from '../../adapters/index.ts';
import { type Archive, groupRuns, parseArchiveStamp, parsePlan, type RunRecord } from '../../core/index.ts';
import type { Io } from '../command.ts';
import { CliError, EXIT } from '../exit.ts';

export const historyDirFor = (planPath: string): string => join(dirname(planPath), 'history');

export async function loadRuns(planPath: string, io: Io): Promise<{ journalPath: string; runs: RunRecord[] }> {
  const journalPath = journalPathFor(planPath);
  const journal = await readJournal(journalPath);
  const damaged = journal.skipped + (journal.torn ? 1 : 0);
  if (damaged > 0) {
    io.err(
      `note: ${journalPath}: ${damaged} line${damaged === 1 ? '' : 's'} skipped (${journal.torn ? 'the last one cut off mid-write, ' : ''}${journal.skipped} not run events)`,
    );
  }
  return { journalPath, runs: groupRuns(journal.events) };
}

/** The pid of the run holding the lock, if any. */
export async function livePid(planPath: string): Promise<number | null> {
  const lock = await readLock(planPath);
  return lock.state === 'live' || lock.state === 'foreign' ? lock.holder.pid : null;
}

/** Reads one archived plan; `display` is how to name it (relative to the working directory). */
export async function loadArchive(file: string, io: Io): Promise<Archive> {
  const read = await readPlanFile(file);
  if (!read.ok)
    throw new CliError(EXIT.invalid, [read.error.kind === 'missing' ? `no archived plan at ${file}` : `cannot read ${file}: ${read.error.message}`]);
  const parsed = parsePlan(read.value.text);
  if (!parsed.ok)
    throw new CliError(EXIT.invalid, [
      `${file}: not a valid plan: ${parsed.error[0]}${parsed.error.length > 1 ? ` (and ${parsed.error.length - 1} more)` : ''}`,
    ]);
  const archivedMs = parseArchiveStamp(file) ?? (await stat(file)).mtimeMs;
  return { path: displayPath(file, io), plan: parsed.value, archivedMs };
}

/** Every readable `*-plan.json` in the history directory, oldest first; unreadable ones are reported and skipped. */
export async function loadArchives(planPath: string, io: Io): Promise<Archive[]> {
  const dir = historyDirFor(planPath);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw e;
  }
  const archives: Archive[] = [];
  for (const name of names.filter((n) => n.endsWith('-plan.json')).sort()) {
    try {
      archives.push(await loadArchive(join(dir, name), io));
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      io.err(`note: skipping ${join(dir, name)}: ${e.lines.join(' ')}`);
    }
  }
  return archives.sort((a, b) => a.archivedMs - b.archivedMs);
}

export function displayPath(file: string, io: Io): string {
  const rel = relative(io.cwd, file);
  return rel !== '' && !rel.startsWith('..') ? rel : file;
}
