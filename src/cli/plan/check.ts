import { writePlanAtomic } from '../../adapters/plan-store.ts';
import { withDefaults } from '../../core/validate.ts';
import type { Command } from '../command.ts';
import { EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const check: Command = {
  name: 'check',
  summary: 'Validate the plan: schema, dependencies, cycles, paths, computed file overlaps. Exit 0 if valid, 2 if not.',
  usage: '[--plan FILE] [--fix]',
  options: {
    ...planOption,
    fix: { type: 'boolean', description: 'write defaults (status, attempts, model) and the computed fileOverlaps back to the plan' },
  },
  async run({ values }, io) {
    const path = planPathFrom(values, io.cwd);
    const fix = Boolean(values.fix);
    const plan = await loadPlan(path, { ignoreDeclaredOverlaps: fix });
    if (fix) {
      await writePlanAtomic(path, withDefaults(plan));
      io.out(`${path}: valid (${plan.tasks.length} tasks); defaults and file overlaps written`);
    } else {
      io.out(`${path}: valid (${plan.tasks.length} tasks)`);
    }
    return EXIT.ok;
  },
};
