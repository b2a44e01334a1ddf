import { dirname } from 'node:path';
import { Git } from '../../adapters/git/repository.ts';
import { writePlanAtomic } from '../../adapters/plan-store.ts';
import { plural } from '../../core/format.ts';
import { withDefaults } from '../../core/validate.ts';
import { describeIgnored, ignoredDeclaredPaths } from '../../run/setup.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const check: Command = {
  name: 'check',
  summary:
    "Validate the plan: schema, dependencies, cycles, paths, computed file overlaps, and (inside a git repository) no declared path that git ignores. Exit 0 if valid, 2 if not.",
  usage: '[--plan FILE] [--fix]',
  options: {
    ...planOption,
    fix: { type: 'boolean', description: 'write defaults (status, attempts, model) and the computed fileOverlaps back to the plan' },
  },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const fix = Boolean(values.fix);
    const plan = await loadPlan(path, { ignoreDeclaredOverlaps: fix });
    // The plan's repository is the one its folder is in; a plan outside any repository is only
    // checked on its own.
    const git = new Git(dirname(path));
    if (await git.isRepo()) {
      const ignored = await ignoredDeclaredPaths(plan, git);
      if (ignored.length > 0) {
        throw new CliError(EXIT.invalid, [`${path}: the plan is invalid (${plural(ignored.length, 'problem')}):`, ...ignored.map((p) => `  ${describeIgnored(p)}`)]);
      }
    }
    if (fix) {
      await writePlanAtomic(path, withDefaults(plan));
      io.out(`${path}: valid (${plural(plan.tasks.length, 'task')}); defaults and file overlaps written`);
    } else {
      io.out(`${path}: valid (${plural(plan.tasks.length, 'task')})`);
    }
    return EXIT.ok;
  },
};
