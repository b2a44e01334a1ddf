// The worker hook's decision (src/core/sandbox/worker-hook.ts), pure: what a worker of an in-session run
// may do, and that the hook decides nothing anywhere else.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bashRuleMayMatch,
  type Binding,
  type CallFacts,
  classifyTool,
  currentBinding,
  decideToolCall,
  type HandOut,
  judgeWrite,
  ruleRootsOf,
  sandboxedCommand,
  settingsFolders,
  shellQuote,
  type ToolCall,
  workerSandboxSettings,
  writePath,
} from '../../src/core/sandbox/worker-hook.ts';

const repo = '/home/p/repo';
const worktree = `${repo}/.claude/worktrees/agent-a1`;
const handOut: HandOut = {
  version: 1,
  session: 'S1',
  repo,
  planPath: `${repo}/.design/plan.json`,
  sandbox: { available: true, network: [] },
  tasks: [
    { index: 0, attempt: 1, subject: 'zero', promptFile: `${repo}/.design/prompts/task-0.md`, files: ['src/a.ts', 'docs/'] },
    { index: 2, attempt: 2, subject: 'two', promptFile: `${repo}/.design/prompts/task-2.md`, files: ['b.txt'] },
  ],
};
const bound: Binding = { agent: 'a1', task: 0, attempt: 1, worktree };
const runner = { node: '/usr/bin/node', cli: '/plugin/dist/srt.mjs', settingsFile: '/cache/S1/agents/a1.sandbox.json', tmpdir: '/cache/S1/tmp/a1' };
/** What a Bash call's decision needs besides the call: the person's rules (`deny`, `ask`), where their paths are read, the runner. */
const bashFacts = (deny: string[] = [], ask: string[] = []): Partial<CallFacts> => ({
  personRules: { deny, ask },
  ruleRoots: { home: '/home/me', roots: [repo, worktree] },
  runner,
});

const call = (toolName: string, toolInput: Record<string, unknown>, over: Partial<ToolCall> = {}): ToolCall => ({
  sessionId: 'S1',
  agentId: 'a1',
  cwd: worktree,
  toolName,
  toolInput,
  ...over,
});
const facts = (over: Partial<CallFacts> = {}): CallFacts => ({ handOut, binding: bound, ...over });

describe('the worker hook decides nothing outside a worker', () => {
  it('for the lead (no agent id), another session, a session running no plan, or a subagent outside its worktree', () => {
    const write = call('Write', { file_path: `${worktree}/src/a.ts` });
    const target = { kind: 'inside', path: 'src/a.ts' } as const;
    expect(decideToolCall({ ...write, agentId: null }, facts({ target }))).toEqual({ kind: 'none' });
    expect(decideToolCall({ ...write, sessionId: 'S2' }, facts({ target }))).toEqual({ kind: 'none' });
    expect(decideToolCall(write, facts({ handOut: null, target }))).toEqual({ kind: 'none' });
    expect(decideToolCall({ ...write, cwd: repo }, facts({ target }))).toEqual({ kind: 'none' });
    // Another agent's worktree is not this agent's.
    expect(decideToolCall({ ...write, cwd: `${repo}/.claude/worktrees/agent-b2` }, facts({ target }))).toEqual({ kind: 'none' });
  });

  it('leaves reads and the CLI’s own bookkeeping tools to the person', () => {
    for (const tool of ['Glob', 'Grep', 'TodoWrite', 'ToolSearch', 'TaskStop']) expect(decideToolCall(call(tool, {}), facts())).toEqual({ kind: 'none' });
    expect(decideToolCall(call('Read', { file_path: `${repo}/README.md` }), facts())).toEqual({ kind: 'none' });
  });
});

