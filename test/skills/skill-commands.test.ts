// Every command line the skills tell Claude to run exists and works. The lines are taken from
// the skill files (fenced bash blocks and inline code that start with the launcher), the plugin
// root is substituted as Claude Code substitutes it, and each runs with bash in a sample
// repository prepared to the state in which the skill runs it (test/skills/skill-lines.ts; the
// install test in plugin.test.ts runs the same lines from an installed copy of the plugin).

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePlan } from '../../src/core/plan/validate.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import { parseResults } from '../../src/cli/plan/session/finalize-command.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { repoRoot } from '../support/real-claude.ts';
import { LAUNCHER, preparedRepos, type PreparedRepos, runSkillLine, skillLines, substitute } from './skill-lines.ts';
import { isolatedSubagent } from './support.ts';

const repos: PreparedRepos = preparedRepos();
afterAll(() => repos.cleanup());

/** The skill's `allowed-tools` rules, from its front matter. */
async function rules(skill: string): Promise<string[]> {
  const text = await readFile(join(repoRoot, 'skills', skill, 'SKILL.md'), 'utf8');
  const front = /^---\n([\s\S]*?)\n---\n/.exec(text)?.[1] ?? '';
  return [...front.matchAll(/^ {2}- (.+)$/gm)].map((m) => m[1]!);
}

/** A PATH folder (made at `dir`) with every command of this PATH but `missing`: a machine without the sandbox. */
async function pathWithout(dir: string, missing: string[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const from of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    for (const name of await readdir(from).catch(() => [] as string[])) {
      if (missing.includes(name) || existsSync(join(dir, name))) continue;
      await symlink(join(from, name), join(dir, name)).catch(() => undefined);
    }
  }
  return dir;
}

