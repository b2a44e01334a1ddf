// The files beside the plan that record landings: the intent of one under way (a crash completes
// it before anything else), and which integration commit a --no-commit landing left in the
// person's files.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { resumeLanding } from './land.ts';
import { writeFileAtomic } from '../store/index.ts';
import { isObjectId } from '../../core/index.ts';

/** Where a landing is recorded while it runs, next to the plan. */
export const landingIntentPath = (planPath: string): string => join(planPath, '..', 'landing.json');

/** Where a --no-commit run records which integration commit the person's files hold. */
const landedBasePath = (planPath: string): string => join(planPath, '..', 'landed.json');

/** The integration commit an earlier --no-commit landing of this plan left in the person's files, or null. */
export async function landedBase(planPath: string, planId: string): Promise<string | null> {
  const text = await readFile(landedBasePath(planPath), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const data = JSON.parse(text) as { planId?: unknown; commit?: unknown };
    return data.planId === planId && typeof data.commit === 'string' && isObjectId(data.commit) ? data.commit : null;
  } catch {
    return null;
  }
}

export function recordLandedBase(planPath: string, planId: string, commit: string): Promise<void> {
  return writeFileAtomic(landedBasePath(planPath), `${JSON.stringify({ planId, commit })}\n`);
}

/** A landing a crash cut short, completed (or left, with the problem) before anything else runs. */
export const completeLanding = (repo: string, planPath: string) => resumeLanding(repo, landingIntentPath(planPath));
