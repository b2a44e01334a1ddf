// The repository as a Claude Code plugin, checked with the real CLI (node_modules/.bin/claude)
// against the scripted model server: the manifest validates, the CLI loads the skills as
// foreman:design and foreman:execute, expands them with the plugin root, and a user can add the
// repository as a marketplace and install the plugin from it.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { type StreamEvent, claudeBin, claudeEnv, parseStreamJson, repoRoot, tempHome } from '../support/real-claude.ts';
import { copyCheckout } from './support.ts';

let server: ModelServer;
let project: string;
const cleanups: string[] = [];

beforeAll(async () => {
  // Turn 1 answers with a text; a test that wants a tool call gets it from `respond` below.
  server = await startModelServer({ respond: () => [text('ok')] });
  project = await mkdtemp(join(tmpdir(), 'foreman-plugin-project-'));
  cleanups.push(project);
});

afterAll(async () => {
  await server?.close();
  for (const d of cleanups) await rm(d, { recursive: true, force: true });
});

async function claude(args: string[], opts: { home?: string; input?: string; cwd?: string } = {}) {
  const home = opts.home ?? (await tempHome());
  if (!opts.home) cleanups.push(home);
  const r = await execa(claudeBin, args, {
    cwd: opts.cwd ?? project,
    // A shared npm cache: a marketplace install runs `npm ci` for the plugin.
    env: claudeEnv(server.url, home, { npm_config_cache: join(homedir(), '.npm') }),
    extendEnv: false,
    input: opts.input ?? '',
    reject: false,
    timeout: 180_000,
  });
  return { ...r, events: parseStreamJson(String(r.stdout ?? '')) };
}

const headless = (extra: string[] = []) => ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'haiku', ...extra];
const initOf = (events: StreamEvent[]) => events.find((e) => e.type === 'system' && e.subtype === 'init');

/** The first user message of the last conversation turn the server saw. */
const lastPrompt = (): string => {
  const turns = server.turns();
  return (turns[turns.length - 1] as ScriptedRequest | undefined)?.promptRaw ?? '';
};

describe('foreman as a Claude Code plugin', () => {
  it('`claude plugin validate` accepts the repository (plugin and marketplace manifests, skill front matter)', async () => {
    const r = await claude(['plugin', 'validate', repoRoot]);
    expect(r.exitCode, String(r.stdout) + String(r.stderr)).toBe(0);
    expect(r.stdout).toContain('foreman:design');
    expect(r.stdout).toContain('foreman:execute');
    expect(r.stdout).toMatch(/Validation passed/);
  });

  it('--plugin-dir loads the skills: the init event lists foreman:design and foreman:execute', async () => {
    const r = await claude([...headless(['--plugin-dir', repoRoot])], { input: 'hello' });
    const init = initOf(r.events);
    expect(init, String(r.stderr)).toBeDefined();
    expect(init!.skills).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    expect(init!.slash_commands).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    expect(init!.plugins).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'foreman', path: repoRoot })]));
    expect(r.exitCode).toBe(0);
  });

  it('/foreman:design expands the skill with the goal and the plugin root substituted', async () => {
    const r = await claude(headless(['--plugin-dir', repoRoot]), { input: '/foreman:design add rate limiting to the API' });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const prompt = lastPrompt();
    expect(prompt).toContain(`Base directory for this skill: ${join(repoRoot, 'skills/design')}`);
    expect(prompt).toContain('The goal: add rate limiting to the API');
    expect(prompt).toContain(`"${repoRoot}/bin/foreman" plan check --fix`);
    expect(prompt).not.toContain('${CLAUDE_PLUGIN_ROOT}');
  });

  it('/foreman:execute and the bare /execute both reach our skill; the bare /design does not (Claude Code reserves it for its own design skill)', async () => {
    await claude(headless(['--plugin-dir', repoRoot]), { input: '/foreman:execute' });
    expect(lastPrompt()).toContain(`Base directory for this skill: ${join(repoRoot, 'skills/execute')}`);
    expect(lastPrompt()).toContain(`"${repoRoot}/bin/foreman" plan setup`);

    await claude(headless(['--plugin-dir', repoRoot]), { input: '/execute' });
    expect(lastPrompt()).toContain('<command-name>/foreman:execute</command-name>');

    await claude(headless(['--plugin-dir', repoRoot]), { input: '/design a thing' });
    expect(lastPrompt()).not.toContain('Base directory for this skill');
    expect(lastPrompt()).toContain('/foreman:design');
  });

  it("puts the plugin's bin/ on the PATH of the session's Bash tool", async () => {
    server.setResponder((req) => (req.assistantTurns === 0 ? [toolUse('Bash', { command: 'command -v foreman' })] : [text(`PATH-CHECK ${req.toolResults[0]?.content ?? ''}`)]));
    try {
      const r = await claude(headless(['--plugin-dir', repoRoot, '--permission-mode', 'dontAsk', '--allowedTools', 'Bash(command -v foreman)']), { input: 'where is foreman?' });
      const result = [...r.events].reverse().find((e) => e.type === 'result');
      expect(result?.result).toBe(`PATH-CHECK ${join(repoRoot, 'bin/foreman')}`);
    } finally {
      server.setResponder(() => [text('ok')]);
    }
  });

  it('installs from the repository as a marketplace; the installed skills load without --plugin-dir', async () => {
    // The repository as a user would clone it: its files, without node_modules.
    const source = await mkdtemp(join(tmpdir(), 'foreman-marketplace-'));
    cleanups.push(source);
    await copyCheckout(source);
    const home = await tempHome();
    cleanups.push(home);

    const add = await claude(['plugin', 'marketplace', 'add', source], { home });
    expect(add.exitCode, String(add.stdout) + String(add.stderr)).toBe(0);
    const install = await claude(['plugin', 'install', 'foreman@foreman'], { home });
    expect(install.exitCode, String(install.stdout) + String(install.stderr)).toBe(0);

    const installed = JSON.parse(await readFile(join(home, '.claude/plugins/installed_plugins.json'), 'utf8')) as { plugins: Record<string, unknown[]> };
    expect(Object.keys(installed.plugins)).toContain('foreman@foreman');
    const r = await claude(headless(), { home, input: 'hello' });
    const init = initOf(r.events);
    expect(init!.skills).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    const plugin = (init!.plugins as Array<{ name: string; source: string; path: string }>).find((p) => p.source === 'foreman@foreman');
    expect(plugin).toMatchObject({ name: 'foreman', version: '0.1.0' });

    // The copy the session loads has a working launcher, from any directory.
    const check = await execa(join(plugin!.path, 'bin/foreman'), ['plan', 'check', '--plan', join(repoRoot, 'test/plans/valid/realistic.json')], { cwd: project, reject: false });
    expect(check.exitCode, check.stderr).toBe(0);
  }, 300_000);
});
