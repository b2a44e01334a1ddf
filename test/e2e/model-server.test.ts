/**
 * The scripted Messages API server driving the REAL Claude Code CLI (node_modules/.bin/claude).
 * These tests pin down the CLI behaviour the orchestrator relies on; see
 * test/support/CLI-NOTES.md for the observations behind them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  failFirst,
  httpError,
  type ModelServer,
  NO_SCENARIO_TEXT,
  scenario,
  type ScriptedRequest,
  startModelServer,
  text,
  toolUse,
  variants,
} from '../support/model-server.ts';
import { claudeBin, claudeEnv, headlessArgs, runClaude, type StreamEvent, tempHome } from '../support/real-claude.ts';

const cwdOf = (req: ScriptedRequest): string => {
  if (req.cwd === undefined) throw new Error('request has no Primary working directory');
  return req.cwd;
};

let server: ModelServer;
const temps: string[] = [];

async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

async function home(): Promise<string> {
  const h = await tempHome();
  temps.push(h);
  return h;
}

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      scenario({
        name: 'write hello',
        match: 'TASK-WRITE-HELLO',
        turns: [
          (req) => [text('Creating the file.'), toolUse('Write', { file_path: join(cwdOf(req), 'hello.txt'), content: 'hello world\n' })],
          [text('Done.\nCOMPLETED: wrote hello.txt')],
        ],
      }),
      scenario({ name: 'bad key', match: 'TASK-401', turns: [httpError(401, { message: 'invalid x-api-key' })] }),
      scenario({
        name: 'rate limited once',
        match: 'TASK-429',
        turns: [failFirst(httpError(429, { message: 'Number of requests has exceeded your rate limit' }), [text('COMPLETED: after 429')])],
      }),
      scenario({
        name: 'read then edit',
        match: 'TASK-EDIT',
        turns: [
          (req) => [toolUse('Read', { file_path: join(cwdOf(req), 'notes.txt') })],
          (req) => {
            // The scripted model only edits when it saw the file's content in the Read result.
            const seen = req.toolResults[0]?.content ?? '';
            if (!seen.includes('alpha beta')) return [text(`FAILED: Read returned ${JSON.stringify(seen)}`)];
            return [toolUse('Edit', { file_path: join(cwdOf(req), 'notes.txt'), old_string: 'alpha', new_string: 'ALPHA' })];
          },
          (req) => {
            const r = req.toolResults[0];
            return [text(r && !r.is_error ? 'COMPLETED: edited notes.txt' : `FAILED: Edit said ${JSON.stringify(r)}`)];
          },
        ],
      }),
      ...variants('TASK-VARIANT', [{ when: 'This is attempt 2', turns: [[text('COMPLETED: second attempt')]] }, { turns: [[text('FAILED: first attempt')]] }]),
      ...['A', 'B', 'C'].map((id) =>
        scenario({
          name: `parallel ${id}`,
          match: `TASK-PAR-${id}`,
          turns: [
            (req) => [toolUse('Write', { file_path: join(cwdOf(req), `${id}.txt`), content: `file ${id}\n` })],
            (req) => [text(`COMPLETED: ${id} saw ${req.toolResults.length} tool result`)],
          ],
        }),
      ),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
});

const resultOf = (events: StreamEvent[]): StreamEvent => {
  const last = events.at(-1);
  if (last?.type !== 'result') throw new Error(`last stream line is not a result: ${JSON.stringify(last)}`);
  return last;
};

describe('scripted model server (no CLI)', () => {
  it('answers unknown prompts with a clear FAILED text, and side requests without using a turn', async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/v1/messages?beta=true`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));

    const unknown = await post({
      model: 'claude-haiku-x',
      max_tokens: 100,
      tools: [{ name: 'Write', input_schema: {} }],
      messages: [{ role: 'user', content: 'something nobody scripted' }],
    });
    expect(unknown.status).toBe(200);
    expect(unknown.json.content[0].text).toContain(NO_SCENARIO_TEXT);
    expect(unknown.json.stop_reason).toBe('end_turn');

    const quota = await post({ model: 'claude-haiku-x', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] });
    expect(quota.json.content[0]).toEqual({ type: 'text', text: 'OK' });
    expect(server.requests.at(-1)?.side).toBe(true);

    const tokens = await post({ model: 'm', messages: [] });
    expect(tokens.status).toBe(200);
    const count = await fetch(`${server.url}/v1/messages/count_tokens?beta=true`, { method: 'POST', body: '{"messages":[]}' });
    expect(((await count.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
    server.clear();
  });
});

describe('real claude CLI against the scripted model', () => {
  it('runs a Write tool call and reports the final text in the result event', async () => {
    const cwd = await tempDir('foreman-e2e-write-');
    const run = await runClaude({ cwd, prompt: 'TASK-WRITE-HELLO: create hello.txt\n', env: claudeEnv(server.url, await home()) });

    expect(run.exitCode).toBe(0);
    expect(await readFile(join(cwd, 'hello.txt'), 'utf8')).toBe('hello world\n');

    const init = run.events[0];
    expect(init).toMatchObject({ type: 'system', subtype: 'init', cwd, permissionMode: 'dontAsk', claude_code_version: '2.1.330' });
    expect(init?.['model']).toMatch(/^claude-haiku-/);

    const toolUses = run.events
      .filter((e) => e.type === 'assistant')
      .flatMap((e) => e['message'].content)
      .filter((c: any) => c.type === 'tool_use');
    expect(toolUses.map((c: any) => c.name)).toEqual(['Write']);
    const toolResult = run.events.find((e) => e.type === 'user')?.['message'].content[0];
    expect(toolResult).toMatchObject({ type: 'tool_result' });
    expect(toolResult.is_error).toBeUndefined();

    const result = resultOf(run.events);
    expect(result).toMatchObject({
      type: 'result',
      subtype: 'success',
      is_error: false,
      terminal_reason: 'completed',
      api_error_status: null,
      num_turns: 2,
      permission_denials: [],
      session_id: init?.['session_id'],
    });
    expect(result['result']).toMatch(/COMPLETED: wrote hello\.txt$/);
    expect(typeof result['total_cost_usd']).toBe('number');
    expect(result['total_cost_usd']).toBeGreaterThan(0);
    expect(result['usage']).toMatchObject({ input_tokens: 200, output_tokens: expect.any(Number), cache_read_input_tokens: 0 });
    expect(typeof result['session_id']).toBe('string');

    // What the server saw: two main turns of one session, the cwd, the full model name.
    const turns = server.turns().filter((r) => r.prompt.startsWith('TASK-WRITE-HELLO'));
    expect(turns).toHaveLength(2);
    expect(turns.map((t) => t.assistantTurns)).toEqual([0, 1]);
    expect(turns[0]).toMatchObject({ path: '/v1/messages', url: '/v1/messages?beta=true', stream: true, cwd, sessionId: result['session_id'] });
    expect(turns[0]?.model).toMatch(/^claude-haiku-/);
    expect(turns[1]?.toolResults[0]?.content).toContain('File created successfully');
    expect(server.requests.every((r) => r.path === '/v1/messages' && !r.side)).toBe(true);
  });

  it('turns a 401 into an is_error result with api_error_status 401', async () => {
    const cwd = await tempDir('foreman-e2e-401-');
    const run = await runClaude({ cwd, prompt: 'TASK-401', env: claudeEnv(server.url, await home()) });

    expect(run.exitCode).toBe(1);
    expect(run.events.some((e) => e.type === 'system' && e['subtype'] === 'api_retry')).toBe(false); // retries are 0
    const assistant = run.events.find((e) => e.type === 'assistant');
    expect(assistant).toMatchObject({
      error: 'authentication_failed',
      is_api_error_message: true,
      api_error_status: 401,
      api_error_type: 'authentication_error',
    });
    expect(assistant?.['message'].model).toBe('<synthetic>');
    expect(resultOf(run.events)).toMatchObject({
      subtype: 'success',
      is_error: true,
      terminal_reason: 'api_error',
      api_error_status: 401,
      api_error_type: 'authentication_error',
      result: 'Invalid API key · Fix external API key',
      total_cost_usd: 0,
    });

    // With one retry allowed the CLI retries a 401 too, and says so first.
    const retried = await runClaude({ cwd, prompt: 'TASK-401', env: claudeEnv(server.url, await home(), { CLAUDE_CODE_MAX_RETRIES: '1' }) });
    expect(retried.exitCode).toBe(1);
    const retry = retried.events.find((e) => e.type === 'system' && e['subtype'] === 'api_retry');
    expect(retry).toMatchObject({ attempt: 1, max_retries: 1, error_status: 401, error: 'authentication_failed' });
    expect(resultOf(retried.events)).toMatchObject({ is_error: true, api_error_status: 401 });
  });

  it('reports "Not logged in" quickly when there is no API key at all', async () => {
    const cwd = await tempDir('foreman-e2e-nologin-');
    const before = server.requests.length;
    const run = await runClaude({ cwd, prompt: 'TASK-WRITE-HELLO', env: claudeEnv(undefined, await home()) });

    expect(run.exitCode).toBe(1);
    // Quickly: the CLI neither retries nor waits (its own duration, ~85 ms when checked); how long
    // the whole process took is the machine's load, not the CLI's behaviour.
    expect(run.events.filter((e) => e.type === 'system' && e['subtype'] === 'api_retry')).toEqual([]);
    expect(resultOf(run.events)['duration_ms']).toBeLessThan(10_000);
    expect(run.events[0]).toMatchObject({ type: 'system', subtype: 'init' });
    expect(run.events.find((e) => e.type === 'assistant')).toMatchObject({ error: 'authentication_failed', is_api_error_message: true });
    const result = resultOf(run.events);
    expect(result).toMatchObject({ subtype: 'success', is_error: true, terminal_reason: 'api_error', api_error_status: null });
    expect(result['result']).toContain('Not logged in');
    expect(server.requests.length).toBe(before);
  });

  it('retries a 429 once (api_retry event) and then succeeds', async () => {
    const cwd = await tempDir('foreman-e2e-429-');
    const run = await runClaude({ cwd, prompt: 'TASK-429', env: claudeEnv(server.url, await home(), { CLAUDE_CODE_MAX_RETRIES: '1' }) });

    expect(run.exitCode).toBe(0);
    const retries = run.events.filter((e) => e.type === 'system' && e['subtype'] === 'api_retry');
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, max_retries: 1, error_status: 429, error: 'rate_limit', retry_delay_ms: expect.any(Number) });
    expect(resultOf(run.events)).toMatchObject({ is_error: false, subtype: 'success', terminal_reason: 'completed', result: 'COMPLETED: after 429' });
    const seen = server.requests.filter((r) => r.prompt === 'TASK-429');
    expect(seen.map((r) => [r.attempt, r.answer])).toEqual([
      [1, 'error 429'],
      [2, 'turn'],
    ]);

    // Without retries the same 429 ends the run.
    const noRetry = await runClaude({ cwd, prompt: 'TASK-429 again', env: claudeEnv(server.url, await home()) });
    expect(noRetry.exitCode).toBe(1);
    expect(noRetry.events.find((e) => e.type === 'assistant')).toMatchObject({ error: 'rate_limit', api_error_status: 429 });
    expect(resultOf(noRetry.events)).toMatchObject({ is_error: true, terminal_reason: 'api_error', api_error_status: 429, api_error_type: 'rate_limit_error' });
  });

  it('edits an existing file after reading it', async () => {
    const cwd = await tempDir('foreman-e2e-edit-');
    await writeFile(join(cwd, 'notes.txt'), 'alpha beta\ngamma\n');
    const run = await runClaude({ cwd, prompt: 'TASK-EDIT notes.txt', env: claudeEnv(server.url, await home()) });

    expect(resultOf(run.events)).toMatchObject({ is_error: false, result: 'COMPLETED: edited notes.txt', num_turns: 3 });
    expect(run.exitCode).toBe(0);
    expect(await readFile(join(cwd, 'notes.txt'), 'utf8')).toBe('ALPHA beta\ngamma\n');
    const toolNames = run.events
      .filter((e) => e.type === 'assistant')
      .flatMap((e) => e['message'].content)
      .filter((c: any) => c.type === 'tool_use')
      .map((c: any) => c.name);
    expect(toolNames).toEqual(['Read', 'Edit']);
  });

  it('serves several concurrent CLI processes and keys scenarios on the prompt', async () => {
    const cwd = await tempDir('foreman-e2e-par-');
    const env = claudeEnv(server.url, await home());
    const runs = await Promise.all([
      ...['A', 'B', 'C'].map((id) => runClaude({ cwd, prompt: `TASK-PAR-${id}`, env })),
      runClaude({ cwd, prompt: 'TASK-VARIANT. This is attempt 2.', env, args: headlessArgs({ model: 'sonnet' }) }),
      runClaude({ cwd, prompt: 'TASK-VARIANT.', env }),
    ]);
    expect(runs.map((r) => r.result?.['result'])).toEqual([
      'COMPLETED: A saw 1 tool result',
      'COMPLETED: B saw 1 tool result',
      'COMPLETED: C saw 1 tool result',
      'COMPLETED: second attempt',
      'FAILED: first attempt',
    ]);
    for (const id of ['A', 'B', 'C']) expect(await readFile(join(cwd, `${id}.txt`), 'utf8')).toBe(`file ${id}\n`);
    expect(server.requests.find((r) => r.prompt.includes('attempt 2'))?.model).toMatch(/^claude-sonnet-/);
    expect(claudeBin).toMatch(/node_modules\/\.bin\/claude$/);
  });
});
