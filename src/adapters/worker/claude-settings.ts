// Reads the person's Claude Code user settings, for the keys that log the CLI in. Workers run with
// `--setting-sources ""` (so the person's allow rules and hooks cannot widen a worker's scope), which
// also drops an `apiKeyHelper` or an API key set in the settings' `env`; those are carried over.

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { AUTH_SETTING_KEYS } from '../../core/index.ts';

/** Where the CLI keeps the user settings: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`. */
export function userSettingsPath(env: NodeJS.ProcessEnv): string {
  const configDir = env['CLAUDE_CONFIG_DIR'];
  if (configDir) return join(configDir, 'settings.json');
  return join(env['HOME'] || homedir(), '.claude', 'settings.json');
}

/**
 * The login keys of the user settings (`apiKeyHelper`, `env`, …), or `{}` when the file is
 * missing or not a JSON object: the CLI ignores such a file too (in `-p` mode, silently).
 */
export async function readLoginSettings(env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(userSettingsPath(env), 'utf8'));
  } catch {
    return {};
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  const out: Record<string, unknown> = {};
  for (const key of AUTH_SETTING_KEYS) {
    const value = (parsed as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
