// The person's Read and Edit deny rules as a worker's sandbox settings: what the worker hook's
// sandboxed Bash command may not read (`denyRead`) or write (`denyWrite`), as Claude Code's own
// sandbox carries the same rules into its settings ("Merged with paths from Read(...) deny
// permission rules", its settings schema says; seen on 2.1.330, test/support/CLI-NOTES.md).
//
// A rule's path is read as Claude Code's sandbox reads it: `//p` from the root, `~/p` in the home
// folder, `/p`, `./p` and `p` under the project folder — here under each folder it may mean for a
// worker (the session's project folder, the repository, the worker's worktree, and the worktree's
// copy of a project folder below the repository: core/worker-hook.ts `ruleRootsOf`), which denies
// more, never less. Wildcards are kept: the sandbox runtime expands a read glob when it wraps a
// command, but on Linux it drops a write glob (bubblewrap binds concrete paths) and leaves a read
// glob with no literal folder to start from unenforced. A rule it would not enforce exactly is
// not expressed: the hook then makes no decision, and Claude Code asks the person as without it.
// Deny rules only, as Claude Code's sandbox: ask rules are about its own file tools.

import { posix } from 'node:path';
import { type Result, err, ok } from './failure.ts';

export interface DenyContext {
  /** The folders a relative rule is read against. */
  roots: readonly string[];
  home: string;
  /** Where the worker's commands may write (its worktree, its TMPDIR, `runtimeWritable`): a write rule wholly outside them needs no entry. */
  writable: readonly string[];
}

/** What the sandbox settings get: more `denyRead` and `denyWrite` entries. */
export interface FileDenies {
  denyRead: string[];
  denyWrite: string[];
}

/**
 * Where the sandbox runtime (0.0.78) lets every command write besides what it is given: its own
 * folders under /tmp and two in the home folder (its `getDefaultWritePaths`).
 */
export const runtimeWritable = (home: string): string[] => ['/tmp/claude', '/private/tmp/claude', posix.join(home, '.npm/_logs'), posix.join(home, '.claude/debug')];

const READ_TOOLS = new Set(['Read']);
/** `Edit` rules govern every file-writing tool (CLI-NOTES.md); `Write` and `NotebookEdit` rules are taken too, to deny more. */
const WRITE_TOOLS = new Set(['Edit', 'Write', 'NotebookEdit']);

/** The sandbox runtime's glob characters (its `containsGlobChars`). */
const isGlob = (path: string): boolean => /[*?[\]]/.test(path);

/** The runtime drops a trailing `/**`: the folder and everything in it. */
const withoutTrailingGlob = (path: string): string => path.replace(/\/\*\*$/, '') || '/';

/** The literal folder a glob starts from (the runtime's `globPatternBaseDir`). */
function globBase(path: string): string {
  const literal = path.split(/[*?[\]]/)[0]!;
  if (literal === '') return '';
  return literal.endsWith('/') ? literal.slice(0, -1) : posix.dirname(literal);
}

const within = (path: string, dir: string): boolean => dir === '/' || path === dir || path.startsWith(`${dir}/`);
const disjoint = (a: string, b: string): boolean => !within(a, b) && !within(b, a);

/** A rule's tool and the path between its parentheses (`Read(./.env)` → Read, `./.env`); null spec for a bare tool. */
function parseFileRule(rule: string): { tool: string; spec: string | null } | null {
  const m = /^\s*([A-Za-z]+)\s*(?:\((.*)\))?\s*$/s.exec(rule);
  return m === null ? null : { tool: m[1]!, spec: m[2] ?? null };
}

/** The absolute path patterns a rule's path names, or why the sandbox cannot be told. */
export function rulePaths(spec: string, ctx: Pick<DenyContext, 'roots' | 'home'>): Result<string[], string> {
  if (spec === '' || spec.trim() !== spec) return err('a path that is empty or starts or ends with a blank');
  // The rules' escapes (`\*`, `\[`) are not the runtime's glob syntax.
  if (spec.includes('\\')) return err('a backslash escape');
  const trimmed = (p: string) => (p.length > 1 ? p.replace(/\/+$/, '') : p);
  if (spec.startsWith('//')) return ok([trimmed(posix.normalize(`/${spec.slice(2)}`))]);
  if (spec === '~' || spec.startsWith('~/')) return ok([trimmed(posix.join(ctx.home, spec.slice(1)))]);
  if (spec.startsWith('~')) return err('another user’s home folder');
  const relative = spec.startsWith('/') ? spec.slice(1) : spec;
  return ok([...new Set(ctx.roots.map((root) => trimmed(posix.join(root, relative))))]);
}

/**
 * The `denyRead` and `denyWrite` entries for the person's deny `rules` (rules of other tools are
 * not about files and are left out), or the first rule the sandbox could not enforce as written,
 * with why.
 */
export function sandboxDenies(rules: readonly string[], ctx: DenyContext): Result<FileDenies, string> {
  const denies: FileDenies = { denyRead: [], denyWrite: [] };
  for (const rule of rules) {
    const parsed = parseFileRule(rule);
    const reads = parsed !== null && READ_TOOLS.has(parsed.tool);
    if (parsed === null || (!reads && !WRITE_TOOLS.has(parsed.tool))) continue;
    if (parsed.spec === null) return err(`${rule}: every file`);
    const paths = rulePaths(parsed.spec, ctx);
    if (!paths.ok) return err(`${rule}: ${paths.error}`);
    for (const path of paths.value) {
      const literal = withoutTrailingGlob(path);
      if (reads) {
        // A glob with no literal folder to start from is left unenforced by the runtime.
        const base = isGlob(literal) ? globBase(literal) : literal;
        if (base === '' || base === '/') return err(`${rule}: a pattern over the whole file system`);
        denies.denyRead.push(path);
        continue;
      }
      // Writes: only what lies where the worker may write needs an entry.
      const base = isGlob(literal) ? globBase(literal) : literal;
      if (ctx.writable.every((dir) => disjoint(base, dir))) continue;
      if (isGlob(literal)) return err(`${rule}: a pattern, which the sandbox runtime cannot deny writes to (on Linux it binds whole paths only)`);
      if (ctx.writable.some((dir) => within(dir, literal))) return err(`${rule}: a folder holding the worker's own`);
      denies.denyWrite.push(literal);
    }
  }
  return ok({ denyRead: [...new Set(denies.denyRead)], denyWrite: [...new Set(denies.denyWrite)] });
}
