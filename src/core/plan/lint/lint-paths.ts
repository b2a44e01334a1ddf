// The plan lint's index of declared paths (plan-lint.ts): by key, with the directories apart, so
// that the tasks using a path, or a directory above it, are found without comparing every pair.

import { isDirPath } from '../paths.ts';
import type { Task } from '../plan.ts';
import type { Use } from './lint-hazards.ts';

/** A path's index key: its form without a trailing `/`, so `src` and `src/` meet. */
export const keyOf = (path: string): string => (isDirPath(path) ? path.slice(0, -1) : path);

/** `a/b/c.ts` → `a`, `a/b`: the keys of the directories holding a key. */
export function directoryKeys(key: string): string[] {
  const keys: string[] = [];
  for (let cut = key.indexOf('/'); cut > 0; cut = key.indexOf('/', cut + 1)) keys.push(key.slice(0, cut));
  return keys;
}

/** Declared paths by key, and apart from them the directories (`src/`), which cover what is under them. */
export interface PathIndex {
  byKey: Map<string, Use[]>;
  directories: Map<string, Use[]>;
}

export function indexUses(tasks: readonly Task[], pathsOf: (task: Task) => readonly string[]): PathIndex {
  const index: PathIndex = { byKey: new Map(), directories: new Map() };
  const add = (map: Map<string, Use[]>, key: string, use: Use) => {
    const list = map.get(key);
    if (list) list.push(use);
    else map.set(key, [use]);
  };
  tasks.forEach((task, i) => {
    for (const path of pathsOf(task)) {
      const key = keyOf(path);
      add(index.byKey, key, { task: i, path });
      if (isDirPath(path)) add(index.directories, key, { task: i, path });
    }
  });
  return index;
}

/** The uses at `path` itself and at the directories above it that are declared as directories. */
export function usesCovering(index: PathIndex, path: string): readonly Use[] {
  const key = keyOf(path);
  const here = index.byKey.get(key) ?? [];
  if (index.directories.size === 0) return here;
  let found: Use[] | null = null;
  for (let cut = key.indexOf('/'); cut > 0; cut = key.indexOf('/', cut + 1)) {
    const above = index.directories.get(key.slice(0, cut));
    if (above !== undefined) found = [...(found ?? here), ...above];
  }
  return found ?? here;
}
