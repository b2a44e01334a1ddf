// `plan summary`: the plan at a glance in Markdown (see src/core/plan/overview.ts).

import { ownLayout } from '../../adapters/index.ts';
import { commandHint, planOverview, probeFindings, probeHeadline } from '../../core/index.ts';
import { storedProbe } from '../../run/index.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const summary: Command = {
  name: 'summary',
  summary:
    "Print the plan at a glance in Markdown: task table, Mermaid graph, critical path, projected rounds, how to run it, and the last probe's verdict when it probed the plan as it is.",
  usage: '[--plan FILE]',
  options: { ...planOption },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const plan = await loadPlan(path);
    const layout = ownLayout();
    io.out(planOverview(plan, { headless: commandHint('execute', '', layout), status: commandHint('plan', 'status', layout) }));
    // The last probe, only when it probed the plan's checks as they are now.
    const probe = await storedProbe(path, plan);
    if (probe !== null) {
      const { problems } = probeFindings(probe);
      io.out(['', '## Probe', '', probeHeadline(probe), ...problems.map((p) => `- ${p}`)].join('\n'));
    }
    return EXIT.ok;
  },
};
