// The record of a landing in progress (land.ts): written before anything changes and removed when
// it is done, so that a crash in between is completed by `resumeLanding`.

import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isObjectId, type LandMode } from '../../core/index.ts';

/** The record of a landing in progress. */
export interface Intent {
  version: 1;
  mode: LandMode;
  branch: string | null;
  from: string;
  to: string;
  paths: string[];
}

const ZERO_OBJECT = /^0+$/;

export async function writeIntent(intentPath: string, intent: Intent): Promise<void> {
  await mkdir(path.dirname(intentPath), { recursive: true });
  const temporary = `${intentPath}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(intent, null, 2)}\n`);
  await rename(temporary, intentPath);
}

export function parseIntent(text: string): Intent | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (caught) {
    return `not JSON (${(caught as Error).message})`;
  }
  const record = data as Partial<Intent> | null;
  const isCommit = (value: unknown): value is string => isObjectId(value) && !ZERO_OBJECT.test(value);
  if (typeof record !== 'object' || record === null) return 'not an object';
  if (record.mode !== 'commit' && record.mode !== 'worktree') return 'mode is neither "commit" nor "worktree"';
  if (!(record.branch === null || (typeof record.branch === 'string' && record.branch.startsWith('refs/heads/'))))
    return 'branch is neither null nor refs/heads/…';
  if (!isCommit(record.from) || !isCommit(record.to)) return 'from and to must be commit ids';
  if (!Array.isArray(record.paths) || !record.paths.every((entry) => typeof entry === 'string')) return 'paths must be a list of strings';
  return { version: 1, mode: record.mode, branch: record.branch, from: record.from, to: record.to, paths: record.paths };
}
