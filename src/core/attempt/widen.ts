// Widening a task's declared files: by the person (`plan declare`), or, in a headless run given
// `--widen PATTERN…`, by foreman itself for the undeclared files an attempt showed it needs. Pure:
// which files an attempt wanted, whether the run may add each, and the fix foreman names.

import type { PermissionDenial } from './worker-run.ts';
import type { Verification } from './finalize.ts';
import { coveredBy, type Plan, statusOf, type Task, writesOf } from '../plan/index.ts';

/** A file an attempt changed outside its declared files, or was refused writing, and whether it is a regular file git tracks at the attempt's start. */
export interface WantedPath {
  path: string;
  tracked: boolean;
}

/** The undeclared files an attempt wanted: those it changed (set aside) and those it was refused, each once. */
export function wantedPaths(verification: Verification | undefined, denials: readonly PermissionDenial[]): WantedPath[] {
  const found = new Map<string, boolean>();
  const checked = verification?.ok === true ? verification.value : null;
  const tracked = new Set(checked?.setAside?.tracked ?? []);
  for (const path of checked?.outsideChanges ?? []) found.set(path, tracked.has(path));
  for (const denial of denials) if (denial.path !== undefined) found.set(denial.path, (found.get(denial.path) ?? false) || denial.tracked === true);
  return [...found].map(([path, isTracked]) => ({ path, tracked: isTracked })).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Folders foreman never widens a task into: its own files, git's, Claude Code's settings and agents. */
const RESERVED = ['.design/', '.git/', '.claude/'];

/**
 * `--widen` patterns as git's wildmatch reads a path pattern: `*` and `?` within one folder,
 * `**` across folders (`src/**` is everything under src/), `[…]` a character class.
 */
export function matchesPattern(path: string, pattern: string): boolean {
  let source = '';
  for (let at = 0; at < pattern.length; at++) {
    const c = pattern[at]!;
    if (c === '*' && pattern[at + 1] === '*') {
      const slash = pattern[at + 2] === '/';
      source += slash ? '(?:.*/)?' : '.*';
      at += slash ? 2 : 1;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', at + 1);
      if (end < 0) source += '\\[';
      else {
        source += `[${pattern
          .slice(at + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        at = end;
      }
    } else source += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`).test(path);
}

/** Why the run may not add a wanted file to its task's declared files, or null when it may. */
export function widenRefusal(plan: Plan, index: number, wanted: WantedPath, patterns: readonly string[]): string | null {
  if (RESERVED.some((folder) => wanted.path.startsWith(folder)))
    return `${wanted.path} is under ${RESERVED.find((folder) => wanted.path.startsWith(folder))}, which a run never widens a task into`;
  if (!patterns.some((pattern) => matchesPattern(wanted.path, pattern))) return `${wanted.path} matches no --widen pattern (${patterns.join(' ')})`;
  if (!wanted.tracked) return `${wanted.path} is not a file git tracks (a run widens a task only to files the repository has)`;
  const other = plan.tasks.findIndex((task, i) => i !== index && statusOf(task) !== 'completed' && coveredBy(wanted.path, writesOf(task)));
  if (other >= 0) return `${wanted.path} is declared by task ${other}, which has not landed`;
  return null;
}

/** The task with `paths` added to its declared files, to the list `as` names (those it already declares are left). */
export function withDeclared(task: Task, paths: readonly string[], as: 'create' | 'modify' | 'mayChange'): Task {
  const files = task.metadata.files;
  const added = paths.filter((path) => !coveredBy(path, writesOf(task)));
  if (added.length === 0) return task;
  const list = as === 'mayChange' ? (files.mayChange ?? []) : files[as];
  return { ...task, metadata: { ...task.metadata, files: { ...files, [as]: [...list, ...added] } } };
}

/** What `task`'s attempts wanted outside its declared files and it still does not declare: refused writes and changes set aside. */
export const neededPaths = (task: Task): string[] =>
  [...new Set([...(task.undeclaredWrites ?? []), ...(task.setAside?.paths ?? [])])].filter((path) => !coveredBy(path, writesOf(task))).sort();

/** Whether the next start of `task` can re-check the work its last attempt set aside instead of running a worker: kept, and now all declared. */
export const recheckable = (task: Task): boolean => task.setAside?.commit !== undefined && task.setAside.paths.every((path) => coveredBy(path, writesOf(task)));
