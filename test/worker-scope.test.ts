// How a worker is started with its permission rules (the argv the CLI gets, what the log shows)
// and how its denials read in the log.

import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLoginSettings, userSettingsPath } from '../src/adapters/worker/claude-settings.ts';
import { StreamJsonParser } from '../src/adapters/worker/stream-json.ts';
import { formatEventForLog } from '../src/adapters/worker/stream-log.ts';
import { runWorker } from '../src/adapters/worker/worker.ts';
import { buildWorkerArgs, type WorkerRequest } from '../src/adapters/worker/worker-request.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const FAKE = join(ROOT, 'test/fixtures/fake-worker.mjs');

let dir: string;
beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'foreman-worker-scope-')));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const DENIED_MESSAGE =
  "Permission to use Write has been denied because Claude Code is running in don't ask mode. IMPORTANT: You *may* attempt to accomplish this action using other tools.";

/** Runs the fake worker in `cwd` with `request`'s rules and `env`; the run, and the `--settings` it was started with. */
async function startFake(cwd: string, request: Pick<WorkerRequest, 'allowedTools' | 'deniedTools' | 'rulesOf'>, env: NodeJS.ProcessEnv, logPath: string) {
  await mkdir(cwd, { recursive: true });
  const journal = join(dir, `journal-${basename(logPath)}.jsonl`);
  const run = await runWorker({
    taskIndex: 0,
    attempt: 1,
    prompt: 'TASK-MARKER: t0\nFAKE-WORKER: {}\n',
    model: 'sonnet',
    cwd,
    claudeBin: FAKE,
    permissionMode: 'dontAsk',
    ...request,
    // Beyond the test's own limit: these tests are not about the worker's (those that are set theirs).
    timeoutMs: 300_000,
    logPath,
    env: { ...process.env, CLAUDE_CONFIG_DIR: undefined, ...env, FAKE_WORKER_JOURNAL: journal },
  });
  expect(existsSync(journal)).toBe(true);
  const start = JSON.parse(readFileSync(journal, 'utf8').split('\n')[0]!) as { args: string[] };
  const settings = JSON.parse(start.args[start.args.indexOf('--settings') + 1]!) as Record<string, unknown> & {
    permissions: { allow: string[]; deny: string[] };
  };
  return { run, settings };
}

describe('buildWorkerArgs', () => {
  it('passes the rules in --settings JSON with --setting-sources "", never --allowedTools', () => {
    const args = buildWorkerArgs(
      {
        model: 'haiku',
        permissionMode: 'dontAsk',
        allowedTools: ['Read', 'Edit(//r/my file (1).txt)', 'Bash(npm test)'],
        deniedTools: ['Edit(//r/my file (1).txt/*)'],
      },
      { apiKeyHelper: 'get-key' },
    );
    expect(args).not.toContain('--allowedTools');
    const at = args.indexOf('--setting-sources');
    expect(args[at + 1]).toBe('');
    expect(args[args.indexOf('--settings') + 1]).toBe(
      JSON.stringify({
        apiKeyHelper: 'get-key',
        permissions: { allow: ['Read', 'Edit(//r/my file (1).txt)', 'Bash(npm test)'], deny: ['Edit(//r/my file (1).txt/*)'] },
      }),
    );
  });
});

describe('login settings', () => {
  it('reads only the login keys of the user settings, from CLAUDE_CONFIG_DIR or HOME', async () => {
    const home = join(dir, 'home-a');
    await mkdir(join(home, '.claude'), { recursive: true });
    await writeFile(join(home, '.claude/settings.json'), JSON.stringify({ apiKeyHelper: 'k', permissions: { allow: ['Write'] }, hooks: {} }));
    expect(userSettingsPath({ HOME: home })).toBe(join(home, '.claude/settings.json'));
    expect(userSettingsPath({ HOME: home, CLAUDE_CONFIG_DIR: '/cfg' })).toBe('/cfg/settings.json');
    expect(await readLoginSettings({ HOME: home })).toEqual({ apiKeyHelper: 'k' });
    expect(await readLoginSettings({ HOME: join(dir, 'nobody') })).toEqual({});
    await writeFile(join(home, '.claude/settings.json'), '{ not json');
    expect(await readLoginSettings({ HOME: home })).toEqual({});
    await writeFile(join(home, '.claude/settings.json'), '["a"]');
    expect(await readLoginSettings({ HOME: home })).toEqual({});
  });

  it("a worker gets the person's login settings but not their allow rules; the log names the keys, never the values", async () => {
    const home = join(dir, 'home-b');
    await mkdir(join(home, '.claude'), { recursive: true });
    await writeFile(
      join(home, '.claude/settings.json'),
      JSON.stringify({ apiKeyHelper: 'print-secret-key', env: { ANTHROPIC_API_KEY: 'sk-secret-123' }, permissions: { allow: ['Write', 'Bash(*)'] } }),
    );
    const logPath = join(dir, 'logs', 'worker-0.log');
    const { run, settings } = await startFake(
      join(dir, 'w'),
      { allowedTools: ['Read', 'Edit(//r/a.ts)'], deniedTools: ['Edit(//r/a.ts/*)'] },
      { HOME: home },
      logPath,
    );
    expect(run.outcome.kind).toBe('reported');
    expect(settings).toEqual({
      apiKeyHelper: 'print-secret-key',
      env: { ANTHROPIC_API_KEY: 'sk-secret-123' },
      permissions: { allow: ['Read', 'Edit(//r/a.ts)'], deny: ['Edit(//r/a.ts/*)'] },
    });
    const log = await readFile(logPath, 'utf8');
    expect(log).toContain("--setting-sources ''");
    expect(log).toContain('"apiKeyHelper":"<from your Claude Code user settings>"');
    expect(log).toContain('"env":"<from your Claude Code user settings>"');
    expect(log).not.toContain('sk-secret-123');
    expect(log).not.toContain('print-secret-key');
  });
});

