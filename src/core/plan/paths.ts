// Plan paths: relative to the repository root, POSIX separators, normalised.
// A path ending in `/` names a directory and covers everything under it.

import { posix } from 'node:path';

/** Directories a plan may never write into: git's internals and foreman's own state. */
const FORBIDDEN_ROOTS = ['.git', '.design'];

/** Why a plan path is refused, or null when it is acceptable. */
export function pathProblem(path: string): string | null {
  if (path.length === 0) return 'is empty';
  if (path.includes('\0')) return 'contains a NUL byte';
  if (path.includes('\\')) return `"${path}" uses a backslash; write paths with "/"`;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return `"${path}" is absolute; paths are relative to the repository root`;
  // Claude Code's file tools read a leading `~/` as the home folder, and a shell `~user` as a user's.
  if (path.startsWith('~')) return `"${path}" starts with ~, which Claude Code and the shell read as a home folder; paths are relative to the repository root`;
  const isDir = path.endsWith('/');
  const body = isDir ? path.slice(0, -1) : path;
  if (body.length === 0) return `"${path}" names the whole repository`;
  const segments = body.split('/');
  const normal = posix.normalize(body).replace(/(.)\/+$/, '$1');
  if (normal === '..' || normal.startsWith('../')) return `"${path}" leaves the repository`;
  if (normal === '.') return `"${path}" names the whole repository`;
  if (normal !== body || segments.includes('.') || segments.includes('') || segments.includes('..')) {
    return `"${path}" is not normalised (write "${normalisedForm(path)}")`;
  }
  const first = segments[0]!;
  // Compared case-insensitively: on macOS and Windows `.GIT/hooks` is `.git/hooks`.
  const root = FORBIDDEN_ROOTS.find((r) => r === first.toLowerCase());
  if (root) return `"${path}" is inside ${root}/, which a task may not touch`;
  return null;
}

function normalisedForm(path: string): string {
  const isDir = path.endsWith('/');
  let n = posix.normalize(path);
  if (n.startsWith('./')) n = n.slice(2);
  if (n.endsWith('/') && !isDir) n = n.slice(0, -1);
  if (!n.endsWith('/') && isDir) n += '/';
  return n;
}

export const isDirPath = (path: string): boolean => path.endsWith('/');

/** True when one path covers the other: equal, or one is a directory containing the other. */
export function pathsIntersect(a: string, b: string): boolean {
  if (a === b) return true;
  if (isDirPath(a) && (b.startsWith(a) || b === a.slice(0, -1))) return true;
  if (isDirPath(b) && (a.startsWith(b) || a === b.slice(0, -1))) return true;
  return false;
}

/** True when `path` is one of `declared`, or under a declared directory. */
export const coveredBy = (path: string, declared: readonly string[]): boolean => declared.some((d) => d === path || (isDirPath(d) && path.startsWith(d)));
