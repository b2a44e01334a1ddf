// `plan.ts history`: the runs of this plan directory, from the journal and the archived plans.

import { emptyTally, formatCostTally, formatDuration, historyEntries, mergeTallies } from '../../core/index.ts';
import { table } from '../../ui/index.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';
import { historyDirFor, livePid, loadArchives, loadRuns } from './runs.ts';

/** `…20261125T181147Z-plan.json`: an archived plan's file name whole, after the mark of the cut folder. */
const ARCHIVE_NAME_WIDTH = 27;

export const history: Command = {
  name: 'history',
  summary: 'List past runs (journal and archived plans): run id, start, goal, outcome, duration, cost.',
  usage: '[--plan FILE] [--json]',
  options: { ...planOption, ...jsonOption },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const { journalPath, runs } = await loadRuns(path, io);
    const archives = await loadArchives(path, io);
    const now = Date.now();
    const entries = historyEntries(runs, archives, { livePid: await livePid(path), now });
    if (values.json) {
      io.out(JSON.stringify({ runs: entries }));
      return EXIT.ok;
    }
    if (entries.length === 0) {
      io.out(`No runs yet (no events in ${journalPath}, no archived plans in ${historyDirFor(path)}).`);
      return EXIT.ok;
    }
    io.out(
      table(
        ['run', 'started', 'outcome', 'duration', 'cost', 'goal', 'archive'],
        entries.map((e) => [
          e.runId ?? '—',
          e.startedAt,
          e.reason && e.outcome !== 'completed' ? `${e.outcome} (${e.reason})` : e.outcome,
          e.durationMs === null ? '—' : formatDuration(e.durationMs),
          formatCostTally(e.usage, e.runId === null ? 'task' : 'attempt'),
          e.goal ?? '—',
          e.archive ?? '—',
        ]),
        // The archive's folder goes first (its file name stays), then the goal and the outcome down to a few words.
        {
          maxWidth: io.columns,
          shrink: [
            { column: 6, min: ARCHIVE_NAME_WIDTH, keep: 'end' },
            { column: 5, min: 16 },
            { column: 2, min: 12 },
          ],
        },
      ),
    );
    // A total over runs: unknown costs (in-session attempts) make it a lower bound, never a zero.
    const total = entries.reduce((t, e) => mergeTallies(t, e.usage), emptyTally());
    const cost = formatCostTally(total, entries.some((e) => e.runId === null && e.usage.unknown > 0) ? 'attempt or task' : 'attempt');
    io.out(`${entries.length} run${entries.length === 1 ? '' : 's'}, ${cost}${cost === 'unknown' ? ' cost' : ''} in all`);
    return EXIT.ok;
  },
};
