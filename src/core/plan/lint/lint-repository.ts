// The plan lint's hazards between pending tasks and the files of the repository's last commit
// (plan-lint.ts): a file modified that nothing has, a tracked file a prompt names undeclared, a
// manifest modified without its lockfile, a file an acceptance check needs that nothing makes.

import { checkPaths } from './check-paths.ts';
import { coveredBy, isDirPath } from '../paths.ts';
import { type Task, writesOf } from '../plan.ts';
import { type Hazard, isDone } from './lint-hazards.ts';
import { directoryKeys, keyOf } from './lint-paths.ts';

/**
 * Manifests and the lockfiles their package manager rewrites on an install. `workspace`: the
 * lockfile may sit in a directory above the manifest (npm, pnpm, yarn, Cargo and uv workspaces
 * keep one lockfile at their root); the nearest directory holding one is the manifest's.
 */
const LOCKFILES: ReadonlyArray<{ manifest: string; lockfiles: readonly string[]; workspace: boolean }> = [
  {
    manifest: 'package.json',
    lockfiles: ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock', 'bun.lock', 'bun.lockb'],
    workspace: true,
  },
  { manifest: 'Cargo.toml', lockfiles: ['Cargo.lock'], workspace: true },
  { manifest: 'go.mod', lockfiles: ['go.sum'], workspace: false },
  { manifest: 'pyproject.toml', lockfiles: ['poetry.lock', 'uv.lock', 'pdm.lock'], workspace: true },
  { manifest: 'Gemfile', lockfiles: ['Gemfile.lock'], workspace: false },
  { manifest: 'composer.json', lockfiles: ['composer.lock'], workspace: false },
];

/** Every path a task declares: what it writes or may write, what it reads, the files given it as context. */
const declaredOf = (task: Task): string[] => [
  ...writesOf(task),
  ...(task.metadata.reads ?? []),
  ...(task.agent?.contextFiles ?? []).flatMap((file) => (typeof file.path === 'string' ? [file.path] : [])),
];

/**
 * Where a setup command installs and where local settings live (`node_modules/`, `.env`, `.venv/`):
 * files a check may well find in a provisioned worktree though no commit has them.
 */
const provisioned = (path: string): boolean => path.split('/').some((segment) => segment.startsWith('.') || segment === 'node_modules');

/** Files pending tasks' acceptance checks need that the last commit does not have and no task writes: those checks fail whatever the worker does. */
export function missingCheckFiles(tasks: readonly Task[], tracked: ReadonlySet<string>): Hazard[] {
  const hazards: Hazard[] = [];
  let known: ((path: string, directory: boolean) => boolean) | null = null;
  tasks.forEach((task, t) => {
    if (isDone(task)) return;
    (task.agent?.acceptanceCriteria ?? []).forEach((criterion, k) => {
      for (const { path, directory } of checkPaths(criterion.check)) {
        if ((!directory && tracked.has(path)) || provisioned(path)) continue;
        // Built once, and only when a check names a file the commit lacks.
        known ??= knownPaths(tasks, tracked);
        if (!known(path, directory)) hazards.push({ kind: 'missing-check-file', task: t, criterion: k, path });
      }
    });
  });
  return hazards;
}

/** Whether a path is a file or directory of the last commit, or one some task writes (or writes under). */
function knownPaths(tasks: readonly Task[], tracked: ReadonlySet<string>): (path: string, directory: boolean) => boolean {
  const writes = new Set(tasks.flatMap(writesOf).map(keyOf));
  // Every directory holding a known file, and the directories tasks declare (which hold anything under them).
  const directories = new Set<string>();
  const declaredDirectories = new Set<string>();
  for (const file of [...tracked, ...writes]) for (const key of directoryKeys(file)) directories.add(key);
  for (const task of tasks) for (const write of writesOf(task)) if (isDirPath(write)) declaredDirectories.add(keyOf(write));
  const underDeclared = (path: string) => directoryKeys(path).some((key) => declaredDirectories.has(key));
  return (path, directory) =>
    directories.has(path) || declaredDirectories.has(path) || (!directory && (tracked.has(path) || writes.has(path))) || underDeclared(path);
}

