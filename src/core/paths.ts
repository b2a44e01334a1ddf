// Plan paths: relative to the repository root, POSIX separators, normalised.
// A path ending in `/` names a directory and covers everything under it.

import { posix } from 'node:path';

/** Directories a plan may never write into: git's internals and foreman's own state. */
const FORBIDDEN_ROOTS = ['.git', '.design'];

/** Why a plan path is refused, or null when it is acceptable. */
export function pathProblem(p: string): string | null {
  if (p.length === 0) return 'is empty';
  if (p.includes('\0')) return 'contains a NUL byte';
  if (p.includes('\\')) return `"${p}" uses a backslash; write paths with "/"`;
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) return `"${p}" is absolute; paths are relative to the repository root`;
  const isDir = p.endsWith('/');
  const body = isDir ? p.slice(0, -1) : p;
  if (body.length === 0) return `"${p}" names the whole repository`;
  const segments = body.split('/');
  const normal = posix.normalize(body).replace(/(.)\/+$/, '$1');
  if (normal === '..' || normal.startsWith('../')) return `"${p}" leaves the repository`;
  if (normal === '.') return `"${p}" names the whole repository`;
  if (normal !== body || segments.includes('.') || segments.includes('') || segments.includes('..')) {
    return `"${p}" is not normalised (write "${normalisedForm(p)}")`;
  }
  const first = segments[0]!;
  // Compared case-insensitively: on macOS and Windows `.GIT/hooks` is `.git/hooks`.
  const root = FORBIDDEN_ROOTS.find((r) => r === first.toLowerCase());
  if (root) return `"${p}" is inside ${root}/, which a task may not touch`;
  return null;
}

function normalisedForm(p: string): string {
  const isDir = p.endsWith('/');
  let n = posix.normalize(p);
  if (n.startsWith('./')) n = n.slice(2);
  if (n.endsWith('/') && !isDir) n = n.slice(0, -1);
  if (!n.endsWith('/') && isDir) n += '/';
  return n;
}

export const isDirPath = (p: string): boolean => p.endsWith('/');

/** True when one path covers the other: equal, or one is a directory containing the other. */
export function pathsIntersect(a: string, b: string): boolean {
  if (a === b) return true;
  if (isDirPath(a) && (b.startsWith(a) || b === a.slice(0, -1))) return true;
  if (isDirPath(b) && (a.startsWith(b) || a === b.slice(0, -1))) return true;
  return false;
}

/** True when `path` is one of `declared`, or under a declared directory. */
export const coveredBy = (path: string, declared: readonly string[]): boolean =>
  declared.some((d) => d === path || (isDirPath(d) && path.startsWith(d)));