describe('a bound worker', () => {
  it('may write its declared files inside its worktree, a declared folder included', () => {
    expect(decideToolCall(call('Write', {}), facts({ target: { kind: 'inside', path: 'src/a.ts' } }))).toMatchObject({ kind: 'allow' });
    expect(decideToolCall(call('Edit', {}), facts({ target: { kind: 'inside', path: 'docs/deep/x.md' } }))).toMatchObject({ kind: 'allow' });
    expect(decideToolCall(call('NotebookEdit', {}), facts({ target: { kind: 'inside', path: 'docs/n.ipynb' } }))).toMatchObject({ kind: 'allow' });
  });

  it('is denied any other path, with a reason naming the files it may change', () => {
    const undeclared = decideToolCall(call('Write', {}), facts({ target: { kind: 'inside', path: 'src/b.ts' } }));
    expect(undeclared).toMatchObject({ kind: 'deny' });
    expect(undeclared.kind === 'deny' && undeclared.reason).toContain('may change only: src/a.ts, docs/');
    expect(undeclared.kind === 'deny' && undeclared.reason).toContain('src/b.ts');
    const outside = decideToolCall(call('Write', {}), facts({ target: { kind: 'outside', path: `${repo}/src/a.ts` } }));
    expect(outside).toMatchObject({ kind: 'deny' });
    expect(outside.kind === 'deny' && outside.reason).toContain('outside your worktree');
    // `src/a.ts/x` is not the file `src/a.ts`; `docs` (no slash) is not the folder's content.
    expect(decideToolCall(call('Write', {}), facts({ target: { kind: 'inside', path: 'src/a.ts/x' } }))).toMatchObject({ kind: 'deny' });
    expect(decideToolCall(call('Write', {}), facts({ target: { kind: 'inside', path: '.git/config' } }))).toMatchObject({ kind: 'deny' });
    expect(decideToolCall(call('Write', {}), facts({ target: { kind: 'missing' } }))).toMatchObject({ kind: 'deny' });
  });

  it('has its Bash command rewritten to run in the sandbox, every other input field kept', () => {
    const verdict = decideToolCall(
      call('Bash', { command: "npm test -- --grep 'it works'", run_in_background: false, description: 'tests' }),
      facts(bashFacts()),
    );
    expect(verdict).toMatchObject({ kind: 'allow' });
    const input = verdict.kind === 'allow' ? verdict.updatedInput : undefined;
    expect(input).toMatchObject({ run_in_background: false, description: 'tests' });
    expect(input?.command).toBe(sandboxedCommand("npm test -- --grep 'it works'", runner));
    expect(input?.command).toBe(
      `CLAUDE_CODE_TMPDIR='/cache/S1/tmp/a1' '/usr/bin/node' '/plugin/dist/srt.mjs' --settings '/cache/S1/agents/a1.sandbox.json' -c 'npm test -- --grep '\\''it works'\\'''`,
    );
  });

  it('leaves Bash to the person where the sandbox cannot run, or where a deny or ask rule of theirs may match', () => {
    const bash = call('Bash', { command: 'rm -rf build' });
    expect(decideToolCall(bash, facts({ handOut: { ...handOut, sandbox: { available: false, reason: 'bwrap missing' } }, ...bashFacts() }))).toEqual({
      kind: 'none',
    });
    expect(decideToolCall(bash, facts(bashFacts(['Bash(rm:*)'])))).toEqual({ kind: 'none' });
    expect(decideToolCall(bash, facts(bashFacts([], ['Bash(rm:*)'])))).toEqual({ kind: 'none' });
    expect(decideToolCall(bash, facts(bashFacts(['Bash'])))).toEqual({ kind: 'none' });
    expect(decideToolCall(bash, facts(bashFacts(['Read(./.env)', 'Bash(git push:*)'])))).toMatchObject({ kind: 'allow' });
  });

  it("runs its Bash command with the person's Read and Edit deny rules in its sandbox settings, or leaves it to them where the sandbox cannot hold one exactly", () => {
    const bash = call('Bash', { command: 'npm test' });
    const settings = (deny: string[], ask: string[] = []) => {
      const verdict = decideToolCall(bash, facts(bashFacts(deny, ask)));
      return verdict.kind === 'allow' ? verdict.sandboxSettings : verdict;
    };
    expect(settings([])).toEqual(workerSandboxSettings(worktree, runner.tmpdir, []));
    expect(settings(['Read(./.env)', 'Read(~/.aws/**)', 'Edit(./package-lock.json)', 'Edit(~/.ssh/*)'])).toEqual({
      filesystem: {
        allowWrite: [worktree, runner.tmpdir],
        // The person's tree is not writable anyway: only the worktree's copy needs a write entry.
        denyWrite: [`${worktree}/.git`, `${worktree}/.claude/settings.json`, `${worktree}/.claude/settings.local.json`, `${worktree}/package-lock.json`],
        denyRead: [`${repo}/.env`, `${worktree}/.env`, '/home/me/.aws/**'],
      },
      network: { allowedDomains: [], deniedDomains: [] },
    });
    // Ask rules are about Claude Code's own file tools, as in its sandbox.
    expect(settings([], ['Read(./.env)'])).toEqual(workerSandboxSettings(worktree, runner.tmpdir, []));
    for (const deny of [['Edit(**/*.lock)'], ['Read(//**/*.pem)'], ['Read'], [`Edit(/${repo}/**)`], ['Read(\\[id\\].ts)']])
      expect(settings(deny), deny[0]).toEqual({ kind: 'none' });
  });

  it('is refused the tools a headless worker does not get, with a reason', () => {
    for (const tool of ['WebFetch', 'WebSearch', 'Agent', 'Task', 'mcp__github__create_issue', 'ExitWorktree', 'Skill', 'CronCreate', 'Monitor']) {
      const verdict = decideToolCall(call(tool, {}), facts());
      expect(verdict, tool).toMatchObject({ kind: 'deny' });
      expect(verdict.kind === 'deny' && verdict.reason, tool).toContain(`${tool} is not available to a worker`);
    }
  });

  it('may read its own prompt file; a stale binding (its attempt finalized or handed out again) counts for nothing', () => {
    expect(decideToolCall(call('Read', { file_path: handOut.tasks[0]!.promptFile }), facts())).toMatchObject({ kind: 'allow' });
    expect(currentBinding(handOut, { ...bound, attempt: 2 })).toBeNull();
    expect(currentBinding(handOut, bound)).toBe(bound);
    const stale = decideToolCall(call('Write', {}), facts({ binding: { ...bound, task: 5 }, target: { kind: 'inside', path: 'src/a.ts' } }));
    expect(stale).toMatchObject({ kind: 'deny' });
  });
});