describe("the person's deny rules", () => {
  it('reach a worker given the repository they hold for, from the settings --setting-sources "" drops, anchored at its worktree and the repository; allow and ask rules do not, nor the worktree\'s own settings', async () => {
    const home = join(dir, 'home-c');
    const repo = join(dir, 'repo-c');
    const cwd = join(dir, 'wt-c');
    for (const folder of [join(home, '.claude'), join(repo, '.claude'), join(cwd, '.claude')]) await mkdir(folder, { recursive: true });
    await writeFile(
      join(home, '.claude/settings.json'),
      JSON.stringify({ permissions: { deny: ['Read(~/.aws/**)', 'Bash(git push:*)'], allow: ['Bash(*)'], ask: ['WebFetch'] } }),
    );
    await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Edit(/package-lock.json)'] } }));
    await writeFile(join(repo, '.claude/settings.local.json'), JSON.stringify({ permissions: { deny: ['Read(./.env)'] } }));
    // A worker may write its worktree's files: nothing there is read as the person's.
    await writeFile(join(cwd, '.claude/settings.local.json'), JSON.stringify({ permissions: { deny: ['Read(//from-the-worktree)'] } }));
    const { run, settings } = await startFake(
      cwd,
      { allowedTools: ['Read', `Edit(/${cwd}/a.ts)`], deniedTools: [`Edit(/${cwd}/a.ts/*)`], rulesOf: repo },
      // A session the run was started from has rules of its own; they are not the person's settings.
      { HOME: home, CLAUDE_PID: String(process.pid) },
      join(dir, 'logs', 'worker-c.log'),
    );
    expect(run.outcome.kind).toBe('reported');
    expect(settings.permissions.allow).toEqual(['Read', `Edit(/${cwd}/a.ts)`]);
    expect(settings.permissions.deny).toEqual([
      `Edit(/${cwd}/a.ts/*)`,
      'Read(~/.aws/**)',
      'Bash(git push:*)',
      `Edit(/${cwd}/package-lock.json)`,
      `Edit(/${repo}/package-lock.json)`,
      `Read(/${cwd}/.env)`,
      `Read(/${cwd}/**/.env)`,
      `Read(/${repo}/.env)`,
      `Read(/${repo}/**/.env)`,
    ]);
  });

  it('are not read for a worker not given a repository', async () => {
    const { settings } = await startFake(join(dir, 'wt-d'), { allowedTools: ['Read'] }, { HOME: join(dir, 'home-c') }, join(dir, 'logs', 'worker-d.log'));
    expect(settings.permissions.deny).toEqual([]);
  });
});

describe('denials in the log', () => {
  const toolUse = {
    type: 'assistant',
    message: { id: 'm1', content: [{ type: 'tool_use', id: 'toolu_9', name: 'Write', input: { file_path: '/repo/src/other.ts', content: 'x' } }] },
  };
  const denied = {
    type: 'system',
    subtype: 'permission_denied',
    tool_name: 'Write',
    tool_use_id: 'toolu_9',
    decision_reason_type: 'mode',
    message: DENIED_MESSAGE,
  };

  it('names the denied file (from the tool call before it) and keeps only the reason, not the advice to the model', () => {
    const parser = new StreamJsonParser({ cwd: '/repo' });
    parser.accept(JSON.stringify(toolUse));
    parser.accept(JSON.stringify(denied));
    expect(formatEventForLog(denied, { cwd: '/repo', toolUse: (id) => parser.toolUse(id) })).toEqual([
      "! permission denied: Write src/other.ts — Permission to use Write has been denied because Claude Code is running in don't ask mode.",
    ]);
    // Without a result line (a killed worker), the failure reason still gets the file.
    expect(parser.permissionDenials()).toEqual([{ tool: 'Write', input: { file_path: '/repo/src/other.ts', content: 'x' } }]);
  });

  it('still logs a denial whose tool call it never saw', () => {
    expect(formatEventForLog({ ...denied, tool_use_id: 'toolu_unknown' }, { cwd: '/repo', toolUse: () => undefined })).toEqual([
      "! permission denied: Write — Permission to use Write has been denied because Claude Code is running in don't ask mode.",
    ]);
  });
});