/** What each pending task uses of the last commit without declaring it: files its prompt names, lockfiles of the manifests it modifies. */
export function undeclaredFiles(tasks: readonly Task[], tracked: ReadonlySet<string>): Hazard[] {
  const hazards: Hazard[] = [];
  tasks.forEach((task, t) => {
    if (isDone(task)) return;
    const named = promptPaths(task.prompt ?? '', tracked);
    const declared = named.length > 0 ? declaredOf(task) : [];
    for (const path of named) if (!coveredBy(path, declared)) hazards.push({ kind: 'undeclared-prompt-path', task: t, path });
    for (const path of task.metadata.files.modify) {
      const lockfiles = lockfilesOf(path, tracked);
      if (lockfiles.length === 0) continue;
      const changes = writesOf(task);
      const undeclared = lockfiles.filter((lockfile) => !coveredBy(lockfile, changes));
      if (undeclared.length > 0) hazards.push({ kind: 'lockfile', task: t, path, lockfiles: undeclared });
    }
  });
  return hazards;
}

/**
 * Whether a path is in the last commit, or is made by a task (a file under a directory, a file
 * under a directory some task creates): null when the caller knows no repository.
 */
export function existence(tasks: readonly Task[], tracked: ReadonlySet<string> | null): ((path: string) => boolean) | null {
  if (tracked === null) return null;
  let directories: Set<string> | null = null;
  return (path) => {
    if (!isDirPath(path)) return tracked.has(path);
    // Built once, and only when a task modifies a directory.
    if (directories === null) {
      directories = new Set<string>();
      for (const file of tracked) for (const key of directoryKeys(file)) directories.add(key);
      for (const task of tasks) for (const created of task.metadata.files.create) for (const key of directoryKeys(keyOf(created))) directories.add(key);
    }
    return directories.has(keyOf(path));
  };
}

// Words a prompt is split at: whitespace, quotes, brackets and the marks Markdown wraps a name in.
const PROMPT_SEPARATORS = /[\s`'"()<>[\]{},;|*]+/;

/**
 * The files of the last commit a prompt names: words that look like repository paths (holding a
 * `/` or a `.`, or a build file such as `Makefile`), with a trailing full stop, colon or line
 * number (`src/a.ts:12`) and a leading `./` taken off, matched exactly against `tracked`. Prose
 * never matches: only a tracked file's exact name does.
 */
export function promptPaths(prompt: string, tracked: ReadonlySet<string>): string[] {
  const found = new Set<string>();
  for (const word of prompt.split(PROMPT_SEPARATORS)) {
    // Most words are prose: only the ones that could be a path are cleaned up and looked up.
    if (!(word.includes('/') || word.includes('.') || word.endsWith('file'))) continue;
    const path = word
      .replace(/^\.\//, '')
      .replace(/#.*$/, '')
      .replace(/[.:!?]+$/, '')
      .replace(/(?::\d+)+$/, '');
    if (path === '' || !(path.includes('/') || path.includes('.') || /^[A-Z][A-Za-z]*file$/.test(path))) continue;
    if (tracked.has(path)) found.add(path);
  }
  return [...found];
}

/** The lockfiles of the last commit that belong to `manifest` (the nearest directory holding any), or none. */
export function lockfilesOf(manifest: string, tracked: ReadonlySet<string>): string[] {
  const slash = manifest.lastIndexOf('/');
  const name = manifest.slice(slash + 1);
  const kind = LOCKFILES.find((entry) => entry.manifest === name);
  if (kind === undefined) return [];
  let dir = slash < 0 ? '' : manifest.slice(0, slash);
  for (;;) {
    const here = kind.lockfiles.map((lockfile) => (dir === '' ? lockfile : `${dir}/${lockfile}`)).filter((path) => tracked.has(path));
    if (here.length > 0 || !kind.workspace || dir === '') return here;
    const up = dir.lastIndexOf('/');
    dir = up < 0 ? '' : dir.slice(0, up);
  }
}
