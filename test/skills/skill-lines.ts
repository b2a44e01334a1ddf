// The launcher command lines the skills tell Claude to run, and how to run one from a given copy of
// foreman (a checkout, or an installed plugin) in a sample repository prepared to the state in which
// the skill runs it. Used by skill-commands.test.ts (the checkout) and plugin.test.ts (an installed copy).

import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { expect } from 'vitest';
import { fakeWorker } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from '../support/plans.ts';
import { isolatedSubagent, step } from './support.ts';

export const LAUNCHER = '"${CLAUDE_SKILL_DIR}/../../bin/foreman"';

export interface SkillCommand {
  /** The skill file, relative to the skills folder's parent (`skills/design/SKILL.md`). */
  file: string;
  line: string;
}

/** Launcher command lines: in ```bash blocks, whole lines; elsewhere, inline code spans. */
export function extractCommands(text: string): string[] {
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
    for (const m of line.matchAll(/`("\$\{CLAUDE_SKILL_DIR\}\/\.\.\/\.\.\/bin\/foreman"[^`]*)`/g)) out.push(m[1]!);
  }
  return out;
}

/** Every launcher line of the skills in `skillsDir`, with per-file counts of lines found and launchers quoted. */
export async function skillLines(skillsDir: string): Promise<{ counts: Array<{ file: string; found: number; quoted: number }>; unique: SkillCommand[] }> {
  const commands: SkillCommand[] = [];
  const counts: Array<{ file: string; found: number; quoted: number }> = [];
  const files = (await readdir(skillsDir, { recursive: true })).filter((f) => f.endsWith('.md')).sort();
  for (const f of files) {
    const text = await readFile(join(skillsDir, f), 'utf8');
    const found = extractCommands(text);
    const file = join('skills', f);
    // The front matter's `allowed-tools` name the launcher in rules, not as commands.
    const body = text.replace(/^---\n[\s\S]*?\n---\n/, '');
    counts.push({ file, found: found.length, quoted: body.split(LAUNCHER).length - 1 });
    for (const line of found) commands.push({ file, line });
  }
  return { counts, unique: [...new Map(commands.map((c) => [c.line, c])).values()] };
}

const samplePlan = () =>
  makePlan(
    [
      fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a.txt exists', check: 'test -f a.txt' }], fake: { write: { 'a.txt': 'a\n' } } }),
      fakeTask('B', { modify: ['README.md'], blockedBy: [0], fake: { append: { 'README.md': 'b\n' } } }),
    ],
    { context: { testCommand: 'true' } },
  );

type State = 'fresh' | 'in-progress' | 'finalized' | 'failed' | 'blocked-wanting' | 'awaiting_approval' | 'parked' | 'after-headless-run';

/** The state a skill is in when it runs a given command. */
function stateFor(words: string[]): State {
  const [tool, sub] = words;
  if (tool === 'plan' && sub === 'finalize') return 'in-progress';
  if (tool === 'plan' && sub === 'commit') return 'finalized';
  if (tool === 'plan' && (sub === 'retry' || sub === 'skip')) return 'failed';
  if (tool === 'plan' && sub === 'declare') return 'blocked-wanting';
  if (tool === 'plan' && (sub === 'approve' || sub === 'reject')) return 'awaiting_approval';
  if (tool === 'plan' && sub === 'revise') return 'parked';
  if (tool === 'plan' && sub === 'report') return 'after-headless-run';
  return 'fresh';
}

const env = { CLAUDE_BIN: fakeWorker, FOREMAN_BACKOFF_MS: '50', NO_COLOR: '1' };

export interface PreparedRepos {
  add: (repo: TempGitRepo) => void;
  cleanup: () => Promise<void>;
}

export function preparedRepos(): PreparedRepos {
  const repos: TempGitRepo[] = [];
  return {
    add: (repo) => repos.push(repo),
    cleanup: async () => {
      while (repos.length) await repos.pop()!.cleanup();
    },
  };
}

/** A sample repository in `state`; a headless run goes through `root`'s launcher. */
async function prepare(state: State, root: string, repos: PreparedRepos): Promise<string> {
  const repo = await tempGitRepo({ 'README.md': 'hello\n' });
  repos.add(repo);
  const plan = samplePlan();
  // Work parked for approval: the first task's, by the steps, its gate a person's.
  if (state === 'parked') plan.tasks[0]!.gate = 'human-approval';
  const planPath = await writePlan(repo.dir, plan);
  const mark = async (status: 'failed' | 'blocked' | 'awaiting_approval', wanted: Record<string, unknown> = {}) => {
    const plan = await readPlan(planPath);
    plan.tasks[0] = { ...plan.tasks[0]!, status, attempts: 1, result: 'for the test', ...wanted };
    await writePlan(repo.dir, plan);
  };
  switch (state) {
    case 'fresh':
      break;
    case 'in-progress':
    case 'finalized':
    case 'parked': {
      expect((await step(repo.dir, ['setup'])).code).toBe(0);
      const next = await step(repo.dir, ['next']);
      const results = [];
      for (const t of next.json.tasks) {
        const ran = await isolatedSubagent(repo.dir, t.promptFile, t.model);
        results.push({ task: t.index, output: ran.output.split('\n').at(-1), ...(ran.worktree ? { worktree: ran.worktree } : {}) });
      }
      await writeFile(join(repo.dir, '.design/prompts/results.json'), JSON.stringify(results));
      if (state !== 'in-progress') expect((await step(repo.dir, ['finalize', '--results', '.design/prompts/results.json'])).code).toBe(0);
      if (state === 'parked') {
        expect((await step(repo.dir, ['commit'])).code).toBe(0);
        await writeFeedback(repo.dir);
      }
      break;
    }
    case 'failed':
      await mark('failed');
      break;
    case 'blocked-wanting':
      // As foreman leaves a task whose attempts wrote outside its files twice.
      await mark('blocked', { undeclaredWrites: ['src/wanted.ts'] });
      break;
    case 'awaiting_approval':
      await mark('awaiting_approval');
      break;
    case 'after-headless-run': {
      const r = await execa(join(root, 'bin/foreman'), ['execute'], { cwd: repo.dir, env, reject: false, stdin: 'ignore' });
      expect(r.exitCode, r.stderr).toBe(0);
      break;
    }
  }
  return repo.dir;
}

/** The person's words for a revision, as the execute skill writes them before `plan revise`. */
const writeFeedback = async (dir: string) => {
  await mkdir(join(dir, '.design/prompts'), { recursive: true });
  await writeFile(join(dir, '.design/prompts/feedback.md'), 'Also handle the empty string.\n');
};

/** As Claude Code does: `${CLAUDE_SKILL_DIR}` becomes the skill's folder under `root`; placeholders get sample values. */
export function substitute(line: string, root: string, file: string): string {
  const withRoot = line.replaceAll('${CLAUDE_SKILL_DIR}', join(root, dirname(file)));
  const out = withRoot.replaceAll('<N>', '0').replaceAll('<why>', 'a reason given in the test');
  const unknown = /<[A-Za-z][^>]*>/.exec(out);
  if (unknown) throw new Error(`unknown placeholder ${unknown[0]} in: ${line}`);
  return out;
}

/** Runs one skill line with bash, from the copy of foreman at `root`, in a repository prepared for it; it must succeed. */
export async function runSkillLine(c: SkillCommand, root: string, repos: PreparedRepos): Promise<void> {
  const words = c.line.slice(LAUNCHER.length).trim().split(/\s+/);
  const dir = await prepare(stateFor(words), root, repos);
  const r = await execa('bash', ['-c', substitute(c.line, root, c.file)], { cwd: dir, env, reject: false, timeout: 120_000, stdin: 'ignore' });
  expect(r.exitCode, `${c.line}\nstdout: ${r.stdout.slice(0, 1500)}\nstderr: ${r.stderr.slice(0, 1500)}`).toBe(0);
  if (['setup', 'next', 'finalize', 'commit'].includes(words[1]!) && words[0] === 'plan') {
    expect(JSON.parse(r.stdout)).not.toHaveProperty('error');
  }
}
