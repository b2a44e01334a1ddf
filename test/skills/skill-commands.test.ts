// Every command line the skills tell Claude to run exists and works. The lines are taken from
// the skill files (fenced bash blocks and inline code that start with the launcher), the plugin
// root is substituted as Claude Code substitutes it, and each runs with bash in a sample
// repository prepared to the state in which the skill runs it.

import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePlan } from '../../src/core/validate.ts';
import { planCommands } from '../../src/cli/plan/index.ts';
import { parseResults } from '../../src/cli/plan/lead.ts';
import { fakeWorker } from '../support/execute.ts';
import { type TempGitRepo, tempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { repoRoot } from '../support/real-claude.ts';
import { isolatedSubagent, step } from './support.ts';

const LAUNCHER = '"${CLAUDE_PLUGIN_ROOT}/bin/foreman"';

async function skillFiles(): Promise<string[]> {
  const dir = join(repoRoot, 'skills');
  const files = await readdir(dir, { recursive: true });
  return files.filter((f) => f.endsWith('.md')).map((f) => join(dir, f));
}

interface SkillCommand {
  file: string;
  line: string;
}

/** Launcher command lines: in ```bash blocks, whole lines; elsewhere, inline code spans. */
function extractCommands(text: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const f = /^\s*```(\S*)/.exec(line);
    if (f) {
      fence = fence === null ? f[1]! : null;
      continue;
    }
    if (fence === 'bash') {
      if (line.trim().startsWith(LAUNCHER)) out.push(line.trim());
      continue;
    }
    if (fence !== null) continue;
    for (const m of line.matchAll(/`("\$\{CLAUDE_PLUGIN_ROOT\}\/bin\/foreman"[^`]*)`/g)) out.push(m[1]!);
  }
  return out;
}

const repos: TempGitRepo[] = [];
afterAll(async () => {
  while (repos.length) await repos.pop()!.cleanup();
});

const samplePlan = () =>
  makePlan(
    [
      fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a.txt exists', check: 'test -f a.txt' }], fake: { write: { 'a.txt': 'a\n' } } }),
      fakeTask('B', { modify: ['README.md'], blockedBy: [0], fake: { append: { 'README.md': 'b\n' } } }),
    ],
    { context: { testCommand: 'true' } },
  );

type State = 'fresh' | 'in-progress' | 'finalized' | 'failed' | 'awaiting_approval' | 'after-headless-run';

/** The state a skill is in when it runs a given command. */
function stateFor(words: string[]): State {
  const [tool, sub] = words;
  if (tool === 'plan' && sub === 'finalize') return 'in-progress';
  if (tool === 'plan' && sub === 'commit') return 'finalized';
  if (tool === 'plan' && (sub === 'retry' || sub === 'skip')) return 'failed';
  if (tool === 'plan' && (sub === 'approve' || sub === 'reject')) return 'awaiting_approval';
  if (tool === 'plan' && sub === 'report') return 'after-headless-run';
  return 'fresh';
}

const env = { CLAUDE_BIN: fakeWorker, FOREMAN_BACKOFF_MS: '50', NO_COLOR: '1' };

async function prepare(state: State): Promise<string> {
  const repo = await tempGitRepo({ 'README.md': 'hello\n' });
  repos.push(repo);
  const planPath = await writePlan(repo.dir, samplePlan());
  const mark = async (status: 'failed' | 'awaiting_approval') => {
    const plan = await readPlan(planPath);
    plan.tasks[0] = { ...plan.tasks[0]!, status, attempts: 1, result: 'for the test' };
    await writePlan(repo.dir, plan);
  };
  switch (state) {
    case 'fresh':
      break;
    case 'in-progress':
    case 'finalized': {
      expect((await step(repo.dir, ['setup'])).code).toBe(0);
      const next = await step(repo.dir, ['next']);
      const results = [];
      for (const t of next.json.tasks) {
        const ran = await isolatedSubagent(repo.dir, t.promptFile, t.model);
        results.push({ task: t.index, output: ran.output.split('\n').at(-1), ...(ran.worktree ? { worktree: ran.worktree } : {}) });
      }
      await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify(results));
      if (state === 'finalized') expect((await step(repo.dir, ['finalize', '--results', '.design/prompts/results.json'])).code).toBe(0);
      break;
    }
    case 'failed':
      await mark('failed');
      break;
    case 'awaiting_approval':
      await mark('awaiting_approval');
      break;
    case 'after-headless-run': {
      const r = await execa(join(repoRoot, 'bin/foreman'), ['execute'], { cwd: repo.dir, env, reject: false, stdin: 'ignore' });
      expect(r.exitCode, r.stderr).toBe(0);
      break;
    }
  }
  return repo.dir;
}

