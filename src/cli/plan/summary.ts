// `plan.ts summary`: the plan at a glance in Markdown (see src/core/overview.ts).

import { fileURLToPath } from 'node:url';
import { planOverview } from '../../core/overview.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

/** This checkout's launcher, which installs the runtime dependencies on first use. */
export const launcherPath = fileURLToPath(new URL('../../../bin/foreman', import.meta.url));

export const summary: Command = {
  name: 'summary',
  summary: 'Print the plan at a glance in Markdown: task table, Mermaid graph, critical path, projected rounds, and how to run it.',
  usage: '[--plan FILE]',
  options: { ...planOption },
  async run({ values }, io) {
    const plan = await loadPlan(planPathFrom(values, io.cwd));
    const launcher = JSON.stringify(launcherPath);
    io.out(planOverview(plan, { headless: `${launcher} execute`, status: `${launcher} plan status` }));
    return EXIT.ok;
  },
};
