// README.md and docs/ held to the code: every link resolves, every flag and exit code is
// documented where the README says (docs/cli.md), every command they show exists, and the
// README's example plan is one `plan check --strict` and `plan probe` pass.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Command } from '../src/cli/command.ts';
import { executeCommand } from '../src/cli/execute.ts';
import { planCommands } from '../src/cli/plan/commands.ts';
import { EXIT } from '../src/core/engine/exit-codes.ts';
import { repoRoot, runPlanTool } from './support/execute.ts';
import { anchors, codeBlocks, documentationFiles, inlineCode, links, readDoc, section, tableRows } from './support/docs.ts';
import { afterEachCleanups, tempGitRepo } from './support/git-repo.ts';

const files = documentationFiles();
const cli = readDoc('docs/cli.md');
const visiblePlanCommands = planCommands.filter((c) => c.hidden !== true);
const STEPS = ['setup', 'next', 'finalize', 'commit'];

/** A command's flags as written: `--name`, and the value it takes (`N`, `SECONDS`…) if any. */
const flagsOf = (command: Command) =>
  Object.entries(command.options)
    .filter(([name]) => name !== 'help')
    .map(([name, spec]) => ({ flag: `--${name}`, valueName: spec.type === 'string' ? spec.valueName : undefined, spec }));

const rangeText = (range: { whole: boolean; min: number; max: number; aboveMin?: boolean }) =>
  range.aboveMin ? `above ${range.min}, at most ${range.max}` : `${range.min}–${range.max}`;

