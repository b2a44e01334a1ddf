// `plan declare N [PATH…]`: widen task N's declared files and put it back. What a blocked task
// needed is known to foreman (the writes its workers were refused, what they changed outside their
// files: `undeclaredWrites`), so `--needed` declares exactly that: the one form the execute skill
// runs without asking, since it can do nothing but widen the named task by what its own attempts
// wanted. Like `retry`, it takes the run lock for the moment it edits the plan (exit 3 while a run
// holds it), validates the plan it makes (exit 2, nothing written, when that is invalid), keeps
// every other edit of the plan, recomputes the overlaps and writes the plan atomically.

import { dirname } from 'node:path';
import { acquireLock, currentLockInfo, Git, lockHeldMessage, regularFilesIn, writePlanAtomic } from '../../adapters/index.ts';
import { type Declared, declareFiles, describeChange, neededPaths, normalizeRepoPath, taskAt, validatePlan, withDefaults } from '../../core/index.ts';
import { describeIgnored, ignoredDeclaredPaths } from '../../run/index.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT, gitFailedError, usageError } from '../exit.ts';
import { existingPlanPath, loadPlan } from '../load.ts';
import { RANGES } from '../numeric-flags.ts';
import { jsonOption, planOption } from './options.ts';

const KINDS = ['create', 'modify', 'may-change'] as const;
type Kind = (typeof KINDS)[number];

/** Folders `--needed` never declares: a worker that wanted to write there is not widened without the person asking. */
const NEVER_NEEDED = ['.claude/', '.git/', '.design/'];

export const declare: Command = {
  name: 'declare',
  summary:
    "Widen task N's declared files with PATH… (or --needed: the files its attempts wanted), and put it back: a blocked or failed task is pending again with its attempts reset (as retry), and when its last attempt's set-aside work is all declared now, its next start re-checks that work before a worker runs. Each PATH is modified when the repository has it, else created (--as sets it).",
  usage: 'N [PATH…] [--as create|modify|may-change] [--needed] [--plan FILE] [--json]',
  options: {
    ...planOption,
    ...jsonOption,
    as: {
      type: 'string',
      valueName: 'KIND',
      description: 'declare every PATH as one kind: create, modify or may-change (default: modify when the repository has the file, else create)',
    },
    needed: {
      type: 'boolean',
      description: "declare exactly the files the task's attempts wanted (refused, or changed and set aside), and nothing else: no PATH or --as with it",
    },
  },
  positionals: [
    { name: 'N', description: 'the task index', required: true, range: RANGES.taskIndex },
    { name: 'PATH', description: 'a path to declare, relative to the top of the repository', required: false, rest: true },
  ],
  async run({ values, positionals, numbers }, io) {
    const index = numbers.N!;
    const given = positionals.slice(1);
    const needed = values.needed === true;
    if (needed && (given.length > 0 || values.as !== undefined))
      throw usageError('--needed declares what the task wanted and nothing else: give no PATH or --as with it');
    if (!needed && given.length === 0) throw usageError('name the paths to declare (or --needed, for the files its attempts wanted)');
    const as = values.as === undefined ? null : String(values.as);
    if (as !== null && !(KINDS as readonly string[]).includes(as)) throw usageError(`--as: "${as}" is not one of ${KINDS.join(', ')}`);
    const path = await existingPlanPath(values, io.cwd);
    const lock = await acquireLock(path, currentLockInfo(`plan declare ${index}`));
    if (!lock.ok)
      throw new CliError(EXIT.cannotRun, [
        `declare: ${lockHeldMessage(lock.error.holder)}; widen the task once it has stopped (\`plan drain\` lets it finish what it runs)`,
      ]);
    try {
      const plan = await loadPlan(path);
      const task = plan.tasks[index];
      if (task === undefined) throw new CliError(EXIT.invalid, [`declare: task ${index} does not exist (the plan has ${plan.tasks.length} tasks)`]);
      let paths: string[];
      if (needed) {
        paths = neededPaths(task);
        if (paths.length === 0)
          throw new CliError(EXIT.invalid, [
            `declare: task ${index} (${task.subject}) has no record of files it wanted; name them: \`plan declare ${index} PATH…\``,
          ]);
        const reserved = paths.filter((p) => NEVER_NEEDED.some((folder) => p.startsWith(folder)));
        if (reserved.length > 0)
          throw new CliError(EXIT.invalid, [
            `declare: task ${index} wanted ${reserved.join(', ')}, under ${NEVER_NEEDED.join(', ')}, which --needed never declares; if you mean it, name the paths: \`plan declare ${index} ${reserved.join(' ')}\``,
          ]);
      } else {
        paths = given.map((p) => {
          try {
            return normalizeRepoPath(p);
          } catch (e) {
            throw usageError(`"${p}": ${(e as Error).message}`);
          }
        });
      }
      const git = new Git(dirname(path));
      const declared = await sortDeclared(paths, as as Kind | null, git);
      const result = declareFiles(plan, index, declared);
      if (!result.ok) throw new CliError(EXIT.invalid, [`declare: ${result.error}`]);
      const checked = validatePlan(withDefaults(result.value.plan));
      if (!checked.ok)
        throw new CliError(EXIT.invalid, [`declare: the plan would be invalid, so nothing was written:`, ...checked.error.map((problem) => `  ${problem}`)]);
      if (await git.isRepo()) {
        const ignored = await ignoredDeclaredPaths(checked.value, git);
        if (!ignored.ok) throw gitFailedError('ask git which declared paths it ignores (nothing was written)', ignored.error);
        if (ignored.value.length > 0)
          throw new CliError(EXIT.invalid, ['declare: nothing was written:', ...ignored.value.map((p) => `  ${describeIgnored(p)}`)]);
      }
      await writePlanAtomic(path, checked.value);
      const widened = taskAt(checked.value.tasks, index);
      if (values.json === true) {
        io.out(
          JSON.stringify({ task: index, declared, recheck: widened.recheck === true, status: widened.status ?? 'pending', changes: result.value.changes }),
        );
      } else {
        for (const change of result.value.changes) io.out(describeChange(change));
      }
      return EXIT.ok;
    } finally {
      await lock.value.release();
    }
  },
};

/** Each path in its list: as `--as` says, else modified when the repository's HEAD has it as a file, else created. */
async function sortDeclared(paths: readonly string[], as: Kind | null, git: Git): Promise<Declared> {
  if (as !== null) return { create: as === 'create' ? paths : [], modify: as === 'modify' ? paths : [], mayChange: as === 'may-change' ? paths : [] };
  const existing = (await git.isRepo()) ? ((await regularFilesIn(git.dir, 'HEAD', paths)) ?? new Set<string>()) : new Set<string>();
  return { create: paths.filter((p) => !existing.has(p)), modify: paths.filter((p) => existing.has(p)), mayChange: [] };
}
