import { dirname } from 'node:path';
import { Git, writePlanAtomic } from '../../adapters/index.ts';
import { HOW_TO_ACCEPT, lintPlan, type PlanLint, plural, withDefaults } from '../../core/index.ts';
import { planRepositoryProblem } from '../../run/index.ts';
import { describeSetupProblem } from '../setup-problem.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT, gitFailedError } from '../exit.ts';
import { loadPlan, planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const check: Command = {
  name: 'check',
  summary:
    "Validate the plan: schema, dependencies, cycles, paths, computed file overlaps, and (inside a git repository) what a run would refuse of it there, in the run's words and exit code: no commit yet, a declared path that leads outside the repository, names a directory as a file, or is ignored by git; then warn of hazards it still holds (undeclared files, unordered tasks, lockfiles, checks needing a file nothing makes, unknown fields and models), each with its fix. Exit 0 if valid (warnings included), 2 if not (4 when git fails).",
  usage: '[--plan FILE] [--fix] [--strict]',
  options: {
    ...planOption,
    fix: { type: 'boolean', description: 'write defaults (status, attempts, model) and the computed fileOverlaps back to the plan' },
    strict: { type: 'boolean', description: 'exit 2 when a warning is left (neither fixed nor accepted in acceptedWarnings)' },
  },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const fix = Boolean(values.fix);
    const plan = await loadPlan(path, { ignoreDeclaredOverlaps: fix });
    // The plan's repository is the one its folder is in; a plan outside any repository is only
    // checked on its own.
    const git = new Git(dirname(path));
    const inRepository = await git.isRepo();
    // The last commit's files, listed once for the refusals and the lint.
    const committed = inRepository ? await git.committedFiles() : null;
    if (committed !== null) {
      // What a run refuses of this plan on this repository's last commit is refused here, in the run's words.
      const top = await git.root();
      if (!top.ok) throw gitFailedError('find the top of the repository', top.error);
      const problem = await planRepositoryProblem(plan, top.value, git, committed);
      if (problem !== null) {
        const described = describeSetupProblem(problem);
        throw new CliError(described.code, described.lines);
      }
    }
    // Outside a repository only the hazards between the plan's own tasks can be found.
    const lint = lintPlan(plan, committed);
    if (fix) await writePlanAtomic(path, withDefaults(plan));
    const valid = `${path}: valid (${plural(plan.tasks.length, 'task')}${acceptedNote(lint)})${fix ? '; defaults and file overlaps written' : ''}`;
    if (lint.warnings.length === 0) {
      io.out(valid);
      return EXIT.ok;
    }
    const listed = [...lint.warnings.map((warning) => `  ${warning.message}`), HOW_TO_ACCEPT];
    if (values.strict === true) throw new CliError(EXIT.invalid, [`${valid}, but --strict refuses its ${plural(lint.warnings.length, 'warning')}:`, ...listed]);
    io.out([`${valid}, with ${plural(lint.warnings.length, 'warning')}:`, ...listed].join('\n'));
    return EXIT.ok;
  },
};

/** `, 2 warnings accepted`: accepted warnings are not listed, but a person sees that there are some. */
const acceptedNote = (lint: PlanLint): string => (lint.accepted.length === 0 ? '' : `, ${plural(lint.accepted.length, 'warning')} accepted`);
