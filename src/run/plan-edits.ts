// The in-session steps and a person's edit to the plan file between them. Each step reads
// plan.json afresh, so an edit made between two steps (by hand, or with `plan check --fix`) is
// what the next step works with; nothing is written over it. The step says so, once: it keeps the
// digest of the file as the last step left it next to the session (`<prompts>/plan.sha256`).

import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Plan, statusOf } from '../core/index.ts';
import { promptsDirFor } from './archive.ts';

const digestPathFor = (planPath: string): string => join(promptsDirFor(planPath), 'plan.sha256');
const digestOf = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Whether the plan file's `text` differs from what the last step left (false when no step left a digest). */
export async function editedSinceLastStep(planPath: string, text: string): Promise<boolean> {
  const last = (await readFile(digestPathFor(planPath), 'utf8').catch(() => '')).trim();
  return last !== '' && last !== digestOf(text);
}

/** After a step: remember the plan file as it leaves it (nothing when the step archived the plan). */
export async function rememberPlanFile(planPath: string): Promise<void> {
  const text = await readFile(planPath, 'utf8').catch(() => null);
  if (text === null) return;
  await mkdir(promptsDirFor(planPath), { recursive: true });
  await writeFile(digestPathFor(planPath), `${digestOf(text)}\n`);
}

/** What a step says when the plan changed since the last one: it used the edit, and what that means for work under way. */
export function describeEditBetweenSteps(plan: Plan): { level: 'warning'; message: string } {
  const running = plan.tasks.flatMap((t, i) => (statusOf(t) === 'in_progress' ? [i] : []));
  const underWay =
    running.length === 0
      ? ''
      : ` ${running.length === 1 ? 'Task' : 'Tasks'} ${running.join(', ')}, in progress, keep the prompts their workers were given; finalize judges them against the plan as it is now (its declared files and acceptance checks), and a changed prompt or fallback takes effect at a task's next attempt.`;
  return { level: 'warning', message: `the plan file changed since the last step (an edit by hand?): this step used it as it is now.${underWay}` };
}
