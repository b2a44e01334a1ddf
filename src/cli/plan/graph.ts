import { mermaidGraph } from '../../core/index.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const graph: Command = {
  name: 'graph',
  summary: 'Print the dependency graph as a Mermaid flowchart, tasks coloured by status.',
  usage: '[--plan FILE]',
  options: { ...planOption },
  async run({ values }, io) {
    const plan = await loadPlan(await planPathFrom(values, io.cwd));
    io.out(mermaidGraph(plan));
    return EXIT.ok;
  },
};
