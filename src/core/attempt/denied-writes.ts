// The tool calls a worker was refused: named in an attempt's failure, and the repository paths of
// the refused writes, which count as undeclared writes (finalize.ts).

import type { PermissionDenial } from './worker-run.ts';
import { clipHead, clipTail } from '../format.ts';

export function describeDenials(denials: readonly PermissionDenial[]): string {
  if (denials.length === 0) return '';
  const tools = denials.map((d) => {
    const input = d.input as { command?: string; file_path?: string } | undefined;
    // A path keeps its end (the file's name: a worktree's directory makes the head long), a command its start.
    const what = input?.command !== undefined ? clipHead(input.command, 80) : input?.file_path !== undefined ? clipTail(input.file_path, 80) : undefined;
    return what ? `${d.tool}(${what})` : d.tool;
  });
  return `permission denied for: ${[...new Set(tools)].join(', ')}`;
}

/** The file tools whose denial names a path the worker wanted to write. */
const WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

/**
 * `denials` with the repository path of each denied write inside the worktree (`roots`: its
 * paths as the worker may have named them, e.g. as given and resolved), posix separators.
 */
export function withDeniedPaths(denials: readonly PermissionDenial[], roots: readonly string[]): PermissionDenial[] {
  return denials.map((denial) => {
    const input = denial.input as { file_path?: unknown; notebook_path?: unknown } | undefined;
    const named = typeof input?.file_path === 'string' ? input.file_path : typeof input?.notebook_path === 'string' ? input.notebook_path : undefined;
    if (!WRITE_TOOLS.has(denial.tool) || named === undefined) return denial;
    const root = roots.find((dir) => named.startsWith(`${dir}/`));
    return root === undefined ? denial : { ...denial, path: named.slice(root.length + 1) };
  });
}

/** The undeclared paths a run's denied writes named (the worker adapter or the worker hook gave each its repository path). */
export const deniedPaths = (denials: readonly PermissionDenial[]): string[] => denials.flatMap((denial) => (denial.path !== undefined ? [denial.path] : []));
