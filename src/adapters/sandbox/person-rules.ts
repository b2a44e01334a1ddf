// The person's deny and ask permission rules, as the worker hook needs them before it rewrites a
// worker's Bash command to run in the sandbox: Claude Code applies deny and ask rules after the
// hook, to the command the hook returns, so a rule that would have matched the original command
// could miss the sandboxed form; and their Read and Edit deny rules go into the sandbox's settings
// (core/sandbox/sandbox-denies.ts). The hook reads the rules wherever a session takes them from —
// the managed settings, the user's (`$CLAUDE_CONFIG_DIR` or `~/.claude`), the project's shared
// and local settings, and the session's own command line (`--disallowedTools`, `--settings`) —
// and makes no decision when one may match (core/sandbox/worker-hook.ts `bashRuleMayMatch`).

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The person's deny and ask rules. */
export interface PersonRules {
  deny: string[];
  ask: string[];
  /** Where rules are that could not be read exactly (then `deny` holds `Bash`, so no Bash command is rewritten behind them). */
  unread?: string[];
}

const noRules = (): PersonRules => ({ deny: [], ask: [] });
const merged = (all: readonly PersonRules[]): PersonRules => {
  const unread = all.flatMap((r) => r.unread ?? []);
  return { deny: all.flatMap((r) => r.deny), ask: all.flatMap((r) => r.ask), ...(unread.length > 0 ? { unread: [...new Set(unread)] } : {}) };
};

/** The deny and ask rules of a settings object: `permissions.deny` and `permissions.ask`. */
export function rulesOfSettings(settings: unknown): PersonRules {
  const permissions = (settings as { permissions?: { deny?: unknown; ask?: unknown } } | null)?.permissions;
  const take = (list: unknown) => (Array.isArray(list) ? list.filter((r): r is string => typeof r === 'string') : []);
  return { deny: take(permissions?.deny), ask: take(permissions?.ask) };
}

const settingsFileRules = async (file: string): Promise<PersonRules> => {
  try {
    return rulesOfSettings(JSON.parse(await readFile(file, 'utf8')));
  } catch {
    return noRules();
  }
};

/** The settings files a session reads rules from: managed, the user's, and each project folder's shared and local ones. */
export function settingsFiles(env: NodeJS.ProcessEnv, projectDirs: readonly string[], platform: NodeJS.Platform = process.platform): string[] {
  const configDir = env.CLAUDE_CONFIG_DIR && path.isAbsolute(env.CLAUDE_CONFIG_DIR) ? env.CLAUDE_CONFIG_DIR : path.join(env.HOME || os.homedir(), '.claude');
  const managed = platform === 'darwin' ? '/Library/Application Support/ClaudeCode/managed-settings.json' : '/etc/claude-code/managed-settings.json';
  const projects = [...new Set(projectDirs)].flatMap((dir) => [path.join(dir, '.claude', 'settings.json'), path.join(dir, '.claude', 'settings.local.json')]);
  return [managed, path.join(configDir, 'settings.json'), ...projects];
}

/**
 * The rules in one word of `--disallowedTools`, split as Claude Code 2.1.330 splits it (read in
 * its bundle, seen on the CLI: test/support/CLI-NOTES.md): at blanks and commas outside
 * parentheses, counted in pairs (`Read(./foo(1).txt)` is one rule; a backslash escapes the
 * character after it) — and also as its first pass does, which takes any `)` as the end of the
 * parentheses (`Read(./a(1) b.txt)` denies `./a(1` too), since the CLI denies both. `clean` is
 * false when a part is not one rule (`Tool` or `Tool(…)`, parentheses closing at its end): an
 * unclosed `(`, a stray `)`, text after the parentheses.
 */
export function disallowedWords(word: string): { rules: string[]; clean: boolean } {
  const balanced: string[] = [];
  let clean = true;
  let start = 0;
  let depth = 0;
  for (let i = 0; i <= word.length; i++) {
    const c = word[i];
    if (c === '\\') i++;
    else if (c === '(') depth++;
    else if (c === ')') {
      if (depth === 0) clean = false;
      depth = Math.max(depth - 1, 0);
    } else if (i === word.length || (depth === 0 && (c === ',' || /\s/.test(c!)))) {
      const part = word.slice(start, i).trim();
      if (part !== '') balanced.push(part);
      start = i + 1;
    }
  }
  if (depth > 0) clean = false;
  if (!balanced.every(oneRule)) clean = false;
  // The CLI's first pass: inside parentheses from any `(` to the next `)`.
  const naive: string[] = [];
  let current = '';
  let inside = false;
  for (const c of word) {
    if (c === '(') inside = true;
    else if (c === ')') inside = false;
    else if (!inside && (c === ',' || /\s/.test(c))) {
      if (current.trim() !== '') naive.push(current.trim());
      current = '';
      continue;
    }
    current += c;
  }
  if (current.trim() !== '') naive.push(current.trim());
  return { rules: [...new Set([...naive, ...balanced])], clean };
}

