// Completed work setup (run/setup.ts) no longer finds: a task recorded as completed whose created
// files the integration tip does not hold (deleted since, or lost) has lost its work, and runs again.

import { missingAt } from '../adapters/index.ts';
import type { Notice, Plan, SetupFindings, TaskStatus } from '../core/index.ts';

/**
 * Completed tasks (`statusNow`: a task's status with what setup found so far) whose created files
 * are missing at `tip`: added to `findings.reverted`, back to pending. The tasks, and what to tell.
 */
export async function revertLostWork(
  plan: Plan,
  at: { repo: string; tip: string },
  findings: SetupFindings,
  statusNow: (index: number) => TaskStatus,
): Promise<{ reverted: number[]; notices: Notice[] }> {
  const reverted: number[] = [];
  const notices: Notice[] = [];
  for (const [i, task] of plan.tasks.entries()) {
    if (statusNow(i) !== 'completed' || task.metadata.files.create.length === 0) continue;
    const missingCreated = await missingAt(at.repo, at.tip, task.metadata.files.create);
    if (missingCreated.length === 0) continue;
    findings.reverted.push({ task: i, missing: missingCreated });
    reverted.push(i);
    notices.push({
      level: 'warning',
      message: `task ${i} (${task.subject}) was completed but ${missingCreated.join(', ')} no longer exist; it will run again`,
    });
  }
  return { reverted, notices };
}
