import { computeOverlaps, depsOf, longestRemainingPath, overlapSets, parallelGroups, readySet, taskAt } from '../../core/index.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { jsonOption, planOption } from './options.ts';

export const ready: Command = {
  name: 'ready',
  summary: 'Print the ready set (pending tasks whose blockers completed), grouped so no two tasks in a group overlap.',
  usage: '[--plan FILE] [--json]',
  options: { ...planOption, ...jsonOption },
  async run({ values }, io) {
    const plan = await loadPlan(await planPathFrom(values, io.cwd));
    const priority = longestRemainingPath(depsOf(plan.tasks));
    const groups = parallelGroups(readySet(plan.tasks), overlapSets(computeOverlaps(plan.tasks)), priority);
    if (values.json) {
      io.out(JSON.stringify({ ready: groups.flat().sort((a, b) => a - b), groups }));
      return EXIT.ok;
    }
    if (groups.length === 0) {
      io.out('No task is ready.');
      return EXIT.ok;
    }
    groups.forEach((g, k) => {
      io.out(`Group ${k + 1}${groups.length > 1 ? (k === 0 ? ' (start these together)' : ` (after group ${k})`) : ''}:`);
      for (const i of g) io.out(`  ${i}: ${taskAt(plan.tasks, i).subject}`);
    });
    return EXIT.ok;
  },
};
