// `plan.ts archive`: put the current plan away in .design/history/ — what /design does before a
// new plan replaces one with unfinished tasks. Refuses (exit 3) while a run holds the lock.

import { acquireLock, currentLockInfo, lockHeldMessage, readPlanFile } from '../../adapters/index.ts';
import { archivePlan } from '../../run/index.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT } from '../exit.ts';
import { planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

export const archive: Command = {
  name: 'archive',
  summary: 'Move the plan to .design/history/<UTC timestamp>-plan.json (keeping it for `history` and `report`) and remove its worker logs and prompts.',
  usage: '[--plan FILE]',
  options: { ...planOption },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const read = await readPlanFile(path);
    if (!read.ok && read.error.kind === 'missing') throw new CliError(EXIT.invalid, [`no plan at ${path}: nothing to archive`]);
    const lock = await acquireLock(path, currentLockInfo('plan archive'));
    if (!lock.ok) throw new CliError(EXIT.cannotRun, [`archive: ${lockHeldMessage(lock.error.holder)}`]);
    try {
      io.out(`${path} moved to ${await archivePlan(path)}`);
      return EXIT.ok;
    } finally {
      await lock.value.release();
    }
  },
};
