// The files the sandbox holds in a command's working directory while the command runs. For each
// protected name that does not exist there, bubblewrap mounts /dev/null (a character device, not
// a file) over an empty placeholder it made on the host, and removes it when the command ends
// (Claude Code's own sandbox and @anthropic-ai/sandbox-runtime alike; CLI-NOTES.md). Inside the
// command, `git status` lists them as untracked and `git add -A` fails on them ("can only add
// regular files…"). They are never a worker's work.

/**
 * The protected names, at the top of the working directory: the files of the sandbox runtime
 * 0.0.78 (its DANGEROUS_FILES) and its folders, which are mounted the same way when they do not
 * exist, and what Claude Code 2.1.330's own sandbox adds under `.claude/` (read from its bundle,
 * and seen in a worker's Bash: test/e2e/agent-habits-real.test.ts fails when a version adds one).
 */
export const SANDBOX_PLACEHOLDERS = [
  '.gitconfig',
  '.gitmodules',
  '.bashrc',
  '.bash_profile',
  '.zshrc',
  '.zprofile',
  '.profile',
  '.ripgreprc',
  '.mcp.json',
  '.vscode',
  '.idea',
  '.claude/agents',
  '.claude/commands',
  '.claude/hooks',
  '.claude/skills',
  '.claude/settings.json',
  '.claude/settings.local.json',
  '.claude/launch.json',
  '.claude/loop.md',
  '.claude/output-styles',
  '.claude/routines',
  '.claude/scheduled_tasks.json',
  '.claude/workflows',
] as const;

/** Where Claude Code stages its own writes (files it rewrites in place) while a worker runs: never the worker's work. */
export const CLI_SCRATCH = '.claude/.cc-writes';

/** Whether `repoPath` (relative to the working directory's top) is where the sandbox may leave a placeholder. */
export const isPlaceholderPath = (repoPath: string): boolean => (SANDBOX_PLACEHOLDERS as readonly string[]).includes(repoPath);

/** Whether `repoPath` is inside Claude Code's own scratch folder. */
export const isCliScratch = (repoPath: string): boolean => repoPath === CLI_SCRATCH || repoPath.startsWith(`${CLI_SCRATCH}/`);

/** Ignore patterns naming exactly the placeholders and the CLI's scratch folder at the top of a checkout (a line each). */
export const placeholderExcludes = (): string =>
  `# foreman: the sandbox's placeholder files and Claude Code's scratch folder (never a worker's work)\n${[...SANDBOX_PLACEHOLDERS, CLI_SCRATCH].map((name) => `/${name}`).join('\n')}\n`;

/**
 * The environment that makes git read `excludesFile` as its `core.excludesFile`, through git's
 * `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` (git 2.31 and later),
 * appended to any such settings `env` already carries. Given to a worker's commands, it hides the
 * placeholders from its own `git status` and `git add -A` without writing anything in the
 * repository: an in-session worktree shares the person's `.git/info/exclude`. The file holds the
 * person's own global ignore patterns too, since this setting takes their place.
 */
export function excludesFileEnv(env: Readonly<Record<string, string | undefined>>, excludesFile: string): Record<string, string> {
  const count = Number(env.GIT_CONFIG_COUNT ?? '0');
  const index = Number.isSafeInteger(count) && count >= 0 ? count : 0;
  return { GIT_CONFIG_COUNT: String(index + 1), [`GIT_CONFIG_KEY_${index}`]: 'core.excludesFile', [`GIT_CONFIG_VALUE_${index}`]: excludesFile };
}
