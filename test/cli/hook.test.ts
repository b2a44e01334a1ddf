// The worker hook as Claude Code runs it (src/cli/hook.ts): a tool call's JSON in, the decision
// out, with the hand-out the in-session steps publish and the bindings it keeps in a cache folder
// of its own. The decision itself is tested in test/core/worker-hook.test.ts; here, the lookups:
// binding by the prompt file's Read, one worker per task, paths through symlinks, the person's
// rules, and a rewritten Bash command that really runs confined.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deniedWrites, handOutRoot, readBinding, workerFiles, writeHandOut } from '../../src/adapters/worker/hand-out.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { preToolUse } from '../../src/cli/hook.ts';
import type { HandOut } from '../../src/core/sandbox/worker-hook.ts';
import { runGit, tempGitRepo } from '../support/git-repo.ts';
import { repoRoot } from '../support/real-claude.ts';

let base: string;
let repo: string;
let env: NodeJS.ProcessEnv;
let handOut: HandOut;
const worktreeOf = (agent: string) => join(repo, '.claude', 'worktrees', `agent-${agent}`);
const support = await sandboxSupport();

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'foreman-hook-')));
  repo = join(base, 'repo');
  for (const agent of ['a1', 'b2']) await mkdir(join(worktreeOf(agent), 'src'), { recursive: true });
  await mkdir(join(base, 'outside'), { recursive: true });
  // A folder linked into the worktree from elsewhere (as `worktree.symlinkDirectories` does).
  await symlink(join(base, 'outside'), join(worktreeOf('a1'), 'linked'));
  await writeFile(join(repo, 'README.md'), 'the person’s\n');
  await mkdir(join(repo, '.design', 'prompts'), { recursive: true });
  env = { HOME: join(base, 'home'), PATH: process.env.PATH };
  handOut = {
    version: 1,
    session: 'sess-1',
    repo,
    planPath: join(repo, '.design/plan.json'),
    sandbox: { available: true, network: [] },
    tasks: [
      { index: 0, attempt: 1, subject: 'zero', promptFile: join(repo, '.design/prompts/task-0.md'), files: ['src/a.ts', 'linked/'] },
      { index: 1, attempt: 1, subject: 'one', promptFile: join(repo, '.design/prompts/task-1.md'), files: ['b.txt'] },
    ],
  };
  await writeHandOut(handOutRoot(env), handOut);
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const hook = async (agent: string | null, tool: string, input: Record<string, unknown>, over: Record<string, unknown> = {}) => {
  const stdin = JSON.stringify({
    session_id: 'sess-1',
    ...(agent ? { agent_id: agent, agent_type: 'general-purpose' } : {}),
    cwd: agent ? worktreeOf(agent) : repo,
    hook_event_name: 'PreToolUse',
    tool_name: tool,
    tool_input: input,
    ...over,
  });
  const out = await preToolUse(stdin, env);
  return out === ''
    ? null
    : (JSON.parse(out).hookSpecificOutput as { permissionDecision: string; permissionDecisionReason: string; updatedInput?: Record<string, unknown> });
};

