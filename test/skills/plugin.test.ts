// The built plugin (plugin/, `npm run build`) as Claude Code sees it, checked with the real CLI
// (node_modules/.bin/claude) against the scripted model server: the manifests validate, the CLI
// loads the skills as foreman:design and foreman:execute, expands them with the plugin root, and a
// user can add a clone of the repository as a marketplace and install the plugin from it, offline:
// nothing is downloaded, and every plan-tool command the skills run works from the installed copy.

import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ModelServer, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { claudeBin, claudeEnv, parseStreamJson, repoRoot, type StreamEvent, tempHome } from '../support/real-claude.ts';
import { preparedRepos, type PreparedRepos, runSkillLine, skillLines } from './skill-lines.ts';

/** The plugin folder the marketplace points at. */
const pluginRoot = join(repoRoot, 'plugin');

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
    // Any package download fails at once: a closed port on loopback, and an empty cache of its own.
    env: claudeEnv(server.url, home, { npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: join(home, '.npm') }),
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
  it('`claude plugin validate` accepts the plugin root (manifest, skill front matter, bin)', async () => {
    const r = await claude(['plugin', 'validate', pluginRoot]);
    expect(r.exitCode, String(r.stdout) + String(r.stderr)).toBe(0);
    expect(r.stdout).toContain('foreman:design');
    expect(r.stdout).toContain('foreman:execute');
    expect(r.stdout).toContain('bin: foreman');
    expect(r.stdout).toMatch(/Validation passed/);
  });

  it('`claude plugin validate` accepts the repository root as a marketplace whose entry agrees with plugin.json', async () => {
    const r = await claude(['plugin', 'validate', repoRoot]);
    expect(r.exitCode, String(r.stdout) + String(r.stderr)).toBe(0);
    expect(r.stdout).toContain('marketplace.json');
    // A disagreeing version is only a warning to the CLI; scripts/check-plugin.ts makes it a failure.
    expect(r.stdout).not.toMatch(/declares version/);
    expect(r.stdout).toMatch(/Validation passed/);
  });

  it('--plugin-dir loads the skills: the init event lists foreman:design and foreman:execute', async () => {
    const r = await claude([...headless(['--plugin-dir', pluginRoot])], { input: 'hello' });
    const init = initOf(r.events);
    expect(init, String(r.stderr)).toBeDefined();
    expect(init!.skills).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    expect(init!.slash_commands).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    expect(init!.plugins).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'foreman', path: pluginRoot })]));
    expect(r.exitCode).toBe(0);
  });

  it('/foreman:design expands the skill with the goal and the plugin root substituted', async () => {
    const r = await claude(headless(['--plugin-dir', pluginRoot]), { input: '/foreman:design add rate limiting to the API' });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const prompt = lastPrompt();
    expect(prompt).toContain(`Base directory for this skill: ${join(pluginRoot, 'skills/design')}`);
    expect(prompt).toContain('The goal: add rate limiting to the API');
    expect(prompt).toContain(`"${join(pluginRoot, 'skills/design')}/../../bin/foreman" plan check --fix`);
    expect(prompt).not.toContain('${CLAUDE_SKILL_DIR}');
  });

  it('/foreman:execute and the bare /execute both reach our skill; the bare /design does not (Claude Code reserves it for its own design skill)', async () => {
    await claude(headless(['--plugin-dir', pluginRoot]), { input: '/foreman:execute' });
    expect(lastPrompt()).toContain(`Base directory for this skill: ${join(pluginRoot, 'skills/execute')}`);
    expect(lastPrompt()).toContain(`"${join(pluginRoot, 'skills/execute')}/../../bin/foreman" plan setup`);

    await claude(headless(['--plugin-dir', pluginRoot]), { input: '/execute' });
    expect(lastPrompt()).toContain('<command-name>/foreman:execute</command-name>');

    await claude(headless(['--plugin-dir', pluginRoot]), { input: '/design a thing' });
    expect(lastPrompt()).not.toContain('Base directory for this skill');
    expect(lastPrompt()).toContain('/foreman:design');
  });

  it("puts the plugin's bin/ on the PATH of the session's Bash tool", async () => {
    server.setResponder((req) =>
      req.assistantTurns === 0 ? [toolUse('Bash', { command: 'command -v foreman' })] : [text(`PATH-CHECK ${req.toolResults[0]?.content ?? ''}`)],
    );
    try {
      const r = await claude(headless(['--plugin-dir', pluginRoot, '--permission-mode', 'dontAsk', '--allowedTools', 'Bash(command -v foreman)']), {
        input: 'where is foreman?',
      });
      const result = [...r.events].reverse().find((e) => e.type === 'result');
      expect(result?.result).toBe(`PATH-CHECK ${join(pluginRoot, 'bin/foreman')}`);
    } finally {
      server.setResponder(() => [text('ok')]);
    }
  });

  it('installs from a clone of the commit under test, offline: no node_modules, a few megabytes, the skills load, every skill command works', async () => {
    // The repository as a user gets it: a clone of the commit under test (what is committed is
    // what is installed, so the committed build is what this checks).
    const source = await mkdtemp(join(tmpdir(), 'foreman-marketplace-'));
    cleanups.push(source);
    const head = (await execa('git', ['rev-parse', 'HEAD'], { cwd: repoRoot })).stdout.trim();
    await execa('git', ['clone', '--quiet', '--no-local', '--no-checkout', repoRoot, source]);
    await execa('git', ['checkout', '--quiet', head], { cwd: source });
    const home = await tempHome();
    cleanups.push(home);

    const add = await claude(['plugin', 'marketplace', 'add', source], { home });
    expect(add.exitCode, String(add.stdout) + String(add.stderr)).toBe(0);
    const install = await claude(['plugin', 'install', 'foreman@foreman'], { home });
    expect(install.exitCode, String(install.stdout) + String(install.stderr)).toBe(0);

    const installed = JSON.parse(await readFile(join(home, '.claude/plugins/installed_plugins.json'), 'utf8')) as {
      plugins: Record<string, Array<{ installPath: string }>>;
    };
    expect(Object.keys(installed.plugins)).toContain('foreman@foreman');
    const r = await claude(headless(), { home, input: 'hello' });
    const init = initOf(r.events);
    expect(init!.skills).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    expect(init!.slash_commands).toEqual(expect.arrayContaining(['foreman:design', 'foreman:execute']));
    const plugin = (init!.plugins as Array<{ name: string; source: string; path: string }>).find((p) => p.source === 'foreman@foreman');
    const version = (JSON.parse(await readFile(join(pluginRoot, '.claude-plugin/plugin.json'), 'utf8')) as { version: string }).version;
    expect(plugin).toMatchObject({ name: 'foreman', version });

    // The installed copy is the plugin folder: no package manager ran, nothing but the plugin's files.
    const copy = plugin!.path;
    const entries = (await readdir(copy)).sort();
    expect(entries).toEqual(['.claude-plugin', 'README.md', 'bin', 'dist', 'hooks', 'schemas', 'skills', 'vendor']);
    let bytes = 0;
    for (const f of await readdir(copy, { recursive: true })) {
      expect(f).not.toMatch(/(^|\/)(node_modules|package\.json|package-lock\.json)$/);
      const st = await stat(join(copy, f));
      if (st.isFile()) bytes += st.size;
    }
    expect(bytes).toBeLessThan(5 * 1024 * 1024);
    const npmCache = await readdir(join(home, '.npm')).catch(() => []);
    expect(npmCache).toEqual([]);

    // Every command line of the installed skills, with the installed copy as the plugin root.
    const { unique } = await skillLines(join(copy, 'skills'));
    expect(unique.length).toBeGreaterThan(10);
    const repos: PreparedRepos = preparedRepos();
    try {
      for (const c of unique) await runSkillLine(c, copy, repos);
    } finally {
      await repos.cleanup();
    }
  }, 600_000);
});
