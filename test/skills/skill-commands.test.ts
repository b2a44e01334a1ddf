// Every command line the skills tell Claude to run exists and works. The lines are taken from
// the skill files (fenced bash blocks and inline code that start with the launcher), the plugin
// root is substituted as Claude Code substitutes it, and each runs with bash in a sample
// repository prepared to the state in which the skill runs it (test/skills/skill-lines.ts; the
// install test in plugin.test.ts runs the same lines from an installed copy of the plugin).

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePlan } from '../../src/core/validate.ts';
import { planCommands } from '../../src/cli/plan/index.ts';
import { parseResults } from '../../src/cli/plan/lead.ts';
import { repoRoot } from '../support/real-claude.ts';
import { LAUNCHER, type PreparedRepos, preparedRepos, runSkillLine, skillLines } from './skill-lines.ts';

const repos: PreparedRepos = preparedRepos();
afterAll(() => repos.cleanup());

describe('the commands in the skills', async () => {
  const { counts, unique } = await skillLines(join(repoRoot, 'skills'));

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
    await runSkillLine(c, repoRoot, repos);
  });

  it("pre-approve exactly their own plan-tool steps and files, never a decision that is the person's", async () => {
    const rules = async (skill: string) => {
      const text = await readFile(join(repoRoot, 'skills', skill, 'SKILL.md'), 'utf8');
      const front = /^---\n([\s\S]*?)\n---\n/.exec(text)?.[1] ?? '';
      return [...front.matchAll(/^ {2}- (.+)$/gm)].map((m) => m[1]!);
    };
    const step = (name: string) => `Bash(${LAUNCHER} plan ${name}:*)`;
    expect(await rules('execute')).toEqual([...['setup', 'next', 'finalize', 'commit', 'status'].map(step), 'Edit(.design/prompts/results.json)']);
    expect(await rules('design')).toEqual([...['status', 'check', 'probe', 'summary'].map(step), 'Edit(.design/plan.json)']);
    for (const skill of ['execute', 'design']) {
      for (const rule of await rules(skill)) expect(rule, skill).not.toMatch(/ (approve|reject|retry|skip|land|clean|archive|execute)\b|foreman" execute/);
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