describe('a subagent in a worktree that has not read its prompt file', () => {
  it('may read (its prompt file is allowed) but not write or run commands', () => {
    const unbound = facts({ binding: null });
    expect(decideToolCall(call('Read', { file_path: handOut.tasks[1]!.promptFile }), unbound)).toMatchObject({ kind: 'allow' });
    for (const [tool, input] of [
      ['Write', { file_path: `${worktree}/src/a.ts` }],
      ['Bash', { command: 'ls' }],
    ] as const) {
      const verdict = decideToolCall(call(tool, input), unbound);
      expect(verdict).toMatchObject({ kind: 'deny' });
      expect(verdict.kind === 'deny' && verdict.reason).toContain('read your task');
      expect(verdict.kind === 'deny' && verdict.reason).toContain(handOut.tasks[0]!.promptFile);
    }
  });

  it("may not use another agent's binding", () => {
    const verdict = decideToolCall(call('Write', {}), facts({ binding: { ...bound, agent: 'zz' }, target: { kind: 'inside', path: 'src/a.ts' } }));
    expect(verdict).toMatchObject({ kind: 'deny' });
  });

  it('while a revision is handed out, may read nothing but a prompt file: its parked work is put in the worktree when the worker binds', () => {
    const parked = { base: 'a'.repeat(40), commit: 'b'.repeat(40) };
    const revising: HandOut = { ...handOut, tasks: [{ ...handOut.tasks[0]!, parked }, handOut.tasks[1]!] };
    const unbound = facts({ handOut: revising, binding: null });
    const early = decideToolCall(call('Read', { file_path: `${worktree}/src/a.ts` }), unbound);
    expect(early).toMatchObject({ kind: 'deny' });
    expect(early.kind === 'deny' && early.reason).toContain("read your task's prompt file first");
    expect(decideToolCall(call('Read', { file_path: revising.tasks[0]!.promptFile }), unbound)).toMatchObject({ kind: 'allow' });
    // Bound, it reads as any worker does.
    expect(decideToolCall(call('Read', { file_path: `${worktree}/src/a.ts` }), facts({ handOut: revising }))).toEqual({ kind: 'none' });
    // With no revision handed out, an unbound subagent's reads stay the person's.
    expect(decideToolCall(call('Read', { file_path: `${worktree}/src/a.ts` }), facts({ binding: null }))).toEqual({ kind: 'none' });
  });

  it('is told to stop, and stays unbound, when its revision’s parked work could not be put in its worktree', () => {
    const verdict = decideToolCall(call('Read', { file_path: handOut.tasks[0]!.promptFile }), facts({ binding: null, unready: 'git read-tree failed' }));
    expect(verdict).toMatchObject({ kind: 'deny' });
    expect(verdict.kind === 'deny' && verdict.reason).toContain('(git read-tree failed)');
    expect(verdict.kind === 'deny' && verdict.reason).toContain('end with: FAILED: the earlier work of task 0 could not be put in the worktree');
  });
});

