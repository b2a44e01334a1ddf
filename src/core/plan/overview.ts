// A plan at a glance, in Markdown: what `/design` shows when it has written a plan. The task
// table, the dependency graph, the critical path and the rounds the plan takes if every task
// succeeds — computed, never estimated by eye.

import { markdownCell } from '../format.ts';
import { criticalPath, depsOf, longestRemainingPath } from './graph.ts';
import { mermaidGraph } from './mermaid.ts';
import { computeOverlaps, overlapSets } from './overlap.ts';
import { modelOf, type Plan, readsOf, statusOf, taskAt } from './plan.ts';
import { projectedRounds } from './schedule.ts';

const code = (xs: readonly string[]) => xs.map((x) => `\`${x}\``).join(', ');

export interface OverviewOptions {
  /** The command line that starts the headless orchestrator, e.g. `/path/bin/foreman execute`. */
  headless: string;
  /** The command line that shows a run's progress. */
  status: string;
}

export function planOverview(plan: Plan, options: OverviewOptions): string {
  const out: string[] = [`## Plan: ${markdownCell(plan.goal)}`, ''];
  const c = plan.context;
  const facts = [c?.stack && `stack: ${c.stack}`, c?.testCommand && `tests: \`${c.testCommand}\``, c?.buildCommand && `build: \`${c.buildCommand}\``].filter(
    Boolean,
  );
  if (facts.length > 0) out.push(markdownCell(facts.join('; ')), '');

  out.push('| # | Task | Model | Files | Blocked by | Checks | Status |', '|---:|---|---|---|---|---:|---|');
  plan.tasks.forEach((t, i) => {
    const files = [
      t.metadata.files.create.length > 0 ? `creates ${code(t.metadata.files.create)}` : '',
      t.metadata.files.modify.length > 0 ? `modifies ${code(t.metadata.files.modify)}` : '',
      readsOf(t).length > 0 ? `reads ${code(readsOf(t))}` : '',
    ].filter(Boolean);
    out.push(
      `| ${i} | ${markdownCell(t.subject)} | ${markdownCell(modelOf(t))} | ${markdownCell(files.join('; ')) || '—'} | ${t.blockedBy.join(', ') || '—'} | ${t.agent?.acceptanceCriteria?.length ?? 0} | ${statusOf(t)} |`,
    );
  });

  const deps = depsOf(plan.tasks);
  const path = criticalPath(deps);
  const overlaps = overlapSets(computeOverlaps(plan.tasks));
  const rounds = projectedRounds(plan.tasks, overlaps, longestRemainingPath(deps));
  out.push('', '### Dependency graph', '', '```mermaid', mermaidGraph(plan), '```', '');
  out.push(
    '### Critical path',
    '',
    `${path.map((i) => `${i} (${markdownCell(taskAt(plan.tasks, i).subject)})`).join(' → ')}: ${path.length} task${path.length === 1 ? '' : 's'} that must run one after another.`,
    '',
  );
  if (rounds.length > 0) {
    out.push(`### Rounds if every task succeeds (${rounds.length})`, '');
    rounds.forEach((groups, r) => {
      const text = groups.map((g) => g.map((i) => `${i}`).join(', ')).join(' | then ');
      out.push(
        `${r + 1}. ${groups.flat().length === 1 ? 'task' : 'tasks'} ${text}${groups.length > 1 ? ' (the groups overlap on files, so they run one after another)' : ''}`,
      );
    });
    out.push('');
  }
  out.push(
    '### Run it',
    '',
    // Read in the /foreman:design session that wrote the plan, and at a terminal: both ways.
    '- in Claude Code: `/foreman:execute`',
    `- headless, from a terminal: \`${options.headless}\` (watch it with \`${options.status}\`)`,
  );
  return out.join('\n');
}