describe('links', () => {
  it.each(files)('every relative link of %s names a file that exists, and a heading it has', (file) => {
    const broken: string[] = [];
    for (const { target, line } of links(readDoc(file))) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? join(repoRoot, file) : normalize(join(repoRoot, dirname(file), path));
      if (!resolved.startsWith(repoRoot) || !existsSync(resolved)) {
        broken.push(`${file}:${line}: ${target} (no such file)`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) {
        broken.push(`${file}:${line}: ${target} (an anchor into a file that is not Markdown)`);
        continue;
      }
      if (!anchors(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${file}:${line}: ${target} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });

  it('README.md links every page of docs/', () => {
    const linked = new Set(links(readDoc('README.md')).map((l) => l.target.split('#')[0]));
    expect(files.filter((f) => f.startsWith('docs/') && !linked.has(f))).toEqual([]);
  });
});

describe('docs/cli.md', () => {
  const executeRows = tableRows(section(cli, '`execute` options')).slice(1);

  it.each(flagsOf(executeCommand))('documents execute $flag: its value, range and default', ({ flag, valueName, spec }) => {
    const written = valueName ? `\`${flag} ${valueName}\`` : `\`${flag}\``;
    const row = executeRows.find((cells) => cells[0] === written);
    expect(row, `a row for ${written} in the table of execute's options`).toBeDefined();
    if (spec.range) expect(row![1]).toContain(rangeText(spec.range));
    // `(default 4)`, `(default dontAsk; …)`, `(default 18000, 5 hours)`: the default column agrees.
    const stated = /\(default ([^:;,)\s]+)/.exec(spec.description);
    if (stated) expect(row![2]).toContain(stated[1]);
  });

  it('lists no execute flag the command does not have', () => {
    const known = new Set([...flagsOf(executeCommand).map((f) => f.flag), '--help']);
    expect(executeRows.map((cells) => /^`(--[a-z-]+)/.exec(cells[0]!)?.[1]).filter((flag) => flag === undefined || !known.has(flag))).toEqual([]);
  });

  /** The flags a text names: `--json`, `[--run ID]`, `--as create|modify`. */
  const flagsNamed = (text: string) => [...text.matchAll(/(?<![\w-])(--[a-z][a-z-]*)/g)].map((m) => m[1]!);

  it.each(visiblePlanCommands.filter((c) => !STEPS.includes(c.name)).map((c) => [c.name, c] as const))(
    'documents every flag of plan %s under its heading',
    (name, command) => {
      const heading = cli.split('\n').find((line) => /^#{3} /.test(line) && line.includes(`\`plan ${name}\``));
      expect(heading, `a heading naming \`plan ${name}\``).toBeDefined();
      const named = new Set(flagsNamed(section(cli, heading!.replace(/^#+ /, ''))));
      expect(
        flagsOf(command)
          .map((f) => f.flag)
          .filter((flag) => flag !== '--plan' && !named.has(flag)),
      ).toEqual([]);
    },
  );

  it("names under a plan command's heading no flag that it (or execute, which some share) does not have", () => {
    const problems: string[] = [];
    for (const heading of cli.split('\n').filter((line) => /^#{3} `plan [a-z]+`/.test(line))) {
      const commands = [...heading.matchAll(/`plan ([a-z]+)`/g)].map((m) => planCommands.find((c) => c.name === m[1])!);
      const known = new Set([...commands, executeCommand].flatMap((c) => flagsOf(c).map((f) => f.flag)));
      for (const flag of flagsNamed(section(cli, heading.replace(/^#+ /, '')))) if (!known.has(flag)) problems.push(`${heading}: ${flag}`);
    }
    expect(problems).toEqual([]);
  });

  it('documents every flag of the in-session steps in their table, and no other', () => {
    let step = '';
    const documented = new Map<string, Set<string>>();
    for (const cells of tableRows(section(cli, 'The in-session steps')).slice(1)) {
      if (cells[0]) step = /^`plan ([a-z]+)`$/.exec(cells[0])![1]!;
      for (const m of cells[1]!.matchAll(/`(--[a-z-]+)/g)) (documented.get(step) ?? documented.set(step, new Set()).get(step)!).add(m[1]!);
    }
    for (const name of STEPS) {
      const command = planCommands.find((c) => c.name === name)!;
      const flags = flagsOf(command)
        .map((f) => f.flag)
        .filter((flag) => flag !== '--plan' && flag !== '--repo');
      expect([...(documented.get(name) ?? [])].sort(), `plan ${name}`).toEqual(flags.sort());
    }
  });

  it('has every exit code in its table, and no other', () => {
    const codes = tableRows(section(cli, 'Exit codes'))
      .slice(1)
      .filter((cells) => /^\d+$/.test(cells[0]!))
      .map((cells) => Number(cells[0]));
    expect(codes.sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });
});

describe('the commands the documentation shows', () => {
  const scripts = Object.keys(JSON.parse(readDoc('package.json')).scripts as Record<string, string>);
  // Every line of a shell or text block and every inline code span, with `#` comments dropped.
  const shown = files.flatMap((file) => {
    const markdown = readDoc(file);
    const blockLines = codeBlocks(markdown)
      .filter((b) => b.lang === 'sh' || b.lang === 'text' || b.lang === '')
      .flatMap((b) => b.body.split('\n'));
    return [...blockLines, ...inlineCode(markdown)].map((text) => ({ file, text: text.replace(/\s#\s.*$/, '') }));
  });

  it('names only plan commands and flags that exist', () => {
    const problems: string[] = [];
    // Every command takes --help (-h) and --version besides its own flags (src/cli/command.ts).
    const known = new Map(planCommands.map((c) => [c.name, new Set([...flagsOf(c).map((f) => f.flag), '--help', '--version'])]));
    const executeFlags = new Set([...flagsOf(executeCommand).map((f) => f.flag), '--help', '--version']);
    for (const { file, text } of shown) {
      // `bin/foreman plan retry 3`, `plan setup --sandbox on`, `scripts/plan.ts check`, `bin/foreman execute --dry-run`.
      for (const m of text.matchAll(/(?:(?<![\w-])plan|scripts\/plan\.ts) ([a-z][a-z-]*)((?: +[^\s`]+)*)/g)) {
        const [, name, rest] = m as unknown as [string, string, string];
        if (name === 'tool' || name === 'is' || name === 'and') continue; // prose: "the plan tool"
        const flags = known.get(name);
        if (flags === undefined) {
          problems.push(`${file}: "${text}": no plan command ${name}`);
          continue;
        }
        for (const f of rest.match(/(?<![\w-])--[a-z][a-z-]*/g) ?? []) if (!flags.has(f)) problems.push(`${file}: "${text}": plan ${name} has no ${f}`);
      }
      for (const m of text.matchAll(/(?:bin\/foreman|scripts\/execute\.ts) execute((?: +[^\s`]+)*)/g)) {
        for (const f of m[1]!.match(/(?<![\w-])--[a-z][a-z-]*/g) ?? []) if (!executeFlags.has(f)) problems.push(`${file}: "${text}": execute has no ${f}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('names only npm scripts package.json has', () => {
    const named = shown.flatMap(({ file, text }) => [...text.matchAll(/npm run ([\w:-]+)/g)].map((m) => ({ file, script: m[1]! })));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter(({ script }) => !scripts.includes(script))).toEqual([]);
  });

  it("README.md keeps the set-up commands and the suite's: npm ci, npm run demo, npm test", () => {
    const setup = codeBlocks(readDoc('README.md')).find((b) => b.lang === 'sh' && b.body.includes('npm ci'));
    expect(setup?.body.split('\n').map((line) => line.replace(/\s+#.*$/, ''))).toEqual(['npm ci', 'npm run demo', 'npm test']);
    expect(scripts).toEqual(expect.arrayContaining(['demo', 'test']));
  });
});

describe("the README's example plan", () => {
  const cleanups = afterEachCleanups();
  const plan = codeBlocks(readDoc('README.md')).find((b) => b.lang === 'json' && b.body.includes('"schemaVersion"'))!;

  it('passes plan check --strict and the probe, in the Node project it is written for', async () => {
    expect(plan, 'a JSON block with a plan in README.md').toBeDefined();
    // The project the README describes: tests run with `npm test`, pageUrl made from the id.
    const repo = await tempGitRepo({
      'package.json': '{ "name": "pages", "version": "1.0.0", "type": "module", "scripts": { "test": "node --test" } }\n',
      'package-lock.json':
        '{ "name": "pages", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": { "": { "name": "pages", "version": "1.0.0" } } }\n',
      'src/pages.js': 'export const pageUrl = (page) => `/pages/${page.id}`;\n',
      'test/pages.test.js':
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { pageUrl } from '../src/pages.js';\ntest('url', () => assert.equal(pageUrl({ id: 3 }), '/pages/3'));\n",
    });
    cleanups.push(repo.cleanup);
    await repo.write({ '.design/plan.json': plan.body });

    const check = await runPlanTool(repo.dir, ['check', '--strict']);
    expect(check.stderr).toBe('');
    expect(check).toMatchObject({ exitCode: 0, stdout: expect.stringContaining('valid (2 tasks)') });

    // Every check fails before its task's work: proven, none broken or vacuous.
    const probe = await runPlanTool(repo.dir, ['probe', '--json']);
    expect(probe.exitCode, probe.stderr).toBe(0);
    const report = JSON.parse(probe.stdout) as { setup: { passed: boolean }; tasks: Array<{ verdict: string }> };
    expect(report.setup.passed).toBe(true);
    expect(report.tasks.map((t) => t.verdict)).toEqual(['proven', 'proven']);
  });
});
