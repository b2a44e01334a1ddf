// Readable worker logs (`.design/worker-<i>.log`) from Claude Code's stream-json events: what the
// worker said, the tools it called and what they returned, API retries, denials and the result.
// Pure: the worker adapter writes the lines.

import { clipHead, formatCostExact, formatSeconds, oneLine } from '../../core/index.ts';
import { asArray, asNumber, asString, denialsOf, isJsonObject, summarizeToolInput, usageOf } from './stream-json-fields.ts';

export const LOG_LINE_MAX = 4096;
const TEXT_MAX = 8192;
const TOOL_RESULT_LINES = 20;

function indent(text: string, prefix: string, maxChars = TEXT_MAX): string[] {
  return clipHead(text, maxChars, `… [${text.length - maxChars} more chars]`)
    .split(/\r?\n/)
    .map((l) => prefix + clipHead(l, LOG_LINE_MAX));
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  const parts: string[] = [];
  for (const block of asArray(content)) {
    if (!isJsonObject(block)) continue;
    if (block['type'] === 'text' && typeof block['text'] === 'string') parts.push(block['text']);
    else if (typeof block['type'] === 'string') parts.push(`[${block['type']}]`);
  }
  return parts.join('\n');
}

const costText = (usd: number | undefined): string => (usd === undefined ? '?' : formatCostExact(usd));

/** A raw (non-JSON) stdout line as it goes into the log: verbatim, cut to 4 KiB. */
export function formatRawLineForLog(line: string): string {
  return clipHead(line, LOG_LINE_MAX, `… [${line.length - LOG_LINE_MAX} more chars]`);
}

/**
 * Readable log lines for one stream-json event (for `.design/worker-<i>.log`). Returns no lines
 * for events not worth logging. `cwd` shortens file paths.
 */
export function formatEventForLog(
  event: unknown,
  options: { cwd?: string; toolUse?: (id: string | undefined) => { input: unknown } | undefined } = {},
): string[] {
  if (!isJsonObject(event)) return [formatRawLineForLog(JSON.stringify(event) ?? String(event))];
  const type = asString(event['type']);
  const subtype = asString(event['subtype']);
  switch (type) {
    case 'system': {
      if (subtype === 'init') {
        const sid = asString(event['session_id']) ?? '?';
        const lines = [`session ${sid} (resume with: claude --resume ${sid})`];
        const model = asString(event['model']);
        const mode = asString(event['permissionMode']);
        const version = asString(event['claude_code_version']);
        const details = [
          model && `model ${model}`,
          mode && `permission mode ${mode}`,
          version && `claude ${version}`,
          asString(event['cwd']) && `cwd ${asString(event['cwd'])}`,
        ].filter(Boolean);
        if (details.length) lines.push(`  ${details.join(' · ')}`);
        return lines;
      }
      if (subtype === 'api_retry') {
        const a = asNumber(event['attempt']);
        const max = asNumber(event['max_retries']);
        const delay = asNumber(event['retry_delay_ms']);
        return [
          `! API retry ${a ?? '?'}${max !== undefined ? `/${max}` : ''}: status ${asNumber(event['error_status']) ?? '?'} ${asString(event['error']) ?? ''}${delay !== undefined ? `, next try in ${Math.round(delay)} ms` : ''}`,
        ];
      }
      if (subtype === 'permission_denied') {
        // "Permission to use Write has been denied because …." then advice to the model: keep the first sentence.
        const tool = asString(event['tool_name']) ?? '?';
        const what = summarizeToolInput(tool, options.toolUse?.(asString(event['tool_use_id']))?.input, options.cwd);
        const why = oneLine(asString(event['message']) ?? asString(event['decision_reason']) ?? '', 500).replace(/^(.*?\.)\s+IMPORTANT:.*$/, '$1');
        return [`! permission denied: ${tool}${what ? ` ${what}` : ''}${why ? ` — ${why}` : ''}`];
      }
      return [`[system ${subtype ?? '?'}]`];
    }
    case 'assistant': {
      const message = isJsonObject(event['message']) ? event['message'] : {};
      const lines: string[] = [];
      for (const block of asArray(message['content'])) {
        if (!isJsonObject(block)) continue;
        if (block['type'] === 'text') {
          const t = asString(block['text']) ?? '';
          if (t.trim()) lines.push(...indent(t, '  ').map((l, i) => (i === 0 ? `assistant:${l.slice(1)}` : l)));
        } else if (block['type'] === 'tool_use') {
          const name = asString(block['name']) ?? 'tool';
          const summary = summarizeToolInput(name, block['input'], options.cwd);
          lines.push(`→ ${name}${summary ? ` ${summary}` : ''}`);
        } else if (block['type'] === 'thinking') {
          lines.push('  (thinking)');
        }
      }
      const error = asString(event['error']);
      if (error) {
        const status = asNumber(event['api_error_status']);
        lines.push(`! API error: ${error}${status !== undefined ? ` (status ${status})` : ''}`);
      }
      return lines;
    }
    case 'user': {
      const message = isJsonObject(event['message']) ? event['message'] : {};
      const lines: string[] = [];
      for (const block of asArray(message['content'])) {
        if (!isJsonObject(block) || block['type'] !== 'tool_result') continue;
        const text = toolResultText(block['content']);
        const all = text.trim() === '' ? ['(no output)'] : text.split(/\r?\n/);
        const shown = all.slice(0, TOOL_RESULT_LINES);
        const mark = block['is_error'] === true ? '  ✗ ' : '  ← ';
        for (const [i, l] of shown.entries()) lines.push((i === 0 ? mark : '    ') + clipHead(l, 500));
        if (all.length > TOOL_RESULT_LINES) lines.push(`    … [${all.length - TOOL_RESULT_LINES} more lines]`);
      }
      return lines;
    }
    case 'result': {
      const usage = usageOf(event['usage']);
      const isError = event['is_error'] === true;
      const head = [
        `= result: ${subtype ?? '?'}${isError ? ' (error)' : ''}`,
        asString(event['terminal_reason']) && `terminal ${asString(event['terminal_reason'])}`,
        asNumber(event['api_error_status']) !== undefined && `API status ${asNumber(event['api_error_status'])}`,
        `cost ${costText(asNumber(event['total_cost_usd']))}`,
        `tokens in ${usage.inputTokens} out ${usage.outputTokens} cache read ${usage.cacheReadTokens} write ${usage.cacheCreationTokens}`,
        `turns ${asNumber(event['num_turns']) ?? '?'}`,
        formatSeconds(asNumber(event['duration_ms']) ?? 0),
      ]
        .filter(Boolean)
        .join(' · ');
      const lines = [head];
      const text = asString(event['result']);
      if (text?.trim()) lines.push(...indent(text, '  '));
      for (const e of asArray(event['errors'])) lines.push(`  error: ${clipHead(typeof e === 'string' ? e : JSON.stringify(e), 1000)}`);
      const denials = denialsOf(event['permission_denials']);
      if (denials.length) {
        lines.push(`  permission denials (${denials.length}):`);
        for (const d of denials) lines.push(`    ${d.tool} ${summarizeToolInput(d.tool, d.input, options.cwd)}`.trimEnd());
      }
      const sid = asString(event['session_id']);
      if (sid) lines.push(`  resume with: claude --resume ${sid}`);
      return lines;
    }
    case 'stream_event':
      return [];
    default:
      return [`[${type ?? '?'}] ${clipHead(JSON.stringify(event), 500)}`];
  }
}
