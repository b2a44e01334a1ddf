// The ignore file a worker's own git commands read as `core.excludesFile` (given through the
// environment: core/sandbox/sandbox-placeholders.ts): the person's own global ignore patterns, then the
// sandbox's placeholder files. Written in foreman's folders, never in the repository.

import { mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { placeholderExcludes } from '../../core/index.ts';
import { writeFileAtomic } from '../store/index.ts';
import { git } from './runner.ts';

/** The global ignore file git reads in `repo`: `core.excludesFile` (any level), else `$XDG_CONFIG_HOME/git/ignore` or `~/.config/git/ignore`. */
async function personExcludesFile(repo: string, env: NodeJS.ProcessEnv): Promise<string> {
  const configured = await git(repo, ['config', '--path', '--get', 'core.excludesFile']);
  if (configured.ok && configured.value.trim() !== '') return path.resolve(repo, configured.value.trim());
  const configHome = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(configHome, 'git', 'ignore');
}

/**
 * Writes `file`: the patterns of the global ignore file git reads in `repo` (which a
 * `core.excludesFile` given to a worker replaces), then the placeholders'. Returns `file`.
 */
export async function writeWorkerExcludes(repo: string, file: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const own = await readFile(await personExcludesFile(repo, env), 'utf8').catch(() => '');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, `${own}${own === '' || own.endsWith('\n') ? '' : '\n'}${placeholderExcludes()}`);
  return file;
}