describe('the commands in the skills', async () => {
  const { counts, unique } = await skillLines(join(repoRoot, 'skills'));

  it('are all found: every quoted launcher is in a bash block line or a one-line code span', () => {
    for (const c of counts) expect(c.found, c.file).toBe(c.quoted);
    expect(counts.map((c) => c.file)).toEqual(expect.arrayContaining(['skills/design/SKILL.md', 'skills/execute/SKILL.md']));
  });

  it('cover every /execute step and the /design checks (the probe included)', () => {
    const used = new Set(unique.map((c) => c.line.slice(LAUNCHER.length).trim().split(/\s+/).slice(0, 2).join(' ')));
    for (const c of [
      'plan setup',
      'plan next',
      'plan finalize',
      'plan commit',
      'plan check',
      'plan summary',
      'plan archive',
      'plan status',
      'plan probe',
      'plan revise',
      'execute --dry-run',
    ]) {
      expect(used, c).toContain(c);
    }
    const known = new Set(planCommands.map((c) => c.name));
    for (const u of used) if (u.startsWith('plan ')) expect(known, u).toContain(u.split(' ')[1]);
  });

  it.each(unique.map((c) => [`${c.file}: ${c.line}`, c] as const))('%s', async (_name, c) => {
    await runSkillLine(c, repoRoot, repos);
  });

  it("pre-approve exactly their own plan-tool steps, in the forms the skill runs, and files; never a decision that is the person's", async () => {
    const exact = (command: string) => `Bash(${LAUNCHER} plan ${command})`;
    // Exact rules, no prefixes: Claude Code 2.1.330 asks for any other argument, an assignment
    // before the command, or another command joined to it (CLI-NOTES.md).
    // One prefix rule: `plan declare --needed <N>`, a form the command refuses to take any path,
    // --as or other argument in, so it can do nothing but widen the named task by what its own
    // attempts wanted (test/cli/declare.test.ts).
    const declareNeeded = `Bash(${LAUNCHER} plan declare --needed:*)`;
    // One wildcard rule: `plan revise <N> --feedback-file .design/prompts/feedback.md`, the task's
    // number in the middle (Claude Code 2.1.330 matches `*` anywhere, CLI-NOTES.md); the person's
    // words are in the file the skill writes, never in the command line, and `plan revise`
    // refuses `--feedback` beside `--feedback-file`.
    const reviseFromFile = `Bash(${LAUNCHER} plan revise * --feedback-file .design/prompts/feedback.md)`;
    expect(await rules('execute')).toEqual([
      ...['setup --sandbox on', 'next', 'finalize --results .design/prompts/results.json --sandbox on', 'commit --sandbox on', 'status'].map(exact),
      declareNeeded,
      reviseFromFile,
      'Edit(.design/prompts/results.json)',
      'Edit(.design/prompts/feedback.md)',
    ]);
    expect(await rules('design')).toEqual([...['status --json', 'check --fix', 'probe --json --sandbox on', 'summary'].map(exact), 'Edit(.design/plan.json)']);
    for (const skill of ['execute', 'design']) {
      const own = await rules(skill);
      for (const rule of own.filter((r) => r !== declareNeeded && r !== reviseFromFile)) {
        expect(rule, skill).not.toMatch(/\*|:\*|--sandbox (off|auto)|--gate|--no-gate/);
        expect(rule, skill).not.toMatch(/ (approve|reject|retry|skip|declare|revise|land|clean|archive|execute)\b|foreman" execute/);
      }
      // The skill runs each of its pre-approved steps exactly so: every launcher line of one of those steps is a rule (a prefix rule: its line starts with the prefix).
      const lines = unique.filter((c) => c.file === `skills/${skill}/SKILL.md`).map((c) => c.line);
      const commands = own.filter((r) => r.startsWith('Bash(')).map((r) => r.slice('Bash('.length, -1));
      // A wildcard rule covers the skill's line with `<N>` where the rule has `*`.
      const numbered = (c: string) => c.replace(' * ', ' <N> ');
      for (const c of commands) {
        if (c.endsWith(':*'))
          expect(
            lines.some((line) => line.startsWith(`${c.slice(0, -2)} `)),
            `${skill}: ${c}`,
          ).toBe(true);
        else expect(lines, skill).toContain(numbered(c));
      }
      const steps = new Set(commands.map((c) => c.slice(LAUNCHER.length).trim().split(' ').slice(0, 2).join(' ')));
      const prefixes = commands.filter((c) => c.endsWith(':*')).map((c) => `${c.slice(0, -2)} `);
      for (const line of lines) {
        if (!steps.has(line.slice(LAUNCHER.length).trim().split(/\s+/).slice(0, 2).join(' '))) continue;
        if (!prefixes.some((prefix) => line.startsWith(prefix))) expect(commands.map(numbered), `${skill}: ${line}`).toContain(line);
      }
    }
  });

  // One test per pre-approved step: each prepares its repository with the plain steps (a real
  // subagent's work for finalize and commit), which on a busy machine is enough work for one time limit.
  describe('the pre-approved steps run no command outside the sandbox: where it cannot run, each runs none or refuses (exit 3) before it does', async () => {
    let scratch = '';
    let PATH = '';
    beforeAll(async () => {
      scratch = await mkdtemp(join(tmpdir(), 'foreman-no-sandbox-'));
      PATH = await pathWithout(join(scratch, 'bin'), ['bwrap']);
    });
    afterAll(() => rm(scratch, { recursive: true, force: true }));
    // Every command the plan holds leaves a line in the file $MARK names, outside the repository.
    const mark = (what: string) => `echo ${what} >> "$MARK"`;
    const plan = makePlan(
      [
        fakeTask('A', {
          create: ['a.txt'],
          acceptance: [{ criterion: 'a.txt exists', check: `${mark('check')}; test -f a.txt` }],
          assumptions: [{ claim: 'holds', verify: mark('assumption'), severity: 'blocking' }],
          fake: { write: { 'a.txt': 'a\n' } },
        }),
      ],
      { context: { testCommand: mark('gate'), setupCommand: mark('setup') } },
    );
    const run = (dir: string, line: string, markFile: string) =>
      execa('bash', ['-c', line], {
        cwd: dir,
        env: { NO_COLOR: '1', PATH, MARK: markFile, FOREMAN_WORKTREES: join(scratch, 'worktrees') },
        reject: false,
        timeout: 120_000,
        stdin: 'ignore',
      });
    const launcher = `"${join(repoRoot, 'bin/foreman')}"`;
    /** A repository in the state the skill runs `step` in, reached with the plain steps (which ran commands unsandboxed: marked in prep). */
    const prepared = async (stage: 'fresh' | 'in-progress' | 'finalized', prep: string) => {
      const repo = await tempGitRepo({ 'README.md': 'hello\n' });
      repos.add(repo);
      await writePlan(repo.dir, plan);
      if (stage === 'fresh') return repo.dir;
      const plain = async (args: string) => {
        const r = await run(repo.dir, `${launcher} plan ${args}`, prep);
        expect(r.exitCode, `${args}: ${r.stdout}\n${r.stderr}`).toBe(0);
        return JSON.parse(r.stdout);
      };
      expect((await plain('setup')).sandbox).toEqual({ mode: 'auto', sandboxed: false });
      expect((await plain('commit --wait 60')).gate.baseline).toBe('passed');
      const next = await plain('next');
      const ran = await isolatedSubagent(repo.dir, next.tasks[0].promptFile, 'haiku');
      await writeFile(
        join(repo.dir, '.design/prompts/results.json'),
        JSON.stringify([{ task: 0, output: ran.output.split('\n').at(-1), worktree: ran.worktree }]),
      );
      if (stage === 'finalized') expect((await plain('finalize --results .design/prompts/results.json')).results[0]).toMatchObject({ outcome: 'completed' });
      // The plain steps did run the plan's commands unsandboxed: the marks work.
      expect((await readFile(prep, 'utf8')).split('\n')).toEqual(expect.arrayContaining(['assumption', 'gate', ...(stage === 'finalized' ? ['check'] : [])]));
      return repo.dir;
    };
    const steps: Array<[string, string]> = [];
    for (const skill of ['execute', 'design']) {
      for (const rule of (await rules(skill)).filter((r) => r.startsWith('Bash('))) steps.push([skill, rule.slice('Bash('.length, -1)]);
    }

    it.each(steps)('%s: %s', async (skill, line) => {
      const words = line.slice(LAUNCHER.length).trim().split(' ');
      const stage = words[1] === 'finalize' ? 'in-progress' : words[1] === 'commit' ? 'finalized' : 'fresh';
      const name = `${skill}-${words.slice(1, 2)}`;
      const dir = await prepared(stage, join(scratch, `${name}.prep`));
      const ran = await run(dir, substitute(line.replace(' * ', ' 0 '), repoRoot, `skills/${skill}/SKILL.md`), join(scratch, `${name}.mark`));
      expect(existsSync(join(scratch, `${name}.mark`)), `${line} ran a command of the plan: ${ran.stdout}\n${ran.stderr}`).toBe(false);
      if (['setup', 'finalize', 'commit', 'probe'].includes(words[1]!)) {
        expect(ran.exitCode, line).toBe(3);
        expect(ran.stderr, line).toMatch(/--sandbox on: (the sandbox cannot run here|this session runs)/);
      } else expect([0, 2], `${line}: ${ran.stderr}`).toContain(ran.exitCode);
    });
  });

  it('the execute skill dispatches every worker with isolation "worktree", and its results example passes the worktree to finalize', async () => {
    const text = await readFile(join(repoRoot, 'skills/execute/SKILL.md'), 'utf8');
    expect(text).toContain('`isolation: "worktree"`');
    expect(text).toContain('worktreePath: <path>');
    const example = /```json\n([\s\S]*?)\n```/.exec(text)?.[1];
    expect(example).toBeDefined();
    expect(parseResults(example!, 'SKILL.md')).toEqual([
      { task: 3, output: expect.stringMatching(/^COMPLETED: /), worktree: expect.stringMatching(/\/\.claude\/worktrees\/agent-/) },
    ]);
  });

  it('the example plan in plan-format.md is valid', async () => {
    const text = await readFile(join(repoRoot, 'skills/design/plan-format.md'), 'utf8');
    const json = /```json\n([\s\S]*?)\n```/.exec(text)?.[1];
    expect(json).toBeDefined();
    const parsed = parsePlan(json!);
    expect(parsed.ok, parsed.ok ? '' : parsed.error.join('\n')).toBe(true);
    if (parsed.ok) {
      for (const t of parsed.value.tasks) {
        expect(t.agent?.acceptanceCriteria?.length, t.subject).toBeGreaterThan(0);
        expect(t.prompt).toMatch(/COMPLETED:/);
        expect(t.prompt).toMatch(/Do not stage, commit/);
      }
      expect(parsed.value.tasks[2]!.prompt).toContain('Dependency results will appear here when the task starts.');
    }
  });
});
