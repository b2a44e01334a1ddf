// `plan report`: a Markdown report of a run — the latest, a given run id, or the run an
// archived plan records — from the journal and the plan.

import { resolve } from 'node:path';
import { ownLayout, readPlanFile } from '../../adapters/index.ts';
import { commandHint, parsePlan, type Plan, renderReport, reportData, runForArchive, type RunRecord } from '../../core/index.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';
import { displayPath, livePid, loadArchive, loadArchives, loadRuns } from './runs.ts';

function findRun(runs: readonly RunRecord[], id: string, journalPath: string): RunRecord {
  const exact = runs.find((r) => r.runId === id);
  if (exact) return exact;
  const prefixed = runs.filter((r) => r.runId.startsWith(id));
  if (prefixed.length === 1) return prefixed[0]!;
  const known = runs
    .slice(-5)
    .map((r) => r.runId)
    .join(', ');
  throw new CliError(EXIT.invalid, [
    prefixed.length > 1
      ? `--run ${id}: matches ${prefixed.length} runs (${prefixed.map((r) => r.runId).join(', ')}); give more of the id`
      : `--run ${id}: no such run in ${journalPath}${known ? ` (latest: ${known}; see \`${commandHint('plan', 'history', ownLayout())}\`)` : ''}`,
  ]);
}

/** Nothing to report yet: how to make a run, from where the person is. */
const noRuns = (journalPath: string): string =>
  `no runs recorded in ${journalPath}: run the plan first (\`${commandHint('execute', '', ownLayout())}\`, or /foreman:execute in Claude Code)`;

/** The current plan, or null when there is none (a report of the journal alone is still useful). */
async function currentPlan(path: string): Promise<Plan | null> {
  const read = await readPlanFile(path);
  if (!read.ok && read.error.kind === 'missing') return null;
  if (read.ok && !parsePlan(read.value.text).ok) return null;
  return loadPlan(path);
}

export const report: Command = {
  name: 'report',
  summary:
    "Print a Markdown report of the latest run (or --run ID, or an --archived plan): summary, tasks, failures, the gate's runs, and a Gantt chart of the attempts and gate runs. --json: the run's summary, attempts and gate runs as JSON.",
  usage: '[--plan FILE] [--run RUN_ID] [--archived FILE] [--json]',
  options: {
    ...planOption,
    ...jsonOption,
    run: { type: 'string', valueName: 'RUN_ID', description: 'report this run (an id from `plan history`, or a unique prefix of one) instead of the latest' },
    archived: {
      type: 'string',
      valueName: 'FILE',
      description: 'report the run an archived plan (.design/history/<timestamp>-plan.json) records, with that plan',
    },
  },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const { journalPath, runs } = await loadRuns(path, io);
    const pid = await livePid(path);
    if (values.json === true) {
      const archive = typeof values.archived === 'string' ? await loadArchive(resolve(io.cwd, values.archived), io) : null;
      const runId = typeof values.run === 'string' ? values.run : undefined;
      const run = runId !== undefined ? findRun(runs, runId, journalPath) : archive !== null ? runForArchive(archive, runs) : (runs[runs.length - 1] ?? null);
      if (run === null)
        throw new CliError(EXIT.invalid, [archive !== null ? `no run in ${journalPath} matches ${archive.path}: --json reports a run` : noRuns(journalPath)]);
      io.out(JSON.stringify(reportData(run, { livePid: pid, now: Date.now() })));
      return EXIT.ok;
    }
    const runId = typeof values.run === 'string' ? values.run : undefined;

    if (typeof values.archived === 'string') {
      const archive = await loadArchive(resolve(io.cwd, values.archived), io);
      const run = runId !== undefined ? findRun(runs, runId, journalPath) : runForArchive(archive, runs);
      if (!run) io.err(`note: no run in ${journalPath} matches ${archive.path}; reporting from the plan alone`);
      io.out(renderReport({ run, plan: archive.plan, planIsOfRun: true, archivedFrom: archive.path, livePid: pid, now: Date.now(), layout: ownLayout() }));
      return EXIT.ok;
    }

    if (runs.length === 0) {
      throw new CliError(EXIT.invalid, [noRuns(journalPath)]);
    }
    const run = runId !== undefined ? findRun(runs, runId, journalPath) : runs[runs.length - 1]!;
    const plan = await currentPlan(path);
    const latest = run === runs[runs.length - 1];
    if (!plan || !latest) {
      // A finished plan is archived (moved to history/): the archive that records this run is its plan.
      const archive = (await loadArchives(path, io)).filter((a) => runForArchive(a, runs) === run).at(-1);
      if (archive) {
        io.out(renderReport({ run, plan: archive.plan, planIsOfRun: true, archivedFrom: archive.path, livePid: pid, now: Date.now(), layout: ownLayout() }));
        return EXIT.ok;
      }
    }
    if (!plan) io.err(`note: no valid plan at ${path} and no archived plan for this run; the report shows what the journal holds`);
    io.out(
      renderReport({ run, plan, planIsOfRun: latest && plan !== null, planPath: displayPath(path, io), livePid: pid, now: Date.now(), layout: ownLayout() }),
    );
    return EXIT.ok;
  },
};