/** As Claude Code does: `${CLAUDE_PLUGIN_ROOT}` becomes the plugin's root; placeholders get sample values. */
function substitute(line: string): string {
  const withRoot = line.replaceAll('${CLAUDE_PLUGIN_ROOT}', repoRoot);
  const out = withRoot.replaceAll('<N>', '0').replaceAll('<why>', 'a reason given in the test');
  const unknown = /<[A-Za-z][^>]*>/.exec(out);
  if (unknown) throw new Error(`unknown placeholder ${unknown[0]} in: ${line}`);
  return out;
}

describe('the commands in the skills', async () => {
  const commands: SkillCommand[] = [];
  const counts: Array<{ file: string; found: number; quoted: number }> = [];
  for (const file of await skillFiles()) {
    const text = await readFile(file, 'utf8');
    const found = extractCommands(text);
    counts.push({ file: relative(repoRoot, file), found: found.length, quoted: text.split(LAUNCHER).length - 1 });
    for (const line of found) commands.push({ file: relative(repoRoot, file), line });
  }
  const unique = [...new Map(commands.map((c) => [c.line, c])).values()];

  it('are all found: every quoted launcher is in a bash block line or a one-line code span', () => {
    for (const c of counts) expect(c.found, c.file).toBe(c.quoted);
    expect(counts.map((c) => c.file)).toEqual(expect.arrayContaining(['skills/design/SKILL.md', 'skills/execute/SKILL.md']));
  });

  it('cover every /execute step and the /design checks (the probe included)', () => {
    const used = new Set(unique.map((c) => c.line.slice(LAUNCHER.length).trim().split(/\s+/).slice(0, 2).join(' ')));
    for (const c of ['plan setup', 'plan next', 'plan finalize', 'plan commit', 'plan check', 'plan summary', 'plan archive', 'plan status', 'plan probe', 'execute --dry-run']) {
      expect(used, c).toContain(c);
    }
    const known = new Set(planCommands.map((c) => c.name));
    for (const u of used) if (u.startsWith('plan ')) expect(known, u).toContain(u.split(' ')[1]);
  });

  it.each(unique.map((c) => [`${c.file}: ${c.line}`, c] as const))('%s', async (_name, c) => {
    const words = c.line.slice(LAUNCHER.length).trim().split(/\s+/);
    const dir = await prepare(stateFor(words));
    const r = await execa('bash', ['-c', substitute(c.line)], { cwd: dir, env, reject: false, timeout: 120_000, stdin: 'ignore' });
    expect(r.exitCode, `${c.line}\nstdout: ${r.stdout.slice(0, 1500)}\nstderr: ${r.stderr.slice(0, 1500)}`).toBe(0);
    if (['setup', 'next', 'finalize', 'commit'].includes(words[1]!) && words[0] === 'plan') {
      expect(JSON.parse(r.stdout)).not.toHaveProperty('error');
    }
  });

  it('the execute skill dispatches every worker with isolation "worktree", and its results example passes the worktree to finalize', async () => {
    const text = await readFile(join(repoRoot, 'skills/execute/SKILL.md'), 'utf8');
    expect(text).toContain('`isolation: "worktree"`');
    expect(text).toContain('worktreePath: <path>');
    const example = /```json\n([\s\S]*?)\n```/.exec(text)?.[1];
    expect(example).toBeDefined();
    expect(parseResults(example!, 'SKILL.md')).toEqual([{ task: 3, output: expect.stringMatching(/^COMPLETED: /), worktree: expect.stringMatching(/\/\.claude\/worktrees\/agent-/) }]);
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
