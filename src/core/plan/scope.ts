// What a worker may do, as Claude Code permission rules: read anywhere, change exactly its task's
// declared files, run exactly the commands it is judged by. Everything else is denied in the
// default `dontAsk` mode. The rules go to the worker in `--settings` JSON (no word splitting) with
// `--setting-sources ""`, so the person's own allow rules cannot widen them.
//
// How CLI 2.1.330 matches an `Edit(<pattern>)` rule (checked with real tool calls; see
// test/support/CLI-NOTES.md):
// - one rule governs both the Write and the Edit tool; a bare `Write` or `Edit` allows any path;
// - patterns are gitignore-like: `*`, `?`, `[...]`, `**` are wildcards, `\` escapes; a pattern
//   with no inner `/` (`./a.txt`) matches at any depth, so rules are written absolute
//   (`//<repo>/<path>`), which anchors them; paths are compared with the repository's real path;
// - a rule naming a path also covers everything under it (gitignore's directory rule), so each
//   declared file gets a deny rule for `<file>/*`;
// - a literal `?` cannot be matched (`\?` and `[?]` match nothing) and whitespace at the end of a
//   path segment is trimmed away: such paths are refused;
// - matching ignores case: `Edit(//r/a.txt)` also allows `//r/A.txt`. Nothing can express the
//   difference; foreman's verification after the attempt reports any undeclared change.

import { err, ok, type Result } from '../result.ts';
import { isDirPath } from './paths.ts';
import { type Plan, type Task, taskAt, writesOf } from './plan.ts';

/** Permission rules for one worker: `permissions.allow` and `permissions.deny` of its settings. */
export interface WorkerPermissions {
  allow: string[];
  deny: string[];
}

/** Tools that only look: allowed everywhere. */
export const READ_ONLY_TOOLS = ['Read', 'Glob', 'Grep'] as const;

/** Characters with a meaning in a rule pattern or in the rule's parentheses; escaped with `\`. */
const SPECIAL = /[\\*[\]{}()!#]/g;

/** Why a path cannot be written as an exact rule, or null. `what` names it in the message. */
function inexpressible(path: string, what: string): string | null {
  // eslint-disable-next-line no-control-regex
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f]/.test(path)) return `${what} contains a control character, which a permission rule cannot name`;
  if (path.includes('?')) return `${what} contains "?", which Claude Code's permission rules cannot match literally; rename it`;
  const body = isDirPath(path) ? path.slice(0, -1) : path;
  if (body.split('/').some((segment) => /\s$/.test(segment))) {
    return `${what} has a name ending in whitespace, which Claude Code's permission rules trim away; rename it`;
  }
  return null;
}

/** Why a declared file of a plan cannot be given to a worker as an exact edit rule, or null. */
export function editRuleProblem(path: string): string | null {
  return inexpressible(path, `"${path}"`);
}

/** Why the repository's real path cannot anchor edit rules, or null. */
export function rootProblem(root: string): string | null {
  if (!root.startsWith('/')) return `the repository path "${root}" is not an absolute POSIX path`;
  return inexpressible(root.replace(/\/+$/, ''), `the repository path "${root}"`);
}

/** A path with every pattern character escaped, so the CLI reads it literally. */
export function escapeRulePath(path: string): string {
  return path.replace(SPECIAL, (c) => `\\${c}`);
}

/**
 * Edit rules for exactly the declared files: a file is allowed alone (with a deny for anything
 * under it), a declared `dir/` allows everything under it. `root` is the repository's real path.
 */
export function editRules(root: string, files: readonly string[]): Result<WorkerPermissions, string[]> {
  const problems = [rootProblem(root), ...files.map(editRuleProblem)].filter((p): p is string => p !== null);
  if (problems.length > 0) return err(problems);
  // `Edit(/` + an absolute path gives the `//abs` form, anchored at the file system root.
  const base = `/${escapeRulePath(root.replace(/\/+$/, ''))}/`;
  const allow: string[] = [];
  const deny: string[] = [];
  for (const f of [...new Set(files)]) {
    if (isDirPath(f)) {
      allow.push(`Edit(${base}${escapeRulePath(f)}**)`);
    } else {
      allow.push(`Edit(${base}${escapeRulePath(f)})`);
      deny.push(`Edit(${base}${escapeRulePath(f)}/*)`);
    }
  }
  return ok({ allow, deny });
}