/** Whether `part` is one rule: a tool name, or a tool name and parentheses that close at its end and nowhere before. */
function oneRule(part: string): boolean {
  const open = part.indexOf('(');
  if (open === -1) return !part.includes(')');
  if (open === 0 || !part.endsWith(')')) return false;
  let depth = 0;
  for (let i = open; i < part.length; i++) {
    const c = part[i];
    if (c === '\\') i++;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0 && i !== part.length - 1) return false;
  }
  return depth === 0;
}

/** Stands for rules nobody could read (`where` they are): a deny rule for every Bash command, so nothing is rewritten behind one. */
const unreadRules = (where: string): PersonRules => ({ deny: ['Bash'], ask: [], unread: [where] });

/** Flags of the `claude` command line that carry rules. */
const RULE_FLAGS = new Set(['--disallowedTools', '--disallowed-tools', '--settings']);

/**
 * The deny and ask rules on a `claude` command line: the words after `--disallowedTools` (until
 * the next flag; a word may hold several rules), and those of the `--settings` JSON or file.
 */
export async function commandLineRules(args: readonly string[], cwd: string): Promise<PersonRules> {
  const rules: PersonRules[] = [];
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === '--disallowedTools' || flag === '--disallowed-tools') {
      const words = inline !== undefined ? [inline] : [];
      while (inline === undefined && i + 1 < args.length && !args[i + 1]!.startsWith('--')) words.push(args[++i]!);
      // Several rules may share a word, separated by spaces or commas outside parentheses; a word
      // that does not split into rules cleanly holds rules nobody can read exactly.
      for (const word of words) {
        const split = disallowedWords(word);
        rules.push({ deny: split.rules, ask: [] }, ...(split.clean ? [] : [unreadRules(`--disallowedTools ${word}`)]));
      }
    } else if (flag === '--settings') {
      const value = inline ?? args[++i] ?? '';
      const text = value.trim().startsWith('{') ? value : await readFile(path.resolve(cwd, value), 'utf8').catch(() => 'null');
      try {
        rules.push(rulesOfSettings(JSON.parse(text)));
      } catch {
        /* not JSON: the session would have refused it */
      }
    }
  }
  return merged(rules);
}

/**
 * How long `ps` may take here: a fixed bound, short, since the hook runs before every tool call
 * of a worker. ps starts nothing of its own, so ending it is enough.
 */
const PS_LIMIT_MS = 2000;

/**
 * The arguments of process `pid`: from /proc on Linux, else `ps` (words split on blanks); null
 * when unreadable; `timed-out` when ps did not answer within its limit.
 */
async function processArgs(pid: number): Promise<{ args: string[]; exact: boolean } | 'timed-out' | null> {
  const proc = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  if (proc !== null) return { args: proc.split('\0').filter((a, i, all) => a !== '' || i < all.length - 1), exact: true };
  return new Promise((resolve) => {
    execFile('ps', ['-ww', '-o', 'args=', '-p', String(pid)], { timeout: PS_LIMIT_MS, killSignal: 'SIGKILL', encoding: 'utf8' }, (error, stdout) => {
      if (error === null) resolve({ args: stdout.trim().split(/\s+/), exact: false });
      else resolve(error.killed ? 'timed-out' : null);
    });
  });
}

/**
 * The person's deny and ask rules for a session whose project folders are `projectDirs` (the
 * session's and the repository: never a worker's worktree, whose files its commands may write)
 * and whose CLI is `CLAUDE_PID`. When the
 * command line names rules it cannot read exactly (no /proc), the answer includes a rule for
 * every Bash command, so nothing is rewritten behind one.
 */
export async function personRules(env: NodeJS.ProcessEnv, projectDirs: readonly string[]): Promise<PersonRules> {
  const rules = merged(await Promise.all(settingsFiles(env, projectDirs).map(settingsFileRules)));
  const projectDir = projectDirs[0] ?? process.cwd();
  const pid = Number(env.CLAUDE_PID);
  if (!Number.isInteger(pid) || pid <= 0) return rules;
  const cli = await processArgs(pid);
  if (cli === null) return rules;
  // Its command line may name rules nobody read: as when they cannot be read exactly.
  const commandLine = `the rules on the session's command line (pid ${pid})`;
  if (cli === 'timed-out') return merged([rules, unreadRules(commandLine)]);
  if (!cli.exact) return cli.args.some((a) => RULE_FLAGS.has(a.split('=')[0]!)) ? merged([rules, unreadRules(commandLine)]) : rules;
  return merged([rules, await commandLineRules(cli.args, projectDir)]);
}
