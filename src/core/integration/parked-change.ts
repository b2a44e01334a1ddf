// What a task's work parked for approval changes, as the execute skill shows it to the person who
// reviews it (`plan next`'s `review`): each file, whether it is new, changed or deleted, and its
// lines added and removed; a line summing it up; and the git command that shows the whole diff.

import { splitNul } from './git-text.ts';

export interface ChangedFile {
  path: string;
  change: 'added' | 'modified' | 'deleted';
  /** Lines added and removed; null for a binary file. */
  added: number | null;
  removed: number | null;
}

/** A task's parked work: the commit holding it, its base, and what it changes. */
export interface ParkedChange {
  base: string;
  commit: string;
  files: ChangedFile[];
}

const CHANGES: Record<string, ChangedFile['change']> = { A: 'added', D: 'deleted' };

/**
 * The files of `git diff-tree -r -z --no-renames --name-status` and `--numstat` of the same two
 * commits, in the first one's order.
 */
export function parseChangedFiles(nameStatus: string, numstat: string): ChangedFile[] {
  const counts = new Map<string, { added: number | null; removed: number | null }>();
  for (const record of splitNul(numstat)) {
    const [added = '', removed = '', ...rest] = record.split('\t');
    const count = (n: string) => (/^\d+$/.test(n) ? Number(n) : null);
    counts.set(rest.join('\t'), { added: count(added), removed: count(removed) });
  }
  const records = splitNul(nameStatus);
  const files: ChangedFile[] = [];
  for (let index = 0; index + 1 < records.length; index += 2) {
    const path = records[index + 1]!;
    const count = counts.get(path) ?? { added: null, removed: null };
    files.push({ path, change: CHANGES[records[index]!.charAt(0)] ?? 'modified', ...count });
  }
  return files;
}

/** How many files the summary names; it counts the rest. */
const NAMED = 8;

/** One line for the person: `2 files: src/a.ts (+3 −1), src/b.ts (new, +10)`. */
export function changeSummary(files: readonly ChangedFile[]): string {
  if (files.length === 0) return 'no file changed';
  const lines = (file: ChangedFile) =>
    file.added === null
      ? 'binary'
      : [file.added > 0 ? `+${file.added}` : '', file.removed !== null && file.removed > 0 ? `−${file.removed}` : ''].filter(Boolean).join(' ') || 'no line';
  const named = files
    .slice(0, NAMED)
    .map((file) => `${file.path} (${[file.change === 'modified' ? '' : file.change === 'added' ? 'new' : 'deleted', lines(file)].filter(Boolean).join(', ')})`);
  const rest = files.length > NAMED ? `, and ${files.length - NAMED} more` : '';
  return `${files.length} file${files.length === 1 ? '' : 's'}: ${named.join(', ')}${rest}`;
}