/** The shell commands a task is judged by: the plan's test and build commands and its acceptance checks. */
export function judgedCommands(plan: Plan, task: Task): string[] {
  const commands = [plan.context?.testCommand, plan.context?.buildCommand, ...(task.agent?.acceptanceCriteria ?? []).map((c) => c.check)]
    .filter((c): c is string => typeof c === 'string' && c.trim() !== '')
    .map((c) => c.trim());
  return [...new Set(commands)];
}

/**
 * The rules an unattended worker gets for task `index`: read anywhere, edit exactly its declared
 * files, run exactly the commands it is judged by. `root` is the repository's real path.
 */
export function workerPermissions(plan: Plan, index: number, root: string): Result<WorkerPermissions, string[]> {
  const task = taskAt(plan.tasks, index);
  const edits = editRules(root, writesOf(task));
  if (!edits.ok) return err(edits.error.map((p) => `task ${index}: ${p}`));
  return ok({
    allow: [...READ_ONLY_TOOLS, ...edits.value.allow, ...judgedCommands(plan, task).map((c) => `Bash(${c})`)],
    deny: edits.value.deny,
  });
}

/** `--allowed-tools LIST`: the person's list replaces the computed rules. */
export const explicitPermissions = (tools: readonly string[]): WorkerPermissions => ({ allow: [...tools], deny: [] });

/** Every task's rules, or every problem found (for setup, before any worker starts). */
export function planPermissions(plan: Plan, root: string): Result<WorkerPermissions[], string[]> {
  const values: WorkerPermissions[] = [];
  const problems: string[] = [];
  plan.tasks.forEach((_, index) => {
    const r = workerPermissions(plan, index, root);
    if (r.ok) values.push(r.value);
    else problems.push(...r.error);
  });
  return problems.length > 0 ? err(problems) : ok(values);
}

/**
 * Settings keys carried over from the person's user settings into a worker's `--settings`: the
 * ones that log the CLI in. `--setting-sources ""` drops the user settings file, and with it an
 * `apiKeyHelper` or an API key given in `env` (OAuth logins do not live in settings and keep working).
 */
export const AUTH_SETTING_KEYS = ['apiKeyHelper', 'env', 'awsAuthRefresh', 'awsCredentialExport', 'gcpAuthRefresh'] as const;

/** Where a sandboxed worker's Bash commands may write and what they may reach. */
export interface WorkerSandbox {
  /** Absolute directories: the workspace and the attempt's own TMPDIR. */
  writable: readonly string[];
  /** Hosts its Bash commands may reach (the plan's `context.checkNetwork`); none when empty. */
  allowedDomains: readonly string[];
}

/**
 * Claude Code's `sandbox` settings for a worker (checked on CLI 2.1.330, test/support/CLI-NOTES.md):
 * every Bash command runs under bubblewrap / Seatbelt, may write only in `writable`, reaches only
 * `allowedDomains`, and with that may run without a `Bash(...)` rule. `failIfUnavailable` makes
 * the CLI refuse to start rather than run Bash unsandboxed; `allowUnsandboxedCommands: false`
 * takes away the model's way to ask for a command outside the sandbox.
 */
export function sandboxSettings(sandbox: WorkerSandbox): Record<string, unknown> {
  return {
    enabled: true,
    failIfUnavailable: true,
    autoAllowBashIfSandboxed: true,
    allowUnsandboxedCommands: false,
    // `//` anchors a settings path at the file system root (a single `/` is relative to the settings file).
    filesystem: { allowWrite: sandbox.writable.map((d) => `/${d}`) },
    network: { allowedDomains: [...sandbox.allowedDomains] },
  };
}

/** The `--settings` JSON of a worker: its rules, its sandbox when it has one, plus the person's login settings. */
export function workerSettings(
  permissions: WorkerPermissions,
  inherited: Readonly<Record<string, unknown>> = {},
  sandbox?: WorkerSandbox,
): Record<string, unknown> {
  const carried: Record<string, unknown> = {};
  for (const key of AUTH_SETTING_KEYS) if (inherited[key] !== undefined) carried[key] = inherited[key];
  return { ...carried, permissions: { allow: [...permissions.allow], deny: [...permissions.deny] }, ...(sandbox ? { sandbox: sandboxSettings(sandbox) } : {}) };
}