describe('the worker hook, as Claude Code calls it', () => {
  it('answers nothing for the lead, another session, or input that is not a tool call', async () => {
    expect(await hook(null, 'Write', { file_path: join(repo, 'x') })).toBeNull();
    expect(await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'src/a.ts') }, { session_id: 'other' })).toBeNull();
    expect(await preToolUse('not json', env)).toBe('');
    expect(await preToolUse('{"hook_event_name":"Stop"}', env)).toBe('');
  });

  it('denies writes until the worker reads its prompt file; the Read binds it', async () => {
    expect(await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'src/a.ts') })).toMatchObject({ permissionDecision: 'deny' });
    expect(await hook('a1', 'Read', { file_path: handOut.tasks[0]!.promptFile })).toMatchObject({ permissionDecision: 'allow' });
    expect(await readBinding(handOutRoot(env), 'sess-1', 'a1')).toEqual({ agent: 'a1', task: 0, attempt: 1, worktree: worktreeOf('a1') });
    expect(await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'src/a.ts') })).toMatchObject({ permissionDecision: 'allow' });
    expect(await hook('a1', 'Edit', { file_path: join(worktreeOf('a1'), 'linked/deep/x.md') })).toMatchObject({ permissionDecision: 'deny' });
  });

  it('records each undeclared write it refuses a bound worker, for finalize (the task wanted that file)', async () => {
    expect(await hook('a1', 'Read', { file_path: handOut.tasks[0]!.promptFile })).toMatchObject({ permissionDecision: 'allow' });
    const refused = await hook('a1', 'Edit', { file_path: join(worktreeOf('a1'), 'src/index.ts') });
    expect(refused).toMatchObject({ permissionDecision: 'deny' });
    expect(refused?.permissionDecisionReason).toContain(
      'if the task cannot be done without changing it, end with: BLOCKED: needs to change src/index.ts, which the task does not declare',
    );
    await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'src/index.ts') });
    // Outside the worktree is not a file the task could declare: not recorded.
    await hook('a1', 'Write', { file_path: join(base, 'outside', 'x.txt') });
    expect(await deniedWrites(handOutRoot(env), 'sess-1', 0, 1)).toEqual(['src/index.ts']);
    expect(await deniedWrites(handOutRoot(env), 'sess-1', 0, 2)).toEqual([]);
  });

  it('one worker per task: a second subagent reading the same prompt file is not bound', async () => {
    await hook('b2', 'Read', { file_path: handOut.tasks[0]!.promptFile });
    expect(await readBinding(handOutRoot(env), 'sess-1', 'b2')).toBeNull();
    expect(await hook('b2', 'Write', { file_path: join(worktreeOf('b2'), 'src/a.ts') })).toMatchObject({ permissionDecision: 'deny' });
    // It can still take a task nobody took.
    await hook('b2', 'Read', { file_path: handOut.tasks[1]!.promptFile });
    expect(await hook('b2', 'Write', { file_path: join(worktreeOf('b2'), 'b.txt') })).toMatchObject({ permissionDecision: 'allow' });
  });

  it('judges the path through symlinks: a declared folder linked to the outside is outside the worktree', async () => {
    const verdict = await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'linked/new.md') });
    expect(verdict).toMatchObject({ permissionDecision: 'deny' });
    expect(verdict!.permissionDecisionReason).toContain('outside your worktree');
    expect(await hook('a1', 'Write', { file_path: join(repo, 'src/a.ts') })).toMatchObject({ permissionDecision: 'deny' });
  });

  it('reads a path starting with ~ as Claude Code does: `~/…` is in the home folder, so outside the worktree; `~user/…` is refused as outside', async () => {
    for (const file_path of ['~/src/a.ts', '~', '~root/src/a.ts']) {
      const verdict = await hook('a1', 'Write', { file_path, content: 'x\n' });
      expect(verdict, file_path).toMatchObject({ permissionDecision: 'deny' });
      expect(verdict!.permissionDecisionReason, file_path).toContain('is outside your worktree');
    }
    expect((await hook('a1', 'Write', { file_path: '~/src/a.ts' }))!.permissionDecisionReason).toContain(`${env.HOME}/src/a.ts is outside your worktree`);
    // Where the home folder is the worktree, `~/src/a.ts` is the declared file there, as Claude Code would write it.
    const stdin = JSON.stringify({
      session_id: 'sess-1',
      agent_id: 'a1',
      cwd: worktreeOf('a1'),
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: { file_path: '~/src/a.ts' },
    });
    expect(JSON.parse(await preToolUse(stdin, { ...env, HOME: worktreeOf('a1'), XDG_CACHE_HOME: join(env.HOME!, '.cache') })).hookSpecificOutput).toMatchObject(
      { permissionDecision: 'allow' },
    );
  });

  it('a finalized task’s worker is no longer bound', async () => {
    const root = handOutRoot(env);
    await writeHandOut(root, { ...handOut, tasks: handOut.tasks.slice(1) });
    try {
      expect(await readBinding(root, 'sess-1', 'a1')).toBeNull();
      expect(await hook('a1', 'Write', { file_path: join(worktreeOf('a1'), 'src/a.ts') })).toMatchObject({ permissionDecision: 'deny' });
    } finally {
      await writeHandOut(root, handOut);
      await hook('a1', 'Read', { file_path: handOut.tasks[0]!.promptFile });
    }
  });

  it('leaves a Bash command to the person when a deny or ask rule of theirs may match it', async () => {
    await mkdir(join(repo, '.claude'), { recursive: true });
    await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { ask: ['Bash(git push:*)'] } }));
    try {
      expect(await hook('a1', 'Bash', { command: 'git push origin main' })).toBeNull();
      expect(await hook('a1', 'Bash', { command: 'git status' })).toMatchObject({ permissionDecision: 'allow' });
    } finally {
      await rm(join(repo, '.claude/settings.json'));
    }
  });

  it("takes no rule from the worker's worktree, whose files its own commands may write; its sandbox may not write the settings files there", async () => {
    const dir = join(worktreeOf('a1'), '.claude');
    await mkdir(dir, { recursive: true });
    // What a worker's sandboxed command could have written to switch its sandbox off.
    await writeFile(join(dir, 'settings.local.json'), JSON.stringify({ permissions: { deny: ['Edit(**/zz*)'] } }));
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ permissions: { deny: ['Bash(git status:*)'], ask: ['Bash'] } }));
    try {
      const verdict = await hook('a1', 'Bash', { command: 'git status' });
      expect(verdict).toMatchObject({ permissionDecision: 'allow' });
      const settings = JSON.parse(await readFile(workerFiles(handOutRoot(env), 'sess-1', 'a1').settingsFile, 'utf8'));
      expect(settings.filesystem.denyWrite).toEqual(expect.arrayContaining([join(dir, 'settings.json'), join(dir, 'settings.local.json')]));
      if (!support.ok) return;
      // In the real sandbox: neither file can be written, the existing one or a new one.
      await rm(join(dir, 'settings.json'));
      const run = await execa(
        'bash',
        [
          '-c',
          String(
            (await hook('a1', 'Bash', { command: 'echo {} > .claude/settings.local.json; echo {} > .claude/settings.json; echo other > .claude/other.md' }))!
              .updatedInput!.command,
          ),
        ],
        { cwd: worktreeOf('a1'), reject: false },
      );
      expect(run.stderr).toMatch(/settings\.local\.json: Read-only file system[\s\S]*settings\.json: (Read-only file system|Permission denied)/);
      expect(JSON.parse(await readFile(join(dir, 'settings.local.json'), 'utf8'))).toEqual({ permissions: { deny: ['Edit(**/zz*)'] } });
      // Not written, and no placeholder of the sandbox's left behind.
      expect(existsSync(join(dir, 'settings.json'))).toBe(false);
      // The rest of the folder is the worktree's, as a task may declare files there.
      expect(await readFile(join(dir, 'other.md'), 'utf8')).toBe('other\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("denies a worker's Bash command, saying why, when its sandbox settings cannot be written (never leaves it to the person's allow rules)", async () => {
    const { settingsFile } = workerFiles(handOutRoot(env), 'sess-1', 'a1');
    // A folder where the settings file goes: it cannot be replaced by a file.
    await rm(settingsFile, { force: true });
    await mkdir(join(settingsFile, 'in-the-way'), { recursive: true });
    try {
      const verdict = await hook('a1', 'Bash', { command: 'git status' });
      expect(verdict).toMatchObject({ permissionDecision: 'deny' });
      expect(verdict!.permissionDecisionReason).toContain(`its sandbox settings could not be written (${settingsFile}: `);
      expect(verdict!.updatedInput).toBeUndefined();
    } finally {
      await rm(settingsFile, { recursive: true, force: true });
    }
    expect(await hook('a1', 'Bash', { command: 'git status' })).toMatchObject({ permissionDecision: 'allow' });
  });

  it.runIf(support.ok)('runs a worker’s Bash command in the sandbox: its worktree is writable, the person’s files are not', async () => {
    const verdict = await hook('a1', 'Bash', { command: `echo inside > src/a.ts && echo escaped >> ${join(repo, 'README.md')}`, description: 'try' });
    expect(verdict).toMatchObject({ permissionDecision: 'allow', updatedInput: { description: 'try' } });
    const run = await execa('bash', ['-c', String(verdict!.updatedInput!.command)], { cwd: worktreeOf('a1'), reject: false });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toMatch(/Read-only file system/);
    expect(await readFile(join(worktreeOf('a1'), 'src/a.ts'), 'utf8')).toBe('inside\n');
    expect(await readFile(join(repo, 'README.md'), 'utf8')).toBe('the person’s\n');
  });

  it.runIf(support.ok)(
    "holds a worker's Bash command to the person's Read and Edit deny rules in the sandbox; leaves it to them where the sandbox cannot hold one",
    async () => {
      await mkdir(join(repo, '.claude'), { recursive: true });
      for (const dir of [repo, worktreeOf('a1')]) await writeFile(join(dir, '.env'), 'SECRET=1\n');
      await writeFile(join(worktreeOf('a1'), 'locked.txt'), 'as it was\n');
      await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(./.env)', 'Edit(./locked.txt)'] } }));
      try {
        const run = async (command: string) => {
          const verdict = await hook('a1', 'Bash', { command, description: 'try' });
          expect(verdict, command).toMatchObject({ permissionDecision: 'allow' });
          return execa('bash', ['-c', String(verdict!.updatedInput!.command)], { cwd: worktreeOf('a1'), reject: false });
        };
        const read = await run(`cat .env; cat ${join(repo, '.env')}`);
        expect(read.stdout).not.toContain('SECRET');
        expect(read.stderr).toMatch(/\.env: Permission denied[\s\S]*\.env: Permission denied/);
        const write = await run('echo changed > locked.txt; echo inside > src/a.ts');
        expect(write.stderr).toMatch(/locked\.txt: Read-only file system/);
        expect(await readFile(join(worktreeOf('a1'), 'locked.txt'), 'utf8')).toBe('as it was\n');
        expect(await readFile(join(worktreeOf('a1'), 'src/a.ts'), 'utf8')).toBe('inside\n');
        // A write pattern the runtime cannot deny on Linux: the command is the person's to approve.
        await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Edit(**/*.lock)'] } }));
        expect(await hook('a1', 'Bash', { command: 'npm install' })).toBeNull();
      } finally {
        await rm(join(repo, '.claude/settings.json'));
      }
    },
  );

  it.runIf(support.ok)("reads a relative rule of a project folder below the repository in the worker's copy of that folder too", async () => {
    const sub = join(repo, 'sub');
    await mkdir(join(sub, '.claude'), { recursive: true });
    await mkdir(join(worktreeOf('a1'), 'sub'), { recursive: true });
    await writeFile(join(worktreeOf('a1'), 'sub', 'secret.txt'), 'SECRET=2\n');
    await writeFile(join(sub, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(./secret.txt)'] } }));
    try {
      const stdin = JSON.stringify({
        session_id: 'sess-1',
        agent_id: 'a1',
        cwd: worktreeOf('a1'),
        hook_event_name: 'PreToolUse',
        tool_name: 'Bash',
        tool_input: { command: 'cat sub/secret.txt' },
      });
      const verdict = JSON.parse(await preToolUse(stdin, { ...env, CLAUDE_PROJECT_DIR: sub })).hookSpecificOutput;
      expect(verdict).toMatchObject({ permissionDecision: 'allow' });
      const settings = JSON.parse(await readFile(workerFiles(handOutRoot(env), 'sess-1', 'a1').settingsFile, 'utf8'));
      expect(settings.filesystem.denyRead).toContain(join(worktreeOf('a1'), 'sub', 'secret.txt'));
      const run = await execa('bash', ['-c', String(verdict.updatedInput.command)], { cwd: worktreeOf('a1'), reject: false });
      expect(run.stdout).not.toContain('SECRET');
      expect(run.stderr).toMatch(/secret\.txt: Permission denied/);
    } finally {
      await rm(sub, { recursive: true, force: true });
      await rm(join(worktreeOf('a1'), 'sub'), { recursive: true, force: true });
    }
  });

  it.runIf(support.ok)('reads a rule spelled through a symlink (a home folder that is a link) by its real path', async () => {
    // The home folder is a link to the folder holding the repository, which the hand-out names by its real path.
    const linkedHome = join(base, 'home-link');
    await symlink(base, linkedHome);
    await mkdir(join(repo, '.claude'), { recursive: true });
    await writeFile(join(worktreeOf('a1'), 'locked.txt'), 'as it was\n');
    const viaLink = { ...env, HOME: linkedHome, XDG_CACHE_HOME: join(env.HOME!, '.cache') };
    const bash = async (command: string) => {
      const stdin = JSON.stringify({
        session_id: 'sess-1',
        agent_id: 'a1',
        cwd: worktreeOf('a1'),
        hook_event_name: 'PreToolUse',
        tool_name: 'Bash',
        tool_input: { command },
      });
      const out = await preToolUse(stdin, viaLink);
      return out === '' ? null : JSON.parse(out).hookSpecificOutput;
    };
    try {
      // A folder holding the worktree: the sandbox cannot hold it, so the command is the person's.
      await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Edit(~/repo/**)'] } }));
      expect(await bash('npm install')).toBeNull();
      // A file in the worktree, named through the link: its writes are denied in the sandbox.
      await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Edit(~/repo/.claude/worktrees/agent-a1/locked.txt)'] } }));
      const verdict = await bash('echo changed > locked.txt');
      expect(verdict).toMatchObject({ permissionDecision: 'allow' });
      const run = await execa('bash', ['-c', String(verdict.updatedInput.command)], { cwd: worktreeOf('a1'), reject: false });
      expect(run.stderr).toMatch(/locked\.txt: Read-only file system/);
      expect(await readFile(join(worktreeOf('a1'), 'locked.txt'), 'utf8')).toBe('as it was\n');
    } finally {
      await rm(join(repo, '.claude/settings.json'), { force: true });
      await rm(linkedHome);
    }
  });

  it('the bundled hook answers the same through its launcher, and costs one `test -d` when no session runs a plan', async () => {
    const launcher = join(repoRoot, 'plugin/hooks/pre-tool-use');
    const input = JSON.stringify({
      session_id: 'sess-1',
      agent_id: 'a1',
      cwd: worktreeOf('a1'),
      tool_name: 'WebFetch',
      tool_input: { url: 'https://example.com' },
    });
    const denied = await execa(launcher, { input, env });
    expect(JSON.parse(denied.stdout).hookSpecificOutput).toMatchObject({ permissionDecision: 'deny' });
    const elsewhere = await execa(launcher, { input, env: { ...env, HOME: join(base, 'nobody') } });
    expect(elsewhere.stdout).toBe('');
  });
});

describe('a revision’s worker (a task handed out again to revise its parked work)', () => {
  it('finds the parked work in its worktree once it reads its prompt file; before, it may read nothing else', async () => {
    const r = await tempGitRepo({ 'README.md': 'x\n', 'lib.txt': 'one\n' });
    try {
      const parkedBase = (await r.git(['rev-parse', 'HEAD'])).trim();
      await r.write({ 'lib.txt': 'one\ntwo (parked)\n' });
      await r.git(['commit', '-q', '-am', 'parked']);
      const commit = (await r.git(['rev-parse', 'HEAD'])).trim();
      await r.git(['reset', '-q', '--hard', parkedBase]);
      const worktree = (agent: string) => join(r.dir, '.claude', 'worktrees', `agent-${agent}`);
      for (const agent of ['r1', 'r2']) await r.git(['worktree', 'add', '-q', '-b', `worktree-agent-${agent}`, worktree(agent), 'HEAD']);
      // r2's worktree has a change of its own: the parked work cannot be put over it.
      await writeFile(join(worktree('r2'), 'lib.txt'), 'changed\n');
      const revising: HandOut = {
        ...handOut,
        session: 'sess-rev',
        repo: r.dir,
        tasks: [
          {
            index: 0,
            attempt: 2,
            subject: 'zero',
            promptFile: join(r.dir, '.design/prompts/task-0.md'),
            files: ['lib.txt'],
            parked: { base: parkedBase, commit },
          },
          { index: 1, attempt: 1, subject: 'one', promptFile: join(r.dir, '.design/prompts/task-1.md'), files: ['README.md'] },
        ],
      };
      await writeHandOut(handOutRoot(env), revising);
      const call = (agent: string, tool: string, input: Record<string, unknown>) =>
        preToolUse(JSON.stringify({ session_id: 'sess-rev', agent_id: agent, cwd: worktree(agent), tool_name: tool, tool_input: input }), env).then((out) =>
          out === '' ? null : JSON.parse(out).hookSpecificOutput,
        );
      expect(await call('r1', 'Read', { file_path: join(worktree('r1'), 'lib.txt') })).toMatchObject({ permissionDecision: 'deny' });
      expect(await readFile(join(worktree('r1'), 'lib.txt'), 'utf8')).toBe('one\n');
      expect(await call('r1', 'Read', { file_path: revising.tasks[0]!.promptFile })).toMatchObject({ permissionDecision: 'allow' });
      expect(await readFile(join(worktree('r1'), 'lib.txt'), 'utf8')).toBe('one\ntwo (parked)\n');
      expect((await runGit(worktree('r1'), ['rev-parse', 'HEAD'])).trim()).toBe(parkedBase);
      expect(await call('r1', 'Edit', { file_path: join(worktree('r1'), 'lib.txt') })).toMatchObject({ permissionDecision: 'allow' });
      // Read again (bound), nothing is put in a second time.
      await writeFile(join(worktree('r1'), 'lib.txt'), 'one\ntwo (parked)\nthree\n');
      expect(await call('r1', 'Read', { file_path: revising.tasks[0]!.promptFile })).toMatchObject({ permissionDecision: 'allow' });
      expect(await readFile(join(worktree('r1'), 'lib.txt'), 'utf8')).toBe('one\ntwo (parked)\nthree\n');

      // The attempt taken by r2 (were r1 not there): the put fails, r2 is told to stop and stays unbound.
      await writeHandOut(handOutRoot(env), { ...revising, tasks: [{ ...revising.tasks[0]!, attempt: 3 }] });
      const refused = await call('r2', 'Read', { file_path: revising.tasks[0]!.promptFile });
      expect(refused).toMatchObject({ permissionDecision: 'deny' });
      expect(refused.permissionDecisionReason).toMatch(/task 0 revises its earlier work, which could not be put in your worktree \(.*lib\.txt/s);
      expect(await readFile(join(worktree('r2'), 'lib.txt'), 'utf8')).toBe('changed\n');
      expect(await readBinding(handOutRoot(env), 'sess-rev', 'r2')).toBeNull();
      expect(await call('r2', 'Edit', { file_path: join(worktree('r2'), 'lib.txt') })).toMatchObject({ permissionDecision: 'deny' });
    } finally {
      await r.cleanup();
    }
  });
});
