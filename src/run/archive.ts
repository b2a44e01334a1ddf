// The end of a plan's life: a finished plan (or one a new design replaces) moves into
// `.design/history/<UTC timestamp>-plan.json`, and the scratch files of its runs go away.
// Shared by the headless run, the /execute skill's `plan.ts commit` and `plan.ts archive`.

import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { compactTimestamp } from '../core/index.ts';

/** The /execute skill's scratch directory next to the plan: worker prompts and the session file. */
export const promptsDirFor = (planPath: string): string => join(dirname(planPath), 'prompts');

/** A history path for `stamp` (`20250101T120000Z`, which `plan.ts history` reads back) that is not taken yet (two archives in the same second get `-2`, `-3`…). */
async function freeTarget(history: string, stamp: string): Promise<string> {
  for (let n = 1; ; n++) {
    const target = join(history, `${stamp}${n === 1 ? '' : `-${n}`}-plan.json`);
    if (!(await stat(target).catch(() => null))) return target;
  }
}

/** Move the plan into `<plan dir>/history/` and remove its worker logs and prompt files. Returns the new path. */
export async function archivePlan(planPath: string): Promise<string> {
  const dir = dirname(planPath);
  const history = join(dir, 'history');
  await mkdir(history, { recursive: true });
  const target = await freeTarget(history, compactTimestamp());
  await rename(planPath, target);
  for (const f of await readdir(dir)) if (/^worker-\d+\.log$/.test(f)) await rm(join(dir, f), { force: true });
  await rm(promptsDirFor(planPath), { recursive: true, force: true });
  return target;
}
