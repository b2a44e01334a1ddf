// What a host's workspaces run there and call things (./host.ts): the environment git runs with
// on the host, the fixed sh scripts (their arguments data, never a line for a shell) that make a
// slot, snapshot it and write provisioned files, and the names of the repository and its object
// format there.

import { createHash } from 'node:crypto';
import { runGit } from '../../adapters/index.ts';
import type { ObjectFormat } from '../../core/index.ts';

/** Git on the host (`$FOREMAN_GIT`, the URL's `git=`) runs without hooks or fsmonitor, and takes every pathspec literally, as here (git ≥ 2.31 reads these). */
export const hostGitEnv = (git: string): Record<string, string> => ({
  FOREMAN_GIT: git,
  GIT_CONFIG_COUNT: '2',
  GIT_CONFIG_KEY_0: 'core.hooksPath',
  GIT_CONFIG_VALUE_0: '/dev/null',
  GIT_CONFIG_KEY_1: 'core.fsmonitor',
  GIT_CONFIG_VALUE_1: 'false',
  GIT_LITERAL_PATHSPECS: '1',
  // The snapshot commit's author: foreman's own, never the host user's (who may have none).
  GIT_AUTHOR_NAME: 'foreman',
  GIT_AUTHOR_EMAIL: 'foreman@localhost',
  GIT_COMMITTER_NAME: 'foreman',
  GIT_COMMITTER_EMAIL: 'foreman@localhost',
});

/**
 * Makes slot `$1` a worktree at commit `$2`: a new one, or the one there reset and cleaned (what
 * an earlier attempt and its provisioning left goes). Prints its real path.
 */
export const MAKE_SLOT = [
  'set -e',
  'if [ -d "$1" ]; then cd "$1"; "$FOREMAN_GIT" reset -q --hard "$2"; "$FOREMAN_GIT" clean -q -ffdx; else "$FOREMAN_GIT" --git-dir=repository.git worktree add -q --detach "$1" "$2"; cd "$1"; fi',
  'pwd -P',
].join('\n');

/**
 * The slot as the worker left it, as a commit whose parent is the attempt's base `$2`: its index
 * copied to `$1` (so what it staged counts and unchanged files are not hashed again), every change
 * git does not ignore added, what provisioning put there (`$3…`) put back as the base has it.
 */
export const SNAPSHOT = [
  'set -e',
  'index=$1 base=$2; shift 2',
  'cp "$("$FOREMAN_GIT" rev-parse --git-path index)" "$index"',
  'export GIT_INDEX_FILE="$index"',
  '"$FOREMAN_GIT" add -A .',
  'if [ $# -gt 0 ]; then "$FOREMAN_GIT" reset -q "$base" -- "$@"; fi',
  'tree=$("$FOREMAN_GIT" write-tree)',
  'rm -f "$index"',
  '"$FOREMAN_GIT" commit-tree "$tree" -p "$base" -m "foreman: the attempt\'s worktree"',
].join('\n');

/** Writes its stdin to the slot's file `$1` (its folders made). */
export const WRITE_FILE = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
/** Makes the slot's `$1` a symbolic link to `$2`, as written (never followed). */
export const WRITE_LINK = 'mkdir -p -- "$(dirname -- "$1")" && rm -f -- "$1" && ln -s -- "$2" "$1"';
/** Whether the slot's `$1` is there (a dangling link counts). */
export const EXISTS = '[ -e "$1" ] || [ -L "$1" ]';

/** A folder name for the repository on a host: its name and a hash of where it is here, so two repositories never share one. */
export function repositoryId(repo: string): string {
  const name = (repo.split('/').filter(Boolean).at(-1) ?? 'repository').replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return `${name.slice(0, 40) || 'repository'}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}`;
}

/** The local repository's object format, which the host's run repository takes. */
export async function objectFormatOf(repo: string): Promise<ObjectFormat> {
  const said = await runGit(['rev-parse', '--show-object-format'], { cwd: repo });
  return said.ok && said.value.trim() === 'sha256' ? 'sha256' : 'sha1';
}
