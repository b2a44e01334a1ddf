// The person's Read and Edit deny rules as a worker's sandbox settings: what the worker hook's
// sandboxed Bash command may not read (`denyRead`) or write (`denyWrite`), as Claude Code's own
// sandbox carries the same rules into its settings ("Merged with paths from Read(...) deny
// permission rules", its settings schema says; seen on 2.1.330, test/support/CLI-NOTES.md).
//
// A rule's path is read as Claude Code's sandbox reads it: `//p` from the root, `~/p` in the home
// folder, `/p`, `./p` and `p` under the project folder — here under each folder it may mean for a
// worker (the session's project folder, the repository, the worker's worktree, and the worktree's
// copy of a project folder below the repository: core/sandbox/worker-hook.ts `ruleRootsOf`), which denies
// more, never less. Wildcards are kept: the sandbox runtime expands a read glob when it wraps a
// command, but on Linux it drops a write glob (bubblewrap binds concrete paths) and leaves a read
// glob with no literal folder to start from unenforced. A rule it would not enforce exactly is
// not expressed: the hook then makes no decision, and Claude Code asks the person as without it
// (`sandboxDenies`); foreman's own sandboxed commands hold the rest and say which once
// (`heldDenies`, adapters/sandbox/person-denies.ts). Deny rules only, as Claude Code's sandbox: ask
// rules are about its own file tools.

import { posix } from 'node:path';
import { err, ok, type Result } from '../result.ts';

export interface DenyContext {
  /** The folders a relative rule is read against. */
  roots: readonly string[];
  home: string;
  /** Where the worker's commands may write (its worktree, its TMPDIR, `runtimeWritable`): a write rule wholly outside them needs no entry. */
  writable: readonly string[];
  /**
   * The real paths of what `pathsToResolve` names (their deepest existing part resolved through
   * symlinks, as the runtime resolves a deny path): rules and writable folders are compared, and
   * entries written, as real paths. A path it does not hold is taken as spelled.
   */
  real?: ReadonlyMap<string, string>;
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
export const runtimeWritable = (home: string): string[] => [
  '/tmp/claude',
  '/private/tmp/claude',
  posix.join(home, '.npm/_logs'),
  posix.join(home, '.claude/debug'),
];

const READ_TOOLS = new Set(['Read']);
/** `Edit` rules govern every file-writing tool (CLI-NOTES.md); `Write` and `NotebookEdit` rules are taken too, to deny more. */
const WRITE_TOOLS = new Set(['Edit', 'Write', 'NotebookEdit']);
/** The tools whose rules name paths. */
export const FILE_RULE_TOOLS: ReadonlySet<string> = new Set([...READ_TOOLS, ...WRITE_TOOLS]);

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
export function parseFileRule(rule: string): { tool: string; spec: string | null } | null {
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

/** A file rule of the person's: its tool, and whether it is about reading; null for a rule of another tool. */
function fileRule(rule: string): { reads: boolean; spec: string | null } | null {
  const parsed = parseFileRule(rule);
  if (parsed === null) return null;
  const reads = READ_TOOLS.has(parsed.tool);
  return reads || WRITE_TOOLS.has(parsed.tool) ? { reads, spec: parsed.spec } : null;
}

/** The literal part of a rule's path the runtime starts from: the path less a trailing `/**`, or a glob's base folder. */
function literalBase(path: string): { literal: string; base: string } {
  const literal = withoutTrailingGlob(path);
  return { literal, base: isGlob(literal) ? globBase(literal) : literal };
}

/** The paths whose real paths `sandboxDenies` compares: each file rule's literal base, and the writable folders. */
export function pathsToResolve(rules: readonly string[], ctx: Omit<DenyContext, 'real'>): string[] {
  const bases = rules.flatMap((rule) => {
    const file = fileRule(rule);
    const paths = file?.spec == null ? null : rulePaths(file.spec, ctx);
    return paths?.ok ? paths.value.map((path) => literalBase(path).base).filter((base) => base !== '') : [];
  });
  return [...new Set([...bases, ...ctx.writable])];
}

/** What the person's deny rules come to in a sandbox: the entries it holds exactly, and each rule it could not hold as written, with why. */
export interface HeldDenies {
  denies: FileDenies;
  unheld: string[];
}

/**
 * The `denyRead` and `denyWrite` entries for the person's deny `rules` (rules of other tools are
 * not about files and are left out), and the rules the sandbox could not enforce as written, each
 * with why (`Rule(path): why`). A rule held for some of the folders it names and not others
 * gives its entries for those, and is named too.
 */
export function heldDenies(rules: readonly string[], ctx: DenyContext): HeldDenies {
  const denies: FileDenies = { denyRead: [], denyWrite: [] };
  const unheld = new Map<string, string>();
  const real = (path: string): string => ctx.real?.get(path) ?? path;
  /** `path` with its literal base replaced by the base's real path. */
  const realPath = (path: string, base: string): string => `${real(base)}${path.slice(base.length)}`;
  const writable = ctx.writable.map(real);
  for (const rule of rules) {
    const file = fileRule(rule);
    if (file === null) continue;
    const refuse = (why: string) => (unheld.has(rule) ? undefined : unheld.set(rule, `${rule}: ${why}`));
    if (file.spec === null) {
      refuse('every file');
      continue;
    }
    const paths = rulePaths(file.spec, ctx);
    if (!paths.ok) {
      refuse(paths.error);
      continue;
    }
    for (const path of paths.value) {
      const { literal, base } = literalBase(path);
      if (file.reads) {
        // A glob with no literal folder to start from is left unenforced by the runtime.
        if (base === '' || base === '/') refuse('a pattern over the whole file system');
        else denies.denyRead.push(realPath(path, base));
        continue;
      }
      // Writes: only what lies where the worker may write needs an entry (a glob from the root: everywhere).
      if (writable.every((dir) => disjoint(real(base || '/'), dir))) continue;
      if (isGlob(literal)) refuse('a pattern, which the sandbox runtime cannot deny writes to (on Linux it binds whole paths only)');
      else if (writable.some((dir) => within(dir, real(literal)))) refuse("a folder holding the worker's own");
      else denies.denyWrite.push(real(literal));
    }
  }
  return { denies: { denyRead: [...new Set(denies.denyRead)], denyWrite: [...new Set(denies.denyWrite)] }, unheld: [...unheld.values()] };
}

/**
 * The `denyRead` and `denyWrite` entries for the person's deny `rules`, or the first rule the
 * sandbox could not enforce as written, with why: all or nothing, for the worker hook.
 */
export function sandboxDenies(rules: readonly string[], ctx: DenyContext): Result<FileDenies, string> {
  const held = heldDenies(rules, ctx);
  return held.unheld.length > 0 ? err(held.unheld[0]!) : ok(held.denies);
}