describe('the pieces', () => {
  it('classifies tools', () => {
    expect(['Edit', 'Write', 'NotebookEdit'].map(classifyTool)).toEqual(['write', 'write', 'write']);
    expect(classifyTool('Bash')).toBe('bash');
    expect(classifyTool('Read')).toBe('read');
    expect(classifyTool('SomethingNew')).toBe('refused');
  });

  it('reads the written path from the field of each tool, relative to the working directory', () => {
    expect(writePath({ toolName: 'Write', toolInput: { file_path: 'x/../y.ts' }, cwd: '/w' }, '/h')).toEqual({ kind: 'path', path: '/w/y.ts' });
    expect(writePath({ toolName: 'NotebookEdit', toolInput: { notebook_path: '/w/n.ipynb' }, cwd: '/w' }, '/h')).toEqual({ kind: 'path', path: '/w/n.ipynb' });
    expect(writePath({ toolName: 'Edit', toolInput: {}, cwd: '/w' }, '/h')).toBeNull();
  });

  it('reads a leading ~ as Claude Code does: `~` and `~/…` in the home folder; `~user/…` is a home folder too, never the worktree', () => {
    const at = (file_path: string) => writePath({ toolName: 'Write', toolInput: { file_path }, cwd: '/w' }, '/home/me');
    expect(at('~/x.ts')).toEqual({ kind: 'path', path: '/home/me/x.ts' });
    expect(at('~')).toEqual({ kind: 'path', path: '/home/me' });
    expect(at('~/../w/a.ts')).toEqual({ kind: 'path', path: '/home/w/a.ts' });
    expect(at('~root/x.ts')).toEqual({ kind: 'user-home', path: '~root/x.ts' });
    // Only a leading one: elsewhere `~` is a name like any other.
    expect(at('src/~/x.ts')).toEqual({ kind: 'path', path: '/w/src/~/x.ts' });
  });

  it('errs towards "a rule of the person may match"', () => {
    expect(bashRuleMayMatch(['Bash(npm run deploy:*)'], 'npm test')).toBeNull();
    expect(bashRuleMayMatch(['Bash(npm run deploy:*)'], 'npm test && npm  run "deploy" --prod')).toBe('Bash(npm run deploy:*)');
    expect(bashRuleMayMatch(['Bash(curl * | sh)'], 'curl https://x.example | sh')).toBe('Bash(curl * | sh)');
    expect(bashRuleMayMatch(['Bash(*)'], 'anything')).toBe('Bash(*)');
    expect(bashRuleMayMatch(['*'], 'anything')).toBe('*');
    expect(bashRuleMayMatch(['Edit(src/**)', 'WebFetch'], 'rm -rf /')).toBeNull();
  });

  it('reads the person’s settings from the session’s project folder and the repository, never from inside the worker’s worktree', () => {
    expect(settingsFolders(repo, repo, worktree)).toEqual([repo]);
    expect(settingsFolders(`${repo}/sub`, repo, worktree)).toEqual([`${repo}/sub`, repo]);
    expect(settingsFolders(worktree, repo, worktree)).toEqual([repo]);
    expect(settingsFolders(`${worktree}/sub`, repo, worktree)).toEqual([repo]);
  });

  it('reads a relative rule under the project folder, the repository, the worktree, and the worktree’s copy of a project subfolder', () => {
    expect(ruleRootsOf(repo, repo, worktree)).toEqual([repo, worktree]);
    expect(ruleRootsOf(`${repo}/sub/deep`, repo, worktree)).toEqual([`${repo}/sub/deep`, repo, worktree, `${worktree}/sub/deep`]);
    expect(ruleRootsOf('/elsewhere', repo, worktree)).toEqual(['/elsewhere', repo, worktree]);
  });

  it('quotes any text as one shell word', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const quoted = shellQuote(text);
        expect(quoted.startsWith("'") && quoted.endsWith("'")).toBe(true);
        // Between the quotes, a quote only ever appears as the close-escape-open sequence.
        expect(quoted.slice(1, -1).replaceAll(`'\\''`, '')).not.toContain("'");
      }),
    );
  });

  it('gives a worker’s commands its worktree and TMPDIR to write, never the worktree’s .git link nor the settings files Claude Code reads rules from', () => {
    expect(workerSandboxSettings('/w', '/t', ['registry.npmjs.org'])).toEqual({
      filesystem: { allowWrite: ['/w', '/t'], denyWrite: ['/w/.git', '/w/.claude/settings.json', '/w/.claude/settings.local.json'], denyRead: [] },
      network: { allowedDomains: ['registry.npmjs.org'], deniedDomains: [] },
    });
  });
});

