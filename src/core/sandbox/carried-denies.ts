// The person's deny rules, carried into a headless worker's settings. A headless worker runs with
// `--setting-sources ""` (so no allow rule or hook of the person's widens what it may do), which
// also drops their deny rules: `Read(~/.aws/**)` or `Read(./.env)` would not hold for it, though
// it holds for them and for an in-session worker. They are given back in its `--settings`, where
// deny wins over every allow rule foreman writes, and Claude Code carries the Read and Edit ones
// into the worker's sandbox as it does for the person (test/support/CLI-NOTES.md).
//
// A rule's path is relative to the person's project folder when it is not `//p` or `~/p`; for a
// worker that is both the repository (reached by its absolute path) and the worker's worktree (its
// copy of it), so a relative rule is anchored at each, as the edit rules are (`//<root>/<path>`,
// core/plan/scope.ts), which leaves nothing to how the CLI reads a relative path in `--settings`. A path
// with no inner `/` matches at any depth in Claude Code's rules, as in gitignore (`./a.txt` also
// names `sub/a.txt`), so it is anchored at `<root>/**/` as well. Ask rules are not carried: a
// headless worker has nobody to ask, and what it may do is already exact.

import { posix } from 'node:path';
import { FILE_RULE_TOOLS, parseFileRule } from './sandbox-denies.ts';
import { escapeRulePath } from '../plan/index.ts';

/** `rules` as a worker whose project folder is each of `roots` (real paths) holds them: path rules anchored there, the rest as written. */
export function carriedDenies(rules: readonly string[], roots: readonly string[]): string[] {
  const carried: string[] = [];
  for (const rule of rules) {
    const parsed = parseFileRule(rule);
    const spec = parsed?.spec;
    if (parsed === null || spec == null || !FILE_RULE_TOOLS.has(parsed.tool) || spec.startsWith('//') || spec.startsWith('~')) {
      carried.push(rule.trim());
      continue;
    }
    // `/p` is anchored at the project folder; `./p` and `p` are relative to it.
    const anchored = spec.startsWith('/');
    const relative = anchored ? spec.slice(1) : spec.replace(/^\.\//, '');
    const anyDepth = !anchored && !relative.replace(/\/$/, '').includes('/');
    for (const root of [...new Set(roots)]) {
      carried.push(`${parsed.tool}(/${anchoredAt(root, relative)})`);
      if (anyDepth) carried.push(`${parsed.tool}(/${anchoredAt(root, `**/${relative}`)})`);
    }
  }
  return [...new Set(carried)];
}

/** `relative` under `root`, `..` resolved, the part that is `root` escaped so the CLI reads it literally (the rest is the person's pattern). */
function anchoredAt(root: string, relative: string): string {
  const base = root.replace(/\/+$/, '') || '/';
  const joined = posix.join(base, relative);
  const inside = joined === base || joined.startsWith(base === '/' ? '/' : `${base}/`);
  return inside ? `${escapeRulePath(base)}${joined.slice(base.length)}` : joined;
}
