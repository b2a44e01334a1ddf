// Readers over the untyped JSON of Claude Code's stream-json output, and of the fields the parser
// (stream-json.ts) and the readable log (stream-log.ts) both read: usage, permission denials, a tool
// call's input in a few words.

import { emptyUsage, oneLine, type PermissionDenial, type Usage } from '../../core/index.ts';

export type Json = Record<string, unknown>;

export const isJsonObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
export const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
export const asNumber = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
export const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

export const MAX_DENIALS = 100;

/** A stream-json `usage` object as a `Usage`, with the cost (reported apart, in the result event). */
export function usageOf(usage: unknown, costUsd = 0): Usage {
  if (!isJsonObject(usage)) return { ...emptyUsage(), costUsd };
  return {
    costUsd,
    inputTokens: asNumber(usage['input_tokens']) ?? 0,
    outputTokens: asNumber(usage['output_tokens']) ?? 0,
    cacheReadTokens: asNumber(usage['cache_read_input_tokens']) ?? 0,
    cacheCreationTokens: asNumber(usage['cache_creation_input_tokens']) ?? 0,
  };
}

/** A result event's `permission_denials` (the first 100). */
export function denialsOf(value: unknown): PermissionDenial[] {
  const denials: PermissionDenial[] = [];
  for (const denial of asArray(value).slice(0, MAX_DENIALS)) {
    if (!isJsonObject(denial)) continue;
    const tool = asString(denial['tool_name']) ?? asString(denial['tool']) ?? 'unknown';
    denials.push(denial['tool_input'] === undefined ? { tool } : { tool, input: denial['tool_input'] });
  }
  return denials;
}

/** A short summary of a tool's input for humans: the file, the command, the pattern… */
export function summarizeToolInput(name: string, input: unknown, cwd?: string): string {
  if (!isJsonObject(input)) return '';
  const relative = (file: string): string => {
    if (cwd && file.startsWith(cwd.endsWith('/') ? cwd : `${cwd}/`)) return file.slice(cwd.length).replace(/^\/+/, '');
    return file;
  };
  const path = asString(input['file_path']) ?? asString(input['notebook_path']) ?? asString(input['path']);
  const command = asString(input['command']);
  const pattern = asString(input['pattern']);
  let summary: string;
  if (command !== undefined) summary = command;
  else if (pattern !== undefined) summary = path ? `${pattern} in ${relative(path)}` : pattern;
  else if (path !== undefined) summary = relative(path);
  else
    summary =
      asString(input['url']) ??
      asString(input['query']) ??
      asString(input['description']) ??
      asString(input['skill']) ??
      asString(input['prompt']) ??
      (name === 'TodoWrite' ? `${asArray(input['todos']).length} todos` : JSON.stringify(input));
  return oneLine(summary, 160);
}