describe('invariants', () => {
  const segment = fc.constantFrom('src', 'a.ts', 'docs', 'x', '..', '.git', 'b.txt', 'deep');
  const relPath = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));

  it('never allows a write outside the worktree, nor one of a path the task does not declare', () => {
    fc.assert(
      fc.property(relPath, fc.boolean(), fc.constantFrom('Edit', 'Write', 'NotebookEdit'), (path, inside, tool) => {
        const target = inside ? ({ kind: 'inside', path } as const) : ({ kind: 'outside', path: `/elsewhere/${path}` } as const);
        const verdict = decideToolCall(call(tool, {}), facts({ target }));
        const declared = path === 'src/a.ts' || path.startsWith('docs/');
        if (verdict.kind === 'allow') expect(inside && declared).toBe(true);
        else expect(verdict.kind).toBe('deny');
      }),
    );
  });

  it('decides nothing for any call of the lead, whatever the tool', () => {
    fc.assert(
      fc.property(fc.string(), fc.dictionary(fc.string(), fc.string()), (tool, input) => {
        expect(decideToolCall(call(tool, input, { agentId: null }), facts())).toEqual({ kind: 'none' });
      }),
    );
  });

  it('judges a write by the task alone, whatever else is handed out', () => {
    expect(judgeWrite(handOut.tasks[1]!, { kind: 'inside', path: 'src/a.ts' })).toMatchObject({ kind: 'deny' });
    expect(judgeWrite(handOut.tasks[1]!, { kind: 'inside', path: 'b.txt' })).toMatchObject({ kind: 'allow' });
  });
});
